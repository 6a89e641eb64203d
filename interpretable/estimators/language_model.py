"""Character-level language models and sequence-to-sequence taggers with a sklearn interface.

* :class:`ISANLanguageModel` — the input switched affine network (Foerster et al., 2017) with
  exact per-symbol logit decomposition (:meth:`~ISANLanguageModel.explain`), substring
  composition (:meth:`~ISANLanguageModel.compose`, :meth:`~ISANLanguageModel.transition`) and
  change of basis (:meth:`~ISANLanguageModel.readout_basis`, :meth:`~ISANLanguageModel.to_basis`).
* :class:`LSTMLanguageModel` — the ``nn.LSTM`` baseline trained by the same loop.

Two modes, chosen by ``fit``:

* **language model** (``fit(X)``): ``X`` is a str or an iterable of str (documents); the model
  predicts each next character. ``classes_`` is the learned alphabet.
* **sequence to sequence** (``fit(X, Y)``): ``X`` is a list of symbol sequences (str or lists of
  hashable symbols) and ``Y`` a matching list of per-position integer targets, shape ``(len,)``
  or ``(len, G)`` for ``G`` independent target groups (e.g. one nesting count per bracket type).
  ``loss="cross_entropy"`` uses one softmax per group, ``loss="squared"`` regresses the one-hot
  code of each group (as the ISAN paper does for parentheses counting).

Unknown-symbol policy: symbols seen fewer than ``min_count`` times in ``fit`` are mapped to a
dedicated unknown symbol (id 0, shown as ``"<unk>"``) during training, so its transition is
learned from rare symbols; at predict time every symbol outside the alphabet maps to it too —
nothing crashes. The unknown symbol is never produced by :meth:`generate`.
"""

from __future__ import annotations

import copy
import math
import re
from collections import Counter
from collections.abc import Iterable

from numbers import Integral, Real

import numpy as np
import torch
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, StrOptions
from skorch.callbacks import GradientNormClipping
from torch import nn

from ..validation import (check_documents, check_random_state_seed, check_sequence_targets,
                          check_sequences, pad_sequences)
from ..explanation import SequenceExplanation
from ..nn.char_lstm import CharLSTM
from ..nn.isan import ISAN
from .base import Batch, NeuralEstimator

__all__ = ["ISANLanguageModel", "LSTMLanguageModel", "UNKNOWN", "split_words"]

UNKNOWN = "<unk>"
_IGNORE = -100
_LOSSES = ("cross_entropy", "squared")
_DTYPES = {"float32": torch.float32, "float64": torch.float64}
_WORD = re.compile(r"\s*\S+|\s+")


def split_words(text: str) -> list[str]:
    """Split text into words, each with its leading whitespace (``" king"``); concatenating
    the pieces gives ``text`` back."""
    return _WORD.findall(text)


