"""The scikit-learn surface of the neural estimators: parameter validation, ``fit`` (a
transaction, see :mod:`.training`) and safe persistence; their inference (the one batching loop
and ``explain``, dispatched to the explainer registry, :mod:`.explainer`) is the mixin
:class:`~.inference.BatchedInference` that :class:`NeuralEstimator` inherits.

A concrete estimator subclasses :class:`NeuralEstimator` (or
:class:`~interpretable.estimators.core.NeuralClassifier`), declares its parameters once
in its own ``__init__`` and in ``_parameter_constraints``, and implements

* ``_fit(X, y, sample_weight)``: set the fitted attributes and train with :meth:`_fit_net`;
* ``encode(X) -> EncodedInputs``: validated inputs as module keyword tensors (public: explainers,
  metrics and attribution methods work from it);
* ``_build_module()`` and ``_get_fitted_state()`` / ``_set_fitted_state(state)`` for
  :meth:`save` / :meth:`load`.

Explanation methods are declared by each estimator class in its ``explainers`` attribute, its
default first (:mod:`.explainer`; CONTRIBUTING.md walks through adding an estimator, an
explainer and a metric).
"""

from __future__ import annotations

import logging
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from sklearn.base import BaseEstimator

from interpretable._progress import report
from interpretable._validation import check_random_state_seed
from interpretable.estimators.core._encoded import EncodedInputs
from interpretable.estimators.core._inference import BatchedInference
from interpretable.estimators.core._persistence import load_estimator, save_estimator
from interpretable.estimators.core._state import EstimatorState
from interpretable.estimators.core._training import (
    TRAINING_CONSTRAINTS,
    TrainingDivergedError,
    check_sample_weight,
    fit_transactionally,
    warm_started,
)
from interpretable.nn import resolve_device
from interpretable.utils import validate_estimator_parameters

if TYPE_CHECKING:
    import os

    from numpy.typing import ArrayLike
    from typing_extensions import Self

# TrainingDivergedError (public) and TrainingNet (importable, an implementation detail) are
# importable from here, beside the estimators that raise and use them. The skorch side (.nets:
# skorch takes ~0.8 s to import) is imported at the first fit, so importing the
# estimators that need no skorch class at import time (the text classifiers, the ViTs) does
# not import it (`python -X importtime -c "from interpretable import EmbeddingBagClassifier"`).
__all__ = ["EncodedInputs", "NeuralEstimator", "TrainingDivergedError"]


def __getattr__(name):
    if name == "TrainingNet":
        return import_module("interpretable.estimators.core._nets").TrainingNet
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


logger = logging.getLogger(__name__)

#: scikit-learn's estimator checks that fit on the 2-d numeric arrays they generate, which no
#: estimator here takes: each family declares them in ``_expected_failed_checks`` with the
#: inputs it takes as the reason (tests/conformance/test_sklearn_checks.py runs every check)
TABULAR_CHECKS = (
    "check_all_zero_sample_weights_error", "check_complex_data", "check_dict_unchanged",
    "check_dont_overwrite_parameters", "check_dtype_object", "check_estimators_dtypes",
    "check_estimators_empty_data_messages", "check_estimators_fit_returns_self",
    "check_estimators_nan_inf", "check_estimators_overwrite_params", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_fit2d_1feature", "check_fit2d_predict1d",
    "check_fit_check_is_fitted", "check_fit_idempotent", "check_fit_score_takes_y",
    "check_methods_sample_order_invariance", "check_methods_subset_invariance",
    "check_n_features_in", "check_pipeline_consistency", "check_positive_only_tag_during_fit",
    "check_readonly_memmap_input", "check_sample_weight_equivalence_on_dense_data",
    "check_sample_weights_list", "check_sample_weights_not_an_array",
    "check_sample_weights_not_overwritten", "check_sample_weights_pandas_series",
    "check_sample_weights_shape",
)


