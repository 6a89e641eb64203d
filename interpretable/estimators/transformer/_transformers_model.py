"""Any ``transformers`` sequence classifier, run as it is:
:class:`TransformersTextClassifier`.

The network is the module ``AutoModelForSequenceClassification`` loads (in float32, eager
attention), wrapped by :class:`~interpretable.nn._generic_classifier.GenericSequenceClassifier`:
it gets the token ids and the attention mask as ``transformers`` runs it, so its
predictions are the model's own, pooling included (the first token, the mean, or a
decoder's last token that is not padding). The gradient methods attribute at its input
embeddings (what ``inputs_embeds`` takes), the perturbation methods replace its tokens'
embeddings, attention and rollout read the attention probabilities it returns at the
position(s) its head reads, and every method works per word through the tokenizer's
offsets.

The fitted state holds the ``transformers`` config (its structure, not its labels) and the
tokenizer as data; a saved model is rebuilt with
``AutoModelForSequenceClassification.from_config`` from them and its safetensors weights: no
code is read from a file.
"""
from __future__ import annotations

import copy
import os
from numbers import Integral
from typing import TYPE_CHECKING, Any

import torch

from interpretable._validation import warn_caller
from interpretable.estimators.core._training import fit_transactionally
from interpretable.estimators.transformer._base import (
    PieceClassifierBase,
    matched_head,
    named_outputs,
    reorder_outputs,
)
from interpretable.estimators.transformer._checkpoint import (
    EncoderCheckpoint,
    checkpoint_labels,
    names_sequence_classifier,
    read_any_checkpoint,
)
from interpretable.nn import (
    GenericSequenceClassifier,
    UntrainedHeadError,
    calibrate,
    structure_config,
)
from interpretable.preprocessing import WordPieceEncoder
from interpretable.utils import Interval

if TYPE_CHECKING:
    import numpy as np
    from accelerate import Accelerator
    from numpy.typing import ArrayLike
    from skorch.callbacks import Callback
    from typing_extensions import Self

__all__ = ["TransformersTextClassifier"]

#: the texts of different lengths on which a new network shows what its head reads
#: (:func:`~interpretable.nn._generic_classifier.calibrate`)
_PROBES = ("Hello, World! A naïve test, long enough to be padded.", "A test.")
#: the config fields that bound a model's positions, in the order they are looked up
_POSITION_FIELDS = ("max_position_embeddings", "n_positions", "max_sequence_length",
                    "max_seq_len")
#: the longest texts ``max_length`` allows (the tokenizer's limit)
_MAX_LENGTH = 8192


