"""An mlflow flavour for the estimators, on the package's safe save format.

``log_model(clf, name="model")`` logs the model folder that :meth:`~interpretable.estimators.
core.base.NeuralEstimator.save` writes (JSON config + safetensors weights, no pickle) as an mlflow
``python_function`` model whose loader is this module: ``mlflow.pyfunc.load_model(uri)`` and
:func:`load_model` run only the installed package's code (:meth:`NeuralEstimator.load`, which
validates the files before it allocates), never code from the model's artifacts, so they need
no ``MLFLOW_ALLOW_PICKLE_DESERIALIZATION``. ``pyfunc`` predictions take what the estimator takes
(a list of texts, a one-column DataFrame, an image array) and return ``predict``'s labels.

``mlflow.sklearn.log_model`` works too, with skops (its default format) given the package's
trusted types: ``mlflow.sklearn.log_model(clf, name="model",
skops_trusted_types=interpretable.estimators.core.trusted_types())``; mlflow reads that list
from the model's own files when loading, so it refuses to load it unless
``MLFLOW_ALLOW_PICKLE_DESERIALIZATION=true``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interpretable._optional import import_optional
from interpretable._version import __version__

if TYPE_CHECKING:
    import os

    import pandas as pd
    import torch
    from mlflow.models import ModelSignature
    from mlflow.models.model import ModelInfo
    from numpy.typing import ArrayLike

    from interpretable.estimators.core import NeuralEstimator

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


def log_model(estimator: NeuralEstimator, name: str = "model", *,
              input_example: ArrayLike | pd.DataFrame | None = None,
              signature: ModelSignature | None = None, pip_requirements: list[str] | None = None,
              **kwargs: Any) -> ModelInfo:
    """Log a fitted estimator to the active mlflow run as a model.

    One run is started when there is none. The model folder is the package's safe save format
    (JSON config and safetensors weights); :func:`load_model` and ``mlflow.pyfunc.load_model``
    read it without unpickling anything.

    Parameters
    ----------
    estimator : fitted estimator
        Any estimator of this package.
    name : str, default="model"
        The model's name in the run.
    input_example : sequence, pandas.DataFrame or None, default=None
        Samples as ``predict`` takes them (e.g. a list of texts or a one-column DataFrame); the
        signature is inferred from it and ``estimator.predict`` unless ``signature`` is given.
    signature : mlflow.models.ModelSignature or None, default=None
        The model signature.
    pip_requirements : list of str or None, default=None
        The requirements (None: this package's).
    **kwargs
        Passed to ``mlflow.pyfunc.log_model (``registered_model_name``, ``metadata``, ...)``.

    Returns
    -------
    mlflow.models.model.ModelInfo
        The record of mlflow; its ``model_uri`` loads the model.

    See Also
    --------
    load_model : Load the estimator back.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable import integrations
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> import os, pathlib, mlflow
    >>> os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # a local file store (mlflow 3)
    >>> mlflow.set_tracking_uri(pathlib.Path("mlruns").absolute().as_uri())
    >>> with mlflow.start_run():
    ...     info = integrations.log_model(clf, name="model", input_example=X[:2])
    >>> integrations.load_model(info.model_uri).predict(["good film"]).shape
    (1,)
    >>> mlflow.set_tracking_uri(None); del os.environ["MLFLOW_ALLOW_FILE_STORE"]
    """
    mlflow = import_optional("mlflow", "log_model")

    with tempfile.TemporaryDirectory() as folder:
        saved = estimator.save(Path(folder) / DATA)
        return mlflow.pyfunc.log_model(
            name=name, data_path=str(saved),
            **_options(estimator, input_example, signature, pip_requirements), **kwargs)


def save_model(estimator: NeuralEstimator, path: str | os.PathLike[str], *,
               input_example: ArrayLike | pd.DataFrame | None = None,
               signature: ModelSignature | None = None, pip_requirements: list[str] | None = None,
               **kwargs: Any) -> Path:
    """Save a fitted estimator as an mlflow model in a new folder.

    See :func:`log_model`.

    Parameters
    ----------
    estimator : fitted estimator
        Any estimator of this package.
    path : str or os.PathLike
        The new folder.
    input_example : sequence, pandas.DataFrame or None, default=None
        Samples as ``predict`` takes them (e.g. a list of texts or a one-column DataFrame); the
        signature is inferred from it and ``estimator.predict`` unless ``signature`` is given.
    signature : mlflow.models.ModelSignature or None, default=None
        The model signature.
    pip_requirements : list of str or None, default=None
        The requirements (None: this package's).
    **kwargs
        Passed to ``mlflow.pyfunc.save_model``.

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable import integrations
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> path = integrations.save_model(clf, "mlflow_model")
    >>> integrations.load_model(str(path)).classes_
    array(['neg', 'pos'], dtype='<U3')
    """
    mlflow = import_optional("mlflow", "save_model")

    with tempfile.TemporaryDirectory() as folder:
        saved = estimator.save(Path(folder) / DATA)
        mlflow.pyfunc.save_model(
            path=str(path), data_path=str(saved),
            **_options(estimator, input_example, signature, pip_requirements), **kwargs)
    return Path(path)


def load_model(model_uri: str, *, dst_path: str | None = None,
               device: str | torch.device = "auto") -> NeuralEstimator:
    """Load the estimator of an mlflow model logged by :func:`log_model`.

    The estimator is loaded with ``NeuralEstimator.load``: no code from the model's files runs.

    Parameters
    ----------
    model_uri : str
        ``runs:/...``, ``models:/...`` or a path.
    dst_path : str or None, default=None
        Where mlflow downloads the artifacts (None: a temporary folder).
    device : str or torch.device, default="auto"
        Where the weights go.

    Returns
    -------
    NeuralEstimator
        The fitted estimator.

    Raises
    ------
    ValueError
        If the model was not logged by this flavour.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable import integrations
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> path = integrations.save_model(clf, "saved_with_mlflow")
    >>> integrations.load_model(str(path), device="cpu").predict(["bad film"]).shape
    (1,)
    """
    download_artifacts = import_optional("mlflow.artifacts", "load_model").download_artifacts
    from mlflow.models import Model

    local = Path(download_artifacts(artifact_uri=model_uri, dst_path=dst_path))
    flavour = Model.load(str(local)).flavors.get("python_function", {})
    if flavour.get("loader_module") != __name__:
        raise ValueError(f"{model_uri} is not an interpretable model (its python_function "
                         f"loader is {flavour.get('loader_module')!r}); load it with mlflow.")
    return _estimator(local / flavour["data"], device)


def _estimator(path, device="auto"):
    from interpretable.estimators.core import NeuralEstimator

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
