"""Attention text classifiers (encoder + additive attention + linear decoder) with sklearn's API.

:class:`AttentionClassifierBase` holds what every attention text classifier shares (module,
forward with attention / embedding overrides, attention weights, hidden-state conicity); its
subclasses say which encoder they run (:meth:`~AttentionClassifierBase.architecture`) and may add
training terms (``_criterion``). Attention and the post-hoc token methods explain them all
(:mod:`interpretable.estimators.methods`):

* :class:`AttentionTextClassifier`: the vanilla attention model of Jain & Wallace (2019), the
  baseline of Mohankumar et al. (2020) and Hu et al. (SEAT, 2023), with a free ``encoder``;
* :class:`~interpretable.estimators.DiversityLSTMClassifier` (its ``cell`` picks the encoder);
* :class:`~interpretable.estimators.SEATClassifier`.
"""
from __future__ import annotations

import copy
from collections.abc import Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from interpretable.estimators.text._base import TextClassifierBase, VocabularyClassifierBase
from interpretable.estimators.text._explainers import Attention
from interpretable.nn import RECURRENT_KINDS, AttentionTextModule, check_conicity_kind, conicity
from interpretable.utils import Interval, StrOptions

if TYPE_CHECKING:
    from accelerate import Accelerator
    from gensim.models import KeyedVectors
    from numpy.typing import ArrayLike
    from skorch.callbacks import Callback

    from interpretable.preprocessing import TextEncoder

__all__ = ["AttentionClassifierBase", "AttentionTextClassifier"]

#: the parameters that shape an attention classifier's module (with its encoder)
ARCHITECTURE = ("hidden_size", "attention_size", "freeze_embeddings", "dropout")


class AttentionClassifierBase(VocabularyClassifierBase):
    """Shared base of the attention text classifiers (see the module docstring).

    ``X`` is a list of texts, or a list of ``(text, query)`` pairs (NLI / QA style: the query's
    final state enters attention and decoder). Targets can be any hashable labels.

    Common parameters: ``embeddings``, ``embed_dim``, ``hidden_size``, ``attention_size``,
    ``freeze_embeddings``, ``dropout``, ``text_encoder`` (see
    :class:`AttentionTextClassifier`) and those of
    :class:`~interpretable.estimators.core.NeuralEstimator`.
    """

    #: the explanation methods it offers, its default first
    explainers = (Attention(), *TextClassifierBase.explainers)

    _parameter_constraints = {
        **VocabularyClassifierBase._parameter_constraints,
        "hidden_size": [Interval(Integral, 1, None, closed="left")],
        "attention_size": [Interval(Integral, 1, None, closed="left"), None],
        "dropout": [Interval(Real, 0, 1, closed="left")],
    }
    _supports_pairs = True

    # ------------------------------------------------------------------ module
    def architecture(self) -> dict:
        """Return what shapes the module.

        Returns
        -------
        dict
            The sizes named in :data:`ARCHITECTURE` and the ``encoder`` (a recurrent kind or
            an ``nn.Module``), which subclasses add.

        Examples
        --------
        >>> from interpretable import AttentionTextClassifier
        >>> AttentionTextClassifier(hidden_size=8).architecture()["hidden_size"]
        8
        """
        return {name: getattr(self, name) for name in ARCHITECTURE}

    def _build_module(self, embeddings=None) -> AttentionTextModule:
        arch = self.architecture()
        spec = arch["encoder"]
        return AttentionTextModule(
            vocab_size=len(self.text_encoder_.index_to_token_), num_classes=len(self.classes_),
            embed_dim=self.embed_dim_, hidden_size=arch["hidden_size"],
            encoder=copy.deepcopy(spec) if isinstance(spec, nn.Module) else spec,
            embeddings=None if embeddings is None else torch.as_tensor(embeddings),
            freeze_embeddings=arch["freeze_embeddings"], pair=self.pair_input_,
            dropout=arch["dropout"], attention_size=arch["attention_size"])

    # ------------------------------------------------------------------ forward
    def _attention_layer(self, view: str):
        """The attention layer behind ``view`` (None: the module's own)."""
        return None

    def forward_batch(self, batch: dict[str, torch.Tensor], *,
                      embedded: torch.Tensor | None = None,
                      attention: torch.Tensor | None = None,
                      view: str = "model") -> Any:
        """Run the module on a batch, optionally with replaced embeddings or attention.

        Parameters
        ----------
        batch : dict of str to torch.Tensor
            One batch from :meth:`iter_batches`.
        embedded : torch.Tensor of shape (B, T, E) or None, default=None
            Embeddings that replace the token embeddings.
        attention : torch.Tensor of shape (B, T) or None, default=None
            Attention weights that replace the model's.
        view : str, default="model"
            The model variant (one of ``views``).

        Returns
        -------
        AttentionOutput
            :class:`~interpretable.nn._attention.AttentionOutput`: logits, attention, hidden
            states, mask.

        Examples
        --------
        >>> from interpretable import AttentionTextClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
        ...                               random_state=0).fit(X, y)
        >>> _, batch = next(clf.iter_batches(clf.encode(["good film"]).inputs))
        >>> clf.forward_batch(batch).attention.shape
        torch.Size([1, 2])
        """
        self._check_view(view)
        return self.module_(**batch, attention=attention, embedded=embedded,
                            attention_layer=self._attention_layer(view))

    def attention(self, X: Sequence[str] | ArrayLike) -> list[np.ndarray]:
        """Return the attention weights over each text's tokens.

        Parameters
        ----------
        X : sequence of str or of (str, str) pairs, of shape (n_samples,)
            Texts, or (text, query) pairs for a model fitted on pairs.

        Returns
        -------
        list of ndarray of shape (T_i,)
            One array of weights (summing to 1) per text.

        Examples
        --------
        >>> from interpretable import AttentionTextClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
        ...                               random_state=0).fit(X, y)
        >>> [w.shape for w in clf.attention(["good film", "bad"])]
        [(2,), (1,)]
        """
        inputs = self.encode(X).inputs
        weights: list[Any] = [None] * len(inputs["lengths"])
        for rows, batch, out in self.forward_batches(inputs, ordered=True):
            for i, w, n in zip(rows.tolist(), out.attention.float().cpu().numpy(),
                               batch["lengths"].tolist(), strict=True):
                weights[i] = w[:n]
        return weights

    def hidden_conicity(self, X: Sequence[str] | ArrayLike, kind: str = "absolute"
                        ) -> np.ndarray:
        """Return the conicity of each sample's hidden states (Mohankumar et al., sec. 3.1).

        Parameters
        ----------
        X : sequence of str or of (str, str) pairs, of shape (n_samples,)
            Texts, or (text, query) pairs for a model fitted on pairs.
        kind : {"absolute", "signed"}, default="absolute"
            Mean ``|cos|`` of the states to their mean (the authors' code) or mean signed
            ``cos``.

        Returns
        -------
        ndarray of shape (n_samples,)
            The conicities.

        Examples
        --------
        >>> from interpretable import AttentionTextClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
        ...                               random_state=0).fit(X, y)
        >>> clf.hidden_conicity(["good film", "bad"]).shape
        (2,)
        """
        absolute = check_conicity_kind(kind)
        return torch.cat([conicity(out.hidden, out.mask, absolute=absolute).float().cpu()
                          for _, _, out in self.forward_batches(self.encode(X).inputs)]).numpy()


