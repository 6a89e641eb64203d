"""ISAN.decompose with positions, windows and blocks: every path equals a plain reverse pass."""

import pytest
import torch

from interpretable.nn._isan import ISAN

S, H, N_OUT = 5, 6, 4


def random_isan(seed=0, radius=0.95):
    """A float64 ISAN with random parameters and stable transitions."""
    g = torch.Generator().manual_seed(seed)
    net = ISAN(S, H, N_OUT).double()
    with torch.no_grad():
        W = torch.randn(S, H, H, generator=g, dtype=torch.float64)
        net.W.copy_(W / torch.linalg.matrix_norm(W, ord=2)[:, None, None] * radius)
        net.b.copy_(torch.randn(S, H, generator=g, dtype=torch.float64))
        net.h0.copy_(torch.randn(H, generator=g, dtype=torch.float64))
        net.readout.weight.copy_(torch.randn(N_OUT, H, generator=g, dtype=torch.float64))
        net.readout.bias.copy_(torch.randn(N_OUT, generator=g, dtype=torch.float64))
    return net


def inputs(B=2, T=23, K=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, S, (B, T), generator=g), torch.randint(0, N_OUT, (B, T, K), generator=g)


@torch.no_grad()
def reference(net, x, targets):
    """κ (B, T, K, T) and the propagated start state (B, T, K): one symbol-by-symbol reverse pass
    over all positions at once (the original ``decompose``)."""
    B, T = x.shape
    U = net.readout.weight[targets].clone()
    kappa = U.new_zeros(B, T, targets.shape[-1], T)
    for s in range(T - 1, -1, -1):
        kappa[:, s:, :, s] = torch.einsum("btkh,bh->btk", U[:, s:], net.b[x[:, s]])
        U[:, s:] = torch.einsum("btkh,bhj->btkj", U[:, s:], net.W[x[:, s]])
    return kappa, torch.einsum("btkh,bh->btk", U, net.initial_state(B))


def windowed(kappa, initial, w):
    """Reference window layout: κ (B, T, K, w) at offset s - t + w - 1, and history (B, T, K)."""
    B, T, K, _ = kappa.shape
    padded = torch.cat([kappa.new_zeros(B, T, K, w - 1), kappa], -1)
    t = torch.arange(T)
    cols = (t[:, None] + torch.arange(w))[None, :, None].expand(B, T, K, w)  # s + w - 1
    inside = padded.gather(-1, cols)
    older = (t <= t[:, None] - w)[:, None]  # (T, 1, T): s <= t - w
    return inside, initial + torch.where(older, kappa, 0).sum(-1)


def assert_complete(d, net, x):
    """Logits are the forward pass's, and the parts add up to them (float64: 1e-10 relative)."""
    logits = net(x)[:, d["positions"]].gather(2, d["targets"]).detach()
    torch.testing.assert_close(d["logits"], logits, rtol=1e-12, atol=1e-12)
    assert ((d.reconstruction - logits).abs().max() / logits.abs().max()) <= 1e-10


