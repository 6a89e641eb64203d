"""SEAT (stable and explainable attention): the estimator and its training procedures as
variant objects (the contract :class:`SEATVariant` and :class:`TrainingPhase`, the papers'
baselines, SEAT and the authors' SEAT)."""

# ``__all__`` is the public API; the names imported ``as`` themselves serve the
# package's other layers only
from interpretable.estimators.seat._baselines import (
    AttentionAT,
    AttentionRP,
    Vanilla,
    WordAT,
)
from interpretable.estimators.seat._estimator import (
    SEATClassifier,
)
from interpretable.estimators.seat._phases import (
    SEATVariant,
    TrainingPhase,
)
from interpretable.estimators.seat._variants import (
    SEAT,
    VARIANTS as VARIANTS,
    AuthorsSEAT,
)

__all__ = [
    "SEAT", "AttentionAT", "AttentionRP", "AuthorsSEAT", "SEATClassifier", "SEATVariant",
    "TrainingPhase", "Vanilla", "WordAT",
]
