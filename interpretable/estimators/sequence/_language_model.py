"""Character-level language models with a sklearn interface.

* :class:`ISANLanguageModel` — the input switched affine network (Foerster et al., 2017) with
  exact per-symbol logit decomposition (``explain``), substring composition (``compose``,
  ``word_cache``, ``transition``) and change of basis (``readout_basis``, ``to_basis``).
* :class:`LSTMLanguageModel` — the ``nn.LSTM`` baseline trained by the same loop, explained
  post hoc (captum, through the character embeddings).

``fit(X)`` takes a str or an iterable of str (documents); the model predicts each next
character and ``classes_`` is the learned alphabet (see :mod:`.base` for the unknown-symbol
policy: the unknown symbol is never produced by ``generate``). What both models share
(prediction, bits per character, generation, :func:`split_words`) is in
:mod:`.language_model_base`. For per-position targets of symbol sequences use :mod:`.tagger`.
"""

from __future__ import annotations

from collections import Counter
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np
import torch

from interpretable._validation import check_documents
from interpretable.estimators.sequence._base import DTYPES, ISANBase
from interpretable.estimators.sequence._explainers import (
    StepGradient,
    StepInputXGradient,
    StepIntegratedGradients,
)
from interpretable.estimators.sequence._language_model_base import LanguageModelBase, split_words
from interpretable.nn import CharLSTM, pad_sequences
from interpretable.utils import Interval

if TYPE_CHECKING:
    from collections.abc import Sequence

    from accelerate import Accelerator
    from numpy.typing import ArrayLike
    from skorch.callbacks import Callback

__all__ = ["ISANLanguageModel", "LSTMLanguageModel"]


