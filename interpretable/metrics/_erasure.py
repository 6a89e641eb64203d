"""Erasing units from encoded texts and scoring the rest in one batched pass: what
comprehensiveness, sufficiency and leave-one-out share.

A text's *units* are what an explanation scores: the model's tokens (``level="piece"``) or,
for the word-piece models, the words of the text (``level="word"``: the pieces of a word are
erased together). The special tokens of the word-piece models (``[CLS]``, ``[SEP]``, ``<s>``,
``</s>``) are no units by default: never scored, never erased, always kept in the input;
``include_special_tokens=True`` (piece level only) makes them units like any other.

:class:`ErasedInputs` collects the variants of every text to score (each a mask of the
tokens kept), drops repeated ones, and computes the predicted class's probability of all of
them at once: the variants are compacted (the erased tokens removed, the rest re-padded) and
run through the estimator's batching loop longest first, so padding stays small.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from interpretable.metrics._common import predict_probabilities
from interpretable.preprocessing import PAD

LEVELS = ("piece", "word")


class TextUnits(NamedTuple):
    """The encoded texts and their units.

    inputs : the estimator's encoded inputs (``encode(X).inputs``: ``tokens (n, T)``,
        ``lengths (n,)``, ...);
    groups : per sample, ``(T_i,)`` int64: the unit of every token, -1 for a token that is no
        unit (a special token, kept as it is);
    names : per sample, the units' names (tokens or words), as the explanation shows them;
    specials : per sample, ``(T_i,)`` bool: which tokens are special tokens.
    """
    inputs: dict
    groups: list
    names: list
    specials: list

    def n_units(self, i: int) -> int:
        """The number of units of sample ``i``."""
        return len(self.names[i])


def check_level(level: str, include_special_tokens: bool) -> None:
    """Validate ``level`` and ``include_special_tokens`` together."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {list(LEVELS)}, got {level!r}.")
    if not isinstance(include_special_tokens, (bool, np.bool_)):
        raise TypeError("include_special_tokens must be a bool, got "
                        f"{type(include_special_tokens).__name__}.")
    if level == "word" and include_special_tokens:
        raise ValueError("include_special_tokens=True needs level='piece': at word level the "
                         "special tokens belong to no word, so no explanation scores them.")


def text_units(clf, X, level: str = "piece", include_special_tokens: bool = False) -> TextUnits:
    """Encode ``X`` and map its tokens to the units of ``level`` (see the module docstring).

    Texts of the estimators without word pieces are made of words: both levels are their
    tokens, and they have no special tokens.
    """
    check_level(level, include_special_tokens)
    encoded = clf.encode(X)
    lengths = encoded.inputs["lengths"].numpy()
    groups, names, specials = [], [], []
    for i, n in enumerate(lengths):
        pieces = None if encoded.alignments is None else encoded.alignments[i]
        if pieces is None:
            groups.append(np.arange(n, dtype=np.int64))
            names.append(list(encoded.units[i][:n]))
            specials.append(np.zeros(n, dtype=bool))
            continue
        words = np.asarray(pieces.words, dtype=np.int64)[:n]
        special = words < 0
        specials.append(special)
        if level == "word":
            groups.append(words)
            text = encoded.texts[i]
            names.append([text[a:b] for a, b in pieces.spans])
        elif include_special_tokens:
            groups.append(np.arange(n, dtype=np.int64))
            names.append(list(pieces.pieces[:n]))
        else:
            group = np.full(n, -1, dtype=np.int64)
            group[~special] = np.arange((~special).sum())
            groups.append(group)
            names.append([p for p, s in zip(pieces.pieces[:n], special, strict=True) if not s])
    return TextUnits(encoded.inputs, groups, names, specials)


def compact(inputs: dict, keep: torch.Tensor) -> dict:
    """Remove the tokens where ``keep (n, T)`` is False (remaining order kept), re-padding
    rows."""
    tokens = inputs["tokens"]
    order = torch.sort((~keep).to(torch.int8), dim=1, stable=True).indices
    new_len = keep.sum(1)
    new = tokens.gather(1, order)
    new[torch.arange(tokens.shape[1])[None] >= new_len[:, None]] = PAD
    return {**inputs, "tokens": new, "lengths": new_len.to(inputs["lengths"].dtype)}


