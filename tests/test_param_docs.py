"""The training parameters are documented in every estimator's docstring (scikit-learn's habit:
each class documents all its parameters); this keeps the copies in agreement: within the
classifiers and within the sequence models, every estimator with the same default documents a
training parameter with the same words."""
import inspect
from collections import defaultdict

import pytest
from numpydoc.docscrape import ClassDoc

import interpretable
from interpretable.estimators.core._base import NeuralEstimator
from interpretable.estimators.core._classifier import NeuralClassifier

#: the parameters of the shared training block (:mod:`interpretable.estimators.core`)
TRAINING_PARAMS = ("lr", "max_epochs", "batch_size", "optimizer", "weight_decay", "device",
                   "random_state", "verbose", "callbacks", "validation_fraction",
                   "early_stopping", "n_iter_no_change", "warm_start", "precision",
                   "inference_precision", "accelerator", "class_weight")
ESTIMATORS = [obj for name in interpretable.__all__
              if inspect.isclass(obj := getattr(interpretable, name))
              and issubclass(obj, NeuralEstimator)]


def _documented(estimator) -> dict:
    """Parameter name -> its type line and description (whitespace normalised)."""
    return {p.name: (p.type, " ".join(" ".join(p.desc).split()))
            for p in ClassDoc(estimator)["Parameters"]}


@pytest.mark.parametrize("name", TRAINING_PARAMS)
def test_every_copy_of_a_training_parameter_says_the_same(name):
    copies = defaultdict(lambda: defaultdict(list))  # (family, default) -> text -> estimators
    for estimator in ESTIMATORS:
        signature = inspect.signature(estimator.__init__).parameters
        if name not in signature:
            continue
        documented = _documented(estimator)
        assert name in documented, f"{estimator.__name__} does not document {name!r}"
        family = "classifier" if issubclass(estimator, NeuralClassifier) else "sequence"
        key = (family, repr(signature[name].default))
        copies[key][documented[name]].append(estimator.__name__)
    assert copies, f"no estimator takes {name!r}"
    for (family, default), texts in copies.items():
        assert len(texts) == 1, (
            f"{name!r} (default {default}) is documented {len(texts)} ways among the "
            f"{family} estimators: " + "; ".join(f"{owners}: {text}"
                                                 for text, owners in texts.items()))


def test_the_check_fails_on_a_diverging_copy(monkeypatch):
    """The comparison catches a copy that says something else."""
    from interpretable import EmbeddingBagClassifier

    doc = EmbeddingBagClassifier.__doc__
    assert "Mini-batch size for training and inference" in doc
    monkeypatch.setattr(EmbeddingBagClassifier, "__doc__",
                        doc.replace("Mini-batch size for training and inference",
                                    "Mini-batch size for training"))
    with pytest.raises(AssertionError, match="'batch_size'.*2 ways"):
        test_every_copy_of_a_training_parameter_says_the_same("batch_size")
