"""The estimators in the tools around them: scikit-learn pipelines that explain
(:class:`ExplainablePipeline`), explanations streamed into one table
(:func:`explanations_to_frame`), explaining across processes or Dask workers into Parquet
(:func:`explain_to_parquet`) and MLflow models (:func:`log_model`, :func:`save_model`,
:func:`load_model`)."""

from interpretable.integrations._pipeline import (
    ExplainablePipeline,
    make_explainable_pipeline,
)
from interpretable.integrations._scale import (
    explain_to_parquet,
    save_on_main_process,
)
from interpretable.integrations._streaming import (
    explanations_to_frame,
)
from interpretable.integrations._tracking import (
    load_model,
    log_model,
    save_model,
)

__all__ = [
    "ExplainablePipeline", "make_explainable_pipeline", "explanations_to_frame",
    "explain_to_parquet", "save_on_main_process", "log_model", "save_model", "load_model",
]
