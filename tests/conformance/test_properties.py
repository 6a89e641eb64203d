"""Property-based tests (hypothesis): attention normalisation and completeness of inherent
explanations on random models and inputs."""

import numpy as np
import torch
from hypothesis import given, settings, strategies as st

from interpretable.attribution._images import inherent
from interpretable.nn._attention import AdditiveAttention
from interpretable.nn._embedding_bag import MeanEmbeddingClassifier
from interpretable.nn._isan import ISAN
from interpretable.nn.bcos._holistic_vit import BcosViT
from interpretable.nn.bcos._layers import encode_image

SETTINGS = settings(max_examples=25, deadline=None)


@SETTINGS
@given(
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=5),
    scale=st.floats(1e-3, 1e3),
    seed=st.integers(0, 2**16),
)
def test_attention_sums_to_one_on_real_tokens_and_zero_on_padding(lengths, scale, seed):
    torch.manual_seed(seed)
    T = max(lengths)
    attention = AdditiveAttention(hidden_size=6, attention_size=4)
    hidden = torch.randn(len(lengths), T, 6) * scale
    mask = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]
    weights = attention(hidden, mask)
    assert torch.all(weights[~mask] == 0)
    assert torch.all(weights >= 0)
    torch.testing.assert_close(weights.sum(1), torch.ones(len(lengths)), atol=1e-5, rtol=0)


@SETTINGS
@given(lengths=st.lists(st.integers(1, 12), min_size=1, max_size=4), seed=st.integers(0, 2**16))
def test_embedding_bag_contributions_are_complete(lengths, seed):
    torch.manual_seed(seed)
    model = MeanEmbeddingClassifier(vocab_size=30, num_classes=3, embed_dim=5).double()
    T = max(lengths)
    tokens = torch.randint(2, 30, (len(lengths), T))
    lengths = torch.tensor(lengths)
    tokens[torch.arange(T)[None, :] >= lengths[:, None]] = 0
    total = model.token_contributions(tokens, lengths).sum(1) + model.output.bias
    torch.testing.assert_close(total, model(tokens, lengths), rtol=1e-12, atol=1e-12)


@SETTINGS
@given(T=st.integers(1, 15), hidden=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_isan_decomposition_is_exact(T, hidden, seed):
    torch.manual_seed(seed)
    model = ISAN(n_symbols=5, hidden_size=hidden, init_noise=0.5).double()
    with torch.no_grad():
        model.h0.normal_()
    x = torch.randint(0, 5, (2, T))
    parts = model.decompose(x)
    torch.testing.assert_close(parts.reconstruction, parts["logits"], rtol=1e-10, atol=1e-10)


@settings(max_examples=10, deadline=None)
@given(
    prior=st.sampled_from(["multiplicative", "additive", "none"]),
    channels=st.sampled_from([1, 3]),
    seed=st.integers(0, 2**16),
)
def test_bcos_inherent_contributions_are_complete(prior, channels, seed):
    torch.manual_seed(seed)
    model = BcosViT(in_channels=2 * channels, image_size=(8, 8), n_classes=3, patch_size=4,
                    embed_dim=8, depth=2, num_heads=2, stem_channels=(4,),
                    attention_prior=prior).double().eval()
    images = torch.rand(3, channels, 8, 8, dtype=torch.float64)
    x = encode_image(images)
    contributions, _, logits = inherent(model, x)
    target = logits.argmax(1)
    explained = logits.gather(1, target[:, None]).squeeze(1)
    np.testing.assert_allclose(
        (contributions.sum((1, 2)) + model.logit_bias).detach().numpy(),
        explained.detach().numpy(), rtol=1e-8, atol=1e-8,
    )
