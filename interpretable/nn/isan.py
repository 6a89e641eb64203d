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
import operator
from bisect import bisect_left
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["ISAN", "ISANDecomposition", "readout_basis", "isan_parameter_count"]


def isan_parameter_count(n_symbols: int, hidden_size: int, n_outputs: int | None = None) -> int:
    """Number of parameters of :class:`ISAN` (``S·H² + S·H + O·H + O + H``)."""
    n_outputs = n_symbols if n_outputs is None else n_outputs
    return n_symbols * hidden_size * (hidden_size + 1) + n_outputs * (hidden_size + 1) + hidden_size


class ISANDecomposition(dict):
    """Exact logit decomposition (a dict of tensors; the float ones share one dtype).

    For ``P`` explained positions ``t = positions[p]`` (all ``T`` by default) and ``K`` outputs
    ``k = targets[b, p, k]``:

    - ``kappa`` (B, P, K, T): ``kappa[b, p, k, s] = κ_s^t``, the contribution of the symbol at
      ``s`` (zero for ``s > t``); with a window ``w``, (B, P, K, w) instead:
      ``kappa[b, p, k, j] = κ_s^t`` for ``s = t - w + 1 + j`` (zero where ``s < 0``);
    - ``initial`` (B, P, K): the propagated start state ``W_ro (∏_{s≤t} W_{x_s}) h_{-1}``; with a
      window, ``history`` instead: the state after ``t - w`` carried to ``t`` and read out, i.e.
      ``initial`` plus the contributions of all symbols older than the window;
    - ``bias`` (B, P, K) the readout bias; ``logits`` (B, P, K) the logits of a forward pass;
    - ``targets`` (B, P, K) the output ids; ``positions`` (P,) the explained positions.

    ``kappa.sum(-1) + (initial or history) + bias`` reproduces ``logits`` up to rounding.
    """

    @property
    def reconstruction(self) -> torch.Tensor:
        rest = self["history"] if "history" in self else self["initial"]
        return self["kappa"].sum(-1) + rest + self["bias"]


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


