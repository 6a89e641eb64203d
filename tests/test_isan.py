"""ISAN torch module: exact decomposition, composition, change of basis, custom backward."""

import numpy as np
import pytest
import torch

from interpretable.nn._affine import AffineScan
from interpretable.nn._char_lstm import CharLSTM, lstm_parameter_count
from interpretable.nn._isan import ISAN, isan_parameter_count, readout_basis


def random_isan(S=6, H=10, n_out=None, seed=0, radius=0.95):
    """A float64 ISAN with random (non-trivial) parameters and stable transitions."""
    g = torch.Generator().manual_seed(seed)
    net = ISAN(S, H, n_out).double()
    with torch.no_grad():
        W = torch.randn(S, H, H, generator=g, dtype=torch.float64)
        W = W / torch.linalg.matrix_norm(W, ord=2)[:, None, None] * radius
        net.W.copy_(W)
        net.b.copy_(torch.randn(S, H, generator=g, dtype=torch.float64))
        net.h0.copy_(torch.randn(H, generator=g, dtype=torch.float64))
        net.readout.weight.copy_(torch.randn(net.n_outputs, H, generator=g, dtype=torch.float64))
        net.readout.bias.copy_(torch.randn(net.n_outputs, generator=g, dtype=torch.float64))
    return net


def naive_states(net, x, h=None):
    """Reference recurrence, one step at a time with plain autograd."""
    h = net.h0.expand(x.shape[0], -1) if h is None else h
    out = []
    for t in range(x.shape[1]):
        h = (net.W[x[:, t]] @ h.unsqueeze(-1)).squeeze(-1) + net.b[x[:, t]]
        out.append(h)
    return torch.stack(out, 1)


def brute_force_kappa(net, x):
    """κ_s^t for all outputs by running the network with only b_{x_s} switched on at s."""
    B, T = x.shape
    kappa = torch.zeros(B, T, net.n_outputs, T, dtype=torch.float64)
    for s in range(T):
        h = torch.zeros(B, net.hidden_size, dtype=torch.float64)
        for t in range(s, T):
            h = (net.W[x[:, t]] @ h.unsqueeze(-1)).squeeze(-1)
            if t == s:
                h = h + net.b[x[:, s]]
            kappa[:, t, :, s] = h @ net.readout.weight.T
    return kappa


def test_states_match_naive_recurrence():
    net = random_isan()
    x = torch.randint(0, 6, (4, 13))
    torch.testing.assert_close(net.states(x), naive_states(net, x), rtol=0, atol=1e-12)