class ErasedInputs:
    """The variants of encoded texts to score, each a sample and a mask of its tokens kept.

    :meth:`add` returns a variant's row (a repeated variant of the same sample gets the row it
    had); :meth:`probabilities` scores every row in one pass of the estimator's batching loop.

    Parameters
    ----------
    inputs : dict of str to torch.Tensor
        The encoded texts (``encode(X).inputs``).
    """

    def __init__(self, inputs: dict):
        self.inputs = inputs
        self._rows: dict = {}
        self._samples: list = []
        self._masks: list = []

    def add(self, sample: int, keep: np.ndarray) -> int:
        """Register the variant of ``sample`` keeping the tokens where ``keep (T_i,)``."""
        keep = np.asarray(keep, dtype=bool)
        key = (sample, keep.tobytes())
        if key not in self._rows:
            self._rows[key] = len(self._samples)
            self._samples.append(sample)
            self._masks.append(keep)
        return self._rows[key]

    def __len__(self) -> int:
        return len(self._samples)

    def probabilities(self, clf, batch_size=None, view: str = "model") -> torch.Tensor:
        """Class probabilities ``(n_rows, C)`` of every variant, in the order added."""
        samples = torch.as_tensor(self._samples, dtype=torch.long)
        rows = {k: v[samples] for k, v in self.inputs.items()}
        keep = torch.zeros(rows["tokens"].shape, dtype=torch.bool)
        for row, mask in enumerate(self._masks):
            keep[row, : len(mask)] = torch.from_numpy(mask)
        return predict_probabilities(clf, compact(rows, keep), batch_size=batch_size,
                                     view=view, ordered=True)


def keep_mask(groups: np.ndarray, units, keep_units: bool) -> np.ndarray:
    """``(T_i,)`` tokens kept: those of ``units`` (``keep_units``) or all others; tokens of no
    unit (-1) are always kept."""
    chosen = np.isin(groups, np.asarray(units, dtype=np.int64))
    return (chosen if keep_units else ~chosen) | (groups < 0)


def unit_scores(explanation, units: TextUnits) -> list:
    """Per sample the explanation's scores of the units ``(U_i,)``: a piece-level explanation
    of every token loses the special tokens' scores when they are no units."""
    out = []
    for i, values in enumerate(explanation.values):
        values = np.asarray(values, dtype=np.float64)
        if len(values) == len(units.groups[i]) != units.n_units(i):
            values = values[units.groups[i] >= 0]
        if len(values) != units.n_units(i):
            raise ValueError(f"the {explanation.method!r} explanation of sample {i} has "
                             f"{len(values)} units but the text has {units.n_units(i)}; "
                             "pass an explanation of the same X by the same estimator at the "
                             "same level.")
        out.append(values)
    return out


class Erasures(NamedTuple):
    """The probability drops of the predicted class, ``p(ŷ|x) − p(ŷ|variant)``.

    bins : per ``(method, keep_top)``, per sample, per bin of the convention the drop, or
        None for a bin the convention skips (``keep_top``: only the top units kept);
    leave_one_out : per sample the drops ``(U_i,)`` of removing each unit alone (empty for a
        one-unit text).
    """
    bins: dict
    leave_one_out: list


def erase(clf, units: TextUnits, scores: dict, convention, *, batch_size=None,
          view: str = "model", leave_one_out: bool = True) -> Erasures:
    """Score the erasures of every method's ``scores`` (per method, :func:`unit_scores`) by
    ``convention``'s bins and, once for all methods, every text without each unit: all
    variants in one batched pass."""
    erased = ErasedInputs(units.inputs)
    base = [erased.add(i, np.ones(len(g), bool)) for i, g in enumerate(units.groups)]
    loo = [np.array([erased.add(i, keep_mask(g, [u], False)) for u in range(units.n_units(i))]
                    if leave_one_out and units.n_units(i) > 1 else [], dtype=np.int64)
           for i, g in enumerate(units.groups)]
    rows = {(method, keep_top): [
        [None if chosen is None else erased.add(i, keep_mask(g, chosen, keep_top))
         for chosen in convention.erasure_sets(score, keep_top)]
        for i, (g, score) in enumerate(zip(units.groups, method_scores, strict=True))]
        for method, method_scores in scores.items() for keep_top in (False, True)}
    probs = erased.probabilities(clf, batch_size, view).double().numpy()
    predicted = probs[base].argmax(1)
    p0 = probs[base, predicted]

    def drops(i, variant_rows):
        return p0[i] - probs[np.asarray(variant_rows, dtype=np.int64), predicted[i]]

    bins = {key: [[None if r is None else float(drops(i, [r])[0]) for r in sample_rows]
                  for i, sample_rows in enumerate(per_sample)]
            for key, per_sample in rows.items()}
    return Erasures(bins, [drops(i, r) for i, r in enumerate(loo)])