class ISANLanguageModel(ISANBase, LanguageModelBase):
    """Input switched affine network character language model (Foerster et al., ICML 2017).

    ``h_t = W_{x_t} h_{t-1} + b_{x_t}``, logits ``W_ro h_t + b_ro``, learned ``h_{-1}``; one
    ``(W_c, b_c)`` per character of the alphabet learned in ``fit``.
    ``explain(X, target=None, level="char", dtype=None)`` gives the exact contribution of every
    character (or word) to the explained logit at every step: ``target`` None (the predicted
    next character), "actual" (the actual next one) or a character, or a list of one per text.

    Parameters
    ----------
    hidden_size : int, default=128
        State size H.
    seq_len : int >= 2, default=100
        Training window length (backpropagation through time); evaluation windows overlap by
        half of it.
    min_count : int, default=2
        Symbols seen fewer times in ``fit`` share the unknown symbol.
    dtype : {"float32", "float64"}, default="float32"
        Parameter precision (``"float64"`` makes the decomposition exact to ~1e-12).
    clip_grad : float or None, default=1.0
        Gradient-norm clipping threshold.
    init_gain : float, default=1.0
        The maps ``W_c`` start at ``init_gain · I`` (plus small noise).
    lr : float > 0, default=0.002
        Learning rate.
    max_epochs : int >= 1, default=10
        Number of passes over the training data.
    batch_size : int >= 1, default=32
        Mini-batch size for training and inference (``explain`` and the metrics take their own
        ``batch_size``).
    optimizer : {"adam", "adamw", "sgd", "rmsprop"}, default="adam"
        The torch optimizer.
    weight_decay : float >= 0, default=0.0
        L2 penalty (decoupled for ``"adamw"``), passed to the optimizer.
    device : "auto", "cpu", "cuda", "cuda:N" or torch.device, default="auto"
        ``"auto"`` uses CUDA when available.
    random_state : int, RandomState or None, default=None
        Seeds initialisation, shuffling, dropout and the validation split; the global torch RNG
        is left untouched.
    verbose : int, default=0
        When > 0, report skorch's epoch table (logged at INFO by ``interpretable`` loggers when
        logging takes it, else printed: plain text unless standard output is a terminal) and,
        on a terminal or in Jupyter, draw progress bars over the batches of each epoch and of
        ``explain`` (see :mod:`interpretable._progress`).
    callbacks : list or None, default=None
        The skorch callbacks (``EarlyStopping``, ``LRScheduler``, ``Checkpoint``, ``ProgressBar``,
        your own) or ``(name, callback)`` pairs, added to every training phase. Each fit trains
        with deep copies: the callbacks passed here are never changed.
    validation_fraction : float in (0, 1) or None, default=None
        Share of the training data held out (stratified for classifiers, seeded by
        ``random_state``); its loss (``valid_loss``) and, for classifiers, accuracy
        (``valid_acc``) are recorded in ``history_`` after every epoch. None: train on all.
    early_stopping : bool, default=False
        Stop when the validation loss (the training loss without ``validation_fraction``) has
        not improved for ``n_iter_no_change`` epochs, and restore the weights of the best epoch
        (skorch's ``EarlyStopping(load_best=True)``).
    n_iter_no_change : int >= 1, default=5
        Patience of ``early_stopping``, in epochs.
    warm_start : bool, default=False
        When True, fitting a fitted estimator continues training its weights (the vocabulary,
        classes and input size stay those of the first fit; other labels, a changed input
        size or architecture raise a ``ValueError``); ``history_`` grows. The optimizer
        state starts afresh.
    precision : {"float32", "bf16"}, default="float32"
        ``"bf16"`` trains with mixed precision (``torch.autocast`` in bfloat16: forward and loss;
        the weights stay float32), while prediction and explanations always run in the
        parameters' own precision, so inherent explanations stay exact. Recurrent layers that
        torch cannot run in bfloat16 on the device (such as the LSTM on an x86 CPU without
        AVX-512) train in float32, with one warning per fit.
    accelerator : accelerate.Accelerator or None, default=None
        Train through Hugging Face Accelerate (skorch's ``AccelerateMixin``): under
        ``accelerate launch`` every process trains on its share of each batch (DDP) and all end
        with the same weights; ``device`` is then the accelerator's. Mixed precision is set on
        the accelerator (``Accelerator(mixed_precision="bf16")``). See
        :mod:`interpretable.integrations`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The outputs: the unknown symbol and the alphabet learned in ``fit``.
    symbols_ : list
        Id → symbol; ``symbols_[0]`` is the unknown symbol.
    vocabulary_ : dict
        Symbol → id.
    module_ : torch.nn.Module
        The fitted network.
    history_ : list of dict
        Per-epoch training record.

    See Also
    --------
    LSTMLanguageModel : The LSTM baseline.
    interpretable.metrics._isan_analysis : Analyses of the fitted ISAN.

    Examples
    --------
    >>> from interpretable import ISANLanguageModel
    >>> lm = ISANLanguageModel(hidden_size=8, seq_len=8, max_epochs=1, random_state=0)
    >>> lm = lm.fit(["abcabcabc abcabc", "cab cab cab"])
    >>> lm.predict(["ab"]).shape
    (1,)
    >>> explanation = lm.explain(["abc"], target="actual")
    >>> explanation.units
    [['a', 'b', 'c']]
    """

    saved_as = "ISANLanguageModel"

    _parameter_constraints = {**ISANBase._parameter_constraints,
                              **LanguageModelBase._parameter_constraints}

    def __init__(self, hidden_size: int = 128, *, seq_len: int = 100, min_count: int = 2,
                 dtype: str = "float32", clip_grad: float | None = 1.0, init_gain: float = 1.0,
                 lr: float = 2e-3, max_epochs: int = 10, batch_size: int = 32,
                 optimizer: str = "adam", weight_decay: float = 0.0,
                 device: str | torch.device = "auto",
                 random_state: int | np.random.RandomState | None = None, verbose: int = 0,
                 callbacks: list[Callback | tuple[str, Callback]] | None = None,
                 validation_fraction: float | None = None, early_stopping: bool = False,
                 n_iter_no_change: int = 5, warm_start: bool = False,
                 precision: str = "float32", accelerator: Accelerator | None = None):
        self.hidden_size = hidden_size
        self.seq_len = seq_len
        self.min_count = min_count
        self.dtype = dtype
        self.clip_grad = clip_grad
        self.init_gain = init_gain
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.optimizer = optimizer
        self.weight_decay = weight_decay
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.callbacks = callbacks
        self.validation_fraction = validation_fraction
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.precision = precision
        self.accelerator = accelerator

    def _next_log_probs(self, batch: dict) -> torch.Tensor:
        """Finite for texts of any length (the state is rescaled, see
        :meth:`~interpretable.nn._isan.ISAN.next_log_probs`)."""
        return self.module_.next_log_probs(batch["x"], batch["lengths"])

    def _run(self, x, state=None):
        h = self.module_.states(x, state)[:, -1]
        return self.module_.readout(h), h

    def _cat_states(self, states):
        return torch.cat(states)

    def word_cache(self, X: Sequence[str] | ArrayLike, n_words: int = 1000
                   ) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """Precompute the affine maps of the most frequent words of ``X``.

        Words keep their leading whitespace (see :func:`split_words`); the maps are computed
        in one batched pass. Pass the result to :meth:`transition`.

        Parameters
        ----------
        X : sequence of str of shape (n_samples,)
            The texts.
        n_words : int, default=1000
            How many of the most frequent words.

        Returns
        -------
        dict
            ``{word: (A, b)}``, torch tensors ``(H, H)`` and ``(H,)`` on the device.

        Examples
        --------
        >>> from interpretable import ISANLanguageModel
        >>> lm = ISANLanguageModel(hidden_size=8, seq_len=8, max_epochs=1, random_state=0)
        >>> lm = lm.fit(["abcabcabc abcabc", "cab cab cab"])
        >>> sorted(lm.word_cache(["abc cab cab"], n_words=2))
        [' cab', 'abc']
        """
        self._check_fitted()
        docs = check_documents(X)
        counts = Counter(w for d in docs for w in split_words(d) if len(w) > 1)
        words = [w for w, _ in counts.most_common(n_words)]
        if not words:
            return {}
        x, lengths = pad_sequences([self.encode_symbols(w) for w in words], 0)
        A, b = self.module_.compose(x.to(self.device_), lengths.to(self.device_))
        return {w: (A[i], b[i]) for i, w in enumerate(words)}

    def transition(self, text: str, state: ArrayLike | None = None,
                   cache: dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None
                   ) -> np.ndarray:
        """Return the hidden state after reading ``text``.

        Words found in ``cache`` (see :meth:`word_cache`) advance the state in one affine
        step; other pieces are read symbol by symbol.

        Parameters
        ----------
        text : str
            The text to read.
        state : array-like of shape (H,) or None, default=None
            The state to start from (None: the learned ``h_{-1}``).
        cache : dict or None, default=None
            Word maps from :meth:`word_cache`.

        Returns
        -------
        ndarray of shape (H,)
            The state.

        Examples
        --------
        >>> from interpretable import ISANLanguageModel
        >>> lm = ISANLanguageModel(hidden_size=8, seq_len=8, max_epochs=1, random_state=0)
        >>> lm = lm.fit(["abcabcabc abcabc", "cab cab cab"])
        >>> h = lm.transition("abc cab", cache=lm.word_cache(["abc cab"]))
        >>> h.shape
        (8,)
        """
        self._check_fitted()
        (text,) = check_documents([text], "text")
        m = self.module_
        if state is not None:
            state = np.asarray(state, dtype=np.float64)
            size = m.hidden_size
            if state.shape != (size,) or not np.isfinite(state).all():
                raise ValueError(f"state must be a finite ({size},) vector (the model's "
                                 f"hidden_size), got shape {state.shape}.")
        with torch.no_grad():
            h = m.initial_state(1) if state is None else torch.as_tensor(
                state, dtype=m.h0.dtype, device=self.device_).reshape(1, -1)
            for piece in (split_words(text) if cache else [text]):
                if cache and piece in cache:
                    A, b = cache[piece]
                    h = m.apply_map(h, A, b)
                else:
                    for i in self.encode_symbols(piece).tolist():
                        h = m.step(h, torch.tensor([i], device=self.device_))
        return h[0].cpu().numpy()


