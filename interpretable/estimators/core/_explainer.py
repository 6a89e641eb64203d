"""The explainer contract: :class:`Explainer` (what an explanation method declares and
implements) and the functions that find an estimator's methods. Each estimator class declares
the methods it offers in its ``explainers`` class attribute, its default first. What one
batch's attributions hold is :mod:`.attributions`; the options check and the one loop
(batching, padding, targets, assembly) all methods run through are :mod:`.explain_loop`."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from interpretable.estimators.core._attributions import Attributions
from interpretable.estimators.core._explain_loop import ExplainLoop

if TYPE_CHECKING:
    import torch
    from numpy.typing import ArrayLike

    from interpretable.estimators.core._base import NeuralEstimator
    from interpretable.estimators.core._encoded import EncodedInputs
    from interpretable.estimators.core._inference import BatchedInference
    from interpretable.explanation import ImageExplanation, SequenceExplanation, TokenExplanation

__all__ = ["Attributions", "Explainer", "explainers_for", "get_explainer", "describe_explainers"]

#: every explainer class by method name, as the classes are defined: what
#: :func:`get_explainer` asks why an estimator does not offer a method (:meth:`Explainer.refusal`)
_BY_NAME: dict[str, list[type]] = {}


class Explainer(ExplainLoop):
    """One explanation method.

    Subclasses declare

    * ``name``: what ``explain(method=...)`` calls it;
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

    An estimator offers the methods its class declares in ``explainers`` (the default
    first); a subclass offers a new method by declaring it there.

    See Also
    --------
    get_explainer : The explainer behind a method name.

    Examples
    --------
    A method that attributes each token's logit contribution to the first token only:

    >>> import torch
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.estimators.methods import Attributions, TokenExplainer
    >>> class FirstToken(TokenExplainer):
    ...     "Everything to the first token."
    ...     name = "first_token"
    ...     def attribute(self, estimator, batch, target):
    ...         logits = estimator.forward_batch(batch)
    ...         chosen = logits.argmax(1) if target is None else torch.as_tensor(target)
    ...         values = torch.zeros(batch["tokens"].shape)
    ...         values[:, 0] = logits[torch.arange(len(logits)), chosen]
    ...         return Attributions(values=values, logits=logits, target=chosen)
    >>> class FirstTokenClassifier(EmbeddingBagClassifier):
    ...     explainers = (*EmbeddingBagClassifier.explainers, FirstToken())
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = FirstTokenClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> explanation = clf.explain(["good film"], method="first_token")
    >>> explanation.method, float(explanation.values[0][1])
    ('first_token', 0.0)
    """

    name: ClassVar[str]
    class_independent: ClassVar[bool] = False
    view: ClassVar[str] = "model"
    per_sample_options: ClassVar[tuple[str, ...]] = ()
    dtypes: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if isinstance(vars(cls).get("name"), str):
            _BY_NAME.setdefault(cls.name, []).append(cls)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    @classmethod
    def refusal(cls, estimator: BatchedInference | type[BatchedInference]) -> str | None:
        """Say why this method cannot explain an estimator, if it knows.

        :func:`get_explainer` puts the reason into its error when an estimator does not
        offer a method (e.g. DeepLIFT names the operations of the network that would make it
        inexact); the method's ``prepare`` refuses with it too.

        Parameters
        ----------
        estimator : estimator or type
            A class or an instance (fitted or not).

        Returns
        -------
        str or None
            The reason, or None (none known; the default).

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.estimators.methods import get_explainer
        >>> get_explainer(EmbeddingBagClassifier, "gradient").refusal(EmbeddingBagClassifier)
        """
        return None

    # ------------------------------------------------------------------ to implement
    def attribute(self, estimator: NeuralEstimator, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, **options: Any) -> Attributions:
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
        >>> from interpretable.estimators.methods import get_explainer
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

    def assemble(self, estimator: NeuralEstimator, encoded: EncodedInputs,
                 fields: dict[str, list[Any]], **options: Any
                 ) -> TokenExplanation | ImageExplanation | SequenceExplanation:
        """Build the explanation of the encoded samples from the fields of their attributions.

        Parameters
        ----------
        estimator : fitted estimator
            The explained estimator.
        encoded : EncodedInputs
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
        >>> from interpretable.estimators.methods import get_explainer
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

    def prepare(self, estimator: NeuralEstimator, encoded: EncodedInputs,
                target: torch.Tensor | list[Any] | None, **options: Any) -> dict[str, Any]:
        """Check and normalise the options before anything is computed.

        Raise a ValueError naming the problem (e.g. an option's value, the memory an explanation
        needs).

        Parameters
        ----------
        estimator : fitted estimator
            The explained estimator.
        encoded : EncodedInputs
            The encoded samples (``estimator.encode(X)``).
        target : torch.Tensor of shape (n_samples,), list or None
            The explained targets as ``estimator.explained_targets`` resolved them (the
            classifiers: class indices; None: the predicted ones).
        **options
            The method's options.

        Returns
        -------
        dict
            The options, normalised.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.estimators.methods import get_explainer
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
    def applies(self, estimator: BatchedInference | type[BatchedInference]) -> bool:
        """Return whether this method explains an estimator.

        It does when it is one of the methods the estimator's class declares in
        ``explainers``, or an instance of a subclass of one.

        Parameters
        ----------
        estimator : estimator or type
            A class or an instance.

        Returns
        -------
        bool
            Whether the estimator offers this method.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier, ISANLanguageModel
        >>> from interpretable.estimators.methods import get_explainer
        >>> gradient = get_explainer(EmbeddingBagClassifier, "gradient")
        >>> gradient.applies(EmbeddingBagClassifier), gradient.applies(ISANLanguageModel)
        (True, False)
        """
        return isinstance(self, tuple(type(e) for e in explainers_for(estimator)))


def explainers_for(estimator: BatchedInference | type[BatchedInference]) -> list[Explainer]:
    """Return the explainers an estimator offers, the default first.

    Parameters
    ----------
    estimator : estimator or type
        A class or an instance.

    Returns
    -------
    list of Explainer
        Its class's ``explainers``.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.estimators.methods import explainers_for
    >>> [e.name for e in explainers_for(EmbeddingBagClassifier)]  # doctest: +NORMALIZE_WHITESPACE
    ['inherent', 'gradient', 'integrated_gradients', 'input_x_gradient', 'occlusion', 'lime',
     'kernel_shap', 'smoothgrad', 'smoothgrad_integrated_gradients', 'gradient_shap',
     'deeplift']
    """
    cls = estimator if isinstance(estimator, type) else type(estimator)
    return list(getattr(cls, "explainers", ()))


def get_explainer(estimator: BatchedInference | type[BatchedInference],
                  method: str | Explainer | None = None) -> Explainer:
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
    >>> from interpretable.estimators.methods import get_explainer
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
        cls = estimator if isinstance(estimator, type) else type(estimator)
        known = _BY_NAME.get(method, ()) if isinstance(method, str) else ()
        reasons = dict.fromkeys(reason for explainer in known
                                if (reason := explainer.refusal(estimator)))
        why = "".join(f": {reason}" for reason in reasons)
        raise ValueError(f"method={method!r} is not supported by {cls.__name__}{why}; "
                         f"choose one of {[e.name for e in available]}.")
    return chosen[0]


def describe_explainers(estimators: Iterable[type[BatchedInference]]) -> str:
    """Describe the methods that estimators offer as a reStructuredText list.

    Parameters
    ----------
    estimators : iterable of type
        Estimator classes.

    Returns
    -------
    str
        One line per method: its name, the estimators that offer it, the first paragraph of
        its docstring and its options with their defaults.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.estimators.methods import describe_explainers
    >>> print(describe_explainers([EmbeddingBagClassifier]).splitlines()[0][:60])
    - ``inherent`` (EmbeddingBagClassifier): Exact contributions
    """
    offered: dict[type, tuple[Explainer, list[str]]] = {}
    for estimator in estimators:
        for explainer in explainers_for(estimator):
            offered.setdefault(type(explainer), (explainer, []))[1].append(estimator.__name__)
    lines = []
    for explainer, names in offered.values():
        parameters = inspect.signature(explainer.attribute).parameters
        options = [f"``{name}={parameters[name].default!r}``" if name in parameters
                   else f"``{name}`` (one of {', '.join(map(repr, explainer.dtypes))})"
                   for name in explainer.options()]
        summary = (type(explainer).__doc__ or "").strip().split("\n\n")[0]
        summary = " ".join(summary.split())
        flag = " Class-independent." if explainer.class_independent else ""
        lines.append(f"- ``{explainer.name}`` ({', '.join(names)}): {summary}"
                     f"{flag} Options: {', '.join(options) or 'none'}.")
    return "\n".join(lines)
