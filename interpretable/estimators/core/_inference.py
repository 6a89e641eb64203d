"""Inference with a fitted estimator: the one batching loop over encoded inputs, forward
passes of the fitted module, dtype copies and ``explain`` (dispatched to the methods the
estimator's class declares in ``explainers``, :mod:`.explainer`).

:class:`BatchedInference` is a mixin of :class:`~.base.NeuralEstimator`: it reads the fitted
``module_`` and ``device_``, the ``batch_size`` and ``verbose`` parameters and
``_parameter_constraints``, and calls ``encode`` through the explainers.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import threading
import weakref
from collections.abc import Hashable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import torch
from sklearn.utils.validation import check_is_fitted

from interpretable._progress import SHOW_PROGRESS, interactive, progress_bar
from interpretable._validation import check_batch_size
from interpretable.estimators.core._explainer import explainers_for, get_explainer
from interpretable.utils import validate_parameters

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from typing_extensions import Self

    from interpretable.estimators.core._encoded import EncodedInputs
    from interpretable.estimators.core._explainer import Explainer
    from interpretable.explanation import ImageExplanation, SequenceExplanation, TokenExplanation

__all__ = ["BatchedInference"]


def _versions(module: torch.nn.Module) -> tuple:
    """The in-place version counters of a module's tensors: any change of a weight moves
    one."""
    return tuple(t._version for t in (*module.parameters(), *module.buffers()))


class _DtypeCopies:
    """Copies of fitted modules in another precision (``explain(dtype="float64")``), made
    once per fitted module and dtype and shared by every thread; a copy is made afresh when
    its source or the copy itself changed in place since (their tensors' version counters).
    The fitted module itself is never touched; a module's copies go with it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._copies = weakref.WeakKeyDictionary()  # module -> {dtype: (versions, copy)}

    def get(self, module: torch.nn.Module, dtype: torch.dtype) -> torch.nn.Module:
        with self._lock:
            copies = self._copies.setdefault(module, {})
            versions, made = copies.get(dtype, (None, None))
            if made is None or versions != (_versions(module), _versions(made)):
                made = copy.deepcopy(module).to(dtype)
                copies[dtype] = ((_versions(module), _versions(made)), made)
            return made


_DTYPE_COPIES = _DtypeCopies()

#: the estimators (ids) that the public call in progress in this thread checked
#: (:meth:`BatchedInference._fitted_call`): the public methods it runs on the way (``encode``,
#: ``iter_batches``, ``astype``) do not check them again, as scikit-learn's
#: ``prefer_skip_nested_validation`` skips nested parameter validation
_CHECKED: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "interpretable_checked_fitted", default=frozenset())


class _ExplainMethods:
    """``explain_methods``: the names of the methods the estimator's class declares in
    ``explainers`` (on the class or an instance), its default first."""

    def __get__(self, instance, owner) -> tuple[str, ...]:
        return tuple(explainer.name for explainer in explainers_for(owner))


