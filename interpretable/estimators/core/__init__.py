"""What every estimator shares, for those who write estimators of their own: the
scikit-learn surface (:class:`NeuralEstimator`, :class:`NeuralClassifier`), the one batching
loop and ``explain`` (:class:`BatchedInference`), encoded inputs (:class:`EncodedInputs`),
training failures (:class:`TrainingDivergedError`) and persistence (:func:`save_estimator`,
:func:`load_estimator`, :func:`trusted_types`). The modules behind them are private: the fit
transaction and the skorch side, the saved-model folder, the explanation methods' contract and
loop (public through :mod:`interpretable.estimators.methods`)."""

# ``__all__`` is the public API; the names imported ``as`` themselves serve the
# package's other layers only
from interpretable.estimators.core._base import (
    NeuralEstimator,
)
from interpretable.estimators.core._classifier import (
    NeuralClassifier,
    native_bf16 as native_bf16,
)
from interpretable.estimators.core._encoded import (
    EncodedInputs,
)
from interpretable.estimators.core._inference import (
    BatchedInference,
)
from interpretable.estimators.core._persistence import (
    load_estimator,
    save_estimator,
)
from interpretable.estimators.core._state import (
    trusted_types,
)
from interpretable.estimators.core._training import (
    TrainingDivergedError,
)

__all__ = [
    "BatchedInference", "EncodedInputs", "NeuralClassifier", "NeuralEstimator",
    "TrainingDivergedError", "load_estimator", "save_estimator", "trusted_types",
]
