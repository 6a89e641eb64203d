"""SEAT: stable and explainable attention (Hu et al., AAAI 2023), with the paper's baselines.

``SEATClassifier(variant=SEAT(...))`` first trains (or takes) a vanilla attention text
classifier, then finds the stable attention ``w~`` by objective (6); the other variants of
:mod:`.variants` train the authors' loss or the paper's baselines. Every evaluation runs
the module in eval mode (no dropout).
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from interpretable._validation import check_targets
from interpretable.estimators.seat._variants import VARIANTS, SEATVariant, TrainingPhase
from interpretable.estimators.text._attention import (
    AttentionClassifierBase,
    AttentionTextClassifier,
)
from interpretable.estimators.text._base import trim_collate
from interpretable.estimators.text._explainers import VanillaAttention
from interpretable.nn import (
    RECURRENT_KINDS,
    AttentionTextModule,
    BertEncoder,
    OutputCrossEntropy,
    prediction_divergence,
    top_k_overlap,
)
from interpretable.preprocessing import WordPieceEncoder
from interpretable.utils import HasMethods, StrOptions

if TYPE_CHECKING:
    from accelerate import Accelerator
    from gensim.models import KeyedVectors
    from sklearn.frozen import FrozenEstimator
    from skorch.callbacks import Callback

    from interpretable.preprocessing import TextEncoder

__all__ = ["SEATClassifier"]


def _unwrap(estimator):
    """The estimator inside an ``sklearn.frozen.FrozenEstimator`` (or the estimator itself)."""
    inner = getattr(estimator, "estimator", None)
    frozen = type(estimator).__name__ == "FrozenEstimator" and inner is not None
    return inner if frozen else estimator


class SEATClassifier(AttentionTextClassifier):
    """Attention text classifier with stable and explainable attention (SEAT) or a baseline.

    Hu et al., "SEAT: Stable and Explainable Attention" (AAAI 2023): a vanilla attention
    model is trained (or taken), then its attention is made stable under perturbations while
    staying close to the vanilla one (``variant``).

    Parameters
    ----------
    variant : str, a variant object or None, default="seat"
        The training procedure (:mod:`interpretable.estimators.seat`):
        ``SEAT(...)`` (objective (6); None or ``"seat"``: its defaults), ``AuthorsSEAT(...)``
        (the authors' code), ``Vanilla()`` or a baseline ``AttentionRP(epsilon)``,
        ``AttentionAT(epsilon)``, ``WordAT(epsilon)``; a name (``"authors"``, ``"vanilla"``,
        ``"attention-rp"``, ``"attention-at"``, ``"word-at"``) takes that variant's defaults.
        Grid-searchable as ``variant__<parameter>``.
    base_estimator : fitted attention text classifier or None, default=None
        Vanilla model to start from (any attention text classifier; SEAT revises it,
        baselines fine-tune it, ``Vanilla()`` copies it), architecture and vocabulary
        included. An unfitted one is cloned and fitted first; ``clone`` (and
        ``GridSearchCV``) unfits parameters: wrap a fitted model in
        ``sklearn.frozen.FrozenEstimator`` to keep it.
    encoder : {"rnn", "lstm", "bilstm", "orthogonal", "minilm"} or nn.Module, default="lstm"
        ``"minilm"``: the bundled MiniLM-L6 (``bert`` extra, word-piece tokens, fine-tuned;
        ``embeddings`` must be None); a :class:`~interpretable.nn._bert_encoder.BertEncoder`
        instance (e.g. randomly initialised) works the same way with the MiniLM tokenizer.
    embeddings : "glove-50", gensim KeyedVectors or None, default=None
        Initial word vectors of the vanilla model (None: learned with ``embed_dim``).
    embed_dim : int, default=50
        Embedding size when ``embeddings`` is None.
    hidden_size : int, default=128
        Encoder hidden size (per direction for "bilstm").
    attention_size : int or None, default=None
        Size of the attention layer (None: the encoder output size).
    freeze_embeddings : bool, default=False
        Keep the initial word vectors fixed during training.
    dropout : float in [0, 1), default=0.0
        Dropout on encoder input and context vector.
    text_encoder : TextEncoder, WordPieceEncoder or None, default=None
        Tokenization and vocabulary (None: ``TextEncoder()``, or with a BERT encoder
        :class:`~interpretable.preprocessing.WordPieceEncoder`).
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
    variant_ : SEATVariant
        The variant object the model was trained with.
    module_ : AttentionTextModule
        Network whose ``attention`` produces ``w~`` (SEAT), holding ``vanilla_attention``
        (``w``) for objective (6): a sibling layer chosen per call
        (``explain(method="vanilla")``, ``forward_batch(view="vanilla")``).
    vanilla_history_ : list of dict
        Per-epoch history of the vanilla training (two-phase variants; ``history_`` is the
        second phase).
    fit_diagnostics_ : dict
        Two-phase variants: on the training data, mean top-k overlap ``V_k(w, w~)``, mean
        TVD between the vanilla and the SEAT predictions and their agreement rate.
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    text_encoder_ : TextEncoder
        The fitted text encoder.
    history_ : list of dict
        Per-epoch training record.

    See Also
    --------
    AttentionTextClassifier : The vanilla attention classifier.
    interpretable.estimators.seat._variants : The training variants and baselines.

    Notes
    -----
    The training parameters, ``validation_fraction``, ``sample_weight`` and ``class_weight``
    apply to the vanilla model's training and the baselines', not to the SEAT phase, which is
    unweighted and needs gradients at every step.

    Examples
    --------
    >>> from interpretable import SEATClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = SEATClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                      random_state=0).fit(X, y)
    >>> sorted(clf.fit_diagnostics_) # doctest: +ELLIPSIS
    [...]
    >>> clf.explain(["good film"]).units
    [['good', 'film']]
    """

    saved_as = "SEATClassifier"

    #: the explanation methods it offers, its default first
    explainers = (*AttentionClassifierBase.explainers, VanillaAttention())

    _parameter_constraints = {
        **AttentionTextClassifier._parameter_constraints,
        "variant": [StrOptions(set(VARIANTS)), SEATVariant, None],
        "base_estimator": [AttentionClassifierBase, HasMethods(["fit", "predict"]), None],
        "encoder": [StrOptions({*RECURRENT_KINDS, "minilm"}), torch.nn.Module],
    }
    views = ("model", "vanilla")

    def __init__(self, *, variant: str | SEATVariant | None = "seat",
                 base_estimator: AttentionClassifierBase | FrozenEstimator | None = None,
                 encoder: str | torch.nn.Module = "lstm",
                 embeddings: str | KeyedVectors | None = None, embed_dim: int = 50,
                 hidden_size: int = 128, attention_size: int | None = None,
                 freeze_embeddings: bool = False, dropout: float = 0.0,
                 text_encoder: TextEncoder | WordPieceEncoder | None = None, lr: float = 1e-3,
                 max_epochs: int = 10, batch_size: int = 64, optimizer: str = "adam",
                 weight_decay: float = 0.0, device: str | torch.device = "auto",
                 random_state: int | np.random.RandomState | None = None, verbose: int = 0,
                 class_weight: str | dict[Any, float] | None = None,
                 callbacks: list[Callback | tuple[str, Callback]] | None = None,
                 validation_fraction: float | None = None, early_stopping: bool = False,
                 n_iter_no_change: int = 5, warm_start: bool = False,
                 precision: str = "float32", inference_precision: str = "float32",
                 accelerator: Accelerator | None = None):
        self.variant = variant
        self.base_estimator = base_estimator
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

    # ------------------------------------------------------------------ validation
    def _variant(self) -> SEATVariant:
        """The variant object of the ``variant`` parameter (a fresh clone)."""
        variant = "seat" if self.variant is None else self.variant
        return VARIANTS[variant]() if isinstance(variant, str) else clone(variant)

    def _check_params(self) -> None:
        base = self.base_estimator
        if base is not None and not isinstance(_unwrap(base), AttentionClassifierBase):
            raise TypeError("base_estimator must be an attention text classifier (or a "
                            f"FrozenEstimator of one), got {type(base).__name__}.")
        if self._is_bert() and self.embeddings is not None:
            raise ValueError("embeddings must be None with a BERT encoder: it brings its own "
                             "word-piece embeddings.")
        self._variant().check(self)

    # ------------------------------------------------------------------ module
    def architecture(self) -> dict:
        """Return what shapes the module (when fitted from ``base_estimator``, the base's).

        Returns
        -------
        dict
            The sizes and ``encoder``.

        Examples
        --------
        >>> from interpretable import SEATClassifier
        >>> SEATClassifier(hidden_size=8).architecture()["hidden_size"]
        8
        """
        arch = getattr(self, "architecture_", None)
        return arch if arch is not None else super().architecture()

    def _is_bert(self) -> bool:
        spec = self.architecture()["encoder"]
        return (isinstance(spec, str) and spec == "minilm") or isinstance(spec, BertEncoder)

    def _encoder(self, pretrained: bool):
        """The encoder module or kind; ``"minilm"`` is the bundled MiniLM, with its pretrained
        weights for training (``pretrained=True``) or only its structure (weights loaded
        afterwards)."""
        spec = self.architecture()["encoder"]
        if isinstance(spec, str) and spec == "minilm":
            from interpretable.datasets import load_minilm

            path = load_minilm()
            if pretrained:
                return BertEncoder.from_pretrained(path)
            return BertEncoder.from_config(json.loads((path / "config.json").read_text()))
        return spec

    def _default_text_encoder(self):
        return WordPieceEncoder() if self._is_bert() else super()._default_text_encoder()

    def _initial_module(self, embeddings=None) -> AttentionTextModule:
        return self._build_module(embeddings, pretrained=True)

    def _build_module(self, embeddings=None, pretrained: bool = False) -> AttentionTextModule:
        arch = self.architecture()
        spec = copy.deepcopy(self._encoder(pretrained))
        if isinstance(spec, BertEncoder):
            if spec.vocab_size != len(self.text_encoder_.index_to_token_):
                raise ValueError(f"the BERT encoder has {spec.vocab_size} word pieces but the "
                                 f"tokenizer {len(self.text_encoder_.index_to_token_)}.")
            embeddings, spec.word_embeddings = spec.word_embeddings, None  # moves into the module
        module = AttentionTextModule(
            vocab_size=len(self.text_encoder_.index_to_token_), num_classes=len(self.classes_),
            embed_dim=self.embed_dim_, hidden_size=arch["hidden_size"], encoder=spec,
            embeddings=None if embeddings is None else torch.as_tensor(embeddings),
            freeze_embeddings=arch["freeze_embeddings"], pair=self.pair_input_,
            dropout=arch["dropout"], attention_size=arch["attention_size"])
        if self.variant_.keeps_vanilla_attention:  # w beside w~, frozen as fit leaves it
            # (torch picks its matmul kernels by requires_grad: a loaded model computes w
            # bit-identically only if its flags are the fitted model's)
            module.vanilla_attention = copy.deepcopy(module.attention).requires_grad_(False)
        return module

    def _attention_layer(self, view: str):
        if view != "vanilla":
            return None
        if not hasattr(self.module_, "vanilla_attention"):
            raise ValueError(f"variant {self.variant_.name!r} keeps no separate vanilla "
                             "attention; only SEAT with the paper's objective does.")
        return self.module_.vanilla_attention

    # ------------------------------------------------------------------ fit
    def _fit_net(self, module_factory, criterion, X, y, *, seed, **options):
        """Train the attention model's phase as the variant says (the baselines add a
        perturbed forward pass); the fitted ``module_`` is the plain AttentionTextModule."""
        phase = self.variant_.first_phase(
            TrainingPhase(module_factory, criterion, X, y, options), seed)
        return self._train_phase(phase, seed)

    def _train_phase(self, phase: TrainingPhase, seed: int):
        """Train ``phase``; a Ctrl-C in a phase of a two-phase variant ends the whole fit (the
        previous model stays: fit is transactional)."""
        net = super()._fit_net(phase.module_factory, phase.criterion, phase.X, phase.y,
                               seed=seed, **phase.options)
        if net.interrupted_ and self.variant_.has_second_phase:
            raise KeyboardInterrupt(f"{type(self).__name__}.fit interrupted during a training "
                                    "phase; the estimator keeps its previous state.")
        self.module_ = phase.finish(self.module_)
        return net

    def _fit(self, X, y, sample_weight=None):
        """Train the vanilla model (or take ``base_estimator``), then the variant's second
        phase. ``warm_start`` continues the first phase (not SEAT's, which starts at
        ``w~_0 = w``)."""
        self.variant_ = self._variant()
        two_phase = self.variant_.has_second_phase
        if self._continues() and not self.variant_.supports_warm_start:
            raise ValueError(f"warm_start=True is not supported with variant "
                             f"{self.variant_.name!r}.")
        if two_phase:
            self._log("phase 1/2: vanilla attention model")
        if self.base_estimator is None or self._continues():
            super()._fit(X, y, sample_weight)
        else:
            self._start_from_base(X, y, sample_weight)
        if two_phase:
            self._log(f"phase 2/2: SEAT, variant {self.variant_.name!r}")
            self._fit_second_phase(X, y)

    def _fit_second_phase(self, X, y):
        seed = self._start_fit() + 1
        batch = self.encode(X)
        y_index = torch.as_tensor(self.target_indices(check_targets(y, len(batch)),
                                                      np.zeros((len(batch), 0))))
        self.vanilla_history_ = self.history_
        phase = self.variant_.second_phase(
            self.module_, batch.inputs, y_index, seed,
            {"lr": self.lr, "max_epochs": self.max_epochs, "collate_fn": trim_collate})
        self._train_phase(phase, seed)
        self.fit_diagnostics_ = self._diagnostics(batch.inputs, phase.reference)

    def _start_from_base(self, X, y, sample_weight=None):
        base = _unwrap(self.base_estimator)
        try:
            check_is_fitted(base, "module_")
        except NotFittedError:
            base = clone(base).fit(X, y)
        texts, queries = self._split_inputs(X, fitting=True)
        labels = check_targets(y, len(texts))
        unseen = np.setdiff1d(np.unique(labels), base.classes_)
        if unseen.size:
            raise ValueError(f"y has labels {unseen.tolist()} unknown to base_estimator.")
        if (queries is not None) != base.pair_input_:
            raise ValueError("X and base_estimator disagree on (text, query) pairs vs texts.")
        seed = self._start_fit()
        self.classes_, self.pair_input_ = base.classes_.copy(), base.pair_input_
        self.text_encoder_ = copy.deepcopy(base.text_encoder_)
        self.embed_dim_ = base.embed_dim_
        self.architecture_ = dict(base.architecture())
        module = copy.deepcopy(base.module_)
        if hasattr(module, "vanilla_attention"):
            del module.vanilla_attention
        self.module_ = module.to(self.device_).eval()
        self.history_ = list(getattr(base, "history_", []))
        if self.variant_.fine_tunes_base:
            y_index = torch.as_tensor(np.searchsorted(self.classes_, labels))
            self._fit_net(lambda: module, OutputCrossEntropy(),
                          self._encode_texts(texts, queries).inputs, y_index, seed=seed,
                          sample_weight=self._training_weights(y_index, sample_weight),
                          iterator_train__collate_fn=trim_collate)

    def _diagnostics(self, inputs, vanilla) -> dict:
        """Top-k overlap, prediction TVD and agreement with the ``vanilla`` module."""
        terms: dict[str, list[torch.Tensor]] = {"top_k_overlap": [], "prediction_tvd": [],
                                               "agreement": []}
        k = getattr(self.variant_, "k", 4)
        with torch.no_grad():
            for _, batch, out in self.forward_batches(inputs):
                ref = vanilla(**batch)
                probs = F.softmax(ref.logits, -1)
                terms["top_k_overlap"].append(top_k_overlap(ref.attention, out.attention, k,
                                                            out.mask))
                terms["prediction_tvd"].append(prediction_divergence(probs, out.logits, "tvd"))
                terms["agreement"].append((probs.argmax(1) == out.logits.argmax(1)).float())
        return {name: float(torch.cat(values).mean()) for name, values in terms.items()}

    # ------------------------------------------------------------------ persistence
    def _get_fitted_state(self) -> dict:
        return {**super()._get_fitted_state(),
                "variant": {"name": self.variant_.name, "params": self.variant_.get_params()},
                "architecture": getattr(self, "architecture_", None),
                "fit_diagnostics": getattr(self, "fit_diagnostics_", None)}

    def _set_fitted_state(self, state: dict) -> None:
        super()._set_fitted_state(state)
        variant = state["variant"]
        self.variant_ = VARIANTS[variant["name"]](**variant["params"])
        if self.variant is None:  # stored as None: the variant object is not JSON
            self.variant = clone(self.variant_)
        for name in ("architecture", "fit_diagnostics"):
            if state.get(name) is not None:
                setattr(self, name + "_", state[name])
