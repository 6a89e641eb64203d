"""Input Switched Affine Network (Foerster et al., ICML 2017).

One matrix and one bias per input symbol, no nonlinearity:

    h_t = W_{x_t} h_{t-1} + b_{x_t},        l_t = W_ro h_t + b_ro,        h_{-1} learned.

Unrolled, the logits split exactly into one term per past symbol,

    l_t = b_ro + W_ro (prod_{s<=t} W_{x_s}) h_{-1} + sum_{s<=t} kappa_s^t,
    kappa_s^t = W_ro (prod_{s'=s+1..t} W_{x_s'}) b_{x_s},

and any substring acts on the state as one affine map ``h -> A h + b`` (:meth:`ISAN.compose`).
Symbols are integer ids in ``[0, n_symbols)``; shapes are ``B`` batch, ``T`` time, ``H`` hidden,
``O`` outputs, ``K`` explained outputs per position, ``P`` explained positions, ``w`` window.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

from interpretable.nn._affine import AffineScan, ISANDecomposition, ReversePass


def isan_parameter_count(n_symbols: int, hidden_size: int, n_outputs: int | None = None) -> int:
    """Number of parameters of :class:`ISAN` (``S·H² + S·H + O·H + O + H``)."""
    n_outputs = n_symbols if n_outputs is None else n_outputs
    return n_symbols * hidden_size * (hidden_size + 1) + n_outputs * (hidden_size + 1) + hidden_size


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
    rank = int((tol < S).sum())
    return Vh.transpose(0, 1).contiguous(), rank


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
        return AffineScan.apply(self.W, self.b, h, x)

    def forward(self, x: torch.Tensor, h: torch.Tensor | None = None) -> torch.Tensor:
        """Logits for every position: x (B, T) long, optional start state h (B, H) → (B, T, O)."""
        return self.readout(self.states(x, h))

    @torch.no_grad()
    def next_log_probs(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Log-probabilities (B, O) float64 of the symbol after ``x[b, :lengths[b]]``, finite for
        texts of any length.

        The state of a trained ISAN can grow geometrically with the text (its transitions may
        have spectral radius above 1), past the float32 range after ~10^4–10^5 symbols and past
        float64's soon after. Here the state is carried as ``h = exp(log_scale) · u``: every
        few steps (as many as the largest transition norm allows before ``‖u‖`` could leave the
        float range) ``‖u‖`` is divided out into ``log_scale`` (float64), the biases enter as
        ``b · exp(-log_scale)``, and the readout ``exp(log_scale) · W_ro u + b_ro`` is
        normalised in log space.
        """
        B, T = x.shape
        growth = float(torch.linalg.matrix_norm(self.W.detach().double(), ord=2).max())
        span = torch.finfo(self.W.dtype).max ** 0.5  # room left for one block of steps
        block = 64 if growth <= 1 else int(max(1, min(64, math.log(span) / math.log(growth))))
        u = self.initial_state(B).clone()
        log_scale = torch.zeros(B, dtype=torch.float64, device=x.device)
        last, last_scale = u.clone(), log_scale.clone()
        end_steps = set((lengths - 1).tolist())
        for start in range(0, T, block):
            factor = torch.exp(-log_scale).to(u.dtype)[:, None]
            for t in range(start, min(start + block, T)):
                symbols = x[:, t]
                u = torch.baddbmm((self.b[symbols] * factor).unsqueeze(-1), self.W[symbols],
                                  u.unsqueeze(-1)).squeeze(-1)
                if t in end_steps:
                    ends = (lengths - 1) == t
                    last = torch.where(ends[:, None], u, last)
                    last_scale = torch.where(ends, log_scale, last_scale)
            norm = u.norm(dim=-1).clamp_min(torch.finfo(u.dtype).tiny)
            u = u / norm[:, None]
            log_scale = log_scale + norm.double().log()
        z = F.linear(last, self.readout.weight).double()  # (B, O): the logits are S·z + c
        c = self.readout.bias.double()
        moderate = last_scale < 500.0  # S·z representable in float64
        logits = torch.exp(last_scale.clamp(max=500.0))[:, None] * z + c
        # S astronomically large: only the largest z survives (ties broken by c)
        gap = (z.amax(1, keepdim=True) - z).clamp_min(0)
        huge = torch.where(gap > 0, -torch.exp(last_scale[:, None] + gap.log()), 0.0) + c
        return torch.log_softmax(torch.where(moderate[:, None], logits, huge), -1)

    # ------------------------------------------------------------------ decomposition
    @torch.no_grad()
    def decompose(
        self,
        x: torch.Tensor,
        targets: torch.Tensor | None = None,
        h: torch.Tensor | None = None,
        *,
        positions: torch.Tensor | None = None,
        window: int | None = None,
        block_size: int | None = None,
        dtype: torch.dtype | None = None,
    ) -> ISANDecomposition:
        """Exact contributions κ_s^t of the symbols to chosen logits (see
        :class:`ISANDecomposition`).

        x (B, T) long; targets (B, T, K) or (B, T) long output ids to explain at each position
        (``None``: all O outputs); optional start state h (B, H).
        positions: 1-d long tensor of P positions explained in every sequence (any order,
        repeats allowed; default all T) → κ rows (B, P, K, T).
        window: explain only the last ``w`` symbols before each position → κ (B, P, K, w) at
        offset ``s - t + w - 1``; older symbols are folded exactly into ``history``.
        block_size: 0 for the plain reverse pass, symbol by symbol, O(P·span·K·H²) for ``span``
        = t + 1 (or ``w``) symbols per row; L > 0 for blocks of L positions, each crossed with one
        precomputed map, O(T·H³ + P·(L·H² + span·(H + H²/L))·K): with L ≈ H, all positions of a
        text in O(T·H³ + T²·K·H) and a window in O(T·H³ + T·w·K·H); ``None`` picks the cheaper.
        Same numbers up to rounding either way.
        dtype: precision of the whole computation, parameters included (default: the module's).

        Memory: the output plus O(T·H) for the states and block maps (with a window, only the maps
        inside it). Right padding is harmless: a symbol at ``s`` only affects positions ``t ≥ s``.
        """
        run = ReversePass(self, x, targets, h, positions=positions, window=window,
                          block_size=block_size, dtype=dtype)
        B, P, K = run.targets.shape[0], run.positions.numel(), run.targets.shape[-1]
        kappa = run.Wro.new_zeros(B, P, K, run.window or x.shape[1])
        rest = run.Wro.new_empty(B, P, K)
        for index, rows, rows_rest in run.chunks():
            kappa[:, index, :, : rows.shape[-1]] = rows
            rest[:, index] = rows_rest
        return run.result(run.positions, kappa, rest)

    def decompose_blocks(self, x: torch.Tensor, targets: torch.Tensor | None = None,
                         h: torch.Tensor | None = None, **options) -> Iterator[ISANDecomposition]:
        """:meth:`decompose`, streamed: one :class:`ISANDecomposition` per block of positions.

        Same arguments (``options``: the keywords of :meth:`decompose`); blocks come in
        ascending order of position, each with its sorted
        ``positions`` (n,). Without a window ``kappa`` is (B, n, K, c) over the symbols
        ``0..c-1``, ``c`` one past the block's last position (later symbols contribute 0), so
        the whole T × T matrix is never held. Arguments are checked on the call.
        """
        run = ReversePass(self, x, targets, h, **options)
        return (run.result(run.positions[index], rows, rest) for index, rows, rest in run.chunks())

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
    def to_basis(self, Q: torch.Tensor) -> ISAN:
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
