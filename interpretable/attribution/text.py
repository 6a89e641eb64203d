"""Post-hoc token attributions for text estimators (captum on the embedding layer).

Works for any fitted text estimator that exposes two hooks (``AttentionTextClassifier`` and its
subclasses do):

* ``_embed_batch(batch) -> (B, T, E)``: the embeddings of a batch dict of tensors;
* ``_batch_outputs(batch, embedded=...)``: a forward pass whose result has ``.logits (B, C)``
  (or is the logits tensor itself).

Token scores reduce the embedding axis: ``"gradient"`` is the L2 norm of ∂logit/∂e_t (saliency,
non-negative); ``"input_x_gradient"`` and ``"integrated_gradients"`` are summed over the
embedding axis (signed; integrated gradients satisfy completeness against an all-zero embedding
baseline).
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import Mapping, NamedTuple, Optional

import numpy as np
import torch

__all__ = ["ATTRIBUTION_METHODS", "TokenAttributions", "embedding_attributions"]

ATTRIBUTION_METHODS = ("gradient", "integrated_gradients", "input_x_gradient")


class TokenAttributions(NamedTuple):
    """``scores (n, T)`` zero on padding; ``logit (n,)`` explained logit; ``baseline_logit (n,)``
    logit at the all-zero embedding (integrated gradients only, else None)."""
    scores: np.ndarray
    logit: np.ndarray
    baseline_logit: Optional[np.ndarray]


def _logits(output):
    return output if isinstance(output, torch.Tensor) else output.logits


def embedding_attributions(estimator, inputs: Mapping[str, torch.Tensor], target: np.ndarray,
                           method: str = "integrated_gradients", n_steps: int = 50,
                           batch_size: Optional[int] = None) -> TokenAttributions:
    """Attribute each sample's ``target`` logit to its tokens through the embedding layer.

    Args:
        estimator: fitted text estimator with ``_embed_batch`` / ``_batch_outputs`` hooks,
            ``module_``, ``device_`` and ``batch_size``.
        inputs: dict of CPU tensors (first axis = samples) as from ``estimator._encode_inputs``;
            must contain ``tokens (n, T)`` and ``lengths (n,)``.
        target: ``(n,)`` int class indices whose logit is explained.
        method: one of :data:`ATTRIBUTION_METHODS`.
        n_steps: integration steps for integrated gradients.

    Returns:
        :class:`TokenAttributions` with ``scores (n, T)`` (batched over samples).
    """
    from captum.attr import InputXGradient, IntegratedGradients, Saliency

    if method not in ATTRIBUTION_METHODS:
        raise ValueError(f"method={method!r} is not an attribution method; choose one of "
                         f"{list(ATTRIBUTION_METHODS)}")
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or n_steps < 1:
        raise ValueError(f"n_steps must be a positive integer, got {n_steps!r}")
    target = np.asarray(target, dtype=np.int64)
    keys = list(inputs)
    n, T = inputs["tokens"].shape
    if target.shape != (n,):
        raise ValueError(f"target must have shape ({n},), got {target.shape}")
    module = estimator.module_
    device = estimator.device_
    step = batch_size or estimator.batch_size
    if method == "integrated_gradients":
        # captum runs n_steps copies of the batch at once; keep that product bounded
        step = max(1, min(step, 4096 // n_steps))

    def forward(embedded, *extra):
        return _logits(estimator._batch_outputs(dict(zip(keys, extra)), embedded=embedded))

    algo = {"gradient": Saliency, "input_x_gradient": InputXGradient,
            "integrated_gradients": IntegratedGradients}[method](forward)
    scores = np.zeros((n, T), dtype=np.float64)
    logit = np.zeros(n, dtype=np.float64)
    base = np.zeros(n, dtype=np.float64) if method == "integrated_gradients" else None
    was_training = module.training
    module.eval()
    # cuDNN RNNs refuse backward in eval mode; the native kernels do not
    cudnn_off = (torch.backends.cudnn.flags(enabled=False) if device.type == "cuda" else nullcontext())
    try:
        with cudnn_off:
            for start in range(0, n, step):
                rows = slice(start, min(start + step, n))
                batch = {k: v[rows].to(device) for k, v in inputs.items()}
                extra = tuple(batch[k] for k in keys)
                tgt = torch.as_tensor(target[rows], device=device)
                with torch.no_grad():
                    embedded = estimator._embed_batch(batch).detach()
                    logit[rows] = forward(embedded, *extra).gather(1, tgt[:, None])[:, 0].cpu().numpy()
                embedded.requires_grad_(True)
                if method == "gradient":
                    attr = algo.attribute(embedded, target=tgt, additional_forward_args=extra, abs=False)
                    tok = attr.norm(dim=-1)
                elif method == "input_x_gradient":
                    tok = algo.attribute(embedded, target=tgt, additional_forward_args=extra).sum(-1)
                else:
                    baseline = torch.zeros_like(embedded)
                    attr = algo.attribute(embedded, baselines=baseline, target=tgt,
                                          additional_forward_args=extra, n_steps=n_steps)
                    tok = attr.sum(-1)
                    with torch.no_grad():
                        base[rows] = forward(baseline, *extra).gather(1, tgt[:, None])[:, 0].cpu().numpy()
                mask = torch.arange(T, device=device)[None] < batch["lengths"][:, None]
                scores[rows] = (tok.detach() * mask).cpu().numpy()
    finally:
        module.train(was_training)
    return TokenAttributions(scores, logit, base)
