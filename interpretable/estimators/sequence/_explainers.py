"""Explainers of the sequence models (language models, taggers): at every step (or at chosen
positions), the contribution of every earlier symbol to the explained output, assembled into a
:class:`~interpretable.explanation.SequenceExplanation`.

* ``"inherent"`` (:class:`ISANContributions`): the exact ISAN decomposition ``κ_s^t``;
* ``"input_x_gradient"``, ``"integrated_gradients"``, ``"gradient"``: captum through the
  character embeddings of the LSTM language model.

Targets per sequence (None, ``"actual"``, a symbol, an output index) are resolved into one
explained output per step by the estimator's ``explained_outputs``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from interpretable.attribution import attribute_tokens
from interpretable.estimators.core._explainer import Attributions, Explainer
from interpretable.explanation import SequenceExplanation
from interpretable.nn import pad_sequences

if TYPE_CHECKING:
    from collections.abc import Sequence

    from interpretable.estimators.core._encoded import EncodedInputs
    from interpretable.estimators.sequence._base import ISANBase, SequenceEstimator
    from interpretable.estimators.sequence._language_model import LSTMLanguageModel

__all__ = ["StepExplainer", "ISANContributions", "StepInputXGradient", "StepIntegratedGradients",
           "StepGradient"]

#: largest (steps × symbols) explanation, in bytes, built without ``positions=`` / ``window=``
DENSE_EXPLANATION_LIMIT = 4 * 2**30


def _explained(estimator, batch: dict, target) -> tuple[list, list]:
    """Per sequence of the batch: the predicted outputs (len,) and the explained ones (len,)."""
    with torch.no_grad():
        predicted = estimator.forward_batch(batch).argmax(-1)
    x, lengths = batch["x"], batch["lengths"].tolist()
    predicted = [predicted[j, :n] for j, n in enumerate(lengths)]
    return predicted, [estimator.explained_outputs(x[j, :n], target[j], predicted[j])
                       for j, n in enumerate(lengths)]


class StepExplainer(Explainer):
    """Per-step symbol attributions of sequence models.

    ``values`` per sequence ``(P, len)`` (``(P, window)`` with a window), ``P`` the explained
    steps.

    Examples
    --------
    >>> from interpretable import ISANSequenceTagger
    >>> from interpretable.estimators.methods import get_explainer
    >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
    >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
    >>> explainer = get_explainer(tagger)  # "inherent"
    >>> explainer.explain(tagger, ["ab"], target=1).values[0].shape
    (2, 2)
    """

    def prepare(self, estimator: SequenceEstimator, encoded: EncodedInputs, target: object, *,
                level: str = "char", **options: Any) -> dict[str, Any]:
        """Check ``level`` and the size of the explanation before anything is computed.

        Parameters
        ----------
        estimator : fitted sequence estimator
            The explained estimator.
        encoded : EncodedInputs
            The encoded samples (``estimator.encode(X)``).
        target : object
            The explained targets.
        level : str, default="char"
            One of ``estimator.levels``.
        **options
            The method's other options.

        Returns
        -------
        dict
            The options, ``level`` included.

        Raises
        ------
        ValueError
            If ``level`` is unknown or the explanation would be too large.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> from interpretable.estimators.methods import get_explainer
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> explainer = get_explainer(tagger)  # "inherent"
        >>> explainer.prepare(tagger, tagger.encode(["ab"]), None)
        {'level': 'char', 'positions': None, 'window': None}
        """
        if level not in estimator.levels:
            raise ValueError(f"level must be one of {list(estimator.levels)}, got {level!r}.")
        self.check_size(encoded, options.get("positions"), options.get("window"))
        return {"level": level, **options}

    def check_size(self, encoded: EncodedInputs,
                   positions: Sequence[int] | np.ndarray | None = None,
                   window: int | None = None) -> None:
        """Refuse an explanation too large for memory, before anything is allocated.

        An explanation whose (steps × symbols) values would pass :data:`DENSE_EXPLANATION_LIMIT`
        raises, naming the size and what avoids it.

        Parameters
        ----------
        encoded : EncodedInputs
            The encoded sequences.
        positions : list of int or None, default=None
            The explained steps (None: all).
        window : int or None, default=None
            The window of earlier symbols kept.

        Raises
        ------
        ValueError
            If the explanation would be too large.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> from interpretable.estimators.methods import get_explainer
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> explainer = get_explainer(tagger)  # "inherent"
        >>> explainer.check_size(tagger.encode(["ab"]))  # small: nothing raised
        """
        rows = [len(s) if positions is None else len(positions) for s in encoded.units]
        needed = 8 * sum(r * (len(s) if window is None else window)
                         for r, s in zip(rows, encoded.units, strict=True))
        if needed > DENSE_EXPLANATION_LIMIT:
            avoid = ("pass window= (only the last symbols before each step, the rest folded "
                     "into bias) or positions=[...] (only some steps), or shorter texts"
                     if "window" in self.options() else "explain shorter texts (e.g. the last "
                     "few thousand characters of each)")
            raise ValueError(
                f"explaining every step of these sequences needs ~{needed / 2**30:.1f} GiB for "
                f"the (steps x symbols) contributions (limit {DENSE_EXPLANATION_LIMIT / 2**30:g} "
                f"GiB); {avoid}.")

    def assemble(self, estimator: SequenceEstimator, encoded: EncodedInputs,
                 fields: dict[str, list[Any]], *, level: str = "char",
                 positions: Sequence[int] | np.ndarray | None = None, window: int | None = None,
                 **options: Any) -> SequenceExplanation:
        """Build the sequence explanation of the encoded samples from their attributions' fields.

        Parameters
        ----------
        estimator : fitted sequence estimator
            The explained estimator.
        encoded : EncodedInputs
            The encoded samples (``estimator.encode(X)``).
        fields : dict of str to list
            Every field of :class:`Attributions` as a list with one entry per sequence.
        level : str, default="char"
            The units (word level sums the characters of each word).
        positions : list of int or None, default=None
            The explained steps (None: all).
        window : int or None, default=None
            The window of earlier symbols kept.
        **options
            The method's other options.

        Returns
        -------
        SequenceExplanation
            The explanation (``explain`` calls this last).

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> from interpretable.estimators.methods import get_explainer
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> explainer = get_explainer(tagger)  # "inherent"
        >>> explainer.explain(tagger, ["ab"], target=0).units
        [['a', 'b']]
        """
        seqs = encoded.units
        units = [estimator.split_units(s, level) for s in seqs]
        values = fields["values"]
        if level != "char":
            values = [np.add.reduceat(v, np.cumsum([0] + [len(u) for u in pieces[:-1]]), axis=1)
                      for v, pieces in zip(values, units, strict=True)]
        names = np.asarray(estimator.output_names(), dtype=object)
        rows = slice(None) if positions is None else positions
        return SequenceExplanation(
            units=[[str(u) for u in pieces] for pieces in units], values=values,
            target=[names[e[rows]] for e in fields["target"]],
            prediction=[names[p[rows]] for p in fields["predicted"]],
            method=self.name, logit=fields.get("logit"), bias=fields.get("bias"), level=level,
            inputs=list(seqs), window=window,
            steps=None if positions is None else [np.asarray(positions)] * len(seqs),
            class_independent=self.class_independent)


class ISANContributions(StepExplainer):
    """Exact contribution of every symbol (or word) to the explained output at every step.

    level : "char", or "word" for language models (the contributions of the characters
        of each word are summed; a word keeps its leading whitespace).
    positions : None (every step) or the steps to explain in every sequence (ints in
        ``[0, shortest length)``, any order); ``values[i]`` then has one row per position
        in that order, as have ``target``, ``prediction``, ``logit`` and ``bias``.
    window : None, or explain only the last ``window`` symbols before each step: the
        contributions of older symbols are folded exactly into ``bias``; ``values[i]`` is
        then ``(P, window)``, column ``j`` the symbol at ``step - window + 1 + j`` (time and
        memory O(T·window) instead of O(T²) per sequence).
    dtype : None decomposes in the model's own dtype (``logit`` is then the model's own
        output); ``"float64"`` decomposes a float64 copy of the same parameters, which
        removes the float32 rounding from both the contributions and the logits.

    ``values[i][t, s]`` is κ_s^t; ``bias[i][t]`` is the readout bias plus the propagated
    initial state; ``logit[i][t]`` is the model's logit, so ``completeness_error`` checks
    the decomposition (float64: ~1e-13; float32: ~1e-7 of the logit scale). One reverse
    pass per batch of sequences explains all their positions.
    """

    name = "inherent"
    dtypes = ("float64",)

    def prepare(self, estimator: ISANBase, encoded: EncodedInputs, target: object, *,
                level: str = "char", positions: Sequence[int] | np.ndarray | None = None,
                window: int | None = None) -> dict[str, Any]:
        if level not in estimator.levels:
            raise ValueError(f"level must be one of {list(estimator.levels)}, got {level!r}.")
        options = {"level": level}
        if window is not None and (isinstance(window, bool) or not isinstance(window, int)
                                   or window < 1):
            raise ValueError(f"window must be None or an integer >= 1, got {window!r}.")
        if window is not None and level != "char":
            raise ValueError("window= counts symbols: use it with level='char'.")
        lengths = [len(s) for s in encoded.units]
        if positions is not None:
            steps = np.asarray(positions)
            if steps.ndim != 1 or steps.size == 0 or steps.dtype.kind not in "iu" \
                    or steps.min() < 0 or steps.max() >= min(lengths):
                raise ValueError(f"positions must be a non-empty list of steps in [0, "
                                 f"{min(lengths)}) (the shortest sequence), got "
                                 f"{positions!r:.80}.")
            positions = steps.astype(np.int64)
        self.check_size(encoded, positions, window)
        return {**options, "positions": positions, "window": window}

    def attribute(self, estimator: ISANBase, batch: dict[str, torch.Tensor],
                  target: Sequence[Any], *, level: str = "char",
                  positions: Sequence[int] | np.ndarray | None = None,
                  window: int | None = None) -> Attributions:
        predicted, explained = _explained(estimator, batch, target)
        x = batch["x"]
        rows = None if positions is None else torch.as_tensor(positions, device=x.device)
        targets = pad_sequences([e.cpu() for e in explained], 0)[0].to(x.device)
        dec = estimator.module_.decompose(x, targets, positions=rows, window=window)
        rest = dec["initial"] if window is None else dec["history"]
        kappa = dec["kappa"][:, :, 0].cpu().numpy()  # the model's dtype: no float64 copy
        rest, logits = (t[:, :, 0].double().cpu().numpy() for t in (
            rest + dec["bias"], dec["logits"]))
        if not (np.isfinite(kappa).all() and np.isfinite(rest).all()):
            raise ValueError(
                f"the model's state leaves the {dec['kappa'].dtype} range within these texts "
                "(its transitions grow it geometrically), so the contributions overflow; "
                "explain with dtype='float64', a window= or shorter texts.")
        values, bias, logit = [], [], []
        for j, n in enumerate(batch["lengths"].tolist()):
            P = n if positions is None else len(positions)
            # (P, n), or (P, window) at offset s - t + window - 1 (0 before the text)
            values.append(kappa[j, :P] if window is not None else kappa[j, :P, :n])
            bias.append(rest[j, :P])
            logit.append(logits[j, :P])
        return Attributions(values=values, logits=None, target=explained, logit=logit,
                            bias=bias, extras={"predicted": predicted})


class _StepGradients(StepExplainer):
    """Captum attributions of the explained logit at every step to the embeddings of the
    characters up to that step (rows = sequence × step, as many per pass as the batch has
    sequences)."""

    def attribute(self, estimator: LSTMLanguageModel, batch: dict[str, torch.Tensor],
                  target: Sequence[Any], *, level: str = "char", n_steps: int = 50
                  ) -> Attributions:
        predicted, explained = _explained(estimator, batch, target)
        x, lengths = batch["x"], batch["lengths"].cpu()
        text = torch.repeat_interleave(torch.arange(len(lengths)), lengths)  # row → sequence
        step = torch.cat([torch.arange(n) for n in lengths.tolist()])  # row → step
        rows = {"lengths": step + 1, "targets": torch.cat([e.cpu() for e in explained])}
        values = [np.zeros((n, n)) for n in lengths.tolist()]
        bias, logit = np.zeros(len(step)), np.zeros(len(step))
        for index, chunk in estimator.iter_batches(rows, len(lengths), ordered=True):
            last, target_ids = chunk["lengths"] - 1, chunk["targets"]
            embedded = estimator.embed_symbols(x[text[index].to(x.device), : int(last.max()) + 1])
            mask = torch.arange(embedded.shape[1], device=last.device)[None] <= last[:, None]
            result = attribute_tokens(estimator.step_logits, embedded, target_ids, self.name,
                                      mask=mask, additional_forward_args=(last,),
                                      n_steps=n_steps)
            with torch.no_grad():
                logit[index.numpy()] = estimator.step_logits(embedded, last).gather(
                    1, target_ids[:, None])[:, 0].double().cpu().numpy()
            if result.baseline_logit is not None:
                bias[index.numpy()] = result.baseline_logit.double().cpu().numpy()
            scores = result.scores.cpu().numpy()
            for j, r in enumerate(index.tolist()):
                t = int(step[r])
                values[int(text[r])][t, : t + 1] = scores[j, : t + 1]
        exact = self.name == "integrated_gradients"
        ends = np.cumsum(lengths.numpy())[:-1]
        return Attributions(values=values, logits=None, target=explained,
                            logit=np.split(logit, ends) if exact else None,
                            bias=np.split(bias, ends) if exact else None,
                            extras={"predicted": predicted})


class _NoSteps(_StepGradients):
    def attribute(self, estimator: LSTMLanguageModel, batch: dict[str, torch.Tensor],
                  target: Sequence[Any], *, level: str = "char") -> Attributions:
        return super().attribute(estimator, batch, target, level=level)


class StepInputXGradient(_NoSteps):
    """Gradient × character embedding at every step."""

    name = "input_x_gradient"


class StepIntegratedGradients(_StepGradients):
    """Integrated gradients from all-zero embeddings (``n_steps``); ``logit`` / ``bias``
    report its convergence through ``completeness_error``."""

    name = "integrated_gradients"


class StepGradient(_NoSteps):
    """The gradient norm at every character embedding."""

    name = "gradient"
