"""Fine-tuned BERT-family text classifiers: the B-cos one (B-cos LM, Wang et al., TMLR 2025),
whose word-piece contributions are exact, and the conventional one it is compared with.

* :class:`BcosTextClassifier` converts a pretrained BERT-family encoder (the bundled
  all-MiniLM-L6-v2 by default) into a B-cos network
  (:class:`~interpretable.nn.bcos.BcosBertClassifier`) and fine-tunes it; its default
  explanation (``"inherent"``) is exact: per word piece or per word, plus the share of the
  position and token-type embeddings (:mod:`.explainers`);
* :class:`BertTextClassifier` fine-tunes the same encoder conventionally (pooling + linear
  layer, same schedule); attention, rollout and the gradient methods explain it post hoc.

Both tokenize with :class:`~interpretable.preprocessing.WordPieceEncoder` (offsets back to the
original text) and train with BERT's schedule: AdamW, linear warm-up, linear decay to 0
(:class:`~interpretable.estimators.core._nets.LearningRateSchedule`), as
:class:`~interpretable.TransformersTextClassifier` does (what they share is :mod:`.base`).
The fitted state holds the BERT config (:mod:`.checkpoint`) and the vocabulary, the weights
file the whole encoder: a saved model loads without the data package or the checkpoint
folder. ``BertTextClassifier.from_pretrained`` hands a checkpoint of another architecture to
:class:`~interpretable.TransformersTextClassifier`, which runs it as it is.
"""
from __future__ import annotations

import os
from numbers import Real
from typing import TYPE_CHECKING, Any, Literal

import torch

from interpretable.estimators.core._teacher import TEACHER_PROBABILITIES, teacher_probabilities
from interpretable.estimators.core._training import fit_transactionally
from interpretable.estimators.transformer._base import (
    PieceClassifierBase,
    matched_head,
    named_outputs,
    reorder_outputs,
)
from interpretable.estimators.transformer._checkpoint import (
    ClassifierCheckpoint,
    EncoderCheckpoint,
    as_encoder,
    checkpoint_labels,
    classifier_config,
    converts,
    encoder_config,
    names_sequence_classifier,
    read_any_checkpoint,
    read_checkpoint,
    read_classifier_config,
    resolve_model_folder,
)
from interpretable.estimators.transformer._explainers import BcosTextContributions
from interpretable.nn import (
    BertClassifier,
    DistillationLoss,
    PretrainedSequenceClassifier,
    UntrainedHeadError,
    encoder_options,
    usable_positions,
)
from interpretable.nn.bcos import BcosBertClassifier
from interpretable.preprocessing import WordPieceEncoder
from interpretable.utils import HasMethods, Interval, StrOptions

if TYPE_CHECKING:
    import numpy as np
    from accelerate import Accelerator
    from numpy.typing import ArrayLike
    from sklearn.base import BaseEstimator
    from skorch.callbacks import Callback
    from typing_extensions import Self

    from interpretable.estimators.transformer._transformers_model import (
        TransformersTextClassifier,
    )

__all__ = ["BcosTextClassifier", "BertTextClassifier"]