class BatchedInference:
    """Mixin of :class:`~.base.NeuralEstimator`: inference with the fitted module.

    Every batch of every inference call (``predict``, ``explain``, the metrics) comes from
    :meth:`iter_batches`; subclasses tune it with ``_trim_batch`` (cut padding) and
    ``_inference_order`` (similar lengths together).

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.estimators.core import BatchedInference
    >>> issubclass(EmbeddingBagClassifier, BatchedInference)
    True
    """

    #: the parameters inference reads, validated at every inference call (``set_params`` may
    #: have changed them after fit)
    _inference_parameters: tuple[str, ...] = ("batch_size", "verbose")
    explain_methods = _ExplainMethods()

    if TYPE_CHECKING:  # what the explainers call of the estimator this is mixed into
        def encode(self, X: ArrayLike) -> EncodedInputs: ...

    def _check_fitted(self) -> None:
        """NotFittedError before fit; a ValueError naming a parameter that inference reads
        and ``set_params`` made invalid after fit. Done once per public call
        (:meth:`_fitted_call`)."""
        if id(self) in _CHECKED.get():
            return
        check_is_fitted(self, "module_")
        names = self._inference_parameters
        validate_parameters({k: self._parameter_constraints[k] for k in names},
                            {k: getattr(self, k) for k in names}, type(self).__name__)

    @contextlib.contextmanager
    def _fitted_call(self, *, check: bool = True):
        """The block of a public call: the estimator is checked here, once
        (:meth:`_check_fitted`; ``check=False``: the caller checked it, e.g. this is a copy
        of a checked estimator), and the public methods the call runs skip the check.
        Thread-safe: the skip holds for this thread's call only."""
        if check:
            self._check_fitted()
        token = _CHECKED.set(_CHECKED.get() | {id(self)})
        try:
            yield
        finally:
            _CHECKED.reset(token)

    def _trim_batch(self, batch: dict) -> dict:
        """Per-batch preprocessing of the device tensors (text models cut padding)."""
        return batch

    def _inference_order(self, inputs) -> torch.Tensor | None:
        """A permutation ``(n,)`` of the samples that makes batched inference cheaper (texts
        and sequences: longest first, so each trimmed batch holds similar lengths), or None."""
        return None

    def iter_batches(self, inputs: Mapping[str, torch.Tensor], batch_size: int | None = None,
                     *, ordered: bool = False
                     ) -> Iterator[tuple[slice | torch.Tensor, dict[str, torch.Tensor]]]:
        """Yield the mini-batches of encoded inputs on ``device_``: the one batching loop.

        Parameters
        ----------
        inputs : mapping of str to torch.Tensor
            Encoded inputs (``encode(X).inputs``), sample axis first.
        batch_size : int or None, default=None
            Samples per batch; None: the estimator's ``batch_size`` (checked again:
            ``set_params`` may have changed it after fit).
        ordered : bool, default=False
            Batch samples of similar lengths together (texts and sequences: longest first).

        Yields
        ------
        rows : slice or torch.Tensor
            The batch's rows of ``inputs``: a slice, or with ``ordered=True`` their indices
            ``(b,)``.
        batch : dict of str to torch.Tensor
            Those rows on ``device_``, trimmed of padding.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> inputs = clf.encode(["good film", "bad", "great movie"]).inputs
        >>> [rows for rows, batch in clf.iter_batches(inputs, batch_size=2)]
        [slice(0, 2, None), slice(2, 3, None)]
        """
        self._check_fitted()
        step = check_batch_size(batch_size, default=self.batch_size)
        order = self._inference_order(inputs) if ordered else None
        if order is not None:
            inputs = {k: v[order] for k, v in inputs.items()}
        n = len(next(iter(inputs.values())))
        starts = range(0, n, step)
        if SHOW_PROGRESS.get() and len(starts) > 1 and interactive():
            starts = progress_bar(starts, desc=f"{type(self).__name__}.explain", unit="batch")
        for start in starts:
            rows = slice(start, min(start + step, n))
            batch = self._trim_batch({k: v[rows].to(self.device_) for k, v in inputs.items()})
            yield (rows if order is None else order[rows]), batch

    def forward_batch(self, batch: dict[str, torch.Tensor], **options: Any) -> Any:
        """Run the fitted module on one batch of device tensors.

        No gradient mode is set; the fitted module is never changed.

        Parameters
        ----------
        batch : dict of str to torch.Tensor
            One batch from :meth:`iter_batches`.
        **options
            Keyword arguments of the module's ``forward``.

        Returns
        -------
        object
            The module's output (for the classifiers, the logits ``(b, n_classes)`` or a tuple
            starting with them).

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> inputs = clf.encode(["good film"]).inputs
        >>> _, batch = next(clf.iter_batches(inputs))
        >>> clf.forward_batch(batch).shape
        torch.Size([1, 2])
        """
        return self.module_(**batch, **options)

    def forward_batches(self, inputs: Mapping[str, torch.Tensor], *,
                        batch_size: int | None = None, grad: bool = False,
                        ordered: bool = False, **options: Any
                        ) -> Iterator[tuple[slice | torch.Tensor, dict[str, torch.Tensor], Any]]:
        """Run the fitted module over the mini-batches of :meth:`iter_batches`.

        Parameters
        ----------
        inputs : mapping of str to torch.Tensor
            Encoded inputs (``encode(X).inputs``), sample axis first.
        batch_size : int or None, default=None
            Samples per batch; None: the estimator's ``batch_size``.
        grad : bool, default=False
            Whether autograd records the forward passes.
        ordered : bool, default=False
            Batch samples of similar lengths together (see :meth:`iter_batches`).
        **options
            Keyword arguments of the module's ``forward``.

        Yields
        ------
        rows : slice or torch.Tensor
            The batch's rows of ``inputs``.
        batch : dict of str to torch.Tensor
            Those rows on ``device_``.
        output : object
            :meth:`forward_batch`'s output for them.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> inputs = clf.encode(["good film", "bad"]).inputs
        >>> [tuple(out.shape) for _, _, out in clf.forward_batches(inputs)]
        [(2, 2)]
        """
        with torch.set_grad_enabled(grad):
            for rows, batch in self.iter_batches(inputs, batch_size, ordered=ordered):
                yield rows, batch, self.forward_batch(batch, **options)

    def astype(self, dtype: str | torch.dtype) -> Self:
        """Return a copy of this fitted estimator whose module computes in ``dtype``.

        This estimator is unchanged; the copy shares everything but the module, which is made
        once per fitted module and dtype (later calls, from any thread, share it; it is made
        again when either module's weights changed in place).

        Parameters
        ----------
        dtype : str or torch.dtype
            A floating-point dtype or its name, e.g. ``"float64"`` or ``torch.float64``:
            explanations exact to ~1e-12 instead of float32 rounding.

        Returns
        -------
        NeuralEstimator
            The copy.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> next(clf.astype("float64").module_.parameters()).dtype
        torch.float64
        """
        self._check_fitted()
        resolved = dtype if isinstance(dtype, torch.dtype) else \
            getattr(torch, dtype, None) if isinstance(dtype, str) else None
        if not isinstance(resolved, torch.dtype) or not resolved.is_floating_point:
            raise ValueError(f"dtype must be a floating-point torch dtype or its name (e.g. "
                             f"'float64' or torch.float64), got {dtype!r}.")
        new = copy.copy(self)
        new.module_ = _DTYPE_COPIES.get(self.module_, resolved)
        return new

    # ------------------------------------------------------------------ explain
    def explain(self, X: ArrayLike, target: Hashable | ArrayLike | None = None, *,
                contrast: Hashable | ArrayLike | None = None,
                method: str | Explainer | None = None, batch_size: int | None = None,
                **options: Any) -> TokenExplanation | ImageExplanation | SequenceExplanation:
        """Explain the ``target`` outputs of ``X`` with ``method``.

        Parameters
        ----------
        X : sequence of shape (n_samples,)
            Inputs as for ``predict``.
        target : label, array-like of shape (n_samples,) or None, default=None
            None: the predicted class (symbol); one label for all samples, or one per sample.
        contrast : "mean", label, array-like of shape (n_samples,) or None, default=None
            Explain a difference of logits instead of the target's logit (classifiers):
            ``"mean"``, the target's logit minus the mean of all the classes' logits (what
            sets the target apart from the other classes: in a multi-class problem every word
            may raise the target's own logit); a label (one for all samples, or one per
            sample), the target's logit minus that class's logit. Exact methods stay exact:
            the difference is linear in the logits, so ``sum(values) + bias == logit``, where
            ``logit`` holds the difference; the views and ``to_frame()``'s ``contrast`` column
            say what is explained. The methods that take it list ``contrast`` among their
            options in the Notes.
        method : str, Explainer or None, default=None
            One of :attr:`explain_methods` (None: the first, the estimator's default), or an
            explainer object (:mod:`interpretable.estimators.methods`). The methods and
            their options are listed in the Notes.
        batch_size : int or None, default=None
            Mini-batch size (None: the estimator's ``batch_size``).
        **options
            Options of ``method``, its keyword-only parameters: e.g. ``n_steps`` of integrated
            gradients, ``level`` (``"piece"`` / ``"word"``, ``"char"`` / ``"word"``) of the
            BERT-family and sequence methods, ``by="head"`` of the B-cos image maps,
            ``dtype="float64"`` of the exact methods, ``positions`` / ``window`` of ISAN. Each
            method's options and defaults are listed in the Notes and documented on its class
            (:mod:`interpretable.estimators.methods`).

        Returns
        -------
        TokenExplanation, ImageExplanation or SequenceExplanation
            The explanation (:mod:`interpretable.explanation`) of the ``n_samples`` inputs.

        Raises
        ------
        TypeError
            If ``method`` does not take one of the ``options`` (the error names it).
        ValueError
            If ``method`` does not apply to the estimator or does not explain a ``contrast``,
            or ``target`` or ``contrast`` holds a label not seen in fit.

        Notes
        -----
        The methods an estimator offers are its :attr:`explain_methods` (its class's
        ``explainers``, the default first); each method's options are the keyword-only
        parameters of its ``attribute`` (the API reference lists them, with the estimators
        that offer each method).

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> explanation = clf.explain(["good film"])
        >>> explanation.units
        [['good', 'film']]
        >>> clf.explain(["good film"], method="integrated_gradients", n_steps=8).method
        'integrated_gradients'
        >>> contrastive = clf.explain(["good film"], target="pos", contrast="neg")
        >>> contrastive.contrast, bool(contrastive.completeness_error[0] < 1e-6)
        (array(['neg'], dtype=object), True)
        """
        with self._fitted_call():
            explainer = get_explainer(self, method)
            if contrast is not None:
                if "contrast" not in explainer.options():
                    raise ValueError(
                        f"method={explainer.name!r} does not explain a contrast; the methods "
                        f"of {type(self).__name__} that do: "
                        f"{[e.name for e in explainers_for(self) if 'contrast' in e.options()]}.")
                options["contrast"] = contrast
            explainer.check_options(options, public=True)
            shown = SHOW_PROGRESS.set(bool(self.verbose))  # this call (and thread) only
            try:
                return explainer.explain(self, X, target, batch_size=batch_size, **options)
            finally:
                SHOW_PROGRESS.reset(shown)
