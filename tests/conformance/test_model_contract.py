"""The public model contract, on every estimator in ``cases.CASES``: pure and thread-safe
explain / predict, one explain signature, declarative parameter validation
(:mod:`interpretable.utils._params`), transactional fit, and the package layout rules."""

import ast
import copy
import inspect
import threading
from numbers import Integral
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.utils import estimator_checks as ec

import interpretable
from conformance.cases import CASES
from interpretable.estimators.methods import get_explainer
from interpretable.utils._params import Interval, InvalidParameterError, StrOptions

#: cheap options of the slower explanation methods (the methods are checked, not their
#: defaults' cost)
CHEAP = {"integrated_gradients": {"n_steps": 4}, "smoothgrad": {"nt_samples": 2},
         "smoothgrad_integrated_gradients": {"nt_samples": 2, "n_steps": 4},
         "gradient_shap": {"n_samples": 2}}


EXPLAINING = [c for c in CASES if c.explains]


def _fit(case):
    X, y, X_test = case.data()
    est = case.make()
    est.fit(X, y) if y is not None else est.fit(X)
    return est, X, y, X_test


def _calls(est, X_test):
    """One call per explanation method (cheap options), plus predict_proba."""
    calls = [("predict_proba", lambda: est.predict_proba(X_test))]
    for method in est.explain_methods:
        options = CHEAP.get(method, {})
        calls.append((method, lambda m=method, o=options: est.explain(X_test, method=m, **o)))
    if "inherent" in est.explain_methods and hasattr(est, "n_channels_"):
        options = get_explainer(est, "inherent").options()
        if "by" in options:  # the ViTs' residual-stream terms
            calls.append(("inherent-by-head", lambda: est.explain(X_test, by="head")))
        if "layer" in options:  # the ResNet's maps of a layer's input
            calls.append(("inherent-layer", lambda: est.explain(X_test, layer="layer2")))
        calls.append(("inherent-float64", lambda: est.explain(X_test, dtype="float64")))
    return calls


def _arrays(result):
    """Every array of a result (explanation or predict output), flattened, in field order."""
    if isinstance(result, np.ndarray):
        return [result]
    if isinstance(result, list):
        return [np.asarray(r) for r in result]
    out = []
    for name in ("values", "logit", "bias", "target", "prediction", "weights", "components"):
        value = getattr(result, name, None)
        if value is not None:
            out.extend([np.asarray(v) for v in value] if isinstance(value, list) else [value])
    return out


def _module_state(module):
    """state_dict copy plus every submodule's attributes (flags, hooks, children)."""
    tensors = {k: v.detach().clone() for k, v in module.state_dict().items()}
    attributes = {name: {k: (v if isinstance(v, (bool, int, float, str, type(None)))
                             else id(v)) for k, v in vars(m).items() if k != "_parameters"
                             and k != "_buffers"}
                  for name, m in module.named_modules()}
    return tensors, attributes


@pytest.mark.parametrize("case", CASES, ids=str)
def test_explain_and_predict_are_thread_safe_and_pure(case):
    """4 threads × all methods (mixed order) give bit-identical results to sequential calls,
    and the fitted model (state_dict, module attributes, estimator attributes) is unchanged."""
    est, X, y, X_test = _fit(case)
    calls, expected = [], {}
    for name, call in _calls(est, X_test):
        try:
            expected[name] = _arrays(call())
        except ValueError:  # e.g. SEAT's "vanilla" on a model trained without SEAT
            continue
        calls.append((name, call))
    tensors, attributes = _module_state(est.module_)
    estimator_attributes = {k: id(v) for k, v in vars(est).items()}
    results, errors = [], []

    def work(shift):
        try:
            order = calls[shift % len(calls):] + calls[: shift % len(calls)]
            for _ in range(2):
                for name, call in order:
                    results.append((name, _arrays(call())))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 8 * len(calls)
    for name, arrays in results:
        assert len(arrays) == len(expected[name])
        for a, b in zip(arrays, expected[name], strict=True):
            np.testing.assert_array_equal(a, b, err_msg=name)
    after_tensors, after_attributes = _module_state(est.module_)
    assert after_attributes == attributes
    for k, v in after_tensors.items():
        assert torch.equal(v, tensors[k]), k
    assert {k: id(v) for k, v in vars(est).items()} == estimator_attributes


