"""Plain baseline estimators."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from interpretable.estimators.text._base import TextClassifierBase, VocabularyClassifierBase
from interpretable.estimators.text._explainers import DeepLift, MeanEmbeddingContributions
from interpretable.nn import MeanEmbeddingClassifier

if TYPE_CHECKING:
    import numpy as np
    import torch
    from accelerate import Accelerator
    from gensim.models import KeyedVectors
    from skorch.callbacks import Callback

    from interpretable.preprocessing import TextEncoder

__all__ = ["EmbeddingBagClassifier"]


class EmbeddingBagClassifier(VocabularyClassifierBase):
    """Attention-free text classifier: a linear layer on the mean token embedding.

    Its inherent explanation (``explain(method="inherent")``, the default) is exact: token t
    contributes ``W_c e(x_t) / T`` to the logit of class c, and the contributions plus the
    bias ``b_c`` reproduce the logit.

    Parameters
    ----------
    embeddings : "glove-50", gensim KeyedVectors or None, default=None
        Initial word vectors (None: learned from scratch with ``embed_dim``).
    embed_dim : int, default=50
        Embedding size when ``embeddings`` is None.
    freeze_embeddings : bool, default=False
        Keep the initial word vectors fixed during training.
    text_encoder : TextEncoder or None, default=None
        Tokenization and vocabulary (cloned and fitted in ``fit``; None: ``TextEncoder()``).
        Grid-searchable as ``text_encoder__min_freq`` etc.
    class_weight : None, "balanced" or dict {label: weight}, default=None
        Weights of the classes in the training loss (multiplied with ``sample_weight``);
        ``"balanced"``: ``n_samples / (n_classes * count(label))`` as in scikit-learn.
    lr : float > 0, default=0.01
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
        The fitted tokenizer and vocabulary.
    module_ : MeanEmbeddingClassifier
        The fitted network.
    history_ : list of dict
        Per-epoch training record.

    See Also
    --------
    AttentionTextClassifier : Attention over a recurrent encoder.
    BcosTextClassifier : B-cos BERT-family classifier, exact contributions.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
    >>> clf.predict(["good film"]).shape
    (1,)
    >>> explanation = clf.explain(["good film"])
    >>> explanation.units, bool(explanation.completeness_error.max() < 1e-5)
    ([['good', 'film']], True)
    """

    saved_as = "EmbeddingBagClassifier"

    #: the explanation methods it offers, its default first
    explainers = (MeanEmbeddingContributions(), *TextClassifierBase.explainers, DeepLift())

    def __init__(self, embeddings: str | KeyedVectors | None = None, embed_dim: int = 50,
                 freeze_embeddings: bool = False, text_encoder: TextEncoder | None = None,
                 *, lr: float = 1e-2, max_epochs: int = 10, batch_size: int = 64,
                 optimizer: str = "adam", weight_decay: float = 0.0,
                 device: str | torch.device = "auto",
                 random_state: int | np.random.RandomState | None = None, verbose: int = 0,
                 class_weight: str | dict[Any, float] | None = None,
                 callbacks: list[Callback | tuple[str, Callback]] | None = None,
                 validation_fraction: float | None = None, early_stopping: bool = False,
                 n_iter_no_change: int = 5, warm_start: bool = False,
                 precision: str = "float32", inference_precision: str = "float32",
                 accelerator: Accelerator | None = None):
        self.embeddings = embeddings
        self.embed_dim = embed_dim
        self.freeze_embeddings = freeze_embeddings
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

    def _build_module(self, embeddings=None):
        return MeanEmbeddingClassifier(
            vocab_size=len(self.text_encoder_.index_to_token_),
            num_classes=len(self.classes_),
            embed_dim=self.embed_dim_,
            embeddings=embeddings,
            freeze_embeddings=self.freeze_embeddings,
        )
