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
    """What an explainer computes for one batch of ``B`` samples (tensors or arrays, sample
    axis first).

    values : the attributions, e.g. ``(B, T)`` per token (padded to the batch's length),
        ``(B, H, W)`` per pixel, or a list of ``B`` arrays;
    logits : ``(B, C)`` the model's outputs (prediction and probabilities), or per sample;
    target : ``(B,)`` the explained output of each sample, or per sample;
    logit, bias : ``(B,)`` the explained logit and what the attributions leave out of it, for
        methods whose attributions plus bias reproduce the logit (completeness), else None;
    extras : further per-sample fields of the explanation (e.g. B-cos ``weights``).
    """

    values: object
    logits: object
    target: object
    logit: object = None
    bias: object = None
    extras: dict = field(default_factory=dict)

    def fields(self) -> dict:
        """Every field that is set, by name."""
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
        """Attributions of one batch of device tensors (from ``estimator.iter_batches``);
        ``target`` holds the batch's explained targets, or None (the predicted ones)."""
        raise NotImplementedError

    def assemble(self, estimator, encoded, fields: dict, **options):
        """The explanation of the encoded samples (a ``Batch``) from ``fields``: every field
        of :class:`Attributions` as a list with one entry per sample, in input order."""
        raise NotImplementedError

    def prepare(self, estimator, encoded, target, **options) -> dict:
        """The options, checked (raise a ValueError naming the problem) and normalised, before
        anything is computed (e.g. option values, the memory an explanation needs)."""
        return options

    # ------------------------------------------------------------------ shared
    def applies(self, estimator) -> bool:
        """Whether this method explains ``estimator`` (a class or an instance)."""
        cls = estimator if isinstance(estimator, type) else type(estimator)
        return any(c.__name__ in self.applies_to for c in cls.__mro__)

    def options(self, public: bool = True) -> list[str]:
        """The method's options (keyword-only parameters of :meth:`attribute`); ``public``
        leaves out the per-sample ones (not offered by ``estimator.explain``)."""
        names = [name for name, p in inspect.signature(self.attribute).parameters.items()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY]
        names += ["dtype"] if self.dtypes else []
        return [n for n in names if not (public and n in self.per_sample_options)]

    def check_options(self, options: dict, public: bool = False) -> None:
        """Raise a TypeError naming the options this method does not take."""
        accepted = self.options(public)
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise TypeError(f"explain(method={self.name!r}) got unexpected option(s) "
                            f"{unknown}; it takes {accepted or 'no options'}.")

    def explain(self, estimator, X, target=None, *, batch_size=None, **options):
        """Explain ``X`` with this method: encode, resolve the targets, run :meth:`attribute`
        over the estimator's batches (in its inference order), :meth:`assemble`. Accepts the
        per-sample options too (``embedding_offset (n, T, E)`` for the text methods that
        declare it)."""
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
    """Add an explainer (an instance, or a class with a no-argument constructor; usable as a
    class decorator) to the registry. Registration order decides the default method: the
    first registered explainer that applies to an estimator is its default."""
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
    """The registered explainers that apply to ``estimator`` (class or instance), the default
    first."""
    return [e for e in _REGISTRY if e.applies(estimator)]


def get_explainer(estimator, method=None) -> Explainer:
    """The explainer behind ``method`` for ``estimator``: None (its default), a name from
    ``estimator.explain_methods`` or an :class:`Explainer` object."""
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
    """The registered methods as a reStructuredText list: name, the estimators it explains,
    the first line of its docstring and its options with their defaults."""
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