def test_affine_scan_gradients_match_autograd():
    net = random_isan(S=5, H=6)
    x = torch.randint(0, 5, (3, 9))
    params = [net.W, net.b, net.h0]
    weight = torch.randn(3, 9, 6, dtype=torch.float64)
    g_fast = torch.autograd.grad((net.states(x) * weight).sum(), params)
    g_ref = torch.autograd.grad((naive_states(net, x) * weight).sum(), params)
    for a, b in zip(g_fast, g_ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    W, b = net.W.detach().clone().requires_grad_(), net.b.detach().clone().requires_grad_()
    h = torch.randn(3, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda W, b, h: AffineScan.apply(W, b, h, x), (W, b, h))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_decomposition_exact_float64(seed):
    net = random_isan(S=7, H=12, seed=seed)
    x = torch.randint(0, 7, (3, 25), generator=torch.Generator().manual_seed(seed))
    targets = torch.randint(0, 7, (3, 25, 2), generator=torch.Generator().manual_seed(seed + 9))
    d = net.decompose(x, targets)
    logits = torch.gather(net(x), 2, targets)
    rel = (d.reconstruction - logits).abs().max() / logits.abs().max()
    assert rel <= 1e-10
    torch.testing.assert_close(d["logits"], logits.detach())
    # κ agrees with an independent brute-force computation, and vanishes for s > t
    ref = brute_force_kappa(net, x)
    idx = targets.unsqueeze(-1).expand(-1, -1, -1, 25)
    torch.testing.assert_close(d["kappa"], torch.gather(ref, 2, idx), rtol=1e-9, atol=1e-10)
    assert torch.all(torch.triu(d["kappa"][:, :, 0], diagonal=1) == 0)


def test_decomposition_all_outputs_custom_start_state_and_padding():
    net = random_isan(S=5, H=8, n_out=4)
    x = torch.randint(0, 5, (2, 10))
    h = torch.randn(2, 8, dtype=torch.float64)
    d = net.decompose(x, h=h)
    assert d["kappa"].shape == (2, 10, 4, 10)
    torch.testing.assert_close(d.reconstruction, net(x, h).detach(), rtol=1e-10, atol=1e-10)
    # right padding never changes earlier positions
    x_padded = torch.cat([x, torch.zeros(2, 5, dtype=torch.long)], 1)
    d2 = net.decompose(x_padded, h=h)
    torch.testing.assert_close(d2["kappa"][:, :10, :, :10], d["kappa"])


def test_decomposition_float32_relative_error():
    net = random_isan(S=6, H=32).float()
    x = torch.randint(0, 6, (2, 60))
    d = net.decompose(x, net(x).argmax(-1))
    rel = (d.reconstruction - d["logits"]).abs().max() / d["logits"].abs().max()
    assert rel <= 1e-4


def test_compose_equals_stepping_and_batches_with_lengths():
    net = random_isan(S=6, H=9)
    x = torch.randint(0, 6, (3, 12))
    h = torch.randn(3, 9, dtype=torch.float64)
    A, b = net.compose(x)
    stepped = net.states(x, h)[:, -1]
    torch.testing.assert_close(net.apply_map(h, A, b), stepped.detach(), rtol=1e-10, atol=1e-10)
    lengths = torch.tensor([12, 4, 1])
    A, b = net.compose(x, lengths)
    for i, n in enumerate(lengths.tolist()):
        ref = net.states(x[i: i + 1, :n], h[i: i + 1])[:, -1]
        torch.testing.assert_close(net.apply_map(h[i: i + 1], A[i], b[i]), ref.detach())
    # composition of two maps is the map of the concatenation
    A1, b1 = net.compose(x[:, :5])
    A2, b2 = net.compose(x[:, 5:])
    A12, b12 = net.compose(x)
    torch.testing.assert_close(A2 @ A1, A12)
    torch.testing.assert_close(net.apply_map(b1, A2, b2), b12)


def test_change_of_basis_preserves_outputs():
    net = random_isan(S=6, H=10, n_out=4)
    x = torch.randint(0, 6, (3, 15))
    Q = torch.randn(10, 10, dtype=torch.float64) + 3 * torch.eye(10, dtype=torch.float64)
    moved = net.to_basis(Q)
    torch.testing.assert_close(moved(x), net(x), rtol=1e-9, atol=1e-9)
    assert not torch.allclose(moved.W, net.W)  # parameters really changed
    # decomposition is basis independent
    torch.testing.assert_close(moved.decompose(x)["kappa"], net.decompose(x)["kappa"],
                               rtol=1e-8, atol=1e-9)
    with pytest.raises(ValueError, match="shape"):
        net.to_basis(torch.eye(3))


def test_readout_basis_splits_readout_and_computational_subspace():
    net = random_isan(S=6, H=10, n_out=4)
    Q, rank = net.readout_basis()
    assert rank == 4
    torch.testing.assert_close(Q.T @ Q, torch.eye(10, dtype=torch.float64), atol=1e-12, rtol=0)
    W_ro = net.readout.weight.detach()
    assert (W_ro @ Q[:, rank:]).abs().max() < 1e-12  # complement is invisible to the readout
    moved = net.to_basis(Q)
    assert moved.readout.weight[:, rank:].abs().max() < 1e-12
    x = torch.randint(0, 6, (2, 8))
    torch.testing.assert_close(moved(x), net(x), rtol=1e-10, atol=1e-10)
    # rank-deficient readout
    _, r = readout_basis(torch.outer(torch.ones(3), torch.arange(5.0)))
    assert r == 1


def test_augmented_linear_form():
    net = random_isan(S=4, H=5)
    M = net.augmented()
    h = torch.randn(5, dtype=torch.float64)
    out = M[2] @ torch.cat([h, torch.ones(1, dtype=torch.float64)])
    torch.testing.assert_close(out[:5], net.W[2] @ h + net.b[2])
    assert out[5] == 1


def test_parameter_counts():
    net = ISAN(7, 11, 5)
    assert isan_parameter_count(7, 11, 5) == sum(p.numel() for p in net.parameters())
    lstm = CharLSTM(7, 11, 5, embedding_dim=6, num_layers=2)
    assert (lstm_parameter_count(7, 11, 6, 5, num_layers=2)
            == sum(p.numel() for p in lstm.parameters()))
    assert lstm(torch.randint(0, 7, (2, 3))).shape == (2, 3, 5)


def test_bad_sizes():
    with pytest.raises(ValueError, match="positive"):
        ISAN(0, 4)
    with pytest.raises(ValueError, match="targets"):
        random_isan().decompose(torch.zeros(2, 3, dtype=torch.long),
                                torch.zeros(2, 4, dtype=torch.long))


def test_reproduction_budget_curve_and_checks(monkeypatch):
    """The reproduction's language-model step: validation early stopping, best epoch restored,
    and the paper-pattern checks computed from the rows."""
    from interpretable.reproduce import isan
    from interpretable.reproduce.isan import _budget_checks, _language_models

    words = np.array(["the", "king", "is", "dead", "long", "live", "queen", "and", "my", "lord"])
    text = " ".join(np.random.RandomState(0).choice(words, 1500)) + "."
    monkeypatch.setattr(isan, "load_shakespeare", lambda split: text)
    cfg = dict(train_chars=3000, test_chars=1000, epochs=2, patience=1, lr=1e-2, budgets=(4, 6))
    lm, models, _ = _language_models(cfg, 0, lambda _: None)
    assert [(r["model"], r["budget"]) for r in lm["rows"]] == [
        ("ISAN", 4), ("LSTM", 4), ("ISAN", 6), ("LSTM", 6)]
    for row in lm["rows"]:
        model = models[(row["model"], row["budget"])]
        valid = [e["valid_loss"] / np.log(2) for e in model.history_]
        assert row["epochs_run"] == len(valid) <= 2
        assert row["valid_bits_per_char"] == pytest.approx(min(valid))
        assert row["best_epoch"] == int(np.argmin(valid)) + 1
    ratio = lm["isan_over_lstm_by_budget"]["6"]
    isan_bpc, lstm_bpc = (r["test_bits_per_char"] for r in lm["rows"][2:])
    assert ratio == pytest.approx(isan_bpc / lstm_bpc)

    def rows(bpc):
        return [{"model": m, "budget": b, "test_bits_per_char": v} for (m, b), v in bpc.items()]

    paper = _budget_checks(rows({("ISAN", 8): 3.0, ("LSTM", 8): 2.5, ("ISAN", 32): 2.1,
                                 ("LSTM", 32): 2.0}))
    assert paper["checks"]["paper_pattern_holds"]
    ours = _budget_checks(rows({("ISAN", 8): 2.4, ("LSTM", 8): 2.5, ("ISAN", 32): 2.1,
                                ("LSTM", 32): 2.0}))
    assert not ours["checks"]["isan_worse_at_smallest_budget"]["met"]
    assert not ours["checks"]["paper_pattern_holds"]