class BaseEncoderClassifier(PieceClassifierBase):
    """What the fine-tuned BERT-lineage encoder classifiers share (not an estimator by
    itself): the ``checkpoint`` read as an encoder of a convertible family
    (:func:`.checkpoint.read_checkpoint`), the fitted ``config_`` of its structure and the
    pooling.

    Subclasses set ``_module_class`` (a network with ``from_config`` and ``from_bert``) and
    extend ``_module_options()``.
    """

    _parameter_constraints = {
        **PieceClassifierBase._parameter_constraints,
        "pooling": [StrOptions({"mean", "cls"})],
    }

    # ------------------------------------------------------------------ module
    def _module_options(self) -> dict:
        return {"pooling": self.pooling}

    def _reads_pooler(self) -> bool:
        """Whether the network converts the checkpoint's pooler (read with the encoder)."""
        return False

    def _build_module(self) -> torch.nn.Module:
        """The structure, from the fitted attributes alone (saved weights are loaded into
        it)."""
        return self._module_class.from_config(self.config_, len(self.classes_),
                                              **self._module_options())

    def _initial_module(self, checkpoint: EncoderCheckpoint) -> torch.nn.Module:
        """The module training starts from: the checkpoint's encoder converted (a config
        dict: randomly initialised)."""
        if checkpoint.folder is None:
            return self._build_module()
        return self._module_class.from_bert(checkpoint.load_encoder(pooler=self._reads_pooler()),
                                            None, len(self.classes_), **self._module_options())

    def _check_vocabulary(self) -> None:
        """The tokenizer fits the encoder: its ids index the embedding table, its padding is
        the table's, it frames a text with a start and an end token and ``max_length`` fits
        the positions."""
        pieces, options = len(self.text_encoder_.index_to_token_), encoder_options(self.config_)
        if pieces > options["vocab_size"]:
            raise ValueError(f"the encoder config has vocab_size={options['vocab_size']} but "
                             f"the tokenizer {pieces} word pieces.")
        pad = self.text_encoder_.pad_token_id_
        if pad != options["pad_token_id"]:
            raise ValueError(f"the tokenizer pads with id {pad}, the encoder config with "
                             f"pad_token_id={options['pad_token_id']}.")
        settings = self.text_encoder_.settings_
        if (len(settings["prefix"]), len(settings["suffix"])) != (1, 1):
            raise ValueError("the tokenizer of a BERT-lineage encoder must frame a text as a "
                             "start token, its pieces and an end token ([CLS] ... [SEP]), not "
                             f"{settings['prefix']} ... {settings['suffix']}.")
        positions = usable_positions(self.config_)
        if self.max_length > positions:
            raise ValueError(f"max_length={self.max_length} exceeds the model's {positions} "
                             "positions.")

    # ------------------------------------------------------------------ fit
    def _read_checkpoint(self) -> EncoderCheckpoint:
        return read_checkpoint(self.checkpoint)

    def _adopt_config(self, checkpoint: EncoderCheckpoint) -> None:
        """Set the fitted state of the read ``checkpoint`` (its weights are read later) that
        does not depend on training: ``config_``, the tokenizer ``text_encoder_`` (checked
        against the config), ``embed_dim_``."""
        self.pair_input_ = False
        self.config_ = self._structure_config(
            checkpoint.config if checkpoint.source_config is None
            else checkpoint.source_config.to_dict())
        named = isinstance(self.checkpoint, (str, os.PathLike))
        self.text_encoder_ = WordPieceEncoder.from_tokenizer(
            checkpoint.load_tokenizer(), max_len=self.max_length,
            checkpoint=checkpoint.folder if named else None)
        self._check_vocabulary()
        self.embed_dim_ = encoder_options(self.config_)["hidden_size"]

    def _structure_config(self, config: dict) -> dict:
        return encoder_config(config)

    # ------------------------------------------------------------------ persistence
    def _get_fitted_state(self) -> dict:
        state = super()._get_fitted_state()
        del state["embed_dim"]  # the config's hidden size: stored once
        return state

    def _set_fitted_state(self, state: dict) -> None:
        hidden_size = encoder_options(self._structure_config(state["config"]))["hidden_size"]
        super()._set_fitted_state({**state, "embed_dim": hidden_size})


