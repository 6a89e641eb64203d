"""Orthogonal LSTM scan: exact forward and hand-written backward against plain autograd."""
import pytest
import torch
from orthogonal_lstm_reference import orthogonal_lstm_reference

from interpretable.nn._recurrent import OrthogonalLSTM, orthogonal_lstm

E, H = 3, 5
MASKS = {  # padding at the end of each row; rows in no particular length order
    "ragged": [7, 3, 1, 5],
    "full": [6, 6],
    "one_step": [1, 1, 1],
    "empty_row": [4, 0, 2],
    "no_tokens": [0, 0],
}


def _mask(lengths):
    lengths = torch.tensor(lengths)
    return torch.arange(max(lengths.max().item(), 1))[None] < lengths[:, None]


def _params(dtype=torch.double, scale=0.5):
    torch.manual_seed(0)
    return [(scale * torch.randn(*shape, dtype=dtype)).requires_grad_()
            for shape in ((4 * H, E), (4 * H, H), (4 * H,))]


@pytest.mark.parametrize("lengths", MASKS.values(), ids=MASKS.keys())
@pytest.mark.parametrize("x_grad", [True, False], ids=["x_grad", "frozen_x"])
def test_forward_and_gradients_match_autograd_reference(lengths, x_grad):
    mask = _mask(lengths)
    params = _params()
    x = torch.randn(*mask.shape, E, dtype=torch.double, requires_grad=x_grad)
    fast, ref = orthogonal_lstm(x, mask, *params), orthogonal_lstm_reference(x, mask, *params)
    torch.testing.assert_close(fast, ref, rtol=1e-12, atol=1e-13)
    assert (fast[~mask] == 0).all()
    wrt = [x, *params] if x_grad else params
    g = torch.randn_like(fast)
    grads = torch.autograd.grad(fast, wrt, g)
    for a, b in zip(grads, torch.autograd.grad(ref, wrt, g), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-13)
    if x_grad:
        assert (grads[0][~mask] == 0).all()   # padding reaches nothing


def test_gradcheck():
    mask = _mask(MASKS["ragged"])
    x = torch.randn(*mask.shape, E, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(lambda *a: orthogonal_lstm(a[0], mask, *a[1:]), (x, *_params()))


def test_float32_matches_float64_reference():
    # tanh runs as 2σ(2x) - 1: still float32-accurate
    mask = _mask(MASKS["ragged"])
    params = _params(scale=2.0)
    x = torch.randn(*mask.shape, E, dtype=torch.double)
    ref = orthogonal_lstm_reference(x, mask, *params)
    fast = orthogonal_lstm(x.float(), mask, *(p.detach().float() for p in params))
    torch.testing.assert_close(fast, ref.float(), rtol=1e-5, atol=1e-6)


def test_zero_weights_are_finite():
    # ĥ_t = 0 every step, so h̄_t = 0 throughout: the projection must stay finite
    mask = _mask([4, 2])
    x = torch.zeros(*mask.shape, E, requires_grad=True)
    params = [torch.zeros_like(p).float().requires_grad_() for p in _params()]
    out = orthogonal_lstm(x, mask, *params)
    grads = torch.autograd.grad(out.sum(), [x, *params])
    assert (out == 0).all() and all(torch.isfinite(g).all() for g in grads)


def test_first_step_is_nn_lstm_with_the_same_parameters():
    cell = OrthogonalLSTM(E, H).double()
    lstm = torch.nn.LSTM(E, H, batch_first=True).double()
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(cell.weight_ih)
        lstm.weight_hh_l0.copy_(cell.weight_hh)
        lstm.bias_ih_l0.copy_(cell.bias)
        lstm.bias_hh_l0.zero_()
    x = torch.randn(2, 4, E, dtype=torch.double)
    out = cell(x, _mask([4, 4]))
    torch.testing.assert_close(out[:, 0], lstm(x[:, :1])[0][:, 0], rtol=1e-12, atol=1e-13)
    assert not torch.allclose(out[:, 1:], lstm(x)[0][:, 1:])