@pytest.mark.parametrize("case", EXPLAINING, ids=str)
def test_one_explain_signature(case):
    est, X, y, X_test = _fit(case)
    signature = inspect.signature(type(est).explain)
    assert list(signature.parameters)[:3] == ["self", "X", "target"]
    assert {"method", "batch_size"} <= {
        n for n, p in signature.parameters.items() if p.kind is p.KEYWORD_ONLY}
    assert est.explain_methods and all(isinstance(m, str) for m in est.explain_methods)
    default = est.explain(X_test)
    assert default.method == est.explain_methods[0]
    assert len(default) == len(X_test) if not isinstance(X_test, str) else True
    with pytest.raises(TypeError, match="no_such_option"):
        est.explain(X_test, no_such_option=1)
    with pytest.raises(ValueError, match="method='nope'"):
        est.explain(X_test, method="nope")
    with pytest.raises(ValueError, match="batch_size"):
        est.explain(X_test, batch_size=-1)
    small = est.explain(X_test, batch_size=1)
    for a, b in zip(_arrays(small), _arrays(default), strict=True):
        np.testing.assert_allclose(a.astype(float) if a.dtype.kind in "fiu" else 0,
                                   b.astype(float) if b.dtype.kind in "fiu" else 0,
                                   rtol=1e-4, atol=1e-5)  # float32 batch effects


@pytest.mark.parametrize("case", CASES, ids=str)
def test_every_parameter_has_a_constraint(case):
    est = case.make()
    assert set(est._parameter_constraints) == set(est.get_params(deep=False))


def _invalid_values(constraint) -> list:
    """Values of a constraint's own type that it refuses: beyond an interval's bounds (and an
    excluded bound), a string not among the options, a negative verbosity or seed."""
    if isinstance(constraint, StrOptions):
        return ["not " + " or ".join(sorted(constraint.options))]
    if isinstance(constraint, Interval):
        left, right, closed = constraint.left, constraint.right, constraint.closed
        values = [] if left is None else [left - 1] + ([left] if closed in ("right", "neither")
                                                       else [])
        return values + ([] if right is None else
                         [right + 1] + ([right] if closed in ("left", "neither") else []))
    return [-1] if constraint in ("verbose", "random_state") else []


@pytest.mark.parametrize("case", CASES, ids=str)
def test_invalid_parameters_are_refused_naming_them(case):
    """What scikit-learn's check_param_validation verifies, on the package's constraints (its
    check reads scikit-learn's private constraint classes): for every parameter, a value of no
    accepted type and values of an accepted type that its constraint refuses make ``fit`` raise
    an InvalidParameterError (a ValueError and a TypeError) naming the parameter, what it
    accepts and the value, before any training."""
    X, y, _ = case.data()
    est = case.make()
    name = type(est).__name__
    bad_type = type("BadType", (), {})()
    for param, constraints in est._parameter_constraints.items():
        for value in [bad_type, *(v for c in constraints for v in _invalid_values(c))]:
            bad = clone(est).set_params(**{param: value})
            with pytest.raises(InvalidParameterError, match=rf"The '{param}' parameter of "
                                                            rf"{name} must be .* Got .* instead\."):
                bad.fit(X, y) if y is not None else bad.fit(X)


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("check", [ec.check_valid_tag_types, ec.check_estimator_tags_renamed,
                                   ec.check_no_attributes_set_in_init,
                                   ec.check_estimators_overwrite_params],
                         ids=lambda c: c.__name__)
