"""What the text classifiers over a ``transformers`` checkpoint share: the fine-tuned
BERT-lineage encoders (:mod:`.estimators`) and any sequence classifier as it is
(:mod:`.transformers_model`).

:class:`PieceClassifierBase` reads the ``checkpoint`` once per fit (``_read_checkpoint``), holds
its tokenizer as a :class:`~interpretable.preprocessing.WordPieceEncoder` (word pieces aligned
with the words and characters of the text, framed by the tokenizer's own special tokens),
trains with BERT's schedule (AdamW, linear warm-up, linear decay to 0) and runs the module with
its attention for the attention methods. :func:`matched_head` decides how a checkpoint's
classification head meets the labels of a fit.
"""
from __future__ import annotations

import functools
import os
import re
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from interpretable._validation import check_targets, warn_caller
from interpretable.estimators.core._base import EncodedInputs
from interpretable.estimators.text._base import TextClassifierBase, trim_collate
from interpretable.estimators.transformer._explainers import POST_HOC
from interpretable.utils import Interval

if TYPE_CHECKING:
    from collections.abc import Hashable, Sequence

    from numpy.typing import ArrayLike

    from interpretable.estimators.core._explainer import Explainer
    from interpretable.explanation import WordPieceExplanation
    from interpretable.preprocessing import WordPieces

__all__: list[str] = []  # the shared machinery of the estimators of this folder


def matched_head(labels, names) -> list | int:
    """How a checkpoint's head with outputs ``labels`` (its ``id2label`` names, output by
    output) starts a fit on the classes ``names``: the checkpoint's output of each class
    (a list, ``order[j]`` the output of class ``j``) when the labels name the classes, or when
    there are as many outputs (taken in order, with a warning unless they are generic
    ``LABEL_i`` names); else the number of outputs of a new output layer (with a warning)."""
    if sorted(labels) == sorted(names):
        return [labels.index(name) for name in names]
    if len(labels) == len(names):
        if not all(re.fullmatch(r"LABEL_\d+", label) for label in labels):
            warn_caller(f"the checkpoint's classes {labels[:5]} are not the labels "
                        f"{names[:5]}: its outputs are taken in order (output i is "
                        f"{names[0]!r}, ...).")
        return list(range(len(labels)))
    warn_caller(f"the checkpoint has {len(labels)} outputs ({labels[:5]}), the labels are "
                f"{len(names)}: its classification head's output layer is new.")
    return len(names)


def named_outputs(labels, classes) -> tuple[np.ndarray, np.ndarray]:
    """``classes_`` (sorted) and the checkpoint's output of each, for a checkpoint whose
    outputs ``labels`` (its ``id2label``) are named by ``classes`` (None: by the labels, a
    warning for generic ``LABEL_i`` names; else one name per output, in their order)."""
    if classes is None:
        if all(re.fullmatch(r"LABEL_\d+", label) for label in labels):
            warn_caller(f"the checkpoint names its classes {labels[:5]} (generic id2label);"
                        " pass classes=[...] (in the order of its outputs) to name them.")
        outputs = np.asarray(labels)
    else:
        outputs = np.asarray(classes)
        if outputs.ndim != 1 or len(outputs) != len(labels) \
                or len(np.unique(outputs)) != len(outputs):
            raise ValueError(f"classes must name each of the checkpoint's {len(labels)} "
                             f"outputs once, got {classes!r}.")
    return np.unique(outputs, return_index=True)


def reorder_outputs(layer: torch.nn.Linear, order) -> None:
    """Make output ``j`` of the output ``layer`` its former output ``order[j]`` (exact: its
    rows are permuted)."""
    index = torch.as_tensor(np.asarray(order), dtype=torch.long)
    with torch.no_grad():
        layer.weight.copy_(layer.weight[index])
        if layer.bias is not None:
            layer.bias.copy_(layer.bias[index])