def _check_int(name: str, value, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")


# ---------------------------------------------------------------------------- loss
class SequenceLoss(nn.Module):
    """Loss over positions and target groups, ignoring padded targets (``-100``).

    outputs (B, T, sum(group_sizes)); y (B, T, G) long. ``"cross_entropy"``: one softmax per
    group; ``"squared"``: mean squared error against the one-hot code of each group.
    Returned in nats (cross entropy) per target, averaged over non-padded targets.
    """

    def __init__(self, group_sizes, loss="cross_entropy"):
        super().__init__()
        self.group_sizes = [int(g) for g in group_sizes]
        self.loss = loss

    def forward(self, outputs, y):
        total, count = outputs.new_zeros(()), 0
        for g, chunk in enumerate(torch.split(outputs, self.group_sizes, dim=-1)):
            target = y[..., g].reshape(-1)
            chunk = chunk.reshape(-1, chunk.shape[-1])
            keep = target != _IGNORE
            if self.loss == "cross_entropy":
                total = total + nn.functional.cross_entropy(
                    chunk, target, ignore_index=_IGNORE, reduction="sum")
            else:
                onehot = nn.functional.one_hot(target.clamp(min=0), chunk.shape[-1]).to(chunk.dtype)
                total = total + ((chunk - onehot) ** 2).sum(-1)[keep].sum()
            count += int(keep.sum())
        return total / max(count, 1)


# ---------------------------------------------------------------------------- shared base
class _SequenceModel(NeuralEstimator):
    """Shared machinery of the character language models (vocabulary, windows, training,
    probabilities, bits per character, generation, sequence-to-sequence mode)."""

    _parameter_constraints = {
        **NeuralEstimator._parameter_constraints,
        "hidden_size": [Interval(Integral, 1, None, closed="left")],
        "seq_len": [Interval(Integral, 2, None, closed="left")],
        "min_count": [Interval(Integral, 1, None, closed="left")],
        "loss": [StrOptions(set(_LOSSES))],
        "dtype": [StrOptions(set(_DTYPES))],
        "clip_grad": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(self, *, hidden_size, seq_len, min_count, loss, dtype, clip_grad, lr,
                 max_epochs, batch_size, optimizer, weight_decay, device, random_state, verbose):
        super().__init__(
            lr=lr, max_epochs=max_epochs, batch_size=batch_size, optimizer=optimizer,
            weight_decay=weight_decay, device=device, random_state=random_state, verbose=verbose,
        )
        self.hidden_size = hidden_size
        self.seq_len = seq_len
        self.min_count = min_count
        self.loss = loss
        self.dtype = dtype
        self.clip_grad = clip_grad

    # ---------------------------------------------------------------- vocabulary
    def _learn_vocabulary(self, sequences) -> None:
        _check_int("min_count", self.min_count)
        counts = Counter()
        for s in sequences:
            counts.update(s)
        kept = sorted((c for c, n in counts.items() if n >= self.min_count), key=_sort_key)
        if not kept:
            raise ValueError(
                f"the alphabet is empty: no symbol occurs at least min_count={self.min_count} "
                "times in X."
            )
        self.vocabulary_ = {c: i + 1 for i, c in enumerate(kept)}
        self.n_symbols_ = len(kept) + 1

    def _encode(self, seq) -> np.ndarray:
        vocab = self.vocabulary_
        return np.fromiter((vocab.get(c, 0) for c in seq), dtype=np.int64, count=len(seq))

    def _inverse_vocabulary(self) -> list:
        inv = [UNKNOWN] * self.n_symbols_
        for c, i in self.vocabulary_.items():
            inv[i] = c
        return inv

    # ---------------------------------------------------------------- fit
    def _fit(self, X, y):
        """Fit a language model on texts ``X`` (``y=None``), or a tagger on ``(X, Y)``."""
        seed = self._start_fit()
        if y is None:
            docs = check_documents(X)
            self._learn_vocabulary(docs)
            self.mode_ = "lm"
            self.classes_ = np.array(self._inverse_vocabulary(), dtype=object)
            self.group_sizes_ = [self.n_symbols_]
            inputs, targets = self._lm_windows([self._encode(d) for d in docs], train=True)
            if inputs is None:
                raise ValueError("X has no character with a successor: every text has length 1.")
        else:
            seqs = check_sequences(X)
            Y = check_sequence_targets(y, [len(s) for s in seqs])
            self._learn_vocabulary(seqs)
            self.mode_ = "seq2seq"
            stacked = np.concatenate(Y)
            self.target_classes_ = [np.unique(stacked[:, g]) for g in range(stacked.shape[1])]
            self.classes_ = self.target_classes_[0] if len(self.target_classes_) == 1 else None
            self.group_sizes_ = [len(c) for c in self.target_classes_]
            coded = [self._encode_targets(t) for t in Y]
            inputs, _ = pad_sequences([self._encode(s) for s in seqs], 0)
            targets, _ = pad_sequences(coded, _IGNORE)
        self.n_outputs_ = int(sum(self.group_sizes_))
        callbacks = []
        if self.clip_grad is not None:
            callbacks.append(("clip", GradientNormClipping(self.clip_grad)))
        self._fit_net(
            self._build_module,
            SequenceLoss(self.group_sizes_, self.loss),
            {"x": inputs}, targets, seed=seed, callbacks=callbacks,
        )
        return self

    def _encode_targets(self, y: np.ndarray) -> np.ndarray:
        out = np.empty_like(y)
        for g, classes in enumerate(self.target_classes_):
            out[:, g] = np.searchsorted(classes, y[:, g])
        return out

    def _lm_windows(self, encoded, train: bool):
        """Cut documents into windows of ``seq_len`` inputs and next-symbol targets.

        Training windows do not overlap. Evaluation windows overlap by half, and each target
        is scored in exactly one window where it has at least ``seq_len // 2`` characters of
        context (except at the start of a document): the same context every model sees.
        Returns inputs (N, L) long and targets (N, L, 1) long (``-100`` = not scored).
        """
        L = self.seq_len
        stride = L if train else max(L // 2, 1)
        inputs, targets = [], []
        for ids in encoded:
            n = len(ids) - 1  # number of (input, next) pairs
            for start in range(0, max(n, 0), stride):
                x = ids[start: start + L]
                t = ids[start + 1: start + L + 1].copy()
                x = x[: len(t)]
                if not train and start > 0:
                    t[: L - stride] = _IGNORE  # scored by the previous window
                inputs.append(x)
                targets.append(t[:, None])
                if start + L >= n:
                    break
        if not inputs:
            return None, None
        x, _ = pad_sequences(inputs, 0)
        t, _ = pad_sequences(targets, _IGNORE)
        return x, t

    # ---------------------------------------------------------------- inference
    def _module_dtype(self):
        return next(self.module_.parameters()).dtype

    def _check_mode(self, mode: str, what: str):
        self._check_fitted()
        if self.mode_ != mode:
            kind = "a language model (fit(X))" if mode == "lm" else "a tagger (fit(X, Y))"
            raise ValueError(
                f"{what} is only available for {kind}; this model was fitted as {self.mode_!r}.")

    def _outputs(self, X_ids: list[np.ndarray]) -> list[torch.Tensor]:
        """Module outputs for each sequence: list of (len_i, O) CPU tensors."""
        x, lengths = pad_sequences(X_ids, 0)
        order = torch.argsort(lengths, descending=True)  # similar lengths share a batch
        out = [None] * len(X_ids)
        for rows, _, logits in self.forward_batches({"x": x[order]}):
            for j, i in enumerate(order[rows].tolist()):
                out[i] = logits[j, : int(lengths[i])].cpu()
        return out

    def _group_probabilities(self, outputs: torch.Tensor) -> list[torch.Tensor]:
        chunks = torch.split(outputs, self.group_sizes_, dim=-1)
        if self.loss == "cross_entropy":
            return [torch.softmax(c.double(), -1) for c in chunks]
        return [c.double() for c in chunks]

    def predict_proba(self, X):
        """Language model: next-symbol distribution after each prefix, (n, len(classes_)).
        Tagger: list of (len_i, sum of group sizes) per-position group-wise probabilities
        (``loss="squared"``: the raw regression outputs)."""
        self._check_fitted()
        if self.mode_ == "lm":
            docs = check_documents(X)
            outs = self._outputs([self._encode(d) for d in docs])
            return torch.stack([torch.softmax(o[-1].double(), -1) for o in outs]).numpy()
        seqs = check_sequences(X)
        outs = self._outputs([self._encode(s) for s in seqs])
        return [torch.cat(self._group_probabilities(o), -1).numpy() for o in outs]

    def predict(self, X):
        """Language model: most likely next character per prefix, (n,). Tagger: list of
        per-position label arrays (len_i,) or (len_i, G)."""
        self._check_fitted()
        if self.mode_ == "lm":
            return self.classes_[self.predict_proba(X).argmax(1)]
        seqs = check_sequences(X)
        outs = self._outputs([self._encode(s) for s in seqs])
        preds = []
        for o in outs:
            groups = self._group_probabilities(o)
            p = np.stack([c[g.argmax(-1).numpy()] for c, g in zip(self.target_classes_, groups)], 1)
            preds.append(p[:, 0] if p.shape[1] == 1 else p)
        return preds

    def bits_per_char(self, X) -> float:
        """Mean cross entropy in bits of each next character of the texts ``X``.

        Evaluation windows of ``seq_len`` overlap by half so every scored character has at least
        ``seq_len // 2`` characters of context (see :meth:`_lm_windows`). Characters outside the
        alphabet are scored as the unknown symbol.
        """
        self._check_mode("lm", "bits_per_char")
        docs = check_documents(X)
        x, t = self._lm_windows([self._encode(d) for d in docs], train=False)
        if x is None:
            raise ValueError("X has no character with a successor: every text has length 1.")
        total, count = 0.0, 0
        for rows, _, logits in self.forward_batches({"x": x}):
            target = t[rows, :, 0].reshape(-1).to(logits.device)
            total += float(nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]).double(), target, ignore_index=_IGNORE,
                reduction="sum"))
            count += int((target != _IGNORE).sum())
        return total / count / math.log(2)

    def score(self, X, y=None) -> float:
        """Language model: ``-bits_per_char(X)`` (higher is better). Tagger: share of positions
        whose every target group is predicted correctly."""
        self._check_fitted()
        if self.mode_ == "lm":
            return -self.bits_per_char(X)
        if y is None:
            raise ValueError("y is required to score a tagger fitted with fit(X, Y).")
        seqs = check_sequences(X)
        Y = check_sequence_targets(y, [len(s) for s in seqs])
        preds = self.predict(seqs)
        hits = [np.all(p.reshape(len(t), -1) == t, axis=1) for p, t in zip(preds, Y)]
        return float(np.concatenate(hits).mean())

    def _run(self, x: torch.Tensor, state=None):
        """Advance the module over x (B, T): (logits of the last step (B, O), new state)."""
        raise NotImplementedError

    def generate(self, prime, n_chars: int = 200, temperature: float = 1.0, random_state=None):
        """Sample ``n_chars`` characters after ``prime`` (str, or list of str for a batch).

        ``temperature`` divides the logits (``→ 0``: greedy). The unknown symbol is never
        sampled. ``random_state`` makes the sample reproducible.
        """
        self._check_mode("lm", "generate")
        single = isinstance(prime, str)
        primes = check_documents(prime, "prime")
        _check_int("n_chars", n_chars, 0)
        if not (isinstance(temperature, (int, float)) and math.isfinite(temperature)
                and temperature >= 0):
            raise ValueError(f"temperature must be a non-negative number, got {temperature!r}.")
        gen = torch.Generator().manual_seed(check_random_state_seed(random_state))
        inv = self._inverse_vocabulary()
        out = []
        with torch.no_grad():
            # primes differ in length: advance each alone, then sample the batch together
            states, last = [], []
            for p in primes:
                logits, state = self._run(torch.as_tensor(self._encode(p))[None].to(self.device_))
                states.append(state)
                last.append(logits)
            state = self._cat_states(states)
            logits = torch.cat(last)
            sampled = []
            for _ in range(n_chars):
                logits = logits.double().cpu()
                logits[:, 0] = -math.inf  # never emit the unknown symbol
                if temperature == 0:
                    nxt = logits.argmax(-1)
                else:
                    probs = torch.softmax(logits / temperature, -1)
                    nxt = torch.multinomial(probs, 1, generator=gen)[:, 0]
                sampled.append(nxt)
                logits, state = self._run(nxt[:, None].to(self.device_), state)
        if sampled:
            ids = torch.stack(sampled, 1).tolist()
            out = ["".join(inv[i] for i in row) for row in ids]
        else:
            out = [""] * len(primes)
        return out[0] if single else out

    # ---------------------------------------------------------------- persistence
    def _get_fitted_state(self) -> dict:
        state = {
            "mode_": self.mode_, "vocabulary_": self.vocabulary_, "n_symbols_": self.n_symbols_,
            "group_sizes_": self.group_sizes_, "n_outputs_": self.n_outputs_,
        }
        if self.mode_ == "seq2seq":
            state["target_classes_"] = list(self.target_classes_)
        return state

    def _set_fitted_state(self, state: dict) -> None:
        self.mode_ = state["mode_"]
        self.vocabulary_ = dict(state["vocabulary_"])
        self.n_symbols_ = int(state["n_symbols_"])
        self.group_sizes_ = [int(g) for g in state["group_sizes_"]]
        self.n_outputs_ = int(state["n_outputs_"])
        if self.mode_ == "lm":
            self.classes_ = np.array(self._inverse_vocabulary(), dtype=object)
        else:
            self.target_classes_ = [np.asarray(c) for c in state["target_classes_"]]
            self.classes_ = self.target_classes_[0] if len(self.target_classes_) == 1 else None