class NeuralEstimator(BatchedInference, EstimatorState, BaseEstimator):
    """Base class of the neural estimators.

    Every estimator takes the training parameters below, declared in its own ``__init__`` and
    documented in its own docstring.

    Parameters
    ----------
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
        the weights stay float32), while prediction and explanations always run in the
        parameters' own precision, so inherent explanations stay exact. Recurrent layers that
        torch cannot run in bfloat16 on the device (such as the LSTM on an x86 CPU without
        AVX-512) train in float32, with one warning per fit.
    accelerator : accelerate.Accelerator or None
        Train through Hugging Face Accelerate (skorch's ``AccelerateMixin``): under
        ``accelerate launch`` every process trains on its share of each batch (DDP) and all end
        with the same weights; ``device`` is then the accelerator's. Mixed precision is set on
        the accelerator (``Accelerator(mixed_precision="bf16")``). See
        :mod:`interpretable.integrations`.

    See Also
    --------
    interpretable.estimators.core.NeuralClassifier : The classifiers' base class.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
    >>> from interpretable.estimators.core import NeuralEstimator
    >>> isinstance(clf, NeuralEstimator)
    True
    """

    _parameter_constraints: dict = dict(TRAINING_CONSTRAINTS)
    #: the identifier a saved model records for its class, declared by each of the package's
    #: estimators (stable when modules move); a subclass that declares none is recorded by
    #: its module and qualified name
    saved_as: str
    #: every estimator class by ``saved_as``: what :meth:`load` may build, only classes
    #: already imported (never code named by a file)
    _saved_classes: dict[str, type] = {}
    #: scikit-learn's checks (by name) that fail for a reason that is no bug, with the reason
    #: (one mapping per estimator family; ``expected_failed_checks`` of sklearn's check runners)
    _expected_failed_checks: dict[str, str] = {}
    #: parameters holding fitted models that fit only reads (a distillation teacher): a
    #: clone shares them instead of cloning them (which would unfit them), and a fitted
    #: estimator's saved folder and pickle store None in their place (a path as the path)
    _borrowed_params: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "saved_as" not in vars(cls):
            cls.saved_as = f"{cls.__module__}.{cls.__qualname__}"
        known = NeuralEstimator._saved_classes.get(cls.saved_as)
        if known is not None and (known.__module__, known.__qualname__) \
                != (cls.__module__, cls.__qualname__):
            raise TypeError(f"{cls.__qualname__} is saved as {cls.saved_as!r}, which "
                            f"{known.__module__}.{known.__qualname__} is saved as already.")
        NeuralEstimator._saved_classes[cls.saved_as] = cls

    def __sklearn_clone__(self):
        """scikit-learn's clone, sharing the :attr:`_borrowed_params` (fitted models that fit
        only reads) instead of cloning them into unfitted copies."""
        clone = super().__sklearn_clone__()
        return clone.set_params(**{name: getattr(self, name) for name in self._borrowed_params})

    def __sklearn_tags__(self):
        """Texts or symbol sequences, never 2-d arrays (image estimators override this); fits
        are deterministic given ``random_state``."""
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.non_deterministic = False
        return tags

    # ------------------------------------------------------------------ hooks for subclasses
    def _fit(self, X, y, sample_weight=None):
        """Train: set the fitted attributes (``module_``, ``history_``, ...) on ``self``."""
        raise NotImplementedError

    def encode(self, X: ArrayLike) -> EncodedInputs:
        """Validate inputs and encode them as :class:`EncodedInputs` (module inputs, CPU tensors).

        Every estimator implements it (text, image and sequence estimators encode differently).

        Parameters
        ----------
        X : sequence of shape (n_samples,)
            Inputs as ``predict`` takes them.

        Returns
        -------
        EncodedInputs
            The encoded samples.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
        >>> clf.fit(X, ["pos", "pos", "neg", "neg"]).encode(["good film"]).inputs["tokens"].shape
        torch.Size([1, 2])
        """
        raise NotImplementedError

    def _build_module(self) -> torch.nn.Module:
        raise NotImplementedError

    def _get_fitted_state(self) -> dict:
        raise NotImplementedError

    def _set_fitted_state(self, state: dict) -> None:
        raise NotImplementedError

    def _check_params(self) -> None:
        """Checks beyond ``_parameter_constraints`` (e.g. relations between parameters)."""

    # ------------------------------------------------------------------ validation
    def _validate_parameters(self) -> None:
        """Check the parameters against ``_parameter_constraints`` (merged up the class
        hierarchy by the subclasses; :mod:`interpretable.utils`: no bool where a number is
        expected), then the estimator's own :meth:`_check_params`."""
        validate_estimator_parameters(self)
        self._check_params()

    # ------------------------------------------------------------------ training
    def fit(self, X: ArrayLike, y: ArrayLike | None = None,
            sample_weight: ArrayLike | None = None) -> Self:
        """Fit the model on ``X`` (and ``y``).

        Transactional: the estimator is trained as a fresh copy and its fitted attributes
        replace the old ones only when training succeeded, so a rejected, interrupted
        (Ctrl-C) or crashed refit leaves the previous model fully usable. With ``warm_start``
        the copy starts from the fitted state (never changed in place).

        Parameters
        ----------
        X : sequence of shape (n_samples,)
            Training inputs: texts, symbol sequences or images, as the estimator takes them.
        y : array-like of shape (n_samples,) or None, default=None
            Targets (class labels; for the sequence models, per-position labels or None).
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weight of each sample's loss (non-negative; a weight of 2 counts a sample twice);
            the classifiers support it, as they do ``class_weight``.

        Returns
        -------
        self : NeuralEstimator
            The fitted estimator.

        Raises
        ------
        ValueError
            If a parameter or the data is invalid.
        TrainingDivergedError
            If the loss or the weights become NaN or infinite (the previous state is kept).

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> clf.classes_
        array(['neg', 'pos'], dtype='<U3')
        """
        self._validate_parameters()
        return fit_transactionally(self, type(self)._fit, X, y, sample_weight)

    def _start_fit(self) -> int:
        """Set ``device_`` (the accelerator's when there is one); return this fit's seed."""
        self.device_ = resolve_device(self.device) if self.accelerator is None \
            else self.accelerator.device
        return check_random_state_seed(self.random_state)

    def _log(self, message: str) -> None:
        """Report ``message`` (a training phase's name) when ``verbose``, on the main process
        (see :func:`interpretable._progress.report`)."""
        if self.verbose and (self.accelerator is None or self.accelerator.is_main_process):
            report(logger, f"{type(self).__name__}: {message}")

    def _continues(self) -> bool:
        """Whether this fit continues the previous one (``warm_start`` on a fitted estimator)."""
        return self.warm_start and hasattr(self, "fitted_params_")

    def _warm_started(self, module_factory):
        """``module_factory``, or when this fit continues the previous one, a factory of the
        same module holding the previous fit's weights (see :func:`.training.warm_started`)."""
        return warm_started(module_factory, self.module_) if self._continues() \
            else module_factory

    def _training_weights(self, y, sample_weight):
        """Per-sample loss weights (n,) for the training targets ``y`` (n, ...): the checked
        ``sample_weight``, or None."""
        return check_sample_weight(sample_weight, len(y))

    def _fit_net(self, module_factory, criterion, X, y, *, seed, **phase):
        """Train one phase (see :func:`.nets.train_module` for ``phase``: ``callbacks``,
        ``max_epochs``, ``lr``, ``sample_weight``, ``validation``, net keywords) and set
        ``module_`` (in eval mode) and ``history_`` (appended to the previous fit's with
        ``warm_start``). Returns the skorch net (not stored)."""
        from interpretable.estimators.core._nets import train_module
        net = train_module(self, module_factory, criterion, X, y, seed=seed, **phase)
        accelerator = self.accelerator
        module = net.module_ if accelerator is None else accelerator.unwrap_model(net.module_)
        self.module_ = module.eval()
        previous = self.history_ if self._continues() else []
        self.history_ = previous + [{**epoch, "epoch": len(previous) + epoch["epoch"]}
                                    for epoch in net.history]
        return net

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the fitted estimator to a folder (JSON config and safetensors weights).

        The folder holds ``config.json`` and the safetensors weights file it names, no pickle.

        Stores the parameters the model was fitted with (``fitted_params_``; a ``set_params``
        after ``fit`` does not leak into the file) and its fitted state. A parameter JSON cannot
        hold is stored as None when None is a valid value for it (e.g. a gensim ``KeyedVectors``
        ``embeddings``: its contribution is in the weights; a refit of the loaded model then
        learns embeddings from scratch); otherwise (e.g. a custom ``nn.Module`` encoder) or if
        the fitted state is not JSON-compatible (e.g. bytes labels), a ``TypeError`` is raised
        before anything is written (pickle works for trusted use).

        Atomic: new weights are written beside the old ones, then ``config.json`` is replaced
        in one rename; loads running meanwhile in any process get the previous or the new
        model, never a mix, and a failed or killed save leaves the previous one. A failure to
        write (e.g. a full disk) is an ``OSError`` naming the file. An existing ``path`` must
        be empty or hold a saved model.

        Parameters
        ----------
        path : str or os.PathLike
            The folder (created if needed).

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        TypeError
            If a parameter or the fitted state cannot be stored as JSON.
        OSError
            If writing fails (the error names the file).

        See Also
        --------
        load : Load a saved estimator.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> path = clf.save("model_folder")
        >>> loaded = EmbeddingBagClassifier.load(path)
        >>> bool((loaded.predict_proba(X) == clf.predict_proba(X)).all())
        True
        """
        self._check_fitted()
        return save_estimator(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str], device: str | torch.device = "auto") -> Self:
        """Load an estimator saved with :meth:`save` onto ``device``.

        Model files are untrusted input: no code from them runs, and a file that is corrupt,
        edited or inconsistent raises a ``ValueError`` naming the wrong field or tensor (a
        missing file a ``FileNotFoundError``) before large memory is allocated. Parameters
        stored as None come back as None.

        Parameters
        ----------
        path : str or os.PathLike
            A folder written by :meth:`save`.
        device : str or torch.device, default="auto"
            Where the weights go (``"auto"``: CUDA when available, else the CPU).

        Returns
        -------
        NeuralEstimator
            The fitted estimator, of the class that was saved.

        Raises
        ------
        ValueError
            If a file is corrupt, edited or inconsistent (the error names the field).
        FileNotFoundError
            If a file is missing.

        See Also
        --------
        save : Save a fitted estimator.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> clf.save("saved_model")
        PosixPath('saved_model')
        >>> EmbeddingBagClassifier.load("saved_model", device="cpu").classes_
        array(['neg', 'pos'], dtype='<U3')
        """
        return load_estimator(cls, path, device)

    def __sklearn_is_fitted__(self):
        return hasattr(self, "module_")

