"""Perturbations of the token embeddings of a text classifier, ``(n, T, E)`` offsets for
:func:`~interpretable.metrics.embedding_stability`: random directions, a PGD attack on the
predicted distribution, or the SEAT authors' attack on the gold labels."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from interpretable.nn import embedding_attack, embedding_pgd, logits_of, make_generator

#: the kinds of :func:`embedding_offsets`
EMBEDDING_NOISE = ("random", "adversarial", "pgd")


def embedding_offsets(clf, inputs: dict, kind: str, radius: float, *, labels, steps: int = 10,
                      step_size=None, norm: str = "linf", clamp=None, random_state=0,
                      batch_size=None, view: str = "model") -> torch.Tensor:
    """Offsets ``(n, T, E)`` (CPU, zero on padding) of the token embeddings of encoded
    ``inputs``: ``"random"`` directions of norm ``radius`` per token, an ``"adversarial"`` PGD
    (``steps``) maximising the KL divergence of the predictions within ``‖δ_t‖₂ ≤ radius``,
    or the authors' ``"pgd"`` on ``labels`` (class indices (n,) or labels of ``clf.classes_``;
    ``step_size``, ``norm``, ``clamp`` as :func:`~interpretable.nn._attacks.embedding_pgd`)."""
    generator = make_generator(random_state)
    lengths = inputs["lengths"].numpy()
    if kind == "random":
        return _token_noise((*inputs["tokens"].shape, _embedding_size(clf, inputs)), lengths,
                            radius, generator)
    if kind == "adversarial":
        return _adversarial_noise(clf, inputs, radius, steps, generator, batch_size, view)
    labels = torch.as_tensor(labels) if isinstance(labels, torch.Tensor) \
        else _label_indices(clf, labels, len(lengths))
    return _pgd_noise(clf, inputs, labels, generator, batch_size, view, radius=radius,
                      steps=steps, step_size=step_size, norm=norm, clamp=clamp)


def _token_noise(shape, lengths, radius, generator) -> torch.Tensor:
    """Random directions of norm ``radius`` for every real token, ``(n, T, E)``."""
    noise = torch.randn(shape, generator=generator, dtype=torch.float64)
    noise = noise / noise.norm(dim=-1, keepdim=True).clamp_min(1e-12) * radius
    real = torch.arange(shape[1])[None] < torch.as_tensor(lengths)[:, None]
    return (noise * real[..., None]).float()


def _embedding_size(clf, inputs) -> int:
    batch = {"tokens": inputs["tokens"][:1, :1].to(clf.device_)}
    return clf.embed(batch).shape[-1]


def _attack_noise(clf, inputs, attack, batch_size) -> torch.Tensor:
    """Offsets ``(n, T, E)`` (CPU) by ``attack(rows, batch, emb, real)`` per batch, with the
    clean embeddings ``emb (B, t, E)`` and ``real (B, t)`` marking the real tokens."""
    n, T = inputs["tokens"].shape
    deltas = torch.zeros(n, T, _embedding_size(clf, inputs))
    for rows, batch in clf.iter_batches(inputs, batch_size):
        with torch.no_grad():
            emb = clf.embed(batch).detach()
        real = torch.arange(emb.shape[1], device=emb.device)[None] < batch["lengths"][:, None]
        deltas[rows, : emb.shape[1]] = attack(rows, batch, emb, real).cpu()
    return deltas


def _adversarial_noise(clf, inputs, radius, steps, generator, batch_size, view) -> torch.Tensor:
    """PGD maximising the KL divergence of the predictions, ``‖δ_t‖₂ ≤ radius`` per token."""
    def attack(rows, batch, emb, real):
        with torch.no_grad():
            target = F.softmax(logits_of(clf.forward_batch(batch, embedded=emb, view=view)), -1)
        start = _token_noise(emb.shape, batch["lengths"].cpu(), radius, generator).to(emb) * 0.5

        def divergence(delta):
            logits = logits_of(clf.forward_batch(batch, embedded=emb + delta, view=view))
            return F.kl_div(F.log_softmax(logits, -1), target, reduction="sum")

        return embedding_attack(divergence, start, radius, steps=steps,
                                mask=real[..., None].to(emb))

    return _attack_noise(clf, inputs, attack, batch_size)


def _pgd_noise(clf, inputs, labels, generator, batch_size, view, **options) -> torch.Tensor:
    """The authors' attack (:func:`~interpretable.nn._attacks.embedding_pgd`) on ``labels (n,)``."""
    def attack(rows, batch, emb, real):
        return embedding_pgd(
            lambda e: logits_of(clf.forward_batch(batch, embedded=e, view=view)), emb, real,
            labels[rows].to(emb.device), generator=generator, **options)

    return _attack_noise(clf, inputs, attack, batch_size)


def _label_indices(clf, y, n) -> torch.Tensor:
    """Indices into ``clf.classes_`` of the labels ``y`` (n,)."""
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"y must hold one label per sample ({n}), got shape {y.shape}.")
    unknown = sorted(set(y.tolist()) - set(clf.classes_.tolist()), key=str)
    if unknown:
        raise ValueError(f"y has labels {unknown[:5]} unknown to the model (classes_ = "
                         f"{clf.classes_.tolist()[:20]}).")
    index = {c: i for i, c in enumerate(clf.classes_.tolist())}
    return torch.as_tensor([index[v] for v in y.tolist()])