def _positions(config) -> int | None:
    """The positions a ``transformers`` config allows (None: it names no bound)."""
    for field in _POSITION_FIELDS:
        value = getattr(config, field, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


class TransformersTextClassifier(PieceClassifierBase):
    """Any ``transformers`` sequence classifier, run as it is.

    The network is the ``...ForSequenceClassification`` module ``transformers`` loads from
    the ``checkpoint`` (GPT-2, Llama, Qwen2, DeBERTa-v2, ModernBERT, ALBERT, BERT, ...: any
    architecture ``AutoModelForSequenceClassification`` knows, never code from the Hub), in
    eval mode, on the word pieces its own tokenizer makes. Its predictions are the model's
    own, pooling included (a decoder pools its last token that is not padding);
    :meth:`from_pretrained` explains a fine-tuned one as it is, ``fit`` fine-tunes one (a
    base model gets a new classification head). The gradient methods attribute at its input
    embeddings, the perturbation methods replace its tokens' embeddings, ``attention`` and
    ``rollout`` read its attention probabilities at the position(s) its head reads, each per
    word piece or per word (``level="word"``).

    Parameters
    ----------
    checkpoint : None, str or path, default=None
        A local ``transformers`` folder (``save_pretrained``) or a Hugging Face Hub id
        (through ``huggingface_hub``'s cache; ``HF_HUB_OFFLINE=1`` honoured), of a sequence
        classifier (its head fine-tuned from, outputs matched to the labels by their
        ``id2label`` names) or of a base model (the head is new); None: the bundled
        all-MiniLM-L6-v2 (``bert`` extra, offline).
    max_length : int in [3, 8192], default=64
        Word pieces per text, the tokenizer's special tokens included. Longer texts keep their
        first pieces: fit, predict and explain warn, and explanations record the pieces cut
        off (``truncated``).
    warmup : float in [0, 1), default=0.1
        Share of the training steps over which the learning rate rises linearly from 0; it
        then falls linearly to 0.
    class_weight : None, "balanced" or dict {label: weight}, default=None
        Weights of the classes in the training loss (multiplied with ``sample_weight``);
        ``"balanced"``: ``n_samples / (n_classes * count(label))`` as in scikit-learn.
    lr : float > 0, default=2e-05
        Learning rate.
    max_epochs : int >= 1, default=1
        Number of passes over the training data.
    batch_size : int >= 1, default=32
        Mini-batch size for training and inference (``explain`` and the metrics take their own
        ``batch_size``).
    optimizer : {"adam", "adamw", "sgd", "rmsprop"}, default="adamw"
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
    text_encoder_ : WordPieceEncoder
        The checkpoint's tokenizer
        (:class:`~interpretable.preprocessing.WordPieceEncoder`), framing a text as it does.
    module_ : GenericSequenceClassifier
        The fitted network: the ``transformers`` module, as
        :class:`~interpretable.nn._generic_classifier.GenericSequenceClassifier`.
    history_ : list of dict
        Per-epoch training record.
    config_ : dict
        The ``transformers`` config fields that rebuild the network (``model_type``
        included; not its labels).
    embed_dim_ : int
        The size of its input embeddings.
    padding_side_ : {"right", "left"}
        Where the network's batches are padded: right, unless its head reads the last
        position whatever it holds (XLNet).
    pooling_ : {"cls", "mean", "last"}
        Where its head reads the final states: the first token, the mean of the real tokens
        or the last real token (decoders); the attention methods pool there.

    See Also
    --------
    BertTextClassifier : The BERT lineage converted to the package's own encoder, which
        ``BertTextClassifier.from_pretrained`` hands other architectures to.

    Examples
    --------
    A tiny GPT-2 classifier standing in for yours (``save_pretrained`` writes such a folder):

    >>> import transformers
    >>> from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    >>> from interpretable import TransformersTextClassifier
    >>> bpe = Tokenizer(models.BPE())
    >>> bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    >>> bpe.train_from_iterator(["a good film", "a bad plot"], trainers.BpeTrainer(
    ...     vocab_size=300, special_tokens=["<|endoftext|>"], show_progress=False,
    ...     initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    >>> tokenizer = transformers.PreTrainedTokenizerFast(
    ...     tokenizer_object=bpe, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    >>> end = tokenizer.eos_token_id
    >>> config = transformers.GPT2Config(
    ...     vocab_size=len(tokenizer), n_embd=16, n_layer=1, n_head=2, n_positions=32,
    ...     pad_token_id=end, bos_token_id=end, eos_token_id=end, id2label={0: "neg", 1: "pos"})
    >>> transformers.GPT2ForSequenceClassification(config).save_pretrained("tiny_gpt2")
    >>> _ = tokenizer.save_pretrained("tiny_gpt2")
    >>> clf = TransformersTextClassifier.from_pretrained("tiny_gpt2", device="cpu")
    >>> clf.pooling_, clf.classes_.tolist()
    ('last', ['neg', 'pos'])
    >>> clf.explain(["a good film"], method="integrated_gradients").units
    [['a', 'Ġgood', 'Ġfilm']]
    """

    saved_as = "TransformersTextClassifier"

    #: the explanation methods it offers, its default first (attention pooled where the
    #: head reads: ``module_.pooling``)
    explainers = PieceClassifierBase.explainers

    _parameter_constraints = {
        **PieceClassifierBase._parameter_constraints,
        "checkpoint": [str, os.PathLike, None],
        "max_length": [Interval(Integral, 3, _MAX_LENGTH, closed="both")],
    }

    def __init__(self, *, checkpoint: str | os.PathLike[str] | None = None,
                 max_length: int = 64, warmup: float = 0.1, lr: float = 2e-5,
                 max_epochs: int = 1, batch_size: int = 32, optimizer: str = "adamw",
                 weight_decay: float = 0.0, device: str | torch.device = "auto",
                 random_state: int | np.random.RandomState | None = None, verbose: int = 0,
                 class_weight: str | dict[Any, float] | None = None,
                 callbacks: list[Callback | tuple[str, Callback]] | None = None,
                 validation_fraction: float | None = None, early_stopping: bool = False,
                 n_iter_no_change: int = 5, warm_start: bool = False,
                 precision: str = "float32", inference_precision: str = "float32",
                 accelerator: Accelerator | None = None):
        self.checkpoint = checkpoint
        self.max_length = max_length
        self.warmup = warmup
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

    # ------------------------------------------------------------------ from_pretrained
    @classmethod
    def from_pretrained(cls, name_or_folder: str | os.PathLike[str], *,
                        classes: ArrayLike | None = None, max_length: int | None = None,
                        device: str | torch.device = "auto", **params: Any) -> Self:
        """Return a fine-tuned ``transformers`` sequence classifier as a fitted estimator.

        No training: the network is the checkpoint's own, head included, so
        ``predict_proba`` is the softmax of ``AutoModelForSequenceClassification``'s logits
        on the same tokens. Every explanation method, ``save`` / ``load``, pickling and
        pipelines work as after ``fit``; ``fit`` fine-tunes from the checkpoint.

        Parameters
        ----------
        name_or_folder : str or os.PathLike
            A local ``transformers`` folder (``save_pretrained``) of a
            ``...ForSequenceClassification`` of any architecture, or a Hugging Face Hub id
            (through ``huggingface_hub``'s cache: downloaded when online, offline read from
            the cache, ``HF_HUB_OFFLINE=1`` honoured; code from the Hub is never run).
        classes : array-like of shape (n_outputs,) or None, default=None
            The class of each output, in the checkpoint's order; None: its ``id2label``
            names (generic ``LABEL_0``-style names are kept, with a warning).
        max_length : int or None, default=None
            Word pieces per text; None: as many as the model's positions and its tokenizer
            allow (at most 8192), so long texts are cut where ``transformers`` cuts them.
        device : "auto", "cpu", "cuda", "cuda:N" or torch.device, default="auto"
            Where the network runs.
        **params
            Further parameters of the estimator (e.g. ``batch_size``, and ``lr`` or
            ``max_epochs`` for a later ``fit``).

        Returns
        -------
        TransformersTextClassifier
            The fitted estimator; ``classes_`` sorted, the head's outputs reordered to match.

        Raises
        ------
        ValueError
            If the folder or Hub id cannot be had (the message names the id, the cache and
            what to do), the checkpoint has no trained classification head (a base model:
            fine-tune it with ``fit``), is multi-label or a regression, or ``classes`` does
            not name each output once.

        Examples
        --------
        >>> import transformers
        >>> from interpretable import TransformersTextClassifier
        >>> from interpretable.datasets import load_minilm
        >>> model = transformers.AutoModelForSequenceClassification.from_pretrained(
        ...     load_minilm(), num_labels=2, id2label={0: "negative", 1: "positive"})
        >>> model.save_pretrained("my_classifier")
        >>> _ = transformers.AutoTokenizer.from_pretrained(load_minilm()).save_pretrained(
        ...     "my_classifier")
        >>> clf = TransformersTextClassifier.from_pretrained("my_classifier", device="cpu")
        >>> clf.pooling_, clf.predict_proba(["a fine film"]).shape
        ('cls', (1, 2))
        """
        return cls._from_checkpoint(name_or_folder, read_any_checkpoint(name_or_folder),
                                    classes=classes, max_length=max_length, device=device,
                                    **params)

    @classmethod
    def _from_checkpoint(cls, name_or_folder, checkpoint: EncoderCheckpoint, *, classes,
                         max_length, device, **params):
        """:meth:`from_pretrained` of a checkpoint already read."""
        tokenizer = checkpoint.load_tokenizer()
        if max_length is None:
            limits = [_positions(checkpoint.source_config), _MAX_LENGTH,
                      getattr(tokenizer, "model_max_length", None)]
            max_length = min(int(v) for v in limits if isinstance(v, int) and v >= 3)
        estimator = cls(checkpoint=name_or_folder, max_length=max_length, device=device,
                        **params)
        estimator._validate_parameters()
        return fit_transactionally(
            estimator, lambda work, *_: work._adopt_pretrained(checkpoint, tokenizer, classes),
            None, None, None)

    def _adopt_pretrained(self, checkpoint: EncoderCheckpoint, tokenizer, classes) -> None:
        """Fitted state of the read checkpoint's classifier as it is (``from_pretrained``)."""
        self._start_fit()
        self._adopt(checkpoint, tokenizer)
        try:
            module = GenericSequenceClassifier.from_pretrained(
                checkpoint.folder, config=self._source_config(checkpoint), trained_head=True)
        except UntrainedHeadError as error:
            raise ValueError(
                f"{error}. from_pretrained explains a fine-tuned classifier as it is: "
                f"fine-tune this one first, TransformersTextClassifier(checkpoint="
                f"{os.fspath(self.checkpoint)!r}).fit(X, y) trains it with a new head."
            ) from None
        self.classes_, order = named_outputs(checkpoint_labels(module.model.config), classes)
        reorder_outputs(module.output_layer, order)
        self._calibrated(module)
        self.module_ = module.to(self.device_).eval()
        self.history_ = []

    # ------------------------------------------------------------------ fit
    def _read_checkpoint(self) -> EncoderCheckpoint:
        return read_any_checkpoint(self.checkpoint)

    def _adopt_config(self, checkpoint: EncoderCheckpoint) -> None:
        self._adopt(checkpoint, checkpoint.load_tokenizer())

    def _adopt(self, checkpoint: EncoderCheckpoint, tokenizer) -> None:
        """Set the fitted state of the read ``checkpoint`` that does not depend on training
        (its weights are read later): the tokenizer ``text_encoder_``, ``config_`` (with the
        padding token: for a checkpoint whose config names none, the tokenizer's, else its
        end-of-text token, with a warning) and ``embed_dim_``, checked together."""
        source = checkpoint.source_config
        self.pair_input_ = False
        pad = source.pad_token_id
        if pad is None:
            token = tokenizer.pad_token or tokenizer.eos_token
            if token is None:
                raise ValueError(f"{checkpoint.folder} names no padding token (pad_token_id in "
                                 "config.json) and its tokenizer has neither a padding nor an "
                                 "end-of-text token to pad with.")
            pad = tokenizer.convert_tokens_to_ids(token)
            warn_caller(f"the config of {checkpoint.folder} names no pad_token_id, without "
                        "which transformers runs no batch of several texts: they are padded "
                        f"with {token!r} (id {pad}), behind the attention mask.")
        named = isinstance(self.checkpoint, (str, os.PathLike))
        self.text_encoder_ = WordPieceEncoder.from_tokenizer(
            tokenizer, max_len=self.max_length, checkpoint=checkpoint.folder if named else None,
            pad_token=tokenizer.convert_ids_to_tokens(pad))
        self.config_ = self._structure_config({**checkpoint.config, "pad_token_id": pad})
        self.padding_side_, self.pooling_ = "right", "cls"  # until the network shows its own
        self._check_vocabulary()

    def _source_config(self, checkpoint: EncoderCheckpoint):
        """The checkpoint's ``transformers`` config with the padding token of ``config_``."""
        config = copy.deepcopy(checkpoint.source_config)
        config.pad_token_id = self.config_["pad_token_id"]
        return config

    def _initial_module(self, checkpoint: EncoderCheckpoint) -> GenericSequenceClassifier:
        """The checkpoint's classifier, its outputs matched to ``classes_`` (see
        :func:`.base.matched_head`), or for a base model a new head."""
        names = [str(c) for c in self.classes_]
        config = self._source_config(checkpoint)
        plan = len(names)
        if names_sequence_classifier(config.to_dict()):
            plan = matched_head(checkpoint_labels(config), names)
        if isinstance(plan, list):
            module = GenericSequenceClassifier.from_pretrained(checkpoint.folder, config=config)
            reorder_outputs(module.output_layer, plan)
        else:
            config.num_labels = plan
            module = GenericSequenceClassifier.from_pretrained(
                checkpoint.folder, config=config, ignore_mismatched_sizes=True)
        return self._calibrated(module)

    def _fit(self, X, y, sample_weight=None):
        super()._fit(X, y, sample_weight)
        self.padding_side_, self.pooling_ = self.module_.padding_side, self.module_.pooling

    def _calibrated(self, module: GenericSequenceClassifier) -> GenericSequenceClassifier:
        """``module`` with the padding side and pooling its head shows on probe texts
        (:func:`~interpretable.nn._generic_classifier.calibrate`), as the fitted
        ``padding_side_`` and ``pooling_``."""
        ids, lengths, _ = self.text_encoder_.encode_texts(list(_PROBES))
        calibrate(module, torch.from_numpy(ids), torch.from_numpy(lengths))
        self.padding_side_, self.pooling_ = module.padding_side, module.pooling
        return module

    # ------------------------------------------------------------------ the network
    def _build_module(self) -> GenericSequenceClassifier:
        """The structure, from the fitted attributes alone (saved weights are loaded into
        it)."""
        return GenericSequenceClassifier.from_config(
            self.config_, len(self.classes_), padding_side=self.padding_side_,
            pooling=self.pooling_)

    def _structure_config(self, config: dict) -> dict:
        """The fields of a ``transformers`` config dict that rebuild its network, checked:
        a ``model_type`` of a sequence classifier ``transformers`` knows."""
        if not isinstance(config, dict) or not isinstance(config.get("model_type"), str):
            raise ValueError("the config must be a dict naming its model_type.")
        return structure_config(config)

    def _check_vocabulary(self) -> None:
        """The tokenizer fits the network of ``config_`` (built on the meta device: no
        memory): its ids index the input embeddings, its padding is the config's and
        ``max_length`` fits the positions; sets ``embed_dim_``."""
        with torch.device("meta"):
            network = GenericSequenceClassifier.from_config(self.config_, 2)
        table = network.model.get_input_embeddings()
        pieces = len(self.text_encoder_.index_to_token_)
        if pieces > table.num_embeddings:
            raise ValueError(f"the model embeds {table.num_embeddings} token ids but the "
                             f"tokenizer has {pieces}.")
        if self.text_encoder_.pad_token_id_ != self.config_.get("pad_token_id"):
            raise ValueError(f"the tokenizer pads with id {self.text_encoder_.pad_token_id_}, "
                             f"the config with pad_token_id={self.config_.get('pad_token_id')}.")
        positions = _positions(network.model.config)
        if positions is not None and self.max_length > positions:
            raise ValueError(f"max_length={self.max_length} exceeds the model's {positions} "
                             "positions.")
        self.embed_dim_ = int(table.embedding_dim)

    # ------------------------------------------------------------------ persistence
    def _get_fitted_state(self) -> dict:
        state = {**super()._get_fitted_state(), "padding_side": self.padding_side_,
                 "pooling": self.pooling_}
        del state["embed_dim"]  # the network's, from its config: stored once
        return state

    def _set_fitted_state(self, state: dict) -> None:
        self.padding_side_, self.pooling_ = str(state["padding_side"]), str(state["pooling"])
        super()._set_fitted_state({**state, "embed_dim": 0})  # the network's: checked below