class BertTextClassifier(BaseEncoderClassifier):
    """Conventionally fine-tuned BERT-family text classifier.

    The comparison model of :class:`BcosTextClassifier`: a pretrained encoder, pooling,
    dropout, a linear layer. Explained by attention, attention rollout and gradient methods.

    Parameters
    ----------
    checkpoint : None, str, path or dict, default=None
        None: the bundled all-MiniLM-L6-v2 (``bert`` extra, offline). A local folder of an
        encoder of the BERT lineage (``transformers`` layout: ``config.json``, weights and a
        fast tokenizer; never downloads): BERT, RoBERTa, XLM-RoBERTa, CamemBERT, DistilBERT
        or ELECTRA, base models or fine-tunes with a task head (the head is not used); other
        model types are refused at fit with the list
        (:class:`~interpretable.TransformersTextClassifier` fine-tunes them as they are). A
        dict: the fields of an encoder config (``model_type`` as above, default BERT),
        randomly initialised, with the bundled tokenizer (``vocab_size`` must be its 30,522):
        tests, training from scratch.
    pooling : {"mean", "cls"}, default="mean"
        The sequence vector: the mean of the real tokens' final states (how
        sentence-transformers trained MiniLM) or the ``[CLS]`` state.
    max_length : int in [3, 512], default=64
        Word pieces per text, ``[CLS]`` and ``[SEP]`` included. Longer texts keep their first
        ``max_length - 2`` pieces: fit, predict and explain warn, and explanations record the
        pieces cut off (``truncated``).
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
        The checkpoint's tokenizer (:class:`~interpretable.preprocessing.WordPieceEncoder`).
    module_ : torch.nn.Module
        The fitted network.
    history_ : list of dict
        Per-epoch training record.
    config_ : dict
        The encoder config fields that rebuild its structure (``model_type`` included).
    embed_dim_ : int
        Its hidden size.

    See Also
    --------
    BcosTextClassifier : The B-cos version, exact contributions.

    Examples
    --------
    A randomly initialised tiny encoder (``checkpoint=None`` fine-tunes the bundled MiniLM):

    >>> from interpretable import BertTextClassifier
    >>> config = {"vocab_size": 30522, "hidden_size": 8, "num_hidden_layers": 1,
    ...           "num_attention_heads": 2, "intermediate_size": 16,
    ...           "max_position_embeddings": 32, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
    ...           "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = BertTextClassifier(checkpoint=config, max_length=16, max_epochs=1,
    ...                          random_state=0).fit(X, y)
    >>> clf.explain(["good film"]).units  # attention over the word pieces
    [['[CLS]', 'good', 'film', '[SEP]']]
    """

    saved_as = "BertTextClassifier"

    _parameter_constraints = {
        **BaseEncoderClassifier._parameter_constraints,
        "pooling": [StrOptions({"mean", "cls", "checkpoint"})],
    }
    _module_class = BertClassifier

    @classmethod
    def from_pretrained(cls, name_or_folder: str | os.PathLike[str], *,
                        classes: ArrayLike | None = None, max_length: int | None = None,
                        device: str | torch.device = "auto", **params: Any
                        ) -> Self | TransformersTextClassifier:
        """Return a fine-tuned ``transformers`` sequence classifier as a fitted estimator.

        No training: the network is the checkpoint's own (encoder and classification head,
        ``pooling="checkpoint"``), so ``predict_proba`` is the softmax of
        ``AutoModelForSequenceClassification``'s logits on the same word pieces. Every
        explanation method, ``save`` / ``load``, pickling and pipelines work as after
        ``fit``; ``fit`` fine-tunes from the checkpoint, head included. A checkpoint of
        another architecture (GPT-2, Llama, Qwen2, DeBERTa-v2, ModernBERT, ALBERT, ...) is
        run by ``transformers`` itself: a
        :class:`~interpretable.TransformersTextClassifier`
        is returned.

        Parameters
        ----------
        name_or_folder : str or os.PathLike
            A local ``transformers`` folder (``save_pretrained``) of a
            ``...ForSequenceClassification`` (of BERT, RoBERTa, XLM-RoBERTa, CamemBERT,
            DistilBERT or ELECTRA: converted to the package's encoder; of any other
            architecture: run as it is), or a Hugging Face Hub id (through
            ``huggingface_hub``'s cache: downloaded when online, offline read from the cache,
            ``HF_HUB_OFFLINE=1`` honoured; code from the Hub is never run).
        classes : array-like of shape (n_outputs,) or None, default=None
            The class of each output, in the checkpoint's order; None: its ``id2label``
            names (generic ``LABEL_0``-style names are kept, with a warning).
        max_length : int or None, default=None
            Word pieces per text; None: as many as the checkpoint's positions allow (at most
            512), so long texts are cut where ``transformers`` cuts them.
        device : "auto", "cpu", "cuda", "cuda:N" or torch.device, default="auto"
            Where the network runs.
        **params
            Further parameters of the estimator (e.g. ``batch_size``, and ``lr`` or
            ``max_epochs`` for a later ``fit``).

        Returns
        -------
        BertTextClassifier or TransformersTextClassifier
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
        >>> from interpretable import BertTextClassifier
        >>> from interpretable.datasets import load_minilm
        >>> model = transformers.AutoModelForSequenceClassification.from_pretrained(
        ...     load_minilm(), num_labels=2, id2label={0: "negative", 1: "positive"})
        >>> model.save_pretrained("my_model")
        >>> transformers.AutoTokenizer.from_pretrained(load_minilm()).save_pretrained("my_model")
        ('my_model/tokenizer_config.json', 'my_model/tokenizer.json')
        >>> clf = BertTextClassifier.from_pretrained("my_model")
        >>> clf.classes_
        array(['negative', 'positive'], dtype='<U8')
        >>> clf.predict_proba(["a fine film"]).shape
        (1, 2)
        """
        checkpoint = read_any_checkpoint(name_or_folder)  # a Hub id is resolved here, once
        if not converts(checkpoint):  # another architecture: run as it is
            from interpretable.estimators.transformer._transformers_model import (
                TransformersTextClassifier,
            )

            return TransformersTextClassifier._from_checkpoint(
                name_or_folder, checkpoint, classes=classes, max_length=max_length,
                device=device, **params)
        checkpoint = as_encoder(checkpoint)
        if max_length is None:
            max_length = min(usable_positions(checkpoint.config), 512)
        estimator = cls(checkpoint=name_or_folder, pooling="checkpoint", max_length=max_length,
                        device=device, **params)
        estimator._validate_parameters()
        return fit_transactionally(
            estimator, lambda work, *_: work._adopt_checkpoint(checkpoint, classes),
            None, None, None)

    def _adopt_checkpoint(self, checkpoint: EncoderCheckpoint, classes) -> None:
        """Fitted state of the read checkpoint's classifier as it is (``from_pretrained``)."""
        self._start_fit()
        self._adopt_config(checkpoint)
        try:
            module = checkpoint.load_classifier(trained_head=True)
        except UntrainedHeadError as error:
            raise ValueError(
                f"{error}. from_pretrained explains a fine-tuned classifier as it is: "
                f"fine-tune this one first, BertTextClassifier(checkpoint="
                f"{os.fspath(self.checkpoint)!r}).fit(X, y), or B-cosify and fine-tune it, "
                f"BcosTextClassifier(checkpoint={os.fspath(self.checkpoint)!r}).fit(X, y)."
            ) from None
        self.classes_, order = named_outputs(checkpoint_labels(checkpoint.source_config),
                                             classes)
        reorder_outputs(module.output_layer, order)
        self.module_ = module.to(self.device_).eval()
        self.history_ = []

    def _structure_config(self, config: dict) -> dict:
        """With the checkpoint's head, its fields too."""
        if self.pooling == "checkpoint":
            return classifier_config(config)
        return super()._structure_config(config)

    def _build_module(self) -> torch.nn.Module:
        if self.pooling == "checkpoint":
            return PretrainedSequenceClassifier.from_config(self.config_, len(self.classes_))
        return super()._build_module()

    def _initial_module(self, checkpoint: EncoderCheckpoint) -> torch.nn.Module:
        """With ``pooling="checkpoint"``, the checkpoint's classifier: its outputs matched to
        ``classes_`` by their ``id2label`` names, else taken in order when there are as many;
        otherwise a new output layer (with a warning)."""
        if self.pooling != "checkpoint" or checkpoint.folder is None:
            return super()._initial_module(checkpoint)
        names = [str(c) for c in self.classes_]
        if not names_sequence_classifier(checkpoint.source_config.to_dict()):
            return checkpoint.load_classifier(len(names))  # a base model: the head is new
        plan = matched_head(checkpoint_labels(checkpoint.source_config), names)
        if not isinstance(plan, list):
            return checkpoint.load_classifier(plan)
        module = checkpoint.load_classifier()
        reorder_outputs(module.output_layer, plan)
        return module

    def __init__(self, *, checkpoint: str | os.PathLike[str] | dict[str, Any] | None = None,
                 pooling: str = "mean", max_length: int = 64, warmup: float = 0.1,
                 lr: float = 2e-5, max_epochs: int = 1, batch_size: int = 32,
                 optimizer: str = "adamw", weight_decay: float = 0.0,
                 device: str | torch.device = "auto",
                 random_state: int | np.random.RandomState | None = None, verbose: int = 0,
                 class_weight: str | dict[Any, float] | None = None,
                 callbacks: list[Callback | tuple[str, Callback]] | None = None,
                 validation_fraction: float | None = None, early_stopping: bool = False,
                 n_iter_no_change: int = 5, warm_start: bool = False,
                 precision: str = "float32", inference_precision: str = "float32",
                 accelerator: Accelerator | None = None):
        self.checkpoint = checkpoint
        self.pooling = pooling
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


