"""Attributions computed from a model's parts: the exact per-head split of a B-cos ViT's
contributions (:func:`head_contributions`), and the per-method functions behind the
explainers (:mod:`interpretable.attribution.vision`, :mod:`interpretable.attribution.text`,
the Quantus adapter :mod:`interpretable.attribution.quantus_adapter`)."""
from interpretable.attribution.heads import HeadContributions, head_contributions

__all__ = ["HeadContributions", "head_contributions"]
