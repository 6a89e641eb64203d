"""Quantus metrics called as Quantus documents them: every metric passes its
``device`` argument on to ``explain_func``, which must accept it (and the other arguments
Quantus's own ``explain`` takes) instead of forwarding them to ``explain``."""

import numpy as np
import pytest
from conformance.cases import _TINY_VIT, _digits

from interpretable import BcosViTClassifier
from interpretable.attribution._quantus import QuantusModel, explain_func

quantus = pytest.importorskip("quantus")


@pytest.fixture(scope="module")
def batch():
    """A tiny fitted B-cos ViT and 8 digits, channel first, with their class indices."""
    X, y, _ = _digits(120)
    clf = BcosViTClassifier(**_TINY_VIT).fit(X, y)
    images = np.moveaxis(X[:8, :, :, None], -1, 1).astype(np.float32)
    return clf, images, np.searchsorted(clf.classes_, y[:8])


METRICS = {
    "Sparseness": lambda: quantus.Sparseness(disable_warnings=True),
    "RandomLogit": lambda: quantus.RandomLogit(num_classes=10, disable_warnings=True),
    "FaithfulnessCorrelation": lambda: quantus.FaithfulnessCorrelation(
        nr_runs=3, subset_size=8, perturb_baseline="black", return_aggregate=False,
        disable_warnings=True),
    "Focus": lambda: quantus.Focus(disable_warnings=True),
}


@pytest.mark.parametrize("kwargs", [{"method": "inherent"}, {"softmax": False}, {}],
                         ids=["method", "softmax", "none"])
@pytest.mark.parametrize("name", METRICS)
def test_quantus_metrics_called_with_a_device(batch, name, kwargs):
    clf, images, labels = batch
    extra = {}
    if name == "Focus":  # 2x2 mosaics of 4x4 cells, the target in the top-left one
        extra["custom_batch"] = [(1, 0, 0, 0)] * len(images)
    scores = METRICS[name]()(model=QuantusModel(clf), x_batch=images, y_batch=labels,
                             explain_func=explain_func, explain_func_kwargs=kwargs,
                             device="cpu", **extra)
    assert len(scores) == len(images) and np.isfinite(np.asarray(scores, float)).all()


def test_explanations_of_probabilities_are_refused(batch):
    clf, images, labels = batch
    with pytest.raises(ValueError, match="softmax=True"):
        explain_func(QuantusModel(clf), images, labels, softmax=True, device="cpu")