def test_sklearn_checks_allowed_by_the_tags(case, check):
    """scikit-learn's checks that do not need 2-d numeric data (the estimators' tags declare
    text, symbol-sequence or image input, so check_estimator skips the data checks as a whole).

    check_estimators_overwrite_params fits on 2-d random data: an estimator whose inputs are
    not 2-d arrays must refuse it before touching its parameters, which is what it verifies.
    The data checks of ``_yield_checks`` / ``_yield_classifier_checks`` (NaN/inf, dtypes,
    sparse, sample weights, fit2d_*, n_features_in_, ...) feed 2-d numeric arrays: they run in
    test_sklearn_checks.py, mostly as declared expected failures; their intent is covered on the
    estimators' own inputs there and by test_bad_input.py, test_contracts.py and test_faults.py.
    """
    est = case.make()
    if check is ec.check_estimators_overwrite_params:
        with pytest.raises((ValueError, TypeError)):
            check(type(est).__name__, est)
        return
    check(type(est).__name__, est)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_numpy_scalars_are_accepted_and_bad_values_named(case):
    X, y, X_test = case.data()
    est = clone(case.make()).set_params(lr=np.float32(0.01), max_epochs=np.int64(1),
                                        batch_size=np.int32(16))
    est.fit(X, y) if y is not None else est.fit(X)
    for name, value in (("weight_decay", -1.0), ("max_epochs", 0), ("lr", float("nan")),
                        ("batch_size", True), ("optimizer", "adagrad")):
        bad = clone(case.make()).set_params(**{name: value})
        with pytest.raises(ValueError, match=name):
            bad.fit(X, y) if y is not None else bad.fit(X)


def test_text_encoder_is_a_grid_searchable_nested_parameter():
    from interpretable import EmbeddingBagClassifier
    from interpretable.preprocessing import TextEncoder

    est = EmbeddingBagClassifier(text_encoder=TextEncoder(min_freq=2))
    assert est.get_params()["text_encoder__min_freq"] == 2
    est.set_params(text_encoder__min_freq=3)
    assert est.text_encoder.min_freq == 3
    X, y, _ = CASES[0].data()
    est.set_params(max_epochs=1, embed_dim=4).fit(X, y)
    assert est.text_encoder_ is not est.text_encoder  # the parameter is cloned, never fitted
    assert not hasattr(est.text_encoder, "vocabulary_")


def test_seat_on_a_fitted_diversity_lstm_base():
    from interpretable import DiversityLSTMClassifier, SEATClassifier
    from interpretable.estimators.seat import SEAT

    X, y, X_test = CASES[0].data()
    base = DiversityLSTMClassifier(cell="orthogonal", embed_dim=8, hidden_size=8, max_epochs=2,
                                   random_state=0).fit(X, y)
    before = copy.deepcopy(base.module_.state_dict())
    seat = SEATClassifier(base_estimator=base, variant=SEAT(epochs=1, pgd_steps=2),
                          random_state=0).fit(X, y)
    assert seat.architecture_["encoder"] == "orthogonal"
    assert seat.explain(X_test, method="vanilla").units == base.explain(X_test).units
    # the vanilla view is the base model exactly; the base is never trained in place
    np.testing.assert_allclose(
        np.concatenate(seat.explain(X_test, method="vanilla").values),
        np.concatenate(base.explain(X_test).values), rtol=1e-6)
    for k, v in base.module_.state_dict().items():
        assert torch.equal(v, before[k])


def test_scorers_work_with_every_text_estimator_or_fail_clearly():
    from sklearn.model_selection import cross_val_score

    from interpretable import EmbeddingBagClassifier
    from interpretable.metrics import make_explanation_scorer, make_stability_scorer

    X, y, _ = CASES[0].data()
    est = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    scores = cross_val_score(est, X, y, cv=2, error_score="raise",
                             scoring=make_explanation_scorer("sufficiency", fractions=(0.2,)))
    assert np.isfinite(scores).all()
    with pytest.raises(ValueError, match="attention or a gradient method"):
        cross_val_score(est, X, y, cv=2, error_score="raise",
                        scoring=make_stability_scorer("embedding", radius=1e-2))
    scores = cross_val_score(est, X, y, cv=2, error_score="raise",
                             scoring=make_stability_scorer("embedding", radius=1e-2,
                                                           method="input_x_gradient"))
    assert np.isfinite(scores).all()