class AttentionTextClassifier(AttentionClassifierBase):
    """Text classifier with an additive attention layer over a recurrent (or custom) encoder.

    The vanilla attention model of Jain & Wallace (2019), the baseline of Mohankumar et al.
    (2020) and Hu et al. (SEAT, 2023); explained by its attention weights (the default) and
    post-hoc gradient methods.

    Parameters
    ----------
    encoder : {"rnn", "lstm", "bilstm", "orthogonal"} or nn.Module, default="lstm"
        Encoder of the texts (see :class:`interpretable.nn._attention.AttentionTextModule`); a
        module is copied at fit (never trained in place).
    embeddings : "glove-50", gensim KeyedVectors or None, default=None
        Initial word vectors (``None``: learned from scratch with ``embed_dim``).
    embed_dim : int, default=50
        Embedding size when ``embeddings`` is None.
    hidden_size : int, default=128
        Encoder hidden size (per direction for "bilstm").
    attention_size : int or None, default=None
        Size of the attention layer (default: encoder output size).
    freeze_embeddings : bool, default=False
        Keep the initial word vectors fixed during training.
    dropout : float in [0, 1), default=0.0
        Dropout on encoder input and context vector.
    text_encoder : TextEncoder or None, default=None
        Tokenization and vocabulary (cloned and fitted; None: ``TextEncoder()``).
    class_weight : None, "balanced" or dict {label: weight}, default=None
        Weights of the classes in the training loss (multiplied with ``sample_weight``);
        ``"balanced"``: ``n_samples / (n_classes * count(label))`` as in scikit-learn.
    lr : float > 0, default=0.001
        Learning rate.
    max_epochs : int >= 1, default=10
        Number of passes over the training data.
    batch_size : int >= 1, default=64
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
        the weights stay float32); prediction runs in ``inference_precision``, and
        explanations always in the parameters' own precision, so inherent explanations stay
        exact. Recurrent layers that torch cannot run in bfloat16 on the device (such as the
        LSTM on an x86 CPU without AVX-512) train in float32, with one warning per fit (the
        whole model does when a custom module runs them).
    inference_precision : {"float32", "bf16"}, default="float32"
        ``"bf16"`` runs ``predict``, ``predict_proba``, ``decision_function`` and ``score``
        under ``torch.autocast`` in bfloat16 where the device computes bfloat16 natively (a
        CUDA GPU of compute capability 8.0 or newer, a CPU with AVX512-BF16 or AMX); elsewhere
        they run in float32, with one warning, as do recurrent layers that torch cannot run in
        bfloat16 there (the whole model when a custom module runs them). Outputs keep their
        dtypes (float32 logits, float64 probabilities). So do the forward passes of the
        perturbation methods of ``explain`` (occlusion, LIME, Kernel SHAP); the other methods,
        ``logits`` and the metrics run in the parameters' own precision. Saved with the model.
    accelerator : accelerate.Accelerator or None, default=None
        Train through Hugging Face Accelerate (skorch's ``AccelerateMixin``): under
        ``accelerate launch`` every process trains on its share of each batch (DDP) and all end
        with the same weights; ``device`` is then the accelerator's. Mixed precision is set on
        the accelerator (``Accelerator(mixed_precision="bf16")``). See
        :mod:`interpretable.integrations`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    text_encoder_ : TextEncoder
        The fitted text encoder (shared by texts and queries).
    pair_input_ : bool
        Whether the model was fitted on (text, query) pairs.
    module_ : AttentionTextModule
        The fitted network (:class:`~interpretable.nn._attention.AttentionTextModule`).
    history_ : list of dict
        Per-epoch training record.

    See Also
    --------
    DiversityLSTMClassifier : Low-conicity hidden states for faithful attention.
    SEATClassifier : Stable and explainable attention.

    Examples
    --------
    >>> from interpretable import AttentionTextClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                               random_state=0).fit(X, y)
    >>> clf.predict(["good film"]).shape
    (1,)
    >>> explanation = clf.explain(["good film"])  # the attention weights
    >>> explanation.method, explanation.units
    ('attention', [['good', 'film']])
    """

    saved_as = "AttentionTextClassifier"

    _parameter_constraints = {
        **AttentionClassifierBase._parameter_constraints,
        "encoder": [StrOptions(set(RECURRENT_KINDS)), nn.Module],
    }

    def __init__(self, *, encoder: str | nn.Module = "lstm",
                 embeddings: str | KeyedVectors | None = None, embed_dim: int = 50,
                 hidden_size: int = 128, attention_size: int | None = None,
                 freeze_embeddings: bool = False, dropout: float = 0.0,
                 text_encoder: TextEncoder | None = None, lr: float = 1e-3,
                 max_epochs: int = 10, batch_size: int = 64, optimizer: str = "adam",
                 weight_decay: float = 0.0, device: str | torch.device = "auto",
                 random_state: int | np.random.RandomState | None = None, verbose: int = 0,
                 class_weight: str | dict[Any, float] | None = None,
                 callbacks: list[Callback | tuple[str, Callback]] | None = None,
                 validation_fraction: float | None = None, early_stopping: bool = False,
                 n_iter_no_change: int = 5, warm_start: bool = False,
                 precision: str = "float32", inference_precision: str = "float32",
                 accelerator: Accelerator | None = None):
        self.encoder = encoder
        self.embeddings = embeddings
        self.embed_dim = embed_dim
        self.hidden_size = hidden_size
        self.attention_size = attention_size
        self.freeze_embeddings = freeze_embeddings
        self.dropout = dropout
        self.text_encoder = text_encoder
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.optimizer = optimizer
        self.weight_decay = weight_decay
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.class_weight = class_weight
        self.callbacks = callbacks
        self.validation_fraction = validation_fraction
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.precision = precision
        self.inference_precision = inference_precision
        self.accelerator = accelerator

    def architecture(self) -> dict:
        """Return what shapes the module, the ``encoder`` included.

        Returns
        -------
        dict
            The sizes named in :data:`ARCHITECTURE` and ``encoder``.

        Examples
        --------
        >>> from interpretable import AttentionTextClassifier
        >>> AttentionTextClassifier(encoder="bilstm").architecture()["encoder"]
        'bilstm'
        """
        return {**super().architecture(), "encoder": self.encoder}
