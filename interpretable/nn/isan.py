"""Input Switched Affine Network (Foerster et al., ICML 2017).

One matrix and one bias per input symbol, no nonlinearity:

    h_t = W_{x_t} h_{t-1} + b_{x_t},        l_t = W_ro h_t + b_ro,        h_{-1} learned.

Unrolled, the logits split exactly into one term per past symbol,

    l_t = b_ro + W_ro (prod_{s<=t} W_{x_s}) h_{-1} + sum_{s<=t} kappa_s^t,
    kappa_s^t = W_ro (prod_{s'=s+1..t} W_{x_s'}) b_{x_s},

and any substring acts on the state as one affine map ``h -> A h + b`` (:meth:`ISAN.compose`).
Symbols are integer ids in ``[0, n_symbols)``; shapes are ``B`` batch, ``T`` time, ``H`` hidden,
``O`` outputs, ``K`` explained outputs per position.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

__all__ = ["ISAN", "ISANDecomposition", "readout_basis", "isan_parameter_count"]


def isan_parameter_count(n_symbols: int, hidden_size: int, n_outputs: int | None = None) -> int:
    """Number of parameters of :class:`ISAN` (``S·H² + S·H + O·H + O + H``)."""
    n_outputs = n_symbols if n_outputs is None else n_outputs
    return n_symbols * hidden_size * (hidden_size + 1) + n_outputs * (hidden_size + 1) + hidden_size


class ISANDecomposition(dict):
    """Exact logit decomposition (a dict of tensors, all of one dtype).

    Keys: ``kappa`` (B, T, K, T) with ``kappa[b, t, k, s]`` the contribution of the symbol at
    ``s`` to explained output ``k`` at ``t`` (zero for ``s > t``); ``initial`` (B, T, K) the
    propagated initial state ``W_ro (prod W) h_{-1}``; ``bias`` (B, T, K) the readout bias;
    ``logits`` (B, T, K) the logits from the forward pass; ``targets`` (B, T, K) the output ids.
    ``kappa.sum(-1) + initial + bias`` reproduces ``logits`` up to rounding.
    """

    @property
    def reconstruction(self) -> torch.Tensor:
        return self["kappa"].sum(-1) + self["initial"] + self["bias"]


def readout_basis(
    readout_weight: torch.Tensor, tol: float | None = None
) -> tuple[torch.Tensor, int]:
    """Orthonormal basis ``Q`` (H, H) whose first ``rank`` columns span the rows of ``W_ro``.

    The remaining ``H - rank`` columns span the orthogonal complement (the "computational"
    subspace, invisible to the readout). Built from the SVD ``W_ro = U S Vᵀ``: ``Q = V``.
    """
    W = readout_weight.detach()
    _, S, Vh = torch.linalg.svd(W, full_matrices=True)
    if tol is None:
        tol = float(S.max()) * max(W.shape) * torch.finfo(W.dtype).eps if S.numel() else 0.0
    rank = int((S > tol).sum())
    return Vh.transpose(0, 1).contiguous(), rank


class _AffineScan(torch.autograd.Function):
    """``h_t = W[x_t] h_{t-1} + b[x_t]`` for all t with a hand-written backward pass.

    Autograd through a Python loop of gathers would build O(T) graph nodes and scatter an
    (S, H, H) gradient per step; here the backward pass is one reverse loop of (B, H, H)
    mat-vecs and the per-symbol weight gradient is accumulated once, grouped by symbol.
    W (S, H, H), b (S, H), h (B, H), x (B, T) long → states (B, T, H).
    """

    @staticmethod
    def forward(ctx, W, b, h, x):
        h_start = h
        B, T = x.shape
        states = h.new_empty(B, T, h.shape[-1])
        for t in range(T):
            h = torch.baddbmm(b[x[:, t]].unsqueeze(-1), W[x[:, t]], h.unsqueeze(-1)).squeeze(-1)
            states[:, t] = h
        ctx.save_for_backward(W, h_start, x, states)
        return states

    @staticmethod
    def backward(ctx, grad):
        W, h_start, x, states = ctx.saved_tensors
        B, T, H = states.shape
        S = W.shape[0]
        grad_states = torch.empty_like(states)
        dh = grad.new_zeros(B, H)
        for t in range(T - 1, -1, -1):
            dh = dh + grad[:, t]
            grad_states[:, t] = dh
            dh = torch.bmm(W[x[:, t]].transpose(1, 2), dh.unsqueeze(-1)).squeeze(-1)
        prev = torch.cat([h_start.expand(B, H).unsqueeze(1), states[:, :-1]], 1).reshape(B * T, H)
        flat = x.reshape(-1)
        D = grad_states.reshape(B * T, H)
        grad_b = grad.new_zeros(S, H).index_add_(0, flat, D)
        grad_W = torch.zeros_like(W)
        order = torch.argsort(flat)
        D, prev = D[order], prev[order]
        start = 0
        for c, n in enumerate(torch.bincount(flat, minlength=S).tolist()):
            if n:
                grad_W[c] = D[start: start + n].T @ prev[start: start + n]
                start += n
        return grad_W, grad_b, dh, None


class ISAN(nn.Module):
    """Input switched affine network with an affine readout and a learned initial state.

    Parameters: ``W`` (S, H, H), ``b`` (S, H), ``readout`` (``nn.Linear(H, O)``), ``h0`` (H,).
    ``W_c`` is initialised to ``init_gain · I`` plus a small random perturbation, so products of
    many transitions start neither exploding nor vanishing.
    """

    def __init__(
        self,
        n_symbols: int,
        hidden_size: int,
        n_outputs: int | None = None,
        init_gain: float = 1.0,
        init_noise: float = 0.01,
    ):
        super().__init__()
        if n_symbols < 1 or hidden_size < 1:
            raise ValueError(
                f"n_symbols and hidden_size must be positive, got {n_symbols} and {hidden_size}."
            )
        self.n_symbols = int(n_symbols)
        self.hidden_size = int(hidden_size)
        self.n_outputs = int(n_symbols if n_outputs is None else n_outputs)
        eye = torch.eye(hidden_size).expand(n_symbols, hidden_size, hidden_size)
        noise = torch.randn(n_symbols, hidden_size, hidden_size) * (init_noise / hidden_size**0.5)
        self.W = nn.Parameter(init_gain * eye + noise)
        self.b = nn.Parameter(torch.randn(n_symbols, hidden_size) * 0.1)
        self.readout = nn.Linear(hidden_size, self.n_outputs)
        self.h0 = nn.Parameter(torch.zeros(hidden_size))

    # ------------------------------------------------------------------ dynamics
    def initial_state(self, batch_size: int) -> torch.Tensor:
        """The learned ``h_{-1}`` repeated: (B, H)."""
        return self.h0.unsqueeze(0).expand(batch_size, -1)

    def step(self, h: torch.Tensor, symbols: torch.Tensor) -> torch.Tensor:
        """One transition: h (B, H), symbols (B,) → (B, H)."""
        return torch.baddbmm(
            self.b[symbols].unsqueeze(-1), self.W[symbols], h.unsqueeze(-1)
        ).squeeze(-1)

    def states(self, x: torch.Tensor, h: torch.Tensor | None = None) -> torch.Tensor:
        """Hidden states for every position: x (B, T) long → (B, T, H)."""
        if h is None:
            h = self.initial_state(x.shape[0])
        return _AffineScan.apply(self.W, self.b, h, x)

    def forward(self, x: torch.Tensor, h: torch.Tensor | None = None) -> torch.Tensor:
        """Logits for every position: x (B, T) long, optional start state h (B, H) → (B, T, O)."""
        return self.readout(self.states(x, h))

    # ------------------------------------------------------------------ decomposition
    @torch.no_grad()
    def decompose(
        self,
        x: torch.Tensor,
        targets: torch.Tensor | None = None,
        h: torch.Tensor | None = None,
    ) -> ISANDecomposition:
        """Exact contributions κ_s^t of every symbol to chosen logits at every position.

        x (B, T) long; targets (B, T, K) or (B, T) long output ids to explain at each position
        (``None``: all O outputs, cost O(T² O H)); optional start state h (B, H).

        One reverse pass: at step ``s`` the row vectors ``u_t = W_ro[k_t] ∏_{s'=s+1..t} W_{x_s'}``
        of all positions ``t ≥ s`` are dotted with ``b_{x_s}`` (giving κ_s^t) and then
        multiplied by ``W_{x_s}``; no per-target recomputation, cost O(T² K H²/2).
        Right padding is harmless: a symbol at ``s`` only affects positions ``t ≥ s``.
        """
        B, T = x.shape
        if targets is None:
            targets = torch.arange(self.n_outputs, device=x.device).expand(B, T, -1)
        elif targets.dim() == 2:
            targets = targets.unsqueeze(-1)
        if targets.shape[:2] != (B, T):
            raise ValueError(
                f"targets must have shape (B, T[, K]) = {(B, T)}, got {tuple(targets.shape)}.")
        K = targets.shape[-1]
        Wro = self.readout.weight
        U = Wro[targets].clone()  # (B, T, K, H): u_t for every t; rows t < s are still unused
        kappa = U.new_zeros(B, T, K, T)
        for s in range(T - 1, -1, -1):
            active = U[:, s:]  # (B, T-s, K, H)
            kappa[:, s:, :, s] = torch.einsum("btkh,bh->btk", active, self.b[x[:, s]])
            U[:, s:] = torch.einsum("btkh,bhj->btkj", active, self.W[x[:, s]])
        if h is None:
            h = self.initial_state(B)
        initial = torch.einsum("btkh,bh->btk", U, h)
        bias = self.readout.bias[targets]
        logits = torch.gather(self.forward(x, h), 2, targets)
        return ISANDecomposition(
            kappa=kappa, initial=initial, bias=bias, logits=logits, targets=targets
        )

    # ------------------------------------------------------------------ composition
    @torch.no_grad()
    def compose(
        self, x: torch.Tensor, lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Affine maps of whole substrings: x (N, L) long → A (N, H, H), b (N, H).

        Stepping through ``x[n, :lengths[n]]`` from any state ``h`` gives ``A[n] h + b[n]``.
        Positions at or beyond ``lengths[n]`` are ignored (identity).
        """
        N, L = x.shape
        H = self.hidden_size
        A = torch.eye(H, dtype=self.W.dtype, device=x.device).repeat(N, 1, 1)
        b = self.W.new_zeros(N, H)
        if lengths is None:
            lengths = torch.full((N,), L, device=x.device)
        for t in range(L):
            live = (lengths > t).view(N, 1, 1)
            Wt, bt = self.W[x[:, t]], self.b[x[:, t]]
            A = torch.where(live, Wt @ A, A)
            b = torch.where(live[:, :, 0], (Wt @ b.unsqueeze(-1)).squeeze(-1) + bt, b)
        return A, b

    @staticmethod
    def apply_map(h: torch.Tensor, A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``A h + b`` for a batch: h (B, H), A (B, H, H) or (H, H), b (B, H) or (H,) → (B, H)."""
        return (h.unsqueeze(-2) @ A.transpose(-1, -2)).squeeze(-2) + b

    # ------------------------------------------------------------------ change of basis
    @torch.no_grad()
    def to_basis(self, Q: torch.Tensor) -> "ISAN":
        """The same network with hidden state ``h' = Q⁻¹ h`` (Q (H, H) invertible).

        ``W'_c = Q⁻¹ W_c Q``, ``b'_c = Q⁻¹ b_c``, ``W'_ro = W_ro Q``, ``h'_{-1} = Q⁻¹ h_{-1}``;
        the logits are unchanged. For orthogonal ``Q`` (e.g. :func:`readout_basis`) ``Q⁻¹ = Qᵀ``.
        """
        H = self.hidden_size
        Q = Q.to(device=self.W.device, dtype=self.W.dtype)
        if Q.shape != (H, H):
            raise ValueError(f"Q must have shape {(H, H)}, got {tuple(Q.shape)}.")
        Qi = torch.linalg.inv(Q)
        new = copy.deepcopy(self)
        new.W.copy_(Qi @ self.W @ Q)
        new.b.copy_(self.b @ Qi.T)
        new.readout.weight.copy_(self.readout.weight @ Q)
        new.readout.bias.copy_(self.readout.bias)
        new.h0.copy_(Qi @ self.h0)
        return new

    def readout_basis(self, tol: float | None = None) -> tuple[torch.Tensor, int]:
        """See :func:`readout_basis`: (Q (H, H), rank of W_ro)."""
        return readout_basis(self.readout.weight, tol)

    def augmented(self) -> torch.Tensor:
        """Linear equivalents of the affine transitions: (S, H+1, H+1) ``[[W_c, b_c], [0, 1]]``."""
        S, H = self.n_symbols, self.hidden_size
        M = self.W.new_zeros(S, H + 1, H + 1)
        M[:, :H, :H] = self.W
        M[:, :H, H] = self.b
        M[:, H, H] = 1.0
        return M