# ---------------------------------------------------------------------------- layout
PACKAGE = Path(interpretable.__file__).parent


def _typing_only(tree: ast.AST) -> set[ast.AST]:
    """The import statements inside ``if TYPE_CHECKING:`` blocks: annotations only, never run."""
    return {node for block in ast.walk(tree)
            if isinstance(block, ast.If) and isinstance(block.test, ast.Name)
            and block.test.id == "TYPE_CHECKING"
            for statement in block.body for node in ast.walk(statement)}


def _imports(path: Path, runtime_only: bool = False):
    """(module, imported names) of every ``from ... import ...`` in a file, resolved to the
    absolute module name (``runtime_only``: not those of ``if TYPE_CHECKING:`` blocks)."""
    tree = ast.parse(path.read_text())
    package = ".".join(("interpretable", *path.relative_to(PACKAGE).parent.parts))
    skipped = _typing_only(tree) if runtime_only else set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node not in skipped:
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield module, [a.name for a in node.names]


def _folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else ""


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layout(path):
    """nn/ imports only torch and nn/; no underscored name crosses a package folder (the
    package's own top-level private modules, ``interpretable._validation`` and the like, are
    its shared internals: every folder may use them)."""
    here = ".".join(("interpretable", *path.relative_to(PACKAGE).with_suffix("").parts))
    for module, names in _imports(path):
        if not module.startswith("interpretable"):
            continue
        if _folder(here) == "nn":
            assert module.startswith("interpretable.nn"), (here, module)
        if _folder(module) != _folder(here):
            private = [n for n in names if n.startswith("_") and not n.endswith("__")]
            shared = module.count(".") == 1  # interpretable._validation: the package's own
            private += [p for p in module.split(".")[1:] if p.startswith("_") and not shared]
            assert not private, (here, module, private)


def test_no_private_scikit_learn_names():
    """scikit-learn is used through its public API only: no module of the package imports a
    private module or name of it (parameter validation is :mod:`interpretable.utils._params`)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and not node.level \
                    and (node.module or "").split(".")[0] == "sklearn":
                parts = node.module.split(".") + [alias.name for alias in node.names]
            elif isinstance(node, ast.Import):
                parts = [part for alias in node.names if alias.name.split(".")[0] == "sklearn"
                         for part in alias.name.split(".")]
            else:
                continue
            if any(part.startswith("_") for part in parts):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, found


#: the layers, lowest first: a module may import its own layer and those below it
LAYERS = [{"_version", "nn", "_validation", "utils", "_progress", "_optional", "datasets"},
          {"preprocessing", "attribution"}, {"explanation"}, {"estimators"},
          {"metrics", "integrations"}, {"reproduce", "__main__", "__init__"}]
#: estimators/: what every family shares, and one subpackage per model family
FAMILIES = {"core", "text", "seat", "transformer", "vision", "sequence"}


def _layer(module: str) -> int:
    folder = module.split(".")[1] if module.count(".") else "__init__"
    return next(i for i, names in enumerate(LAYERS) if folder in names)


def _module_graph() -> dict:
    """``{module: {imported package modules}}`` over the whole package (imports inside
    functions included: they are dependencies too; those only type checkers read, under
    ``if TYPE_CHECKING:``, are not)."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(("interpretable", *(parts[:-1] if parts[-1] == "__init__" else parts)))
        graph[name] = [(module, names) for module, names in _imports(path, runtime_only=True)
                       if module.startswith("interpretable")]
    # `from . import text` imports the submodule `text`
    return {name: {f"{m}.{n}" if f"{m}.{n}" in graph else m for m, names in imports
                   for n in names} for name, imports in graph.items()}


