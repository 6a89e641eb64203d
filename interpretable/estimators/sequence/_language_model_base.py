"""What the character language models (:mod:`.language_model`) share.

* :func:`split_words` — words with their leading whitespace, the units of ``level="word"``.
* :class:`LanguageModelBase` — fitting on texts alone, next-character prediction
  (``predict_proba``, ``predict``), bits per character (``bits_per_char``, ``score``),
  sampling (``generate``) and the explanation hooks (characters or words as units, the
  explained next character).
"""

from __future__ import annotations

import math
import re
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch.nn import functional as F

from interpretable._validation import check_documents, check_random_state_seed
from interpretable.estimators.core._base import TABULAR_CHECKS
from interpretable.estimators.sequence._alphabet import UNKNOWN, next_symbol_windows
from interpretable.estimators.sequence._base import SequenceEstimator
from interpretable.nn import IGNORE_INDEX
from interpretable.utils import Interval

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

_WORD = re.compile(r"\s*\S+|\s+")


def split_words(text: str) -> list[str]:
    """Split text into words, each with its leading whitespace (``" king"``); concatenating
    the pieces gives ``text`` back."""
    return _WORD.findall(text)


class LanguageModelBase(SequenceEstimator):
    """Next-character prediction, bits per character and generation of the language models.

    Shared by the ISAN and LSTM language models. Subclasses add ``_run`` / ``_cat_states`` for
    :meth:`generate`.
    """

    _parameter_constraints = {**SequenceEstimator._parameter_constraints,
                              "seq_len": [Interval(Integral, 2, None, closed="left")]}
    _inference_parameters = (*SequenceEstimator._inference_parameters, "seq_len")
    levels = ("char", "word")
    _expected_failed_checks = dict.fromkeys(
        TABULAR_CHECKS + ("check_fit2d_1sample", "check_estimator_sparse_array",
                          "check_estimator_sparse_matrix", "check_estimator_sparse_tag"),
        "passes targets y to fit, which a language model refuses: it is fitted on texts alone, "
        "fit(X)")

    def _check_inputs(self, X) -> list[str]:
        return check_documents(X)

    def _fit(self, X, y, sample_weight=None):
        if y is not None:
            raise ValueError(f"{type(self).__name__} is fitted on texts alone (fit(X)); for "
                             "per-position targets use ISANSequenceTagger.")
        seed = self._start_fit()
        docs = check_documents(X)
        if not self._continues():  # warm_start keeps the alphabet of the previous fit
            self._learn_vocabulary(docs)
            self.classes_ = np.array(self.symbols_, dtype=object)
        inputs, targets = next_symbol_windows([self.encode_symbols(d) for d in docs],
                                              self.seq_len, train=True)
        if inputs is None:
            raise ValueError("X has no character with a successor: every text has length 1.")
        self._train(inputs, targets, seed=seed, group_sizes=[self.n_symbols_],
                    sample_weight=sample_weight)

    def _set_fitted_state(self, state: dict) -> None:
        super()._set_fitted_state(state)
        self.classes_ = np.array(self.symbols_, dtype=object)

    # ---------------------------------------------------------------- prediction
    def predict_proba(self, X: Sequence[str] | ArrayLike) -> np.ndarray:
        """Predict the distribution of the next character after each text.

        Parameters
        ----------
        X : sequence of str of shape (n_samples,)
            The texts.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities (float64) of the characters ``classes_``.

        Examples
        --------
        >>> from interpretable import ISANLanguageModel
        >>> lm = ISANLanguageModel(hidden_size=8, seq_len=8, max_epochs=1, random_state=0)
        >>> lm = lm.fit(["abcabcabc abcabc", "cab cab cab"])
        >>> lm.predict_proba(["ab", "ca"]).sum(axis=1)
        array([1., 1.])
        """
        inputs = self.encode(X).inputs
        proba = torch.empty(len(inputs["lengths"]), len(self.classes_), dtype=torch.float64)
        for rows, batch in self.iter_batches(inputs, ordered=True):
            proba[rows] = self._next_log_probs(batch).exp().cpu()
        return proba.numpy()

    def _next_log_probs(self, batch: dict) -> torch.Tensor:
        """Log-probabilities (b, O) float64 of the character after each sequence of a batch."""
        with torch.no_grad():
            logits = self.forward_batch(batch)
        last = logits[torch.arange(len(logits)), batch["lengths"] - 1]
        return torch.log_softmax(last.double(), -1)

    def predict(self, X: Sequence[str] | ArrayLike) -> np.ndarray:
        """Predict the most likely next character after each text.

        Parameters
        ----------
        X : sequence of str of shape (n_samples,)
            The texts.

        Returns
        -------
        ndarray of shape (n_samples,)
            Characters from ``classes_``.

        Examples
        --------
        >>> from interpretable import ISANLanguageModel
        >>> lm = ISANLanguageModel(hidden_size=8, seq_len=8, max_epochs=1, random_state=0)
        >>> lm = lm.fit(["abcabcabc abcabc", "cab cab cab"])
        >>> lm.predict(["ab", "ca"]).shape
        (2,)
        """
        best = self.predict_proba(X).argmax(1)  # raises NotFittedError first
        return self.classes_[best]

    def bits_per_char(self, X: Sequence[str] | ArrayLike) -> float:
        """Return the mean cross entropy in bits of each next character of the texts.

        Evaluation windows of ``seq_len`` overlap by half so every scored character has at least
        ``seq_len // 2`` characters of context (see :func:`.alphabet.next_symbol_windows`).
        Characters outside the alphabet are scored as the unknown symbol.

        Parameters
        ----------
        X : sequence of str of shape (n_samples,)
            The texts.

        Returns
        -------
        float
            Bits per character.

        Examples
        --------
        >>> from interpretable import ISANLanguageModel
        >>> lm = ISANLanguageModel(hidden_size=8, seq_len=8, max_epochs=1, random_state=0)
        >>> lm = lm.fit(["abcabcabc abcabc", "cab cab cab"])
        >>> bool(lm.bits_per_char(["abcabc"]) > 0)
        True
        """
        self._check_fitted()
        docs = check_documents(X)
        x, t = next_symbol_windows([self.encode_symbols(d) for d in docs], self.seq_len,
                                   train=False)
        if x is None:
            raise ValueError("X has no character with a successor: every text has length 1.")
        total, count = 0.0, 0
        for rows, _, logits in self.forward_batches({"x": x}):
            target = t[rows, :, 0].reshape(-1).to(logits.device)
            total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]).double(), target,
                                           ignore_index=IGNORE_INDEX, reduction="sum"))
            count += int((target != IGNORE_INDEX).sum())
        return total / count / math.log(2)

    def score(self, X: Sequence[str] | ArrayLike, y: None = None) -> float:
        """Return ``-bits_per_char(X)`` (higher is better).

        Parameters
        ----------
        X : sequence of str of shape (n_samples,)
            The texts.
        y : None
            Ignored (the targets are the texts' own next characters).

        Returns
        -------
        float
            Minus the bits per character.

        Examples
        --------
        >>> from interpretable import ISANLanguageModel
        >>> lm = ISANLanguageModel(hidden_size=8, seq_len=8, max_epochs=1, random_state=0)
        >>> lm = lm.fit(["abcabcabc abcabc", "cab cab cab"])
        >>> lm.score(["abcabc"]) == -lm.bits_per_char(["abcabc"])
        True
        """
        return -self.bits_per_char(X)

    def _run(self, x: torch.Tensor, state=None):
        """Advance the module over x (B, T): (logits of the last step (B, O), new state)."""
        raise NotImplementedError

    def _cat_states(self, states: list):
        """Concatenate the states of :meth:`_run` along the batch axis."""
        raise NotImplementedError

    def generate(self, prime: str | Sequence[str], n_chars: int = 200,
                 temperature: float = 1.0,
                 random_state: int | np.random.RandomState | None = None
                 ) -> str | list[str]:
        """Sample characters after a prime text.

        The unknown symbol is never sampled.

        Parameters
        ----------
        prime : str or list of str
            The text to continue, or a list of them (a batch).
        n_chars : int, default=200
            Characters to sample.
        temperature : float, default=1.0
            Divides the logits (``→ 0``: greedy).
        random_state : int, RandomState or None, default=None
            Makes the sample reproducible.

        Returns
        -------
        str or list of str
            The sampled continuation(s), without the prime.

        Examples
        --------
        >>> from interpretable import ISANLanguageModel
        >>> lm = ISANLanguageModel(hidden_size=8, seq_len=8, max_epochs=1, random_state=0)
        >>> lm = lm.fit(["abcabcabc abcabc", "cab cab cab"])
        >>> len(lm.generate("ab", n_chars=5, random_state=0))
        5
        """
        self._check_fitted()
        single = isinstance(prime, str)
        primes = check_documents(prime, "prime")
        if isinstance(n_chars, bool) or not isinstance(n_chars, Integral) or n_chars < 0:
            raise ValueError(f"n_chars must be an integer >= 0, got {n_chars!r}.")
        if not (isinstance(temperature, Real) and math.isfinite(temperature)
                and temperature >= 0):
            raise ValueError(f"temperature must be a non-negative number, got {temperature!r}.")
        gen = torch.Generator().manual_seed(check_random_state_seed(random_state))
        with torch.no_grad():
            # primes differ in length: advance each alone, then sample the batch together
            states, last = [], []
            for p in primes:
                logits, state = self._run(
                    torch.as_tensor(self.encode_symbols(p))[None].to(self.device_))
                states.append(state)
                last.append(logits)
            state = self._cat_states(states)
            logits = torch.cat(last)
            sampled = []
            for _ in range(n_chars):
                logits = logits.double().cpu()
                logits[:, 0] = -math.inf  # never emit the unknown symbol
                scaled = logits / temperature if temperature > 0 else None
                if scaled is None or not torch.isfinite(scaled.amax(-1)).all():
                    nxt = logits.argmax(-1)  # temperature 0, or so small it overflows: greedy
                else:
                    probs = torch.softmax(scaled, -1)
                    nxt = torch.multinomial(probs, 1, generator=gen)[:, 0]
                sampled.append(nxt)
                logits, state = self._run(nxt[:, None].to(self.device_), state)
        if sampled:
            out = ["".join(self.symbols_[i] for i in row)
                   for row in torch.stack(sampled, 1).tolist()]
        else:
            out = [""] * len(primes)
        return out[0] if single else out

    # ---------------------------------------------------------------- explanation
    def split_units(self, sequence: str, level: str) -> list[str]:
        """Split a text into characters, or words with their leading whitespace.

        Parameters
        ----------
        sequence : str
            One text.
        level : {"char", "word"}
            The units.

        Returns
        -------
        list of str
            The units; they concatenate to ``sequence``.

        Examples
        --------
        >>> from interpretable import ISANLanguageModel
        >>> lm = ISANLanguageModel(hidden_size=8, seq_len=8, max_epochs=1, random_state=0)
        >>> lm = lm.fit(["abcabcabc abcabc", "cab cab cab"])
        >>> lm.split_units("ab cab", "word")
        ['ab', ' cab']
        """
        return split_words(sequence) if level == "word" else list(sequence)

    def output_names(self) -> np.ndarray:
        """Return the names of the outputs: the characters.

        Returns
        -------
        ndarray of shape (n_classes,)
            ``classes_``.

        Examples
        --------
        >>> from interpretable import ISANLanguageModel
        >>> lm = ISANLanguageModel(hidden_size=8, seq_len=8, max_epochs=1, random_state=0)
        >>> lm = lm.fit(["abcabcabc abcabc", "cab cab cab"])
        >>> lm.output_names().tolist()
        ['<unk>', ' ', 'a', 'b', 'c']
        """
        return self.classes_

    def explained_outputs(self, ids: torch.Tensor, target: str | None, predicted: torch.Tensor
                          ) -> torch.Tensor:
        """Return the output ids to explain at each step of one text.

        Parameters
        ----------
        ids : torch.Tensor of shape (T,)
            The text's character ids.
        target : None, "actual" or str
            None: the predicted next character; "actual": the actual next character (the last
            step, which has none, falls back to the prediction); or one character.
        predicted : torch.Tensor of shape (T,)
            The predicted output ids.

        Returns
        -------
        torch.Tensor of shape (T,)
            Output ids.

        Examples
        --------
        >>> from interpretable import ISANLanguageModel
        >>> lm = ISANLanguageModel(hidden_size=8, seq_len=8, max_epochs=1, random_state=0)
        >>> lm = lm.fit(["abcabcabc abcabc", "cab cab cab"])
        >>> import torch
        >>> ids = torch.as_tensor(lm.encode_symbols("abc"))
        >>> lm.explained_outputs(ids, "actual", torch.zeros(3, dtype=torch.long))
        tensor([3, 4, 0])
        """
        if target is None:
            return predicted
        if isinstance(target, str) and target == "actual":
            return torch.cat([ids[1:], predicted[-1:]])
        if target not in self.vocabulary_ and target != UNKNOWN:
            raise ValueError(f"target {target!r} is not in the alphabet (classes_).")
        return torch.full_like(predicted, self.vocabulary_.get(target, 0))
