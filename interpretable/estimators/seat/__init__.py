"""SEAT (stable and explainable attention): the estimator and its training procedures as
variant objects (the variant contract in :mod:`.phases`, the papers' baselines in
:mod:`.baselines`, SEAT and the authors' SEAT in :mod:`.variants`)."""
from interpretable.estimators.seat.baselines import AttentionAT, AttentionRP, Vanilla, WordAT
from interpretable.estimators.seat.estimator import SEATClassifier
from interpretable.estimators.seat.phases import SEATVariant, TrainingPhase
from interpretable.estimators.seat.variants import SEAT, AuthorsSEAT

__all__ = ["SEAT", "AttentionAT", "AttentionRP", "AuthorsSEAT", "SEATClassifier", "SEATVariant",
           "TrainingPhase", "Vanilla", "WordAT"]