def _sort_key(symbol):
    return (type(symbol).__name__, symbol)


# ---------------------------------------------------------------------------- ISAN
class ISANLanguageModel(_SequenceModel):
    """Input switched affine network language model (or sequence tagger).

    ``h_t = W_{x_t} h_{t-1} + b_{x_t}``, logits ``W_ro h_t + b_ro``, learned ``h_{-1}``; one
    ``(W_c, b_c)`` per symbol of the alphabet learned in ``fit`` (see the module docstring for
    the unknown-symbol policy).

    Parameters
    ----------
    hidden_size : int
        State size H.
    seq_len : int
        Language models: training window length (backpropagation through time); evaluation
        windows overlap by half of it. Taggers train on whole sequences.
    min_count : int
        Symbols seen fewer times in ``fit`` share the unknown symbol.
    loss : {"cross_entropy", "squared"}
        ``"squared"`` only makes sense for taggers (one-hot regression as in the paper's
        parentheses task).
    dtype : {"float32", "float64"}
        Parameter precision (float64 makes the decomposition exact to ~1e-12).
    clip_grad : float or None
        Gradient-norm clipping threshold.
    init_gain : float
        ``W_c`` start at ``init_gain · I`` (plus small noise).
    lr, max_epochs, batch_size, optimizer, weight_decay, device, random_state, verbose
        See :class:`~interpretable.estimators.base.NeuralEstimator`.
    """

    _parameter_constraints = {**_SequenceModel._parameter_constraints,
                              "init_gain": [Interval(Real, None, None, closed="neither")]}
    explain_methods = ("inherent",)

    def __init__(
        self,
        hidden_size=128,
        *,
        seq_len=100,
        min_count=2,
        loss="cross_entropy",
        dtype="float32",
        clip_grad=1.0,
        init_gain=1.0,
        lr=2e-3,
        max_epochs=10,
        batch_size=32,
        optimizer="adam",
        weight_decay=0.0,
        device="auto",
        random_state=None,
        verbose=0,
    ):
        super().__init__(
            hidden_size=hidden_size, seq_len=seq_len, min_count=min_count, loss=loss,
            dtype=dtype, clip_grad=clip_grad, lr=lr, max_epochs=max_epochs,
            batch_size=batch_size, optimizer=optimizer, weight_decay=weight_decay, device=device,
            random_state=random_state, verbose=verbose,
        )
        self.init_gain = init_gain

    def _build_module(self):
        module = ISAN(self.n_symbols_, self.hidden_size, self.n_outputs_, init_gain=self.init_gain)
        return module.to(_DTYPES[self.dtype])

    def _run(self, x, state=None):
        states = self.module_.states(x, state)
        h = states[:, -1]
        return self.module_.readout(h), h

    @staticmethod
    def _cat_states(states):
        return torch.cat(states)

    # ---------------------------------------------------------------- explanation
    def encode(self, X) -> Batch:
        """Validated texts (language model) or symbol sequences (tagger) as ``Batch``:
        ``inputs = {"x": ids (n, T)}`` right-padded with 0 and ``units`` = the sequences."""
        self._check_fitted()
        seqs = check_documents(X) if self.mode_ == "lm" else check_sequences(X)
        ids, _ = pad_sequences([self._encode(s) for s in seqs], 0)
        return Batch({"x": ids}, units=seqs)

    def _explain_inherent(self, batch: Batch, target, *, batch_size, level="char",
                          dtype=None) -> SequenceExplanation:
        """Exact contribution of every symbol (or word) to the explained logit at every step.

        target : None (the most likely next symbol), "actual" (the actual next symbol of the
            text; the last step, which has none, falls back to the prediction), one fixed
            symbol (language model) / output unit index (tagger) at every step, or a list of
            those, one per text.
        level : {"char", "word"}
            ``"word"`` sums the contributions of the characters of each word (a word keeps
            its leading whitespace, see :func:`split_words`).
        dtype : None or "float64"
            None decomposes in the model's own dtype (``logit`` is then the model's own
            output); ``"float64"`` decomposes a float64 copy of the same parameters, which
            removes the float32 rounding from both the contributions and the logits.

        ``values[i][t, s]`` is κ_s^t; ``bias[i][t]`` is the readout bias plus the propagated
        initial state; ``logit[i][t]`` is the model's logit, so ``completeness_error`` checks
        the decomposition (float64: ~1e-13; float32: ~1e-7 of the logit scale). All positions
        are explained in one reverse pass per text.
        """
        if level not in ("char", "word"):
            raise ValueError(f"level must be 'char' or 'word', got {level!r}.")
        if dtype not in (None, "float64"):
            raise ValueError(f"dtype must be None or 'float64', got {dtype!r}.")
        if level == "word" and self.mode_ != "lm":
            raise ValueError("level='word' needs a character language model over text.")
        module = self.module_ if dtype is None else copy.deepcopy(self.module_).double()
        seqs = batch.units
        targets = target if isinstance(target, list) else [target] * len(seqs)
        if len(targets) != len(seqs):
            raise ValueError(f"target has {len(targets)} entries but X has {len(seqs)} texts.")
        inv = self._inverse_vocabulary()
        names = inv if self.mode_ == "lm" else np.arange(self.n_outputs_)
        out = {k: [] for k in ("units", "values", "target", "prediction", "logit", "bias")}
        for i, (seq, tgt) in enumerate(zip(seqs, targets)):
            ids = batch.inputs["x"][i: i + 1, : len(seq)].to(self.device_)
            with torch.no_grad():
                logits = module(ids)[0]
            predicted = logits.argmax(-1)
            t_ids = self._explained_outputs(seq, tgt, predicted)
            dec = module.decompose(ids, t_ids[None].to(self.device_))
            kappa = dec["kappa"][0, :, 0].double().cpu().numpy()  # (T, T)
            bias = (dec["initial"] + dec["bias"])[0, :, 0].double().cpu().numpy()
            units = list(seq)
            if level == "word":
                units = split_words(seq)
                bounds = np.cumsum([0] + [len(w) for w in units])
                kappa = np.add.reduceat(kappa, bounds[:-1], axis=1)
            out["units"].append([str(u) for u in units])
            out["values"].append(kappa)
            out["target"].append(np.array([names[j] for j in t_ids.tolist()], dtype=object))
            out["prediction"].append(np.array([names[j] for j in predicted.tolist()],
                                              dtype=object))
            out["logit"].append(dec["logits"][0, :, 0].double().cpu().numpy())
            out["bias"].append(bias)
        return SequenceExplanation(method="inherent", level=level, **out)

    def _explainer(self, method: str):
        return self._explain_inherent

    def _explained_outputs(self, seq, target, predicted: torch.Tensor) -> torch.Tensor:
        """Output ids (T,) to explain at each step."""
        T = len(seq)
        predicted = predicted.cpu()
        if target is None:
            return predicted
        if isinstance(target, str) and target == "actual":
            if self.mode_ != "lm":
                raise ValueError(
                    "target='actual' needs a language model; pass output indices for a tagger.")
            nxt = torch.as_tensor(self._encode(seq[1:]), dtype=torch.long)
            return torch.cat([nxt, predicted[T - 1:]])
        if self.mode_ == "lm":
            if target not in self.vocabulary_ and target != UNKNOWN:
                raise ValueError(f"target {target!r} is not in the alphabet (classes_).")
            return torch.full((T,), self.vocabulary_.get(target, 0), dtype=torch.long)
        if (isinstance(target, bool) or not isinstance(target, (int, np.integer))
                or not 0 <= target < self.n_outputs_):
            raise ValueError(f"target must be None, 'actual' or an output index in "
                             f"[0, {self.n_outputs_}), got {target!r}.")
        return torch.full((T,), int(target), dtype=torch.long)

    # ---------------------------------------------------------------- composition
    def compose(self, substring):
        """The affine map ``h → A h + b`` of a whole substring: (A (H, H), b (H,)) arrays."""
        self._check_fitted()
        if not isinstance(substring, (str, list, tuple)) or len(substring) == 0:
            raise ValueError(
                f"substring must be a non-empty str or symbol list, got {substring!r:.60}.")
        A, b = self.module_.compose(torch.as_tensor(self._encode(substring))[None].to(self.device_))
        return A[0].cpu().numpy(), b[0].cpu().numpy()

    def word_cache(self, X, n_words: int = 1000) -> dict:
        """Precomputed maps of the ``n_words`` most frequent words of ``X`` (with their leading
        whitespace, see :func:`split_words`): ``{word: (A, b)}`` torch tensors on the device,
        computed in one batched pass. Pass it to :meth:`transition`."""
        self._check_fitted()
        docs = check_documents(X)
        counts = Counter(w for d in docs for w in split_words(d) if len(w) > 1)
        words = [w for w, _ in counts.most_common(n_words)]
        if not words:
            return {}
        x, lengths = pad_sequences([self._encode(w) for w in words], 0)
        A, b = self.module_.compose(x.to(self.device_), lengths.to(self.device_))
        return {w: (A[i], b[i]) for i, w in enumerate(words)}

    def transition(self, text: str, state=None, cache: dict | None = None) -> np.ndarray:
        """The hidden state after reading ``text`` from ``state`` (default: the learned
        ``h_{-1}``), (H,). Words found in ``cache`` (see :meth:`word_cache`) advance the state
        in one affine step; other pieces are read symbol by symbol."""
        self._check_fitted()
        (text,) = check_documents([text], "text")
        m = self.module_
        with torch.no_grad():
            h = m.initial_state(1) if state is None else torch.as_tensor(
                state, dtype=self._module_dtype(), device=self.device_).reshape(1, -1)
            for piece in (split_words(text) if cache else [text]):
                if cache and piece in cache:
                    A, b = cache[piece]
                    h = m.apply_map(h, A, b)
                else:
                    for i in self._encode(piece).tolist():
                        h = m.step(h, torch.tensor([i], device=self.device_))
        return h[0].cpu().numpy()

    # ---------------------------------------------------------------- change of basis
    def readout_basis(self) -> Bunch:
        """Orthonormal basis splitting the state into the readout subspace (span of the rows
        of ``W_ro``) and its orthogonal complement (the computational subspace).

        Returns a Bunch: ``Q`` (H, H), ``rank``, ``readout`` = ``Q[:, :rank]``,
        ``computational`` = ``Q[:, rank:]``.
        """
        self._check_fitted()
        Q, rank = self.module_.readout_basis()
        Q = Q.cpu().numpy()
        return Bunch(Q=Q, rank=rank, readout=Q[:, :rank], computational=Q[:, rank:])

    def to_basis(self, Q) -> "ISANLanguageModel":
        """A copy of this fitted model with state ``h' = Q⁻¹ h`` (Q (H, H) invertible): all
        predictions are identical; parameters are re-expressed in the new basis."""
        self._check_fitted()
        Q = np.asarray(Q, dtype=np.float64)
        H = self.hidden_size
        if Q.shape != (H, H) or not np.isfinite(Q).all():
            raise ValueError(f"Q must be a finite ({H}, {H}) matrix, got shape {Q.shape}.")
        if np.linalg.cond(Q) > 1e12:
            raise ValueError(
                "Q is singular (or numerically so); a change of basis must be invertible.")
        new = copy.copy(self)
        new.module_ = self.module_.to_basis(torch.as_tensor(Q)).eval()
        new.history_ = list(self.history_)
        return new


