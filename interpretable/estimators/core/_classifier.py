"""The classifier surface shared by the text and image classifiers: labels, class weights,
logits, ``decision_function``, ``predict_proba``, ``predict``, ``score`` and explained targets;
the precision of prediction (``inference_precision``, :func:`native_bf16`)."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Hashable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from sklearn.base import ClassifierMixin
from sklearn.utils.class_weight import compute_class_weight

from interpretable._validation import warn_caller
from interpretable.estimators.core._base import NeuralEstimator
from interpretable.estimators.core._training import checked_autocast
from interpretable.nn import logits_of
from interpretable.utils import StrOptions, validate_parameters

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.estimators.core._encoded import EncodedInputs

__all__ = ["NeuralClassifier"]

#: the values of ``inference_precision``: the autocast dtype of prediction (None: the
#: parameters' own)
INFERENCE_PRECISIONS = {"float32": None, "bf16": torch.bfloat16}
#: the estimators that were told, in this process, that their device lacks bfloat16
_WARNED_NO_BF16: weakref.WeakSet = weakref.WeakSet()


@cache
def _native_bf16(device: torch.device) -> bool:
    if device.type == "cuda":
        if not torch.cuda.is_available():
            return False
        with torch.cuda.device(device):  # the current device, this thread, for this call
            return torch.cuda.is_bf16_supported(including_emulation=False)
    if device.type == "cpu":  # x86 only: torch reports no other CPU's bfloat16 units
        cpu = torch.cpu
        return any(getattr(cpu, name, lambda: False)()
                   for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"))
    return False


def native_bf16(device) -> bool:
    """Whether ``device`` computes in bfloat16 natively (so autocast in bfloat16 pays).

    CUDA: ``torch.cuda.is_bf16_supported(including_emulation=False)`` for that device
    (compute capability 8.0 or newer, or a ROCm GPU). CPU: the instructions torch's cpuinfo
    reports, ``torch.cpu._is_avx512_bf16_supported()`` (AVX512-BF16) or
    ``torch.cpu._is_amx_tile_supported()`` (AMX, whose tiles multiply bfloat16). oneDNN
    emulates bfloat16 on other x86 CPUs with AVX-512
    (``torch.ops.mkldnn._is_mkldnn_bf16_supported()``), slower than float32: that does not
    count. Other devices (MPS, CPUs other than x86): no.

    Parameters
    ----------
    device : str or torch.device
        The device.

    Returns
    -------
    bool
        Whether bfloat16 is native there.

    Examples
    --------
    >>> from interpretable.estimators.core._classifier import native_bf16
    >>> native_bf16("meta")
    False
    """
    device = torch.device(device)
    if device.type == "cuda" and device.index is None and torch.cuda.is_available():
        device = torch.device("cuda", torch.cuda.current_device())
    return _native_bf16(device)

#: scikit-learn's classifier checks that fit on generated 2-d numeric arrays (see
#: :data:`~.base.TABULAR_CHECKS`)
TABULAR_CLASSIFIER_CHECKS = (
    "check_class_weight_classifiers", "check_classifier_data_not_an_array",
    "check_classifiers_classes", "check_classifiers_one_label",
    "check_classifiers_one_label_sample_weights", "check_classifiers_regression_target",
    "check_classifiers_train", "check_decision_proba_consistency", "check_requires_y_none",
    "check_supervised_y_2d",
)


def _shown(classes: np.ndarray, limit: int = 20) -> str:
    """The classes for an error message (the first ``limit`` of many)."""
    names = classes.tolist()
    return str(names) if len(names) <= limit else f"{names[:limit]} ... ({len(names)} in all)"


class NeuralClassifier(ClassifierMixin, NeuralEstimator):
    """Classifier outputs shared by the text and image classifiers.

    Subclasses implement :meth:`encode` and a module whose output is the logits ``(B, C)`` (or
    a tuple starting with them), and set ``classes_`` in ``_fit`` (:meth:`_fit_labels`).

    Parameters
    ----------
    class_weight : None, "balanced" or dict {label: weight}
        Weights of the classes in the training loss (multiplied with ``sample_weight``);
        ``"balanced"``: ``n_samples / (n_classes * count(label))`` as in scikit-learn.
    lr : float > 0
        Learning rate.
    max_epochs : int >= 1
        Number of passes over the training data.
    batch_size : int >= 1
        Mini-batch size for training and inference (``explain`` and the metrics take their own
        ``batch_size``).
    optimizer : {"adam", "adamw", "sgd", "rmsprop"}
        The torch optimizer.
    weight_decay : float >= 0
        L2 penalty (decoupled for ``"adamw"``), passed to the optimizer.
    device : "auto", "cpu", "cuda", "cuda:N" or torch.device
        ``"auto"`` uses CUDA when available.
    random_state : int, RandomState or None
        Seeds initialisation, shuffling, dropout and the validation split; the global torch RNG
        is left untouched.
    verbose : int
        When > 0, report skorch's epoch table (logged at INFO by ``interpretable`` loggers when
        logging takes it, else printed: plain text unless standard output is a terminal) and,
        on a terminal or in Jupyter, draw progress bars over the batches of each epoch and of
        ``explain`` (see :mod:`interpretable._progress`).
    callbacks : list or None
        The skorch callbacks (``EarlyStopping``, ``LRScheduler``, ``Checkpoint``, ``ProgressBar``,
        your own) or ``(name, callback)`` pairs, added to every training phase. Each fit trains
        with deep copies: the callbacks passed here are never changed.
    validation_fraction : float in (0, 1) or None
        Share of the training data held out (stratified for classifiers, seeded by
        ``random_state``); its loss (``valid_loss``) and, for classifiers, accuracy
        (``valid_acc``) are recorded in ``history_`` after every epoch. None: train on all.
    early_stopping : bool
        Stop when the validation loss (the training loss without ``validation_fraction``) has
        not improved for ``n_iter_no_change`` epochs, and restore the weights of the best epoch
        (skorch's ``EarlyStopping(load_best=True)``).
    n_iter_no_change : int >= 1
        Patience of ``early_stopping``, in epochs.
    warm_start : bool
        When True, fitting a fitted estimator continues training its weights (the vocabulary,
        classes and input size stay those of the first fit; other labels, a changed input
        size or architecture raise a ``ValueError``); ``history_`` grows. The optimizer
        state starts afresh.
    precision : {"float32", "bf16"}
        ``"bf16"`` trains with mixed precision (``torch.autocast`` in bfloat16: forward and loss;
        the weights stay float32); prediction runs in ``inference_precision``, and
        explanations always in the parameters' own precision, so inherent explanations stay
        exact. Recurrent layers that torch cannot run in bfloat16 on the device (such as the
        LSTM on an x86 CPU without AVX-512) train in float32, with one warning per fit (the
        whole model does when a custom module runs them).
    inference_precision : {"float32", "bf16"}
        ``"bf16"`` runs ``predict``, ``predict_proba``, ``decision_function`` and ``score``
        under ``torch.autocast`` in bfloat16 where the device computes bfloat16 natively (a
        CUDA GPU of compute capability 8.0 or newer, a CPU with AVX512-BF16 or AMX); elsewhere
        they run in float32, with one warning, as do recurrent layers that torch cannot run in
        bfloat16 there (the whole model when a custom module runs them). Outputs keep their
        dtypes (float32 logits, float64 probabilities). So do the forward passes of the
        perturbation methods of ``explain`` (occlusion, LIME, Kernel SHAP); the other methods,
        ``logits`` and the metrics run in the parameters' own precision. Saved with the model.
    accelerator : accelerate.Accelerator or None
        Train through Hugging Face Accelerate (skorch's ``AccelerateMixin``): under
        ``accelerate launch`` every process trains on its share of each batch (DDP) and all end
        with the same weights; ``device`` is then the accelerator's. Mixed precision is set on
        the accelerator (``Accelerator(mixed_precision="bf16")``). See
        :mod:`interpretable.integrations`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels seen in ``fit``.
    module_ : torch.nn.Module
        The fitted network (in eval mode).
    history_ : list of dict
        Per-epoch training record (losses, durations; validation scores with
        ``validation_fraction``).
    device_ : torch.device
        The device the module runs on.

    See Also
    --------
    interpretable.estimators.core.NeuralEstimator : The base of every estimator.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
    >>> clf.predict(["good film"])
    array(['pos'], dtype='<U3')
    """

    _parameter_constraints = {
        **NeuralEstimator._parameter_constraints,
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "inference_precision": [StrOptions(set(INFERENCE_PRECISIONS))],
    }

    def _fit_labels(self, y) -> np.ndarray:
        """Class indices (n,) of the training labels ``y``; sets ``classes_``, or when the fit
        continues the previous one (``warm_start``) keeps its classes (other labels raise)."""
        if not self._continues():
            self.classes_, index = np.unique(y, return_inverse=True)
            return index.reshape(-1)
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            raise ValueError("warm_start=True continues the previous model, fitted on the "
                             f"classes {self.classes_.tolist()[:10]}; y has others: "
                             f"{unseen.tolist()[:5]}. Refit with warm_start=False.")
        return np.searchsorted(self.classes_, y)

    def _training_weights(self, y, sample_weight):
        """``sample_weight`` times the ``class_weight`` of each sample's class index ``y``."""
        weight = super()._training_weights(y, sample_weight)
        if self.class_weight is None:
            return weight
        y = np.asarray(y)
        per_class = compute_class_weight(self.class_weight, classes=self.classes_,
                                         y=self.classes_[y])
        return per_class[y] if weight is None else per_class[y] * weight

    def logits(self, inputs: Mapping[str, torch.Tensor], *, batch_size: int | None = None,
               **options: Any) -> torch.Tensor:
        """Compute the logits of encoded inputs (batches run in the inference order).

        Parameters
        ----------
        inputs : mapping of str to torch.Tensor
            Encoded inputs (``encode(X).inputs``).
        batch_size : int or None, default=None
            Samples per batch; None: the estimator's ``batch_size``.
        **options
            Keyword arguments of :meth:`forward_batch`.

        Returns
        -------
        torch.Tensor of shape (n_samples, n_classes)
            The logits (float32, CPU).

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> clf.logits(clf.encode(["good film", "bad"]).inputs).shape
        torch.Size([2, 2])
        """
        logits = None
        for rows, _, out in self.forward_batches(inputs, batch_size=batch_size, ordered=True,
                                                 **options):
            out = logits_of(out).detach().float().cpu()
            if logits is None:
                logits = out.new_empty(len(next(iter(inputs.values()))), out.shape[1])
            logits[rows] = out
        return logits

    def inference_autocast(self) -> contextlib.AbstractContextManager[None]:
        """Return the context the predictions run in, ``inference_precision``'s.

        That is autocast in bfloat16 on ``device_`` when ``inference_precision`` is ``"bf16"``
        and the device computes it natively (:func:`native_bf16`), else none (warning once per
        estimator when bfloat16 was asked); recurrent layers without a bfloat16 kernel there
        run in float32 (:func:`.training.checked_autocast`, which warns once too). Autocast is
        thread-local: the shared module is never changed. ``predict``, ``predict_proba``,
        ``decision_function`` and the forward passes of the perturbation explainers run in it.

        Returns
        -------
        contextlib.AbstractContextManager
            ``torch.autocast`` or a null context.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> clf = EmbeddingBagClassifier(max_epochs=1).fit(["good", "bad"], [1, 0])
        >>> with clf.inference_autocast():  # float32: no autocast
        ...     int(clf.predict(["good"])[0]) in (0, 1)
        True
        """
        precision = self.inference_precision
        validate_parameters({"inference_precision": [StrOptions(set(INFERENCE_PRECISIONS))]},
                            {"inference_precision": precision}, type(self).__name__)
        dtype = INFERENCE_PRECISIONS[precision]
        if dtype is None:
            return contextlib.nullcontext()
        device = torch.device(self.device_)
        if native_bf16(device):
            dtype = checked_autocast(self, self.module_, "inference_precision", dtype,
                                     "predicting")
            return contextlib.nullcontext() if dtype is None \
                else torch.autocast(device.type, dtype=dtype)
        if self not in _WARNED_NO_BF16:
            _WARNED_NO_BF16.add(self)
            warn_caller(f"{type(self).__name__}: inference_precision='bf16' but {device} does "
                        "not compute bfloat16 natively; predicting in float32.")
        return contextlib.nullcontext()

    def _predicted_logits(self, X) -> torch.Tensor:
        """The logits ``(n, n_classes)`` (float32, CPU) of the predictions, in
        ``inference_precision``."""
        with self._fitted_call():  # NotFittedError first; encode and the batches skip theirs
            inputs = self.encode(X).inputs
            with self.inference_autocast():
                return self.logits(inputs)

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Compute the decision function (the logits, or the margin for two classes).

        scikit-learn's convention: for two classes, the margin of the positive class
        ``classes_[1]``, ``logit_1 - logit_0``.

        Parameters
        ----------
        X : sequence of shape (n_samples,)
            Inputs as the estimator takes them (texts or images).

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            The margins (two classes) or the logits.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> clf.decision_function(["good film", "bad"]).shape
        (2,)
        """
        logits = self._predicted_logits(X).numpy()
        return logits[:, 1] - logits[:, 0] if logits.shape[1] == 2 else logits

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Predict class probabilities (the softmax of the logits).

        Parameters
        ----------
        X : sequence of shape (n_samples,)
            Inputs as the estimator takes them (texts or images).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities (float64) of the classes ``classes_``.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> clf.predict_proba(["good film"]).sum(axis=1)
        array([1.])
        """
        logits = self._predicted_logits(X).double()
        return torch.softmax(logits, dim=1).numpy()

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predict the class of each sample (the largest logit).

        Parameters
        ----------
        X : sequence of shape (n_samples,)
            Inputs as the estimator takes them (texts or images).

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> clf.predict(["good film", "great movie"])
        array(['pos', 'pos'], dtype='<U3')
        """
        logits = self._predicted_logits(X)  # raises NotFittedError first
        return self.classes_[logits.numpy().argmax(axis=1)]

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
              ) -> float:
        """Return the accuracy on ``X`` and ``y``.

        As :meth:`sklearn.base.ClassifierMixin.score`: labels of ``y`` not seen in ``fit``
        (a rare class missing from a cross-validation training fold) count as wrong predictions.

        Parameters
        ----------
        X : sequence of shape (n_samples,)
            Inputs as the estimator takes them (texts or images).
        y : array-like of shape (n_samples,)
            True labels.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Sample weights.

        Returns
        -------
        float
            The (weighted) share of correct predictions.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> 0.0 <= clf.score(X, y) <= 1.0
        True
        >>> clf.score(["good film"], ["meh"])  # a label not seen in fit is never predicted
        0.0
        """
        self._check_fitted()
        return super().score(X, y, sample_weight=sample_weight)

    def target_indices(self, target: Hashable | ArrayLike | None,
                       logits: np.ndarray | torch.Tensor | Sequence[Sequence[float]],
                       what: str = "target") -> np.ndarray:
        """Return the indices into ``classes_`` of the logits to explain.

        Parameters
        ----------
        target : label, array-like of shape (n_samples,) or None
            None: the predicted classes; else one label for all samples or one per sample.
        logits : array-like of shape (n_samples, n_classes)
            The samples' logits (only their number is read unless ``target`` is None).
        what : str, default="target"
            The argument's name in error messages.

        Returns
        -------
        ndarray of shape (n_samples,)
            Class indices.

        Raises
        ------
        ValueError
            If ``target`` has the wrong length or holds a label not seen in fit.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> clf.target_indices("pos", [[0.0, 1.0], [2.0, 0.0]])
        array([1, 1])
        >>> clf.target_indices(None, [[0.0, 1.0], [2.0, 0.0]])
        array([1, 0])
        """
        n = len(logits)
        if target is None:
            return np.asarray(logits).argmax(axis=1)
        labels = np.asarray(target)
        if labels.ndim == 0:
            labels = np.full(n, labels.item(), dtype=labels.dtype)
        if labels.ndim != 1 or len(labels) != n:
            raise ValueError(f"{what} must be one label or {n} labels, got shape "
                             f"{labels.shape}.")
        unseen = sorted(set(labels.tolist()) - set(self.classes_.tolist()), key=str)
        if unseen:
            raise ValueError(f"{what} contains labels not seen in fit: {unseen[:5]}; the "
                             f"model knows classes_ = {_shown(self.classes_)}.")
        return np.searchsorted(self.classes_, labels)

    def explained_targets(self, batch: EncodedInputs, target: Hashable | ArrayLike | None
                          ) -> np.ndarray | None:
        """Return the explained class indices of an encoded batch.

        Parameters
        ----------
        batch : EncodedInputs
            Encoded samples (:meth:`encode`).
        target : label, array-like of shape (n_samples,) or None
            As in :meth:`explain`.

        Returns
        -------
        ndarray of shape (n_samples,) or None
            Class indices, or None for each sample's predicted class (explainers take it from
            the logits they compute).

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> clf.explained_targets(clf.encode(["good film"]), "neg")
        array([0])
        """
        return None if target is None else self.target_indices(target, np.empty((len(batch), 0)))

    def contrast_weights(self, contrast: Hashable | ArrayLike, n_samples: int
                         ) -> tuple[np.ndarray, np.ndarray]:
        """Return what a contrastive explanation subtracts from the target's logit.

        Parameters
        ----------
        contrast : "mean", label or array-like of shape (n_samples,)
            ``"mean"``: the mean of all the classes' logits; a label (one for all samples, or
            one per sample): that class's logit.
        n_samples : int
            The number of explained samples.

        Returns
        -------
        weights : ndarray of shape (n_samples, n_classes)
            The weights over ``classes_`` of the subtracted logits (``1/n_classes`` each, or
            one-hot).
        names : ndarray of shape (n_samples,)
            What is subtracted per sample: ``"mean"`` or the contrast label.

        Raises
        ------
        ValueError
            If a label was not seen in fit, the number of labels is not ``n_samples``, or
            ``"mean"`` is ambiguous (a class is named ``"mean"``: pass it once per sample).

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film", "a film"]
        >>> y = ["pos", "pos", "neg", "neg", "neutral"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> weights, names = clf.contrast_weights("neg", 2)
        >>> weights.tolist(), names.tolist()
        ([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]], ['neg', 'neg'])
        >>> clf.contrast_weights("mean", 1)[0].round(3).tolist()
        [[0.333, 0.333, 0.333]]
        """
        n_classes = len(self.classes_)
        if isinstance(contrast, str) and contrast == "mean":
            if "mean" in self.classes_.tolist():
                raise ValueError('contrast="mean" is ambiguous: a class is named "mean"; '
                                 'pass contrast=["mean"] * n_samples for that class.')
            return (np.full((n_samples, n_classes), 1.0 / n_classes),
                    np.full(n_samples, "mean", dtype=object))
        index = self.target_indices(contrast, np.empty((n_samples, 0)), what="contrast")
        weights = np.zeros((n_samples, n_classes))
        weights[np.arange(n_samples), index] = 1.0
        return weights, self.classes_[index].astype(object)