class PieceClassifierBase(TextClassifierBase):
    """What the classifiers of word pieces over a ``transformers`` checkpoint share (not an
    estimator by itself): the ``checkpoint`` read once per fit, its tokenizer, BERT's
    schedule, the fitted ``config_`` and the forward pass with attention.

    Subclasses implement ``_read_checkpoint()`` (an object with ``folder``, ``config``,
    ``source_config`` and ``load_tokenizer()``), ``_adopt_config(checkpoint)`` (the fitted
    state that does not depend on training), ``_initial_module(checkpoint)``,
    ``_build_module()``, ``_structure_config(config)`` and ``_check_vocabulary()``.
    """

    #: the explanation methods it offers, its default first
    explainers = POST_HOC

    _parameter_constraints = {
        **TextClassifierBase._parameter_constraints,
        "checkpoint": [str, os.PathLike, dict, None],
        "max_length": [Interval(Integral, 3, 512, closed="both")],
        "warmup": [Interval(Real, 0, 1, closed="left")],
    }

    # ------------------------------------------------------------------ inputs
    def _encode_texts(self, texts, queries) -> EncodedInputs:
        """Word pieces of ``texts``, aligned with the texts (``max_length`` at most, with a
        warning)."""
        aligned = [self.text_encoder_.align(text) for text in texts]
        self._warn_truncated([a.dropped for a in aligned])
        units = [a.pieces for a in aligned]
        ids, lengths = self.text_encoder_.encode_tokens(units)
        return EncodedInputs({"tokens": torch.from_numpy(ids),
                              "lengths": torch.from_numpy(lengths).clamp(min=1)}, units=units,
                             texts=texts, alignments=aligned)

    def _training_inputs(self, texts) -> dict:
        """``tokens (n, T)`` and ``lengths (n,)`` of the training texts: their ids alone (fit
        reads no alignment), ``max_length`` at most, with a warning."""
        ids, lengths, dropped = self.text_encoder_.encode_texts(texts)
        self._warn_truncated(dropped)
        return {"tokens": torch.from_numpy(ids), "lengths": torch.from_numpy(lengths)}

    def _warn_truncated(self, dropped) -> None:
        """Warn when texts lost pieces to ``max_length`` (``dropped (n,)``: per text)."""
        cut = np.flatnonzero(dropped)
        if len(cut):
            settings = self.text_encoder_.settings_
            kept = self.max_length - len(settings["prefix"]) - len(settings["suffix"])
            warn_caller(f"{len(cut)} of {len(dropped)} texts (e.g. #{cut[0]}) are longer than "
                        f"max_length={self.max_length} word pieces: the model sees their first "
                        f"{kept} pieces only.")

    def word_pieces(self, X: Sequence[str] | ArrayLike) -> list[WordPieces]:
        """Return how the model sees each text: its word pieces, aligned with its words.

        Parameters
        ----------
        X : sequence of str of shape (n_samples,)
            Texts.

        Returns
        -------
        list of WordPieces
            One :class:`~interpretable.preprocessing.WordPieces` per text: pieces, their
            words, the words' characters, pieces cut off.

        Examples
        --------
        >>> from interpretable import BertTextClassifier
        >>> config = {"vocab_size": 30522, "hidden_size": 8, "num_hidden_layers": 1,
        ...           "num_attention_heads": 2, "intermediate_size": 16,
        ...           "max_position_embeddings": 32, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
        ...           "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = BertTextClassifier(checkpoint=config, max_length=16, max_epochs=1,
        ...                          random_state=0).fit(X, y)
        >>> clf.word_pieces(["good film"])[0].pieces
        ['[CLS]', 'good', 'film', '[SEP]']
        """
        self._check_fitted()
        texts, _ = self._split_inputs(X, fitting=False)
        return [self.text_encoder_.align(text) for text in texts]

    # ------------------------------------------------------------------ fit
    def _fit(self, X, y, sample_weight=None):
        """Read the checkpoint once (its config, network and tokenizer; kept with
        ``warm_start``) and fine-tune."""
        seed = self._start_fit()
        texts, _ = self._split_inputs(X, fitting=not self._continues())
        y_index = self._fit_labels(check_targets(y, n_samples=len(texts)))
        if self._continues():
            module_factory = self._warm_started(self._build_module)
        else:
            checkpoint = self._read_checkpoint()
            self._adopt_config(checkpoint)
            module_factory = functools.partial(self._initial_module, checkpoint)
        self._fit_net(module_factory, self._criterion(), self._training_inputs(texts),
                      torch.from_numpy(y_index.astype(np.int64)), seed=seed,
                      sample_weight=self._training_weights(y_index, sample_weight),
                      loss_inputs=self._loss_inputs(texts), callbacks=self._callbacks(),
                      iterator_train__collate_fn=trim_collate,
                      iterator_valid__collate_fn=trim_collate, **self._net_options())

    def _read_checkpoint(self):
        """The ``checkpoint`` parameter, read (its config; its tokenizer and weights are read
        later, once)."""
        raise NotImplementedError

    def _adopt_config(self, checkpoint) -> None:
        raise NotImplementedError

    def _structure_config(self, config: dict) -> dict:
        """The fields of a checkpoint's config dict that the fitted model keeps
        (``config_``): those that rebuild the network's structure."""
        raise NotImplementedError

    def _check_vocabulary(self) -> None:
        """Check that the tokenizer fits the network of ``config_`` (ValueError)."""
        raise NotImplementedError

    def _loss_inputs(self, texts) -> dict:
        """Per-sample inputs of the training loss beside the labels (e.g. a teacher's
        probabilities of ``texts``), by the criterion's keyword."""
        return {}

    def _callbacks(self) -> list:
        """BERT's learning-rate schedule: linear warm-up, then linear decay to 0."""
        from interpretable.estimators.core._nets import (
            LearningRateSchedule,  # skorch: imported at the first fit
        )

        return [("lr_schedule", LearningRateSchedule(self.warmup, decay="linear"))]

    def _net_options(self) -> dict:
        """Further keywords of the skorch net (e.g. optimizer parameter groups)."""
        return {}

    # ------------------------------------------------------------------ forward
    if TYPE_CHECKING:  # explain (the estimators' own) explains word pieces
        def explain(self, X: Sequence[str] | ArrayLike,
                    target: Hashable | ArrayLike | None = None, *,
                    contrast: Hashable | ArrayLike | None = None,
                    method: str | Explainer | None = None, batch_size: int | None = None,
                    **options: Any) -> WordPieceExplanation:
            ...

    def forward_with_attention(self, batch: dict[str, torch.Tensor], *,
                               embedded: torch.Tensor | None = None
                               ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Run the module, returning the logits and the attention of every layer.

        Parameters
        ----------
        batch : dict of str to torch.Tensor
            One batch from :meth:`iter_batches`.
        embedded : torch.Tensor of shape (B, T, E) or None, default=None
            Embeddings that replace the word-piece embeddings.

        Returns
        -------
        logits : torch.Tensor of shape (B, n_classes)
            The logits.
        attention : list of torch.Tensor of shape (B, heads, T, T)
            The attention probabilities of every layer.

        Examples
        --------
        >>> from interpretable import BertTextClassifier
        >>> config = {"vocab_size": 30522, "hidden_size": 8, "num_hidden_layers": 1,
        ...           "num_attention_heads": 2, "intermediate_size": 16,
        ...           "max_position_embeddings": 32, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
        ...           "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = BertTextClassifier(checkpoint=config, max_length=16, max_epochs=1,
        ...                          random_state=0).fit(X, y)
        >>> _, batch = next(clf.iter_batches(clf.encode(["good film"]).inputs))
        >>> logits, attention = clf.forward_with_attention(batch)
        >>> logits.shape, len(attention), attention[0].shape
        (torch.Size([1, 2]), 1, torch.Size([1, 2, 4, 4]))
        """
        return self.module_.forward_with_attention(batch["tokens"], batch["lengths"],
                                                   embedded=embedded)

    # ------------------------------------------------------------------ persistence
    def _get_fitted_state(self) -> dict:
        return {**super()._get_fitted_state(), "config": self.config_}

    def _set_fitted_state(self, state: dict) -> None:
        self.config_ = self._structure_config(state["config"])
        super()._set_fitted_state(state)
        self._check_vocabulary()