# ---------------------------------------------------------------------------- LSTM
class LSTMLanguageModel(_SequenceModel):
    """``nn.LSTM`` character language model (or tagger): the baseline of the ISAN paper,
    trained by the same loop. Parameters as :class:`ISANLanguageModel`, plus
    ``embedding_dim`` and ``num_layers``; no inherent explanation."""

    _parameter_constraints = {**_SequenceModel._parameter_constraints,
                              "embedding_dim": [Interval(Integral, 1, None, closed="left")],
                              "num_layers": [Interval(Integral, 1, None, closed="left")]}

    def __init__(
        self,
        hidden_size=128,
        *,
        embedding_dim=32,
        num_layers=1,
        seq_len=100,
        min_count=2,
        loss="cross_entropy",
        dtype="float32",
        clip_grad=1.0,
        lr=2e-3,
        max_epochs=10,
        batch_size=32,
        optimizer="adam",
        weight_decay=0.0,
        device="auto",
        random_state=None,
        verbose=0,
    ):
        super().__init__(
            hidden_size=hidden_size, seq_len=seq_len, min_count=min_count, loss=loss,
            dtype=dtype, clip_grad=clip_grad, lr=lr, max_epochs=max_epochs,
            batch_size=batch_size, optimizer=optimizer, weight_decay=weight_decay, device=device,
            random_state=random_state, verbose=verbose,
        )
        self.embedding_dim = embedding_dim
        self.num_layers = num_layers

    def _build_module(self):
        module = CharLSTM(self.n_symbols_, self.hidden_size, self.n_outputs_,
                          embedding_dim=self.embedding_dim, num_layers=self.num_layers)
        return module.to(_DTYPES[self.dtype])

    def _run(self, x, state=None):
        m = self.module_
        out, state = m.lstm(m.embedding(x), state)
        return m.readout(out[:, -1]), state

    @staticmethod
    def _cat_states(states):
        return tuple(torch.cat(parts, 1) for parts in zip(*states))