def _scan(W: torch.Tensor, b: torch.Tensor, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``h_t = W[x_t] h_{t-1} + b[x_t]``: W (S, H, H), b (S, H), h (B, H), x (B, T) → (B, T, H)."""
    states = h.new_empty(*x.shape, h.shape[-1])
    for t, c in enumerate(x.t()):
        h = torch.baddbmm(
            b.index_select(0, c).unsqueeze(-1), W.index_select(0, c), h.unsqueeze(-1)).squeeze(-1)
        states[:, t] = h
    return states


class _AffineScan(torch.autograd.Function):
    """``h_t = W[x_t] h_{t-1} + b[x_t]`` for all t with a hand-written backward pass.

    Autograd through a Python loop of gathers would build O(T) graph nodes and scatter an
    (S, H, H) gradient per step; here the backward pass is one reverse loop of (B, H, H)
    mat-vecs and the per-symbol weight gradient is accumulated once, grouped by symbol.
    W (S, H, H), b (S, H), h (B, H), x (B, T) long → states (B, T, H).
    """

    @staticmethod
    def forward(ctx, W, b, h, x):
        states = _scan(W, b, h, x)
        ctx.save_for_backward(W, h, x, states)
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


def _rmul(U: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """Row vectors times per-sequence matrices: U (B, n, K, H), M (B, H, X) → (B, n, K, X)."""
    return torch.bmm(U.flatten(1, 2), M).unflatten(1, U.shape[1:3])


class _ReversePass:
    """κ rows of chosen positions, one reverse pass per block of positions (see ISAN.decompose).

    Sorted positions are taken in blocks of ``L`` positions. The pass for a block starts from
    row vectors ``u_t = W_ro[k_t]`` and walks back over the symbols its rows need, one product
    ``u [b_c | W_c]`` per symbol (a row joins when the pass reaches ``t``). Blocked (``L`` =
    ``block_size`` > 0), the pass steps only through the rows' own block and crosses every earlier
    block ``i`` with one product by its map ``[V_i | A_i]`` (``A_i`` the product of the block's
    matrices, ``V_i`` its biases carried to its end); where a window starts inside a block, the
    contributions older than the window are folded into the history term. A row then costs
    O(L·K·H² + span·K·(H + H²/L)) instead of O(span·K·H²), plus O(L·H³) once per map.
    """

    def __init__(self, net, x, targets, h, positions, window, block_size, dtype):
        if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.dtype != torch.long:
            raise ValueError(f"x must be a (B, T) long tensor, got {getattr(x, 'shape', type(x))}.")
        B, T = x.shape
        if T == 0:
            raise ValueError("x must have at least one position.")
        if targets is None:
            targets = torch.arange(net.n_outputs, device=x.device).expand(B, T, -1)
        elif targets.dim() == 2:
            targets = targets.unsqueeze(-1)
        if targets.shape[:2] != (B, T):
            raise ValueError(
                f"targets must have shape (B, T[, K]) = {(B, T)}, got {tuple(targets.shape)}.")
        if positions is None:
            positions = torch.arange(T, device=x.device)
        positions = torch.as_tensor(positions, device=x.device)
        if positions.dtype != torch.long or positions.dim() != 1 or positions.numel() == 0:
            raise ValueError("positions must be a non-empty 1-d long tensor, got "
                             f"shape {tuple(positions.shape)} and dtype {positions.dtype}.")
        if positions.min() < 0 or positions.max() >= T:
            raise ValueError(f"positions must lie in [0, {T}), got values from "
                             f"{int(positions.min())} to {int(positions.max())}.")
        if window is not None and operator.index(window) < 1:
            raise ValueError(f"window must be a positive number of symbols, got {window}.")
        if block_size is not None and operator.index(block_size) < 0:
            raise ValueError(f"block_size must be 0 (no blocks) or positive, got {block_size}.")
        dtype = net.W.dtype if dtype is None else dtype
        if not dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating point dtype, got {dtype}.")

        def cast(p):
            return p.detach().to(device=x.device, dtype=dtype)

        W, b = cast(net.W), cast(net.b)
        self.x, self.targets, self.positions = x, targets, positions
        self.window = None if window is None else operator.index(window)
        self.columns = x.t()  # columns[s]: the symbols at s, (B,)
        self.Wb = torch.cat([b.unsqueeze(-1), W], -1)  # (S, H, 1+H): u [b_c | W_c] = [κ | next u]
        self.Wro, self.bro = cast(net.readout.weight), cast(net.readout.bias)
        self.h = cast(net.initial_state(B) if h is None else h)
        self.order = torch.argsort(positions, stable=True)
        self.states = _scan(W, b, self.h, x[:, : int(positions.max()) + 1])
        if block_size is None:
            block_size = self._auto_block()
        self.blocked = block_size > 0
        self.block = operator.index(block_size) if self.blocked else min(self.window or T, T)
        self.maps: dict[int, torch.Tensor] = {}

    def _auto_block(self) -> int:
        """Blocks of 128 positions where they pay off, else 0 (the plain pass).

        Per row, the plain pass costs ``span·K·H²`` multiply-adds; blocks of L cost about
        ``H³·T/P`` (the maps, shared by the P rows) ``+ L·K·H²/2`` (stepping through the row's
        own block) ``+ span·K·(H + H²/L)`` (crossing the others), less with L ≈ H roughly
        when ``K·span > H·(T/P + K)``.
        """
        T, (P,), K, H = self.states.shape[1], self.positions.shape, self.targets.shape[-1], \
            self.Wro.shape[1]
        span = float((self.positions + 1).clamp(max=self.window or T).double().mean())
        return 128 if K * span > H * (T / P + K) else 0

    def result(self, positions, kappa, rest) -> ISANDecomposition:
        """Assemble an :class:`ISANDecomposition` for ``positions`` (n,) from κ and the rest term."""
        targets = self.targets[:, positions]
        logits = F.linear(self.states[:, positions], self.Wro, self.bro).gather(-1, targets)
        return ISANDecomposition(
            kappa=kappa, **{"initial" if self.window is None else "history": rest},
            bias=self.bro[targets], logits=logits, targets=targets, positions=positions)

    def chunks(self) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """Per block, ascending: (indices into ``positions`` (n,), κ rows, rest (B, n, K)).

        κ rows are (B, n, K, w) with a window, else (B, n, K, c) over symbols ``0..c-1`` with
        ``c`` one past the block's last position (later symbols contribute nothing).
        """
        ordered = self.positions[self.order]
        blocks = torch.div(ordered, self.block, rounding_mode="floor")
        counts = torch.unique_consecutive(blocks, return_counts=True)[1].tolist()
        for index, rows in zip(self.order.split(counts), ordered.split(counts)):
            yield index, *self._explain(rows)

    def _explain(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """κ rows and rest term for sorted ``rows`` (n,) of one block."""
        L, w = self.block, self.window
        first, last = int(rows[0]), int(rows[-1])
        lo = 0 if w is None else max(0, first - w + 1)  # oldest symbol any row needs
        floor = lo // L * L if self.blocked else lo  # oldest symbol computed
        stop = first // L * L if self.blocked else floor  # stepping ends here, maps go on
        for i in [i for i in self.maps if i < floor // L]:  # later blocks never need them
            del self.maps[i]
        U = self.Wro[self.targets[:, rows]]  # (B, n, K, H): u_t = W_ro[k_t]
        kappa = U.new_zeros(*U.shape[:3], last + 1 - floor)  # columns: symbols floor..last
        joined = rows.tolist()
        for s in range(last, stop - 1, -1):
            k = bisect_left(joined, s)  # rows with t >= s
            R = _rmul(U[:, k:], self.Wb.index_select(0, self.columns[s]))
            U[:, k:], kappa[:, k:, :, s - floor] = R[..., 1:], R[..., 0]
        for i in range(stop // L - 1, floor // L - 1, -1):
            R = _rmul(U, self._map(i))
            kappa[..., i * L - floor: (i + 1) * L - floor], U = R[..., :L], R[..., L:]
        rest = torch.einsum("bnkh,bh->bnk", U, self.h if floor == 0 else self.states[:, floor - 1])
        if w is None:
            return kappa, rest
        oldest = rows - (w - 1) - floor  # column of each row's first window symbol (n,)
        older = torch.arange(kappa.shape[-1], device=rows.device) < oldest[:, None]
        cols = oldest[:, None] + torch.arange(w, device=rows.device)  # (n, w)
        inside = kappa.gather(-1, cols.clamp(min=0)[None, :, None].expand(*kappa.shape[:3], w))
        return (torch.where(cols[:, None] >= 0, inside, 0),
                rest + torch.where(older[:, None], kappa, 0).sum(-1))

    def _map(self, i: int) -> torch.Tensor:
        """``[V_i | A_i]`` (B, H, L + H) of block i, symbols ``a = i·L .. e = a + L - 1``:
        ``A_i = W_{x_e} ··· W_{x_a}`` and ``V_i[:, j] = W_{x_e} ··· W_{x_{a+j+1}} b_{x_{a+j}}``."""
        if i not in self.maps:
            L, (B, H) = self.block, self.h.shape
            M = self.Wb.new_empty(B, H, L + H)
            Q = torch.eye(H, dtype=M.dtype, device=M.device).expand(B, H, H)
            for j in range(L - 1, -1, -1):
                R = torch.bmm(Q, self.Wb.index_select(0, self.columns[i * L + j]))
                M[..., j], Q = R[..., 0], R[..., 1:]
            M[..., L:] = Q
            self.maps[i] = M
        return self.maps[i]


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
        *,
        positions: torch.Tensor | None = None,
        window: int | None = None,
        block_size: int | None = None,
        dtype: torch.dtype | None = None,
    ) -> ISANDecomposition:
        """Exact contributions κ_s^t of the symbols to chosen logits (see :class:`ISANDecomposition`).

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
        run = _ReversePass(self, x, targets, h, positions, window, block_size, dtype)
        B, P, K = run.targets.shape[0], run.positions.numel(), run.targets.shape[-1]
        kappa = run.Wro.new_zeros(B, P, K, run.window or x.shape[1])
        rest = run.Wro.new_empty(B, P, K)
        for index, rows, rows_rest in run.chunks():
            kappa[:, index, :, : rows.shape[-1]] = rows
            rest[:, index] = rows_rest
        return run.result(run.positions, kappa, rest)

    def decompose_blocks(
        self,
        x: torch.Tensor,
        targets: torch.Tensor | None = None,
        h: torch.Tensor | None = None,
        *,
        positions: torch.Tensor | None = None,
        window: int | None = None,
        block_size: int | None = None,
        dtype: torch.dtype | None = None,
    ) -> Iterator[ISANDecomposition]:
        """:meth:`decompose`, streamed: one :class:`ISANDecomposition` per block of positions.

        Same arguments; blocks come in ascending order of position, each with its sorted
        ``positions`` (n,). Without a window ``kappa`` is (B, n, K, c) over the symbols
        ``0..c-1``, ``c`` one past the block's last position (later symbols contribute 0), so
        the whole T × T matrix is never held. Arguments are checked on the call.
        """
        run = _ReversePass(self, x, targets, h, positions, window, block_size, dtype)
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
