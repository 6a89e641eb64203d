"""Affine recurrences ``h_t = W[x_t] h_{t-1} + b[x_t]`` (the ISAN transition): the forward
scan with a hand-written backward pass, and the exact reverse-pass decomposition of the logits
into one term per past symbol (see :class:`~interpretable.nn._isan.ISAN`).

Shapes are ``S`` symbols, ``B`` batch, ``T`` time, ``H`` hidden, ``O`` outputs, ``K`` explained
outputs per position, ``P`` explained positions, ``w`` window.
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections.abc import Iterator

import torch
import torch.nn.functional as F


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


def affine_scan(W: torch.Tensor, b: torch.Tensor, h: torch.Tensor,
                x: torch.Tensor) -> torch.Tensor:
    """``h_t = W[x_t] h_{t-1} + b[x_t]``: W (S, H, H), b (S, H), h (B, H), x (B, T) → (B, T, H)."""
    states = h.new_empty(*x.shape, h.shape[-1])
    for t, c in enumerate(x.t()):
        h = torch.baddbmm(
            b.index_select(0, c).unsqueeze(-1), W.index_select(0, c), h.unsqueeze(-1)).squeeze(-1)
        states[:, t] = h
    return states


class AffineScan(torch.autograd.Function):
    """``h_t = W[x_t] h_{t-1} + b[x_t]`` for all t with a hand-written backward pass.

    Autograd through a Python loop of gathers would build O(T) graph nodes and scatter an
    (S, H, H) gradient per step; here the backward pass is one reverse loop of (B, H, H)
    mat-vecs and the per-symbol weight gradient is accumulated once, grouped by symbol.
    W (S, H, H), b (S, H), h (B, H), x (B, T) long → states (B, T, H).
    """

    @staticmethod
    def forward(ctx, W, b, h, x):
        states = affine_scan(W, b, h, x)
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


class ReversePass:
    """κ rows of chosen positions, one reverse pass per block of positions (see
    :meth:`ISAN.decompose <interpretable.nn._isan.ISAN.decompose>`).

    Sorted positions are taken in blocks of ``L`` positions. The pass for a block starts from
    row vectors ``u_t = W_ro[k_t]`` and walks back over the symbols its rows need, one product
    ``u [b_c | W_c]`` per symbol (a row joins when the pass reaches ``t``). Blocked (``L`` =
    ``block_size`` > 0), the pass steps only through the rows' own block and crosses every earlier
    block ``i`` with one product by its map ``[V_i | A_i]`` (``A_i`` the product of the block's
    matrices, ``V_i`` its biases carried to its end); where a window starts inside a block, the
    contributions older than the window are folded into the history term. A row then costs
    O(L·K·H² + span·K·(H + H²/L)) instead of O(span·K·H²), plus O(L·H³) once per map.
    """

    def __init__(self, net, x, targets=None, h=None, *, positions=None, window=None,
                 block_size=None, dtype=None):
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
        self.states = affine_scan(W, b, self.h, x[:, : int(positions.max()) + 1])
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
        """Assemble an :class:`ISANDecomposition` for ``positions`` (n,) from κ and the rest
        term."""
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
        for index, rows in zip(self.order.split(counts), ordered.split(counts), strict=True):
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