class BcosTextClassifier(BaseEncoderClassifier):
    """B-cos text classifier (B-cos LM, Wang et al., TMLR 2025): exact word-piece contributions.

    A pretrained BERT-family encoder converted into a B-cos network and fine-tuned; its
    logits are exactly the sum of the contributions of the word pieces, of the position /
    token-type embeddings and a fixed bias.

    The conversion (:class:`~interpretable.nn.bcos.BcosBertClassifier`): biases
    removed; the dense layers, pooler and classifier B-cos layers (unit-norm rows, exponent
    ``b``); GELU ``x·Φ(x)``, the attention probabilities and the LayerNorm scales dynamic
    weights. ``explain()`` (``"inherent"``) is exact: per word piece or, ``level="word"``, per
    word of the original text (see :mod:`interpretable.estimators.methods`).

    Parameters
    ----------
    b : float >= 1 or list of floats, default=1.5
        The B-cos exponent, one for all encoder layers or one per layer; the pooler and
        classifier take the last. Larger ``b`` presses weights to align with their inputs
        (sparser, more readable explanations); ``b = 1`` removes the alignment pressure: the
        model is the converted network (biases removed, dense rows normalised), still
        dynamic linear, so its contributions stay exact.
    gain : {"matched", "unit"}, default="matched"
        The constant factor of every B-cos layer. ``"unit"``: none (γ = 1, the authors'
        B-cos LM). ``"matched"``: γ = :func:`~interpretable.nn.bcos._bert_layers.alignment_gain`
        of its fan-in and ``b``, so that each layer keeps, at conversion, the output scale
        of the linear map it replaces: otherwise every B-cos layer shrinks its output by
        ``|cos|^(B-1)`` (about 0.2 in MiniLM at B = 1.5), the converted encoder starts with
        branches 20-40 times below the residual stream and logits near 0.004, and
        fine-tuning is slow. γ is a constant: contributions stay exact; at ``b = 1`` it is 1.
    b_anneal : float in [0, 1], default=0.5
        Share of the training steps over which every layer's exponent rises linearly from 1
        (the converted network, closest to the pretrained one) to ``b`` (with its matched
        gain); 0: ``b`` from the start. The fitted model has exponent ``b``; a
        ``warm_start`` continuation trains at ``b``.
    row_norms : {"unit", "pretrained"}, default="unit"
        ``"unit"``: unit-norm B-cos rows (B-cos LM). ``"pretrained"``: each converted row keeps
        its checkpoint norm as a fixed gain (B-cosification): at ``b = 1`` the encoder is
        exactly the bias-free checkpoint.
    pooler : bool, default=True
        Keep the converted B-cos pooler (B-cos LM's); False: the classifier reads the pooling.
    gate_biases : bool, default=True
        Keep the checkpoint's query / key biases (inside the attention probabilities) and
        intermediate bias (inside the GELU gate, ``x·Φ(x + bias)``); the linear path stays
        bias-free, the contributions exact. Measured on the full Rotten Tomatoes split (one
        epoch, lr 1e-4, 3 seeds): within about a point of the conventional MiniLM, where
        removing these biases too (False, B-cos LM's conversion) cost 2-4 points.
    logit_scale : float > 0 or "learned", default=1.0
        A constant factor of the (cosine-style, bounded) logits, or a trained one from 1.
    head_lr : float > 0 or None, default=None
        Peak learning rate of the new classifier (and a learned logit scale), on the same
        schedule (LP-FT style); None: ``lr``. Every option keeps contributions exact.
    teacher : None, fitted classifier, str or path, default=None
        Distil from a conventional model (Hinton et al., 2015; B-cosification trains this way):
        a fitted classifier over the same texts and classes with ``predict_proba`` (e.g. a
        fitted :class:`BertTextClassifier`), the folder of one saved with ``save()``, or the
        folder of a fine-tuned ``transformers`` sequence classifier whose ``id2label`` names
        the same classes (read at each fit, never downloaded). Its probabilities of the
        training texts are computed once per fit; it is only read. Clones
        (``GridSearchCV``) share it; the fitted student never stores it: ``save`` and
        pickles of the fitted student hold ``teacher=None`` (a folder's path as the path).
        None: train on the labels alone.
    teacher_weight : float in [0, 1], default=0.5
        With a ``teacher``, the share of the loss that matches its softened probabilities
        (KL divergence, scaled by ``teacher_temperature ** 2``); the rest is cross-entropy
        with the labels.
    teacher_temperature : float > 0, default=2.0
        The temperature both the teacher's and the student's probabilities are softened with
        in the distillation term.
    checkpoint : None, str, path or dict, default=None
        None: the bundled all-MiniLM-L6-v2 (``bert`` extra, offline). A local folder of an
        encoder of the BERT lineage (``transformers`` layout; never downloads): BERT,
        RoBERTa, XLM-RoBERTa, CamemBERT, DistilBERT or ELECTRA, converted as above
        (RoBERTa's positions after the pad id, DistilBERT without token types, ELECTRA's
        embedding projection a bias-free linear map). A dict: the fields of an encoder config
        (``model_type``, default BERT), randomly initialised, with the bundled tokenizer.
    pooling : {"mean", "cls"}, default="mean"
        The sequence vector: the mean of the real tokens' final states or the ``[CLS]``
        state.
    max_length : int in [3, 512], default=64
        Word pieces per text, ``[CLS]`` and ``[SEP]`` included (longer texts are cut, with a
        warning).
    warmup : float in [0, 1), default=0.1
        Share of the training steps over which the learning rate rises linearly from 0; it
        then falls linearly to 0.
    class_weight : None, "balanced" or dict {label: weight}, default=None
        Weights of the classes in the training loss (multiplied with ``sample_weight``);
        ``"balanced"``: ``n_samples / (n_classes * count(label))`` as in scikit-learn.
    lr : float > 0, default=1e-4
        Peak learning rate. Higher than the conventional model's: the B-cos layers' outputs
        are bounded cosines, and 1e-4 beat 5e-5 on every seed tried (full split: .804 against
        .790 without ``gate_biases``).
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
        The checkpoint's tokenizer.
    module_ : BcosBertClassifier
        The fitted network (:class:`~interpretable.nn.bcos.BcosBertClassifier`).
    history_ : list of dict
        Per-epoch training record.
    config_ : dict
        The encoder config fields that rebuild its structure (``model_type`` included).
    embed_dim_ : int
        Its hidden size.

    See Also
    --------
    BertTextClassifier : The conventional model.

    Examples
    --------
    >>> from interpretable import BcosTextClassifier
    >>> config = {"vocab_size": 30522, "hidden_size": 8, "num_hidden_layers": 1,
    ...           "num_attention_heads": 2, "intermediate_size": 16,
    ...           "max_position_embeddings": 32, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
    ...           "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = BcosTextClassifier(checkpoint=config, max_length=16, max_epochs=1,
    ...                          random_state=0).fit(X, y)
    >>> explanation = clf.explain(["good film"], level="word")  # exact word contributions
    >>> explanation.units
    [['good', 'film']]
    """

    saved_as = "BcosTextClassifier"

    #: the explanation methods it offers, its default first
    explainers = (BcosTextContributions(), *BaseEncoderClassifier.explainers)

    _parameter_constraints = {
        **BaseEncoderClassifier._parameter_constraints,
        "b": [Interval(Real, 1, None, closed="left"), list, tuple],
        "gain": [StrOptions({"matched", "unit"})],
        "b_anneal": [Interval(Real, 0, 1, closed="both")],
        "row_norms": [StrOptions({"unit", "pretrained"})],
        "pooler": ["boolean"],
        "gate_biases": ["boolean"],
        "logit_scale": [Interval(Real, 0, None, closed="neither"), StrOptions({"learned"})],
        "head_lr": [Interval(Real, 0, None, closed="neither"), None],
        "teacher": [None, str, os.PathLike, HasMethods(["predict_proba"])],
        "teacher_weight": [Interval(Real, 0, 1, closed="both")],
        "teacher_temperature": [Interval(Real, 0, None, closed="neither")],
    }
    _module_class = BcosBertClassifier
    _borrowed_params = ("teacher",)

    def __init__(self, b: float | list[float] = 1.5, *, gain: str = "matched",
                 b_anneal: float = 0.5, row_norms: str = "unit", pooler: bool = True,
                 gate_biases: bool = True, logit_scale: float | Literal["learned"] = 1.0,
                 head_lr: float | None = None,
                 teacher: BaseEstimator | str | os.PathLike[str] | None = None,
                 teacher_weight: float = 0.5, teacher_temperature: float = 2.0,
                 checkpoint: str | os.PathLike[str] | dict[str, Any] | None = None,
                 pooling: str = "mean", max_length: int = 64, warmup: float = 0.1,
                 lr: float = 1e-4, max_epochs: int = 1, batch_size: int = 32,
                 optimizer: str = "adamw", weight_decay: float = 0.0,
                 device: str | torch.device = "auto",
                 random_state: int | np.random.RandomState | None = None, verbose: int = 0,
                 class_weight: str | dict[Any, float] | None = None,
                 callbacks: list[Callback | tuple[str, Callback]] | None = None,
                 validation_fraction: float | None = None, early_stopping: bool = False,
                 n_iter_no_change: int = 5, warm_start: bool = False,
                 precision: str = "float32", inference_precision: str = "float32",
                 accelerator: Accelerator | None = None):
        self.b = b
        self.gain = gain
        self.b_anneal = b_anneal
        self.row_norms = row_norms
        self.pooler = pooler
        self.gate_biases = gate_biases
        self.logit_scale = logit_scale
        self.head_lr = head_lr
        self.teacher = teacher
        self.teacher_weight = teacher_weight
        self.teacher_temperature = teacher_temperature
        self.checkpoint = checkpoint
        self.pooling = pooling
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

    def _callbacks(self) -> list:
        """BERT's learning-rate schedule and the annealing of the exponent."""
        from interpretable.estimators.transformer._callbacks import (
            AnnealExponent,  # skorch: imported at the first fit
        )

        callbacks = super()._callbacks()
        if self.b_anneal and not self._continues():
            callbacks.append(("anneal_b", AnnealExponent(self.b_anneal)))
        return callbacks

    def _criterion(self) -> torch.nn.Module:
        """Cross-entropy, or with a ``teacher`` its distillation loss."""
        if self.teacher is None:
            return super()._criterion()
        return DistillationLoss(self.teacher_weight, self.teacher_temperature)

    def _loss_inputs(self, texts) -> dict:
        """The teacher's probabilities of the training texts (none without a teacher)."""
        if self.teacher is None:
            return {}
        teacher = self.teacher
        if isinstance(teacher, (str, os.PathLike)):
            teacher = resolve_model_folder(teacher, what="teacher")
            config = read_classifier_config(teacher)
            if config is not None:  # else the folder of a model saved with save()
                teacher = ClassifierCheckpoint(teacher, self.classes_, config=config,
                                               batch_size=self.batch_size, device=self.device_)
        return {TEACHER_PROBABILITIES: teacher_probabilities(teacher, texts, self.classes_,
                                                             self.device_)}

    def _check_params(self) -> None:
        if isinstance(self.b, (list, tuple)) and not all(
                isinstance(v, Real) and not isinstance(v, bool) and v >= 1 for v in self.b):
            raise ValueError(f"b must be a number >= 1 or a list of them, got {self.b!r}.")

    def _module_options(self) -> dict:
        b = list(self.b) if isinstance(self.b, (list, tuple)) else float(self.b)
        learned = self.logit_scale == "learned"
        return {**super()._module_options(), "b": b, "matched": self.gain == "matched",
                "row_gains": self.row_norms == "pretrained", "pooler": bool(self.pooler),
                "gate_biases": bool(self.gate_biases),
                "logit_scale": 1.0 if learned else float(self.logit_scale),
                "learn_logit_scale": learned}

    def _reads_pooler(self) -> bool:
        return bool(self.pooler)

    def _net_options(self) -> dict:
        """``head_lr``: the classifier and the logit scale in their own parameter group."""
        head = {"lr": float(self.head_lr or 0)}
        return {} if self.head_lr is None else {"optimizer__param_groups": [
            ("classifier.*", head), ("log_logit_scale", head)]}