class LSTMLanguageModel(LanguageModelBase):
    """LSTM character language model: the baseline of the ISAN paper, trained by the same loop.

    ``explain(X, target=None, method="input_x_gradient", level="char")`` attributes the
    explained logit at every step to the embedding of every earlier character (captum;
    ``"integrated_gradients"`` takes ``n_steps`` and carries ``logit`` / ``bias`` so that
    ``completeness_error`` reports its convergence; ``"gradient"`` is the gradient norm).
    ``target`` as for :class:`ISANLanguageModel`.

    Parameters
    ----------
    hidden_size : int, default=128
        State size H.
    embedding_dim : int, default=32
        Character embedding size.
    num_layers : int, default=1
        Stacked LSTM layers.
    seq_len : int >= 2, default=100
        Training window length (backpropagation through time); evaluation windows overlap by
        half of it.
    min_count : int, default=2
        Symbols seen fewer times in ``fit`` share the unknown symbol.
    dtype : {"float32", "float64"}, default="float32"
        Parameter precision.
    clip_grad : float or None, default=1.0
        Gradient-norm clipping threshold.
    lr : float > 0, default=0.002
        Learning rate.
    max_epochs : int >= 1, default=10
        Number of passes over the training data.
    batch_size : int >= 1, default=32
        Mini-batch size for training and inference (``explain`` and the metrics take their own
        ``batch_size``).
    optimizer : {"adam", "adamw", "sgd", "rmsprop"}, default="adam"
        The torch optimizer.
    weight_decay : float >= 0, default=0.0
        L2 penalty (decoupled for ``"adamw"``), passed to the optimizer.
    device : "auto", "cpu", "cuda", "cuda:N" or torch.device, default="auto"
        ``"auto"`` uses CUDA when available.
    random_state : int, RandomState or None, default=None
        Seeds initialisation, shuffling, dropout and the validation split; the global torch RNG
        is left untouched.
    verbose : int, default=0
        When > 0, report skorch's epoch table (logged at INFO by ``interpretable`` loggers when
        logging takes it, else printed: plain text unless standard output is a terminal) and,
        on a terminal or in Jupyter, draw progress bars over the batches of each epoch and of
        ``explain`` (see :mod:`interpretable._progress`).
    callbacks : list or None, default=None
        The skorch callbacks (``EarlyStopping``, ``LRScheduler``, ``Checkpoint``, ``ProgressBar``,
        your own) or ``(name, callback)`` pairs, added to every training phase. Each fit trains
        with deep copies: the callbacks passed here are never changed.
    validation_fraction : float in (0, 1) or None, default=None
        Share of the training data held out (stratified for classifiers, seeded by
        ``random_state``); its loss (``valid_loss``) and, for classifiers, accuracy
        (``valid_acc``) are recorded in ``history_`` after every epoch. None: train on all.
    early_stopping : bool, default=False
        Stop when the validation loss (the training loss without ``validation_fraction``) has
        not improved for ``n_iter_no_change`` epochs, and restore the weights of the best epoch
        (skorch's ``EarlyStopping(load_best=True)``).
    n_iter_no_change : int >= 1, default=5
        Patience of ``early_stopping``, in epochs.
    warm_start : bool, default=False
        When True, fitting a fitted estimator continues training its weights (the vocabulary,
        classes and input size stay those of the first fit; other labels, a changed input
        size or architecture raise a ``ValueError``); ``history_`` grows. The optimizer
        state starts afresh.
    precision : {"float32", "bf16"}, default="float32"
        ``"bf16"`` trains with mixed precision (``torch.autocast`` in bfloat16: forward and loss;
        the weights stay float32), while prediction and explanations always run in the
        parameters' own precision, so inherent explanations stay exact. Recurrent layers that
        torch cannot run in bfloat16 on the device (such as the LSTM on an x86 CPU without
        AVX-512) train in float32, with one warning per fit.
    accelerator : accelerate.Accelerator or None, default=None
        Train through Hugging Face Accelerate (skorch's ``AccelerateMixin``): under
        ``accelerate launch`` every process trains on its share of each batch (DDP) and all end
        with the same weights; ``device`` is then the accelerator's. Mixed precision is set on
        the accelerator (``Accelerator(mixed_precision="bf16")``). See
        :mod:`interpretable.integrations`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The outputs: the unknown symbol and the alphabet learned in ``fit``.
    symbols_ : list
        Id → symbol; ``symbols_[0]`` is the unknown symbol.
    vocabulary_ : dict
        Symbol → id.
    module_ : torch.nn.Module
        The fitted network.
    history_ : list of dict
        Per-epoch training record.

    See Also
    --------
    ISANLanguageModel : The input switched affine network.

    Examples
    --------
    >>> from interpretable import LSTMLanguageModel
    >>> lm = LSTMLanguageModel(hidden_size=8, embedding_dim=4, seq_len=8, max_epochs=1,
    ...                        random_state=0).fit(["abcabcabc abcabc", "cab cab cab"])
    >>> lm.explain(["abc"]).method
    'input_x_gradient'
    """

    saved_as = "LSTMLanguageModel"

    #: the explanation methods it offers, its default first
    explainers = (StepInputXGradient(), StepIntegratedGradients(), StepGradient())

    _parameter_constraints = {**LanguageModelBase._parameter_constraints,
                              "embedding_dim": [Interval(Integral, 1, None, closed="left")],
                              "num_layers": [Interval(Integral, 1, None, closed="left")]}

    def __init__(self, hidden_size: int = 128, *, embedding_dim: int = 32, num_layers: int = 1,
                 seq_len: int = 100, min_count: int = 2, dtype: str = "float32",
                 clip_grad: float | None = 1.0, lr: float = 2e-3, max_epochs: int = 10,
                 batch_size: int = 32,
                 optimizer: str = "adam", weight_decay: float = 0.0,
                 device: str | torch.device = "auto",
                 random_state: int | np.random.RandomState | None = None, verbose: int = 0,
                 callbacks: list[Callback | tuple[str, Callback]] | None = None,
                 validation_fraction: float | None = None, early_stopping: bool = False,
                 n_iter_no_change: int = 5, warm_start: bool = False,
                 precision: str = "float32", accelerator: Accelerator | None = None):
        self.hidden_size = hidden_size
        self.embedding_dim = embedding_dim
        self.num_layers = num_layers
        self.seq_len = seq_len
        self.min_count = min_count
        self.dtype = dtype
        self.clip_grad = clip_grad
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.optimizer = optimizer
        self.weight_decay = weight_decay
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.callbacks = callbacks
        self.validation_fraction = validation_fraction
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.precision = precision
        self.accelerator = accelerator

    def _build_module(self):
        module = CharLSTM(self.n_symbols_, self.hidden_size, self.n_outputs_,
                          embedding_dim=self.embedding_dim, num_layers=self.num_layers)
        return module.to(DTYPES[self.dtype])

    def _run(self, x, state=None):
        m = self.module_
        out, state = m.lstm(m.embedding(x), state)
        return m.readout(out[:, -1]), state

    def _cat_states(self, states):
        return tuple(torch.cat(parts, 1) for parts in zip(*states, strict=True))

    # ---------------------------------------------------------------- explanation
    def embed_symbols(self, x: torch.Tensor) -> torch.Tensor:
        """Return the character embeddings of ids (detached).

        Parameters
        ----------
        x : torch.Tensor of shape (N, L)
            Character ids on the device.

        Returns
        -------
        torch.Tensor of shape (N, L, E)
            The embeddings.

        Examples
        --------
        >>> from interpretable import LSTMLanguageModel
        >>> lm = LSTMLanguageModel(hidden_size=8, embedding_dim=4, seq_len=8, max_epochs=1,
        ...                        random_state=0).fit(["abcabcabc abcabc", "cab cab cab"])
        >>> import torch
        >>> lm.embed_symbols(torch.tensor([[1, 2]], device=lm.device_)).shape
        torch.Size([1, 2, 4])
        """
        return self.module_.embedding(x).detach()

    def step_logits(self, embedded: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
        """Return the logits at one position of each row of embedded sequences.

        Parameters
        ----------
        embedded : torch.Tensor of shape (N, L, E)
            Character embeddings (:meth:`embed_symbols`).
        step : torch.Tensor of shape (N,)
            The position of each row.

        Returns
        -------
        torch.Tensor of shape (N, O)
            The logits.

        Examples
        --------
        >>> from interpretable import LSTMLanguageModel
        >>> lm = LSTMLanguageModel(hidden_size=8, embedding_dim=4, seq_len=8, max_epochs=1,
        ...                        random_state=0).fit(["abcabcabc abcabc", "cab cab cab"])
        >>> import torch
        >>> embedded = lm.embed_symbols(torch.tensor([[1, 2, 3]], device=lm.device_))
        >>> lm.step_logits(embedded, torch.tensor([2], device=lm.device_)).shape
        torch.Size([1, 5])
        """
        out, _ = self.module_.lstm(embedded)
        return self.module_.readout(out[torch.arange(len(step), device=step.device), step])