@pytest.mark.parametrize("block_size", [None, 0, 1, 4, 7, 23, 100])
def test_all_positions_equal_reference(block_size):
    net = random_isan()
    x, targets = inputs()
    ref, initial = reference(net, x, targets)
    d = net.decompose(x, targets, block_size=block_size)
    assert d["kappa"].shape == (2, 23, 2, 23) and d["kappa"].dtype == torch.float64
    torch.testing.assert_close(d["kappa"], ref, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(d["initial"], initial, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(d["positions"], torch.arange(23))
    assert_complete(d, net, x)


@pytest.mark.parametrize("block_size", [None, 0, 1, 3, 8])
def test_positions_return_their_rows_in_the_given_order(block_size):
    net = random_isan(seed=1)
    x, targets = inputs(seed=1)
    ref, initial = reference(net, x, targets)
    positions = torch.tensor([17, 0, 5, 22, 5, 9, 8])  # unsorted, repeated, several blocks
    d = net.decompose(x, targets, positions=positions, block_size=block_size)
    assert d["kappa"].shape == (2, 7, 2, 23)
    torch.testing.assert_close(d["kappa"], ref[:, positions], rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(d["initial"], initial[:, positions], rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(d["targets"], targets[:, positions])
    torch.testing.assert_close(d["positions"], positions)
    assert_complete(d, net, x)


@pytest.mark.parametrize("window", [1, 2, 5, 9, 23, 40])
@pytest.mark.parametrize("block_size", [0, 1, 3, 4, 64])
def test_window_layout_and_exact_history(window, block_size):
    net = random_isan(seed=2)
    x, targets = inputs(seed=2)
    ref, initial = reference(net, x, targets)
    inside, history = windowed(ref, initial, window)
    d = net.decompose(x, targets, window=window, block_size=block_size)
    assert d["kappa"].shape == (2, 23, 2, window) and "initial" not in d
    torch.testing.assert_close(d["kappa"], inside, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(d["history"], history, rtol=1e-10, atol=1e-12)
    assert torch.all(d["kappa"][:, 0, :, :-1] == 0)  # nothing before the first symbol
    assert_complete(d, net, x)


def test_window_with_positions():
    net = random_isan(seed=3)
    x, targets = inputs(seed=3)
    inside, history = windowed(*reference(net, x, targets), 4)
    positions = torch.tensor([21, 2, 13])
    for block_size in (0, 2, 5):
        d = net.decompose(x, targets, positions=positions, window=4, block_size=block_size)
        torch.testing.assert_close(d["kappa"], inside[:, positions], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(d["history"], history[:, positions], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("window", [None, 6])
def test_blocks_stream_the_same_rows(window):
    net = random_isan(seed=4)
    x, targets = inputs(seed=4)
    positions = torch.tensor([19, 3, 11, 12, 4])
    whole = net.decompose(x, targets, positions=positions, window=window, block_size=4)
    parts = list(net.decompose_blocks(x, targets, positions=positions, window=window, block_size=4))
    assert [p["positions"].tolist() for p in parts] == [[3], [4], [11], [12], [19]]
    order = torch.argsort(positions)
    for key, value in whole.items():
        streamed = [p[key] for p in parts]
        if key == "kappa" and window is None:  # columns up to the block's last position
            assert [k.shape[-1] for k in streamed] == [4, 5, 12, 13, 20]
            streamed = [torch.nn.functional.pad(k, (0, 23 - k.shape[-1])) for k in streamed]
        merged = torch.cat(streamed, 0 if key == "positions" else 1)
        torch.testing.assert_close(merged, value[order] if key == "positions" else value[:, order])


@pytest.mark.parametrize("block_size", [0, 3])
def test_all_outputs_start_state_padding_and_batch_independence(block_size):
    net = random_isan(seed=5)
    x, _ = inputs(B=3, T=14, seed=5)
    h = torch.randn(3, H, dtype=torch.float64)
    d = net.decompose(x, h=h, window=5, block_size=block_size)
    assert d["kappa"].shape == (3, 14, N_OUT, 5)
    torch.testing.assert_close(d.reconstruction, net(x, h).detach(), rtol=1e-10, atol=1e-10)
    padded = torch.cat([x, torch.zeros(3, 6, dtype=torch.long)], 1)
    d_padded = net.decompose(padded, h=h, window=5, block_size=block_size)
    for key in ("kappa", "history", "logits"):
        torch.testing.assert_close(d_padded[key][:, :14], d[key], rtol=1e-12, atol=1e-12)
    alone = net.decompose(x[1:2], h=h[1:2], window=5, block_size=block_size)
    torch.testing.assert_close(alone["kappa"], d["kappa"][1:2], rtol=1e-12, atol=1e-12)


def test_dtype_runs_the_whole_computation_in_that_precision():
    net32 = random_isan(seed=6).float()
    x, targets = inputs(seed=6)
    d = net32.decompose(x, targets, window=7, block_size=4, dtype=torch.float64)
    ref = random_isan(seed=6).float().double().decompose(x, targets, window=7, block_size=4)
    assert all(d[k].dtype == torch.float64 for k in ("kappa", "history", "bias", "logits"))
    for key in ("kappa", "history", "logits"):
        torch.testing.assert_close(d[key], ref[key], rtol=0, atol=0)
    assert net32.decompose(x, targets)["kappa"].dtype == torch.float32


@pytest.mark.parametrize("kwargs, match", [
    ({"positions": torch.tensor([0, 23])}, r"positions must lie in \[0, 23\)"),
    ({"positions": torch.tensor([-1])}, r"positions must lie in \[0, 23\)"),
    ({"positions": torch.tensor([1.0, 2.0])}, "1-d long tensor"),
    ({"positions": torch.tensor([[1, 2]])}, "1-d long tensor"),
    ({"positions": torch.tensor(3)}, "1-d long tensor"),
    ({"positions": torch.tensor([], dtype=torch.long)}, "non-empty"),
    ({"window": 0}, "window must be a positive"),
    ({"window": -3}, "window must be a positive"),
    ({"block_size": -1}, "block_size must be 0"),
    ({"dtype": torch.long}, "floating point"),
    ({"targets": torch.zeros(2, 22, dtype=torch.long)}, "targets must have shape"),
])
def test_bad_arguments_raise_value_error(kwargs, match):
    net = random_isan()
    x, _ = inputs()
    with pytest.raises(ValueError, match=match):
        net.decompose(x, **kwargs)
    with pytest.raises(ValueError, match=match):  # checked on the call, not on iteration
        net.decompose_blocks(x, **kwargs)


def test_bad_x_raises_value_error():
    net = random_isan()
    with pytest.raises(ValueError, match=r"x must be a \(B, T\) long tensor"):
        net.decompose(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="at least one position"):
        net.decompose(torch.zeros(2, 0, dtype=torch.long))
