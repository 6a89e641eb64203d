"""An mlflow flavour for the estimators, on the package's safe save format.

``log_model(clf, name="model")`` logs the model folder that :meth:`~interpretable.estimators.
base.NeuralEstimator.save` writes (JSON config + safetensors weights, no pickle) as an mlflow
``python_function`` model whose loader is this module: ``mlflow.pyfunc.load_model(uri)`` and
:func:`load_model` run only the installed package's code (:meth:`NeuralEstimator.load`, which
validates the files before it allocates), never code from the model's artifacts, so they need
no ``MLFLOW_ALLOW_PICKLE_DESERIALIZATION``. ``pyfunc`` predictions take what the estimator takes
(a list of texts, a one-column DataFrame, an image array) and return ``predict``'s labels.

``mlflow.sklearn.log_model`` works too, with skops (its default format) given the package's
trusted types: ``mlflow.sklearn.log_model(clf, name="model",
skops_trusted_types=interpretable.estimators.state.trusted_types())``; mlflow reads that list
from the model's own files when loading, so it refuses to load it unless
``MLFLOW_ALLOW_PICKLE_DESERIALIZATION=true``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from . import __version__

__all__ = ["log_model", "save_model", "load_model"]

#: where the model folder lies in the mlflow model (the pyfunc flavour's ``data``)
DATA = "estimator"


def _options(estimator, input_example, signature, pip_requirements) -> dict:
    """The keywords of ``mlflow.pyfunc.log_model`` / ``save_model``: the signature inferred
    from ``input_example`` and ``estimator.predict`` when not given, and the requirements."""
    from mlflow.models import infer_signature

    if signature is None and input_example is not None:
        signature = infer_signature(input_example, estimator.predict(input_example))
    if pip_requirements is None:
        pip_requirements = [f"interpretable-models=={__version__}"]
    return {"loader_module": __name__, "input_example": input_example, "signature": signature,
            "pip_requirements": pip_requirements}


def log_model(estimator, name: str = "model", *, input_example=None, signature=None,
              pip_requirements=None, **kwargs):
    """Log the fitted ``estimator`` to the active mlflow run (one is started when there is
    none) as the model ``name``; returns mlflow's ``ModelInfo`` (``model_uri`` loads it).

    input_example : samples as ``predict`` takes them (e.g. a list of texts or a one-column
        DataFrame); the signature is inferred from it and ``estimator.predict`` unless
        ``signature`` is given. Other keywords go to ``mlflow.pyfunc.log_model``
        (``registered_model_name``, ``metadata``, ``extra_pip_requirements``, ...).
    """
    import mlflow

    with tempfile.TemporaryDirectory() as folder:
        saved = estimator.save(Path(folder) / DATA)
        return mlflow.pyfunc.log_model(
            name=name, data_path=str(saved),
            **_options(estimator, input_example, signature, pip_requirements), **kwargs)


def save_model(estimator, path, *, input_example=None, signature=None, pip_requirements=None,
               **kwargs) -> Path:
    """Save the fitted ``estimator`` as an mlflow model in the new folder ``path`` (see
    :func:`log_model`); returns ``path``."""
    import mlflow

    with tempfile.TemporaryDirectory() as folder:
        saved = estimator.save(Path(folder) / DATA)
        mlflow.pyfunc.save_model(
            path=str(path), data_path=str(saved),
            **_options(estimator, input_example, signature, pip_requirements), **kwargs)
    return Path(path)


def load_model(model_uri: str, *, dst_path=None, device="auto"):
    """The estimator of the mlflow model ``model_uri`` (``runs:/...``, ``models:/...`` or a
    path) logged by :func:`log_model`, loaded with ``NeuralEstimator.load`` onto ``device``."""
    from mlflow.artifacts import download_artifacts
    from mlflow.models import Model

    local = Path(download_artifacts(artifact_uri=model_uri, dst_path=dst_path))
    flavour = Model.load(str(local)).flavors.get("python_function", {})
    if flavour.get("loader_module") != __name__:
        raise ValueError(f"{model_uri} is not an interpretable model (its python_function "
                         f"loader is {flavour.get('loader_module')!r}); load it with mlflow.")
    return _estimator(local / flavour["data"], device)


def _estimator(path, device="auto"):
    from .estimators.base import NeuralEstimator

    return NeuralEstimator.load(path, device=device)


class _PyFuncModel:
    """What ``mlflow.pyfunc.load_model`` wraps: ``predict`` of the loaded estimator."""

    def __init__(self, estimator):
        self.estimator = estimator

    def predict(self, model_input, params=None):
        return self.estimator.predict(model_input)

    def get_raw_model(self):
        return self.estimator


def _load_pyfunc(path):
    """mlflow's loader hook: ``path`` is the model folder (the pyfunc flavour's ``data``)."""
    return _PyFuncModel(_estimator(path))
