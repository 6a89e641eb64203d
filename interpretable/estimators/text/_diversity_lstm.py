"""Diversity / Orthogonal LSTM attention classifier (Mohankumar et al., ACL 2020).

Three variants of the LSTM + additive attention model, chosen with ``cell``:

* ``"vanilla"``: a standard LSTM (the baseline whose hidden states have high conicity);
* ``"diversity"``: a standard LSTM trained with ``loss + diversity_weight * conicity(H)``
  (conicity with ``|cos|`` as in the authors' code, or the paper's signed cosine: ``conicity``);
* ``"orthogonal"``: the orthogonal LSTM cell, which removes from each ``ĥ_t`` its component
  along the sum of the previous hidden states.

Low conicity makes the attention weights faithful: permuting them changes the output, erasing
the highest-weighted hidden states flips decisions quickly, and attention agrees better with
gradient attributions (see :mod:`interpretable.metrics`).
Besides attention and the post-hoc token methods, it is explained by the authors' "gradient"
attribution to compare attention with: gradient × embedding of the explained class's
probability, attention detached
(:class:`~interpretable.estimators.methods.DetachedGradient`).
"""
from __future__ import annotations

from numbers import Real
from typing import TYPE_CHECKING, Any

from torch import nn

from interpretable.estimators.text._attention import AttentionClassifierBase
from interpretable.estimators.text._explainers import DetachedGradient
from interpretable.nn import CONICITY_KINDS, DiversityLoss
from interpretable.utils import Interval, StrOptions

if TYPE_CHECKING:
    import numpy as np
    import torch
    from accelerate import Accelerator
    from gensim.models import KeyedVectors
    from skorch.callbacks import Callback

    from interpretable.preprocessing import TextEncoder

__all__ = ["DiversityLSTMClassifier"]

CELLS = ("vanilla", "diversity", "orthogonal")


class DiversityLSTMClassifier(AttentionClassifierBase):
    """LSTM attention text classifier with diverse (low-conicity) hidden states.

    Mohankumar et al., "Towards Transparent and Explainable Attention Models" (ACL 2020): a
    diversity-trained or orthogonal LSTM makes the attention weights faithful (see the
    module docstring for the three ``cell`` variants).

    Parameters
    ----------
    cell : {"vanilla", "diversity", "orthogonal"}, default="diversity"
        Encoder variant (see module docstring).
    diversity_weight : float >= 0, default=0.5
        The weight λ of the conicity term; used when ``cell="diversity"`` (0.5 in the paper for
        most tasks, 0.1 for SNLI, 0.2 for CNN), ignored otherwise.
    conicity : {"absolute", "signed"}, default="absolute"
        Cosine used by the conicity penalty: ``"absolute"`` averages ``|cos(h_t, mean(H))|``
        (the authors' code, default), ``"signed"`` the signed cosine of the paper's text (its
        penalty is lowest for anti-aligned states, so the trained conicity can turn negative).
    embeddings : "glove-50", gensim KeyedVectors or None, default=None
        Initial word vectors (None: learned from scratch with ``embed_dim``).
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
    AttentionTextClassifier : The attention classifier with other encoders.
    interpretable.metrics._attention_analysis : Faithfulness analyses of attention.

    Examples
    --------
    >>> from interpretable import DiversityLSTMClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = DiversityLSTMClassifier(cell="diversity", embed_dim=8, hidden_size=8,
    ...                               max_epochs=2, random_state=0).fit(X, y)
    >>> clf.hidden_conicity(["good film"]).shape
    (1,)
    >>> clf.explain(["good film"], method="detached_gradient").units
    [['good', 'film']]
    """

    saved_as = "DiversityLSTMClassifier"

    #: the explanation methods it offers, its default first
    explainers = (*AttentionClassifierBase.explainers, DetachedGradient())

    _parameter_constraints = {
        **AttentionClassifierBase._parameter_constraints,
        "cell": [StrOptions(set(CELLS))],
        "diversity_weight": [Interval(Real, 0, None, closed="left")],
        "conicity": [StrOptions(set(CONICITY_KINDS))],
    }

    def __init__(self, *, cell: str = "diversity", diversity_weight: float = 0.5,
                 conicity: str = "absolute", embeddings: str | KeyedVectors | None = None,
                 embed_dim: int = 50, hidden_size: int = 128, attention_size: int | None = None,
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
        self.cell = cell
        self.diversity_weight = diversity_weight
        self.conicity = conicity
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
        """Return what shapes the module, with the encoder of ``cell``.

        Returns
        -------
        dict
            The sizes and ``encoder``: ``"orthogonal"`` or ``"lstm"``.

        Examples
        --------
        >>> from interpretable import DiversityLSTMClassifier
        >>> DiversityLSTMClassifier(cell="orthogonal").architecture()["encoder"]
        'orthogonal'
        """
        return {**super().architecture(),
                "encoder": "orthogonal" if self.cell == "orthogonal" else "lstm"}

    def _criterion(self) -> nn.Module:
        return DiversityLoss(self.diversity_weight if self.cell == "diversity" else 0.0,
                             absolute=self.conicity == "absolute")