def test_estimators_are_grouped_by_family():
    """estimators/ holds the family subpackages and the methods' listing, no loose modules."""
    root = PACKAGE / "estimators"
    folders = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    loose = {p.name for p in root.glob("*.py")}
    assert folders == FAMILIES | {"methods"}
    assert loose == {"__init__.py"}
    assert [p.name for p in (root / "methods").iterdir() if p.suffix == ".py"] == \
        ["__init__.py"]


def test_imports_point_down_and_never_circle():
    """No module imports a higher layer; families import core and the families they build on
    (text <- seat, transformer), never core a family; no import circle between modules."""
    graph = _module_graph()
    for module, targets in graph.items():
        for target in targets:
            assert _layer(target) <= _layer(module), (module, target)
            if module.startswith("interpretable.estimators.core"):
                assert target.split(".")[2:3] in (["core"], []) \
                    or not target.startswith("interpretable.estimators"), (module, target)
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                circle = stack[stack.index(target):] + [target]
                # a package's __init__ importing its own submodules is not a circle
                if not all(m.startswith(circle[0]) for m in circle):
                    raise AssertionError(" -> ".join(circle))
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_parameters_changed_after_fit_are_checked_at_inference(case):
    """set_params after fit: inference validates what it reads and names the parameter."""
    est, X, y, X_test = _fit(case)
    for value in (0, -1, 2.5):
        est.set_params(batch_size=value)
        with pytest.raises(ValueError, match="batch_size"):
            est.predict_proba(X_test)
        if case.explains:
            with pytest.raises(ValueError, match="batch_size"):
                est.explain(X_test)
    est.set_params(batch_size=4)
    assert len(est.predict_proba(X_test)) == len(X_test)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_degenerate_architectures_are_refused_at_fit(case):
    """Every size that would build a zero-width layer (or no heads, no layers) is a ValueError
    naming it, raised before training."""
    X, y, _ = case.data()
    est = case.make()
    sizes = [name for name, constraints in est._parameter_constraints.items()
             if name not in ("max_epochs", "batch_size", "n_iter_no_change")
             and any(isinstance(c, Interval) and c.type is Integral and c.left == 1
                     for c in constraints)]
    if hasattr(est, "mlp_ratio"):
        sizes.append("mlp_ratio")
    refused = [(name, {name: 0.01 if name == "mlp_ratio" else 0}) for name in sizes]
    checkpoint = est.get_params().get("checkpoint")
    if isinstance(checkpoint, str) and not refused:
        pytest.skip("the architecture is the checkpoint folder's (transformers checks it)")
    if isinstance(checkpoint, dict):  # a BERT-family architecture comes in its config
        refused += [(field, {"checkpoint": {**checkpoint, field: 0}}) for field in
                    ("hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size")]
    assert refused, "no architecture size parameter found"
    for name, params in refused:
        bad = clone(est).set_params(**params)
        with pytest.raises(ValueError, match=name):
            bad.fit(X, y) if y is not None else bad.fit(X)


@pytest.mark.parametrize("case", EXPLAINING, ids=str)
def test_class_independence_is_the_explainers(case):
    """Every explanation says whether its method is class-independent, as the explainer
    declares it (attention, rollout: the same values whatever the target)."""
    from interpretable.estimators.methods import get_explainer

    est, X, y, X_test = _fit(case)
    for method in est.explain_methods:
        options = {"n_steps": 2} if method == "integrated_gradients" else CHEAP.get(method, {})
        try:
            exp = est.explain(X_test[:2], method=method, **options)
        except ValueError:  # SEAT's "vanilla" without a vanilla attention
            continue
        assert exp.class_independent is get_explainer(est, method).class_independent, method
        assert exp.to_frame()["class_independent"].eq(exp.class_independent).all()
