"""Several threads explaining with one shared model get the sequential results, and the model
is left exactly as it was (no flags, no hooks)."""
import random
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pytest
import torch

from interpretable.attribution import attribute_pixels, inherent_terms
from interpretable.nn._stem_vit import ViT
from interpretable.nn.bcos._holistic_vit import BcosViT
from interpretable.nn.bcos._layers import encode_image

METHODS = ("inherent", "rollout", "gradsam", "gradcam", "input_x_gradient",
           "integrated_gradients")


@pytest.fixture(autouse=True)
def _one_intra_op_thread():
    """One intra-op thread, so that a kernel's result cannot depend on how many threads the
    BLAS library grants each concurrent caller."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    yield
    torch.set_num_threads(threads)


def _calls(model, x, target):
    """(name, zero-argument call returning a tensor) for every method that fits the model."""
    bcos = isinstance(model, BcosViT)
    calls = [(method, partial(attribute_pixels, model, x, target, method, n_steps=4))
             for method in METHODS if bcos or method != "inherent"]
    if bcos:
        calls.append(("inherent_terms", lambda: inherent_terms(model, x, target)[0]))
    return calls


def _frozen(value):
    """A comparable copy of an attribute: tensors by identity, dicts (parameters, buffers,
    submodules, hooks) copied entry by entry."""
    if isinstance(value, torch.Tensor):
        return ("tensor", id(value))
    if isinstance(value, dict):
        return {key: _frozen(v) for key, v in value.items()}
    return value


def _attributes(model):
    return {name: _frozen(vars(module)) for name, module in model.named_modules()}


@pytest.mark.parametrize("make", [
    lambda: BcosViT(2, (8, 8), 5, patch_size=2, embed_dim=16, depth=2, num_heads=2,
                    stem_channels=(4,)).eval(),
    lambda: ViT(2, (8, 8), 5, patch_size=2, embed_dim=16, depth=2, num_heads=2).eval()],
    ids=["bcos_vit", "vit"])
def test_concurrent_explanations_equal_sequential_ones_and_leave_the_model_unchanged(make):
    model = make()
    x = encode_image(torch.rand(4, 1, 8, 8))
    target = torch.tensor([0, 3, 1, 4])
    calls = _calls(model, x, target)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    attributes = _attributes(model)
    expected = {name: call() for name, call in calls}

    jobs = calls * 4
    random.Random(0).shuffle(jobs)
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [(name, pool.submit(call)) for name, call in jobs]
        results = [(name, future.result()) for name, future in futures]

    for name, result in results:
        assert torch.equal(result, expected[name]), name
    assert _attributes(model) == attributes
    after = model.state_dict()
    assert after.keys() == state.keys()
    assert all(torch.equal(after[k], v) for k, v in state.items())
