"""Every estimator on CUDA: fit, predict, explain, save and load there, compared with
the CPU. Marked ``gpu`` and skipped without CUDA; ``make test-gpu`` runs only these.

Two comparisons, each with its own tolerance:

* the same weights on both devices (a CUDA fit saved and loaded onto the CPU) give the same
  probabilities and explanations up to float32 kernel differences (1e-4 relative), with
  TF32 off: PyTorch lets cuDNN convolutions use TF32 by default (10-bit mantissa), which moves
  the image explanations by ~3e-4 of their scale (measured on an H100);
* training from the same seed on both devices follows the same loss curve (1e-3 relative: a
  few epochs of accumulated kernel differences; shuffling and initialisation draw from CPU
  generators on both).
"""

import numpy as np
import pytest
import torch
from conformance.cases import _TINY_VIT, CASES, _digits

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def _probabilities(estimator, X) -> np.ndarray:
    proba = estimator.predict_proba(X)
    return np.concatenate(proba) if isinstance(proba, list) else proba


def _attributions(estimator, X, case) -> np.ndarray:
    return estimator.explain(X, **case.explain_kwargs).to_frame()["attribution"].to_numpy()


@pytest.fixture
def float32_kernels():
    """cuDNN and cuBLAS in true float32 for one test (restored afterwards)."""
    before = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = before


@pytest.mark.parametrize("case", CASES, ids=str)
def test_fit_predict_explain_save_load_on_cuda(case, tmp_path, float32_kernels):
    X, y, X_test = case.data()
    gpu = case.make().set_params(device="cuda").fit(X, y)
    assert gpu.device_.type == "cuda"
    assert all(p.is_cuda for p in gpu.module_.parameters())

    gpu.save(tmp_path / "model")
    reloaded = type(gpu).load(tmp_path / "model", device="cuda")
    on_cpu = type(gpu).load(tmp_path / "model", device="cpu")
    proba = _probabilities(gpu, X_test)
    np.testing.assert_array_equal(_probabilities(reloaded, X_test), proba)
    np.testing.assert_allclose(_probabilities(on_cpu, X_test), proba, rtol=1e-4, atol=1e-5)
    if case.explains:
        values = _attributions(gpu, X_test, case)
        scale = np.abs(values).max()
        np.testing.assert_allclose(_attributions(on_cpu, X_test, case), values, rtol=1e-4,
                                   atol=1e-4 * scale)

    cpu = case.make().set_params(device="cpu").fit(X, y)
    np.testing.assert_allclose([h["train_loss"] for h in gpu.history_],
                               [h["train_loss"] for h in cpu.history_], rtol=1e-3)


def test_bf16_training_on_cuda_explains_exactly():
    from interpretable import BcosViTClassifier

    X, y, X_test = _digits()
    clf = BcosViTClassifier(**_TINY_VIT, device="cuda", precision="bf16").fit(X, y)
    assert all(p.dtype == torch.float32 for p in clf.module_.parameters())
    assert clf.explain(X_test).completeness_error.max() < 1e-4
