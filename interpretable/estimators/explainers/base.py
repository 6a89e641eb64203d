"""What every explanation method shares: the :class:`Explainer` contract, the registry and
the one loop (batching, padding, targets, assembly) all methods run through."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import torch

from ...explanation import with_sample_ids

__all__ = ["Attributions", "Explainer", "register", "explainers_for", "get_explainer",
           "describe_explainers"]


@dataclass
class Attributions:
    """What an explainer computes for one batch of ``B`` samples (sample axis first).

    Parameters
    ----------
    values : torch.Tensor, ndarray or list
        The attributions, e.g. ``(B, T)`` per token (padded to the batch's length), ``(B, H, W)``
        per pixel, or a list of ``B`` arrays.
    logits : torch.Tensor, ndarray or list
        ``(B, C)``: the model's outputs (prediction and probabilities), or per sample.
    target : torch.Tensor, ndarray or list
        ``(B,)``: the explained output of each sample, or per sample.
    logit : torch.Tensor or None, default=None
        ``(B,)``: the explained logit, for methods whose attributions plus bias reproduce it
        (completeness).
    bias : torch.Tensor or None, default=None
        ``(B,)``: what the attributions leave out of the logit.
    extras : dict, default={}
        Further per-sample fields of the explanation (e.g. B-cos ``weights``).

    See Also
    --------
    Explainer.attribute : Computes them.

    Examples
    --------
    >>> import torch
    >>> from interpretable.estimators.explainers import Attributions
    >>> part = Attributions(values=torch.ones(2, 3), logits=torch.zeros(2, 2),
    ...                     target=torch.tensor([0, 1]))
    >>> sorted(part.fields())
    ['logits', 'target', 'values']
    """

    values: object
    logits: object
    target: object
    logit: object = None
    bias: object = None
    extras: dict = field(default_factory=dict)

    def fields(self) -> dict:
        """Return every field that is set, by name.

        Returns
        -------
        dict
            ``values``, ``logits``, ``target``, ``logit`` and ``bias`` where not None, and the
            ``extras``.

        Examples
        --------
        >>> import torch
        >>> from interpretable.estimators.explainers import Attributions
        >>> part = Attributions(values=torch.ones(1, 2), logits=torch.zeros(1, 2),
        ...                     target=torch.tensor([1]), extras={"weights": torch.ones(1, 2)})
        >>> sorted(part.fields())
        ['logits', 'target', 'values', 'weights']
        """
        out = {"values": self.values, "logits": self.logits, "target": self.target,
               "logit": self.logit, "bias": self.bias, **self.extras}
        return {k: v for k, v in out.items() if v is not None}


def _rows(value) -> list:
    """A per-sample field of one batch as a list of CPU numpy arrays (or objects)."""
    if isinstance(value, torch.Tensor):
        return list(value.detach().cpu().numpy())
    if isinstance(value, np.ndarray):
        return list(value)
    return [v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v for v in value]


class Explainer:
    """One explanation method.

    Subclasses declare

    * ``name``: what ``explain(method=...)`` calls it;
    * ``applies_to``: the estimator classes it explains (class names, matched along each
      estimator's class hierarchy, so a family base covers its subclasses);
    * ``class_independent``: whether its values are the same for every target (attention);
    * ``view``: the model variant it explains (``forward_batch(view=...)``; SEAT's vanilla
      attention is ``"vanilla"``);
    * ``per_sample_options``: options holding one entry per sample (e.g. the metrics'
      ``embedding_offset``), sliced for each batch and not offered by ``estimator.explain``;
    * ``dtypes``: precisions it can explain in besides the model's own (the ``dtype``
      option: a copy of the model in that precision is explained);

    and implement :meth:`attribute` (one batch; its keyword-only parameters are the method's
    options) and :meth:`assemble` (the explanation container of the estimator family).
    :meth:`explain` is the public lower-level call behind ``estimator.explain``. Explainers
    hold no state: one object serves every estimator and thread.

    See Also
    --------
    register : Add an explainer to the registry.
    get_explainer : The explainer behind a method name.

    Examples
    --------
    A method that attributes each token's logit contribution to the first token only:

    >>> import torch
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.estimators.explainers import Attributions, TokenExplainer
    >>> class FirstToken(TokenExplainer):
    ...     "Everything to the first token."
    ...     name = "first_token"
    ...     def attribute(self, estimator, batch, target):
    ...         logits = estimator.forward_batch(batch)
    ...         chosen = logits.argmax(1) if target is None else torch.as_tensor(target)
    ...         values = torch.zeros(batch["tokens"].shape)
    ...         values[:, 0] = logits[torch.arange(len(logits)), chosen]
    ...         return Attributions(values=values, logits=logits, target=chosen)
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> explanation = clf.explain(["good film"], method=FirstToken())
    >>> explanation.method, float(explanation.values[0][1])
    ('first_token', 0.0)
    """

    name: ClassVar[str]
    applies_to: ClassVar[tuple[str, ...]] = ()
    class_independent: ClassVar[bool] = False
    view: ClassVar[str] = "model"
    per_sample_options: ClassVar[tuple[str, ...]] = ()
    dtypes: ClassVar[tuple[str, ...]] = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    # ------------------------------------------------------------------ to implement
    def attribute(self, estimator, batch: dict, target, **options) -> Attributions:
        """Compute the attributions of one batch of device tensors.

        Parameters
        ----------
        estimator : fitted estimator
            The explained estimator.
        batch : dict of str to torch.Tensor
            One batch from ``estimator.iter_batches``.
        target : array-like of shape (B,) or None
            The batch's explained targets, or None (the predicted ones).
        **options
            The method's options (its keyword-only parameters).

        Returns
        -------
        Attributions
            The batch's attributions.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.estimators.explainers import get_explainer
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
        >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
        >>> explainer = get_explainer(clf)  # the default, "inherent"
        >>> encoded = clf.encode(["good film"])
        >>> _, batch = next(clf.iter_batches(encoded.inputs))
        >>> part = explainer.attribute(clf, batch, None)
        >>> part.values.shape, sorted(part.fields())
        (torch.Size([1, 2]), ['bias', 'logit', 'logits', 'target', 'values'])
        """
        raise NotImplementedError

    def assemble(self, estimator, encoded, fields: dict, **options):
        """Build the explanation of the encoded samples from the fields of their attributions.

        Parameters
        ----------
        estimator : fitted estimator
            The explained estimator.
        encoded : Batch
            The encoded samples (``estimator.encode(X)``).
        fields : dict of str to list
            Every field of :class:`Attributions` as a list with one entry per sample, in input
            order.
        **options
            The method's options.

        Returns
        -------
        TokenExplanation, ImageExplanation or SequenceExplanation
            The explanation.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.estimators.explainers import get_explainer
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
        >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
        >>> explainer = get_explainer(clf)  # the default, "inherent"
        >>> encoded = clf.encode(["good film"])
        >>> _, batch = next(clf.iter_batches(encoded.inputs))
        >>> part = explainer.attribute(clf, batch, None)
        >>> fields = {name: list(value.detach().cpu().numpy())
        ...           for name, value in part.fields().items()}
        >>> explainer.assemble(clf, encoded, fields).units
        [['good', 'film']]
        """
        raise NotImplementedError

    def prepare(self, estimator, encoded, target, **options) -> dict:
        """Check and normalise the options before anything is computed.

        Raise a ValueError naming the problem (e.g. an option's value, the memory an explanation
        needs).

        Parameters
        ----------
        estimator : fitted estimator
            The explained estimator.
        encoded : Batch
            The encoded samples (``estimator.encode(X)``).
        target : object
            The explained targets, as given to ``explain``.
        **options
            The method's options.

        Returns
        -------
        dict
            The options, normalised.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.estimators.explainers import get_explainer
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
        >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
        >>> explainer = get_explainer(clf)  # the default, "inherent"
        >>> encoded = clf.encode(["good film"])
        >>> _, batch = next(clf.iter_batches(encoded.inputs))
        >>> explainer.prepare(clf, encoded, None)
        {}
        """
        return options

    # ------------------------------------------------------------------ shared
    def applies(self, estimator) -> bool:
        """Return whether this method explains an estimator.

        Parameters
        ----------
        estimator : estimator or type
            A class or an instance.

        Returns
        -------
        bool
            Whether one of its classes is named in ``applies_to``.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier, ISANLanguageModel
        >>> from interpretable.estimators.explainers import get_explainer
        >>> gradient = get_explainer(EmbeddingBagClassifier, "gradient")
        >>> gradient.applies(EmbeddingBagClassifier), gradient.applies(ISANLanguageModel)
        (True, False)
        """
        cls = estimator if isinstance(estimator, type) else type(estimator)
        return any(c.__name__ in self.applies_to for c in cls.__mro__)

    def options(self, public: bool = True) -> list[str]:
        """Return the method's options (the keyword-only parameters of :meth:`attribute`).

        Parameters
        ----------
        public : bool, default=True
            Leave out the per-sample options (not offered by ``estimator.explain``).

        Returns
        -------
        list of str
            The option names.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.estimators.explainers import get_explainer
        >>> get_explainer(EmbeddingBagClassifier, "integrated_gradients").options()
        ['n_steps']
        """
        names = [name for name, p in inspect.signature(self.attribute).parameters.items()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY]
        names += ["dtype"] if self.dtypes else []
        return [n for n in names if not (public and n in self.per_sample_options)]

    def check_options(self, options: dict, public: bool = False) -> None:
        """Raise a TypeError naming the options this method does not take.

        Parameters
        ----------
        options : dict
            Options by name.
        public : bool, default=False
            Check against the public options only.

        Raises
        ------
        TypeError
            If an option is not taken.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.estimators.explainers import get_explainer
        >>> gradient = get_explainer(EmbeddingBagClassifier, "gradient")
        >>> gradient.check_options({"n_steps": 8}, public=True)
        Traceback (most recent call last):
        ...
        TypeError: explain(method='gradient') got unexpected option(s) ['n_steps']; it takes ...
        """
        accepted = self.options(public)
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise TypeError(f"explain(method={self.name!r}) got unexpected option(s) "
                            f"{unknown}; it takes {accepted or 'no options'}.")

    def explain(self, estimator, X, target=None, *, batch_size=None, **options):
        """Explain ``X`` with this method: the lower-level call behind ``estimator.explain``.

        Encode, resolve the targets, run :meth:`attribute` over the estimator's batches (in its
        inference order), :meth:`assemble`. Accepts the per-sample options too
        (``embedding_offset (n, T, E)`` for the text methods that declare it).

        Parameters
        ----------
        estimator : fitted estimator
            The explained estimator.
        X : sequence
            Inputs as for ``estimator.predict``.
        target : label, array-like or None, default=None
            The explained targets (None: the predicted ones).
        batch_size : int or None, default=None
            Mini-batch size (None: the estimator's).
        **options
            The method's options, per-sample ones included.

        Returns
        -------
        TokenExplanation, ImageExplanation or SequenceExplanation
            The explanation.

        Raises
        ------
        ValueError
            If the method does not explain ``estimator``, or ``dtype`` is not supported.
        TypeError
            If an option is not taken.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.estimators.explainers import get_explainer
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
        >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
        >>> explainer = get_explainer(clf, "integrated_gradients")
        >>> explainer.explain(clf, ["good film"], target="neg", n_steps=8).target
        array(['neg'], dtype='<U3')
        """
        if not self.applies(estimator):
            raise ValueError(f"method={self.name!r} does not explain "
                             f"{type(estimator).__name__}.")
        self.check_options(options)
        dtype = options.pop("dtype", None)
        if dtype is not None:
            if dtype not in self.dtypes:
                raise ValueError(f"dtype must be None or one of {list(self.dtypes)}, "
                                 f"got {dtype!r}.")
            estimator = estimator.astype(dtype)
        encoded = estimator.encode(X)
        targets = estimator.explained_targets(encoded, target)
        options = self.prepare(estimator, encoded, target, **options)
        per_sample = {k: options.pop(k) for k in self.per_sample_options
                      if options.get(k) is not None}
        n = len(encoded)
        fields: dict[str, list] = {}
        for rows, batch in estimator.iter_batches(encoded.inputs, batch_size, ordered=True):
            index = torch.arange(n)[rows] if isinstance(rows, slice) else rows
            sliced = {k: _take(v, index) for k, v in per_sample.items()}
            part = self.attribute(estimator, batch, _take(targets, index), **options, **sliced)
            for name, value in part.fields().items():
                column = fields.setdefault(name, [None] * n)
                for i, row in zip(index.tolist(), _rows(value)):
                    column[i] = row
        return with_sample_ids(self.assemble(estimator, encoded, fields, **options), X)


def _take(values, index: torch.Tensor):
    """The entries ``index`` of per-sample ``values`` (array, tensor or list; None stays
    None)."""
    if values is None or isinstance(values, torch.Tensor):
        return None if values is None else values[index.to(values.device)]
    if isinstance(values, np.ndarray):
        return values[index.numpy()]
    return [values[i] for i in index.tolist()]


# ---------------------------------------------------------------------------- the registry
_REGISTRY: list[Explainer] = []


def register(explainer: Explainer | type) -> Explainer | type:
    """Add an explainer to the registry (usable as a class decorator).

    Registration order decides the default method: the first registered explainer that
    applies to an estimator is its default.

    Parameters
    ----------
    explainer : Explainer or type
        An instance, or a class with a no-argument constructor.

    Returns
    -------
    Explainer or type
        ``explainer``, unchanged.

    Raises
    ------
    TypeError
        If ``explainer`` is not an :class:`Explainer`.
    ValueError
        If an explainer of that name is registered for the same estimators.

    Examples
    --------
    >>> from interpretable.estimators.explainers import get_explainer, register
    >>> from interpretable import EmbeddingBagClassifier
    >>> register(get_explainer(EmbeddingBagClassifier, "gradient"))
    Traceback (most recent call last):
    ...
    ValueError: an explainer named 'gradient' is already registered for ['TextClassifierBase'].
    """
    instance = explainer() if isinstance(explainer, type) else explainer
    if not isinstance(instance, Explainer):
        raise TypeError(f"register takes Explainer objects, got {type(instance).__name__}.")
    clash = [e for e in _REGISTRY if e.name == instance.name
             and set(e.applies_to) & set(instance.applies_to)]
    if clash:
        raise ValueError(f"an explainer named {instance.name!r} is already registered for "
                         f"{sorted(set(clash[0].applies_to) & set(instance.applies_to))}.")
    _REGISTRY.append(instance)
    return explainer


def explainers_for(estimator) -> list[Explainer]:
    """Return the registered explainers that apply to an estimator, the default first.

    Parameters
    ----------
    estimator : estimator or type
        A class or an instance.

    Returns
    -------
    list of Explainer
        The explainers.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.estimators.explainers import explainers_for
    >>> [e.name for e in explainers_for(EmbeddingBagClassifier)]
    ['inherent', 'gradient', 'integrated_gradients', 'input_x_gradient']
    """
    return [e for e in _REGISTRY if e.applies(estimator)]


def get_explainer(estimator, method=None) -> Explainer:
    """Return the explainer behind ``method`` for an estimator.

    Parameters
    ----------
    estimator : estimator or type
        A class or an instance.
    method : str, Explainer or None, default=None
        None (its default), a name from ``estimator.explain_methods`` or an
        :class:`Explainer` object.

    Returns
    -------
    Explainer
        The explainer.

    Raises
    ------
    ValueError
        If the method does not explain the estimator.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.estimators.explainers import get_explainer
    >>> get_explainer(EmbeddingBagClassifier)
    MeanEmbeddingContributions(name='inherent')
    """
    if isinstance(method, Explainer):
        if not method.applies(estimator):
            raise ValueError(f"{method!r} does not explain {type(estimator).__name__}.")
        return method
    available = explainers_for(estimator)
    chosen = available[:1] if method is None else [e for e in available if e.name == method]
    if not chosen:
        raise ValueError(f"method={method!r} is not supported by {type(estimator).__name__}; "
                         f"choose one of {[e.name for e in available]}.")
    return chosen[0]


def describe_explainers() -> str:
    """Describe the registered methods as a reStructuredText list.

    Returns
    -------
    str
        One line per method: its name, the estimators it explains, the first paragraph of its
        docstring and its options with their defaults (the Notes of ``explain``).

    Examples
    --------
    >>> from interpretable.estimators.explainers import describe_explainers
    >>> print(describe_explainers().splitlines()[0])  # doctest: +ELLIPSIS
    - ``inherent`` (...): ...
    """
    lines = []
    for explainer in _REGISTRY:
        parameters = inspect.signature(explainer.attribute).parameters
        options = [f"``{name}={parameters[name].default!r}``" if name in parameters
                   else f"``{name}`` (one of {', '.join(map(repr, explainer.dtypes))})"
                   for name in explainer.options()]
        summary = (type(explainer).__doc__ or "").strip().split("\n\n")[0]
        summary = " ".join(summary.split())
        flag = " Class-independent." if explainer.class_independent else ""
        lines.append(f"- ``{explainer.name}`` ({', '.join(explainer.applies_to)}): {summary}"
                     f"{flag} Options: {', '.join(options) or 'none'}.")
    return "\n".join(lines)
