"""interpretable.utils._params: the constraints, the messages and their use by the estimators."""

import inspect
import os
from numbers import Integral, Real

import numpy as np
import pytest
import torch
from conformance.cases import _TINY_BERT

from interpretable import EmbeddingBagClassifier
from interpretable.utils._params import (
    HasMethods,
    Interval,
    InvalidParameterError,
    StrOptions,
    parameter_names,
    validate_parameters,
)

CONSTRAINTS = {
    "size": [Interval(Integral, 1, None, closed="left")],
    "rate": [Interval(Real, 0, 1, closed="right"), None],
    "mode": [StrOptions({"fast", "exact"}), HasMethods(["fit", "predict"])],
    "path": [str, os.PathLike],
    "flag": ["boolean"],
    "verbose": ["verbose"],
    "random_state": ["random_state"],
    "hook": [callable, None],
}


@pytest.mark.parametrize("name, value", [
    ("size", 1), ("size", np.int64(7)), ("rate", 1), ("rate", np.float32(0.5)), ("rate", None),
    ("mode", "exact"), ("mode", EmbeddingBagClassifier()), ("path", "a"),
    ("flag", np.bool_(True)), ("verbose", True), ("verbose", 2),
    ("random_state", np.random.RandomState(0)), ("random_state", 2**32 - 1), ("hook", print),
])
def test_accepted_values(name, value):
    validate_parameters(CONSTRAINTS, {name: value}, "Model")


@pytest.mark.parametrize("name, value, accepts", [
    ("size", 0, r"an int in the range \[1, inf\)"),
    ("size", 2.0, r"an int in the range \[1, inf\)"),
    ("size", True, r"an int in the range \[1, inf\)"),  # a bool is not a number here
    ("rate", 0, r"a float in the range \(0\.0, 1\.0\] or None"),
    ("rate", float("nan"), r"a float in the range \(0\.0, 1\.0\] or None"),
    ("mode", "slow", r"a str among \{'exact', 'fast'\} or an object implementing 'fit' and "
                     r"'predict'"),
    ("path", 3, r"an instance of 'str' or an instance of 'os\.PathLike'"),
    ("flag", 1, r"a bool"),
    ("verbose", -1, r"an int in the range \[0, inf\) or a bool"),
    ("random_state", -1, r"an int in the range \[0, 4294967295\], an instance of "
                         r"'numpy\.random\.RandomState' or None"),
    ("random_state", True, r"an int in the range \[0, 4294967295\]"),
    ("hook", "print", r"a callable or None"),
])
def test_refused_values_are_named_with_what_is_accepted(name, value, accepts):
    with pytest.raises(InvalidParameterError,
                       match=rf"^The '{name}' parameter of Model must be {accepts}") as error:
        validate_parameters(CONSTRAINTS, {name: value}, "Model")
    assert str(error.value).endswith(f". Got {value!r} instead.")


def test_error_is_a_value_error_and_a_type_error():
    for error in (ValueError, TypeError):
        with pytest.raises(error):
            validate_parameters(CONSTRAINTS, {"size": "3"}, "Model")


def test_parameters_without_constraint_are_not_checked_and_bad_constraints_refused():
    validate_parameters(CONSTRAINTS, {"other": object()}, "Model")
    with pytest.raises(ValueError, match="unknown constraint 'array-like'"):
        validate_parameters({"x": ["array-like"]}, {"x": 1}, "Model")
    for args, kwargs in [((Integral, 1.5, None), {"closed": "left"}),
                         ((Real, 1, 0), {"closed": "both"}),
                         ((Real, 0, 1), {"closed": "open"}), ((float, 0, 1), {"closed": "both"})]:
        with pytest.raises((TypeError, ValueError)):
            Interval(*args, **kwargs)


def test_estimators_validate_at_fit_and_at_inference():
    X, y = ["good film", "bad film", "great plot", "awful plot"], ["p", "n", "p", "n"]
    with pytest.raises(InvalidParameterError, match="'lr' parameter of EmbeddingBagClassifier "
                                                    r"must be a float in the range \(0\.0, inf\)"):
        EmbeddingBagClassifier(lr=True).fit(X, y)
    clf = EmbeddingBagClassifier(embed_dim=4, max_epochs=1, random_state=0).fit(X, y)
    clf.set_params(batch_size=0)
    with pytest.raises(InvalidParameterError, match="'batch_size' parameter"):
        clf.predict(X)


def test_estimator_init_is_plain():
    """``__init__`` stores its arguments and nothing else: its body is one assignment per
    parameter, and the signature, ``get_params`` and :func:`parameter_names` agree."""
    source = inspect.getsource(EmbeddingBagClassifier.__init__)
    names = parameter_names(EmbeddingBagClassifier)
    body = [line.strip() for line in source.split("):\n", 1)[1].splitlines() if line.strip()]
    assert sorted(body) == sorted(f"self.{n} = {n}" for n in names)
    assert names == sorted(EmbeddingBagClassifier().get_params(deep=False))
    assert not hasattr(EmbeddingBagClassifier.__init__, "__wrapped__")
    assert isinstance(EmbeddingBagClassifier(device=torch.device("cpu")).device, torch.device)


#: the text estimators at a tiny size (everything else at its default)
TINY_TEXT = {
    "EmbeddingBagClassifier": dict(embed_dim=8),
    "AttentionTextClassifier": dict(embed_dim=8, hidden_size=8),
    "DiversityLSTMClassifier": dict(embed_dim=8, hidden_size=8),
    "SEATClassifier": dict(embed_dim=8, hidden_size=8),
    "BcosTextClassifier": dict(checkpoint=_TINY_BERT, max_length=16),
}
TINY_TEXT["BertTextClassifier"] = TINY_TEXT["BcosTextClassifier"]


def _categorical_values(cls):
    """(parameter, value) for every value of every string option and boolean of ``cls``
    other than its default."""
    defaults = cls().get_params(deep=False)
    for name, constraints in sorted(cls._parameter_constraints.items()):
        values = [v for c in constraints if isinstance(c, StrOptions) for v in sorted(c.options)]
        values += [True, False] if "boolean" in constraints else []
        yield from ((name, value) for value in values if value != defaults[name])


@pytest.mark.parametrize("name, param, value", [
    (name, param, value) for name in TINY_TEXT
    for param, value in _categorical_values(getattr(__import__("interpretable"), name))])
def test_text_estimators_fit_with_every_value_of_every_categorical_option(name, param, value):
    import interpretable

    X = ["a great film", "an awful film", "great acting", "dull acting"] * 4
    y = ["pos", "neg", "pos", "neg"] * 4
    options = {**TINY_TEXT[name], "max_epochs": 1, "random_state": 0, "device": "cpu",
               param: value}
    clf = getattr(interpretable, name)(**options).fit(X, y)
    assert clf.predict(X[:2]).shape == (2,)
