"""B-cos BERT (B-cos LM): exact contributions, masking, conversion from BERT, thread safety
and the structure-only rebuild."""
import random
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from torch.nn import functional as F

from interpretable.nn._encoder_families import checkpoint_key
from interpretable.nn.bcos._bert import POOLINGS, BcosBertClassifier
from interpretable.nn.bcos._bert_layers import unscaled_bcos_linear
from interpretable.nn.bcos._layers import explanation_mode

TINY_BERT = {"vocab_size": 60, "hidden_size": 16, "num_hidden_layers": 2,
             "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 24,
             "type_vocab_size": 2, "layer_norm_eps": 1e-12, "pad_token_id": 0,
             "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
             "hidden_act": "gelu", "position_embedding_type": "absolute"}
LENGTHS = torch.tensor([9, 6, 3, 1])


def tiny_model(n_classes=3, seed=0, dtype=torch.float64, **options):
    torch.manual_seed(seed)
    return BcosBertClassifier.from_config(TINY_BERT, n_classes, **options).to(dtype).eval()


def tiny_batch(seed=0, lengths=LENGTHS):
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, TINY_BERT["vocab_size"], (len(lengths), int(lengths.max())),
                           generator=generator)
    return tokens.masked_fill(torch.arange(tokens.shape[1]) >= lengths[:, None], 0)


def completeness_error(c):
    """|pieces + position/type + bias - logit| per sample."""
    logit = c.logits.gather(1, c.target[:, None])[:, 0]
    return (c.pieces.sum(1) + c.position_type + c.bias - logit).abs()


def bert_model(seed=0):
    """A tiny random transformers BertModel with non-trivial biases and LayerNorm scales."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(seed)
    config = transformers.BertConfig(**TINY_BERT, attn_implementation="eager")
    bert = transformers.BertModel(config).eval()
    with torch.no_grad():
        for name, param in bert.named_parameters():
            param.normal_(1.0 if name.endswith("LayerNorm.weight") else 0.0, 0.3)
    return bert


# ---------------------------------------------------------------------------- exactness
@pytest.mark.parametrize("pooling", POOLINGS)
@pytest.mark.parametrize("b", [1.0, 1.5, 2.0, (1.0, 2.5)])
def test_contributions_are_complete_in_float64(b, pooling):
    model = tiny_model(b=b, pooling=pooling, logit_bias=-0.7)
    tokens = tiny_batch()
    token_types = torch.randint(0, 2, tokens.shape, generator=torch.Generator().manual_seed(1))
    for target in range(3):
        c = model.contributions(tokens, LENGTHS, target, token_types=token_types)
        assert completeness_error(c).max() <= 1e-9
        assert torch.equal(c.bias, torch.full((4,), -0.7, dtype=torch.float64))
        # the forward pass mixes with fused attention, the explanation with explicit weights
        torch.testing.assert_close(c.logits, model(tokens, LENGTHS, token_types=token_types),
                                   rtol=0, atol=1e-13)


def test_contributions_are_complete_in_float32():
    model = tiny_model(b=1.5, dtype=torch.float32)
    c = model.contributions(tiny_batch(), LENGTHS)
    assert torch.equal(c.target, c.logits.argmax(1))
    logit = c.logits.gather(1, c.target[:, None])[:, 0]
    assert (completeness_error(c) <= 1e-4 * logit.abs()).all()


def test_contributions_are_input_x_gradient_of_the_word_embeddings_in_explanation_mode():
    """The post-hoc hook (``embedded=``) sees the same linear map W(x) in explanation mode."""
    model = tiny_model(b=2.0)
    tokens = tiny_batch()
    target = torch.tensor([0, 2, 1, 1])
    c = model.contributions(tokens, LENGTHS, target)
    embedded = model.embed(tokens).detach().requires_grad_()
    with explanation_mode():
        logits = model(tokens, LENGTHS, embedded=embedded)
        grad, = torch.autograd.grad(logits.gather(1, target[:, None]).sum(), embedded)
    torch.testing.assert_close((grad * embedded).sum(-1), c.pieces, rtol=0, atol=1e-12)
    # outside explanation mode the gradient also flows through the dynamic weights
    logits = model(tokens, LENGTHS, embedded=embedded)
    plain_grad, = torch.autograd.grad(logits.gather(1, target[:, None]).sum(), embedded)
    assert not torch.allclose(plain_grad, grad)


def test_explanation_mode_leaves_the_forward_pass_unchanged():
    model = tiny_model(b=1.5)
    tokens = tiny_batch()
    with explanation_mode():
        explaining = model(tokens, LENGTHS)
    torch.testing.assert_close(explaining, model(tokens, LENGTHS), rtol=0, atol=1e-13)
    with torch.no_grad():  # without gradients both use fused attention: bit-identical
        plain = model(tokens, LENGTHS)
        with explanation_mode():
            assert torch.equal(model(tokens, LENGTHS), plain)


# ---------------------------------------------------------------------------- masking
@pytest.mark.parametrize("pooling", POOLINGS)
def test_padding_changes_nothing_and_gets_no_contribution(pooling):
    model = tiny_model(b=1.5, pooling=pooling)
    tokens = tiny_batch()
    padded = F.pad(tokens, (0, 5), value=7)  # longer padding, with non-pad ids on it
    batch = model.contributions(padded, LENGTHS, 1)
    assert torch.equal(batch.pieces[torch.arange(14) >= LENGTHS[:, None]],
                       torch.zeros(int((14 - LENGTHS).sum()), dtype=torch.float64))
    for i, length in enumerate(LENGTHS.tolist()):
        alone = model.contributions(tokens[i:i + 1, :length], None, 1)
        torch.testing.assert_close(batch.logits[i], alone.logits[0], rtol=0, atol=1e-12)
        torch.testing.assert_close(batch.pieces[i, :length], alone.pieces[0], rtol=0,
                                   atol=1e-12)
        torch.testing.assert_close(batch.position_type[i], alone.position_type[0], rtol=0,
                                   atol=1e-12)
    mask = torch.arange(14) < LENGTHS[:, None]
    assert torch.equal(model(padded, attention_mask=mask.long()), model(padded, LENGTHS))


def test_attention_probabilities_of_every_layer():
    model = tiny_model()
    tokens = tiny_batch()
    logits, attentions = model.forward_with_attention(tokens, LENGTHS)
    torch.testing.assert_close(logits, model(tokens, LENGTHS), rtol=0, atol=1e-13)
    assert len(attentions) == TINY_BERT["num_hidden_layers"]
    padded_keys = (torch.arange(9) >= LENGTHS[:, None])[:, None, None, :].expand(-1, 2, 9, -1)
    for probs in attentions:
        assert probs.shape == (4, 2, 9, 9)
        torch.testing.assert_close(probs.sum(-1), torch.ones(4, 2, 9, dtype=torch.float64))
        assert (probs[padded_keys] == 0).all()


# ---------------------------------------------------------------------------- conversion
def test_conversion_copies_the_weights_and_b_1_is_bert_without_biases():
    """With B = 1 every B-cos layer is the plain linear map of its unit-norm rows: the
    converted encoder is BERT with biases removed and dense rows normalised (float64)."""
    bert = bert_model()
    model = BcosBertClassifier.from_bert(bert, None, 3, b=1.0)
    source = bert.state_dict()
    for name, value in model.state_dict().items():
        if name != "classifier.weight":
            key = checkpoint_key("bert", name)
            assert torch.equal(value, source[key]), name
    model.double().eval()
    bert.double()
    with torch.no_grad():
        for name, param in bert.named_parameters():
            if name.endswith("bias"):
                param.zero_()
            elif "dense" in name:
                param.div_(param.norm(dim=1, keepdim=True))
    tokens = tiny_batch()
    mask = torch.arange(9) < LENGTHS[:, None]
    reference = bert(tokens, attention_mask=mask.long(), output_attentions=True)
    summed = model.embed(tokens) + model.position_type_embeddings(tokens)
    hidden, attentions = model.hidden_states(summed, mask)
    torch.testing.assert_close(hidden[mask], reference.last_hidden_state[mask], rtol=0,
                               atol=1e-12)
    for ours, theirs in zip(attentions, reference.attentions, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-12)
    # pooler without tanh, classifier: both plain unit-norm linear maps at B = 1
    pooled = F.linear(hidden[:, 0], F.normalize(model.pooler.weight, dim=1))
    expected = F.linear(pooled, F.normalize(model.classifier.weight, dim=1))
    torch.testing.assert_close(model.head(hidden, mask), expected, rtol=0, atol=1e-12)


def test_b_tends_to_one():
    x = torch.randn(5, 8, dtype=torch.float64)
    layer = unscaled_bcos_linear(8, 3, 1.0).double()
    torch.testing.assert_close(layer(x), F.linear(x, F.normalize(layer.weight, dim=1)),
                               rtol=0, atol=1e-15)
    state = tiny_model(b=1.0).state_dict()
    tokens = tiny_batch()

    def logits(b):
        model = tiny_model(b=b)
        model.load_state_dict(state)
        return model(tokens, LENGTHS)

    at_one = logits(1.0)
    torch.testing.assert_close(logits(1 + 1e-7), at_one, rtol=1e-5, atol=1e-9)
    assert not torch.allclose(logits(1.5), at_one, rtol=1e-2)


def test_structure_only_rebuild_on_meta_device_and_load_is_bit_identical(tmp_path):
    safetensors = pytest.importorskip("safetensors.torch")
    options = {"b": (1.5, 2.0), "pooling": "mean", "logit_bias": 0.3}
    model = tiny_model(dtype=torch.float32, **options)
    safetensors.save_file(model.state_dict(), tmp_path / "model.safetensors")
    with torch.device("meta"):
        rebuilt = BcosBertClassifier.from_config(TINY_BERT, 3, **options)
    assert all(p.is_meta for p in rebuilt.parameters())
    rebuilt.load_state_dict(safetensors.load_file(tmp_path / "model.safetensors"), assign=True)
    rebuilt.eval()
    tokens = tiny_batch()
    assert torch.equal(rebuilt(tokens, LENGTHS), model(tokens, LENGTHS))
    ours, theirs = rebuilt.contributions(tokens, LENGTHS), model.contributions(tokens, LENGTHS)
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs, strict=True))


def test_training_mode_gradients_reach_every_parameter():
    model = tiny_model(b=1.5).train()
    tokens = tiny_batch()
    F.cross_entropy(model(tokens, LENGTHS), torch.tensor([0, 1, 2, 0])).backward()
    no_grad = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.any()]
    assert no_grad == []


# ---------------------------------------------------------------------------- threads
def test_concurrent_explanations_equal_sequential_ones_and_leave_the_model_unchanged():
    model = tiny_model(b=1.5)
    tokens = tiny_batch()
    calls = {
        "contributions": lambda: model.contributions(tokens, LENGTHS, 1).pieces,
        "forward": lambda: model(tokens, LENGTHS),
        "input_gradient": lambda: torch.autograd.grad(
            model(tokens, LENGTHS, embedded=model.embed(tokens)).sum(),
            model.word_embeddings.weight)[0],
    }
    state = {k: v.clone() for k, v in model.state_dict().items()}
    attributes = {name: dict(vars(module)) for name, module in model.named_modules()}
    expected = {name: call() for name, call in calls.items()}
    jobs = list(calls.items()) * 4
    random.Random(0).shuffle(jobs)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = [(name, pool.submit(call)) for name, call in jobs]
        for name, future in results:
            assert torch.equal(future.result(), expected[name]), name
    assert {name: dict(vars(module)) for name, module in model.named_modules()} == attributes
    assert all(torch.equal(model.state_dict()[k], v) for k, v in state.items())


# ---------------------------------------------------------------------------- the real MiniLM
def test_converted_minilm_contributions_are_complete():
    pytest.importorskip("transformers")
    from interpretable.datasets import load_minilm
    from interpretable.preprocessing._wordpiece import WordPieceEncoder

    model = BcosBertClassifier.from_pretrained(load_minilm(), 2, b=1.5).eval()
    encoder = WordPieceEncoder(max_len=16).fit()
    ids, lengths = encoder.encode_tokens(encoder.tokenize_many(
        ["a gripping, beautifully acted film", "dull"]))
    tokens, lengths = torch.as_tensor(ids), torch.as_tensor(lengths)
    c32 = model.contributions(tokens, lengths, 1)
    logit32 = c32.logits[:, 1]
    assert (completeness_error(c32) <= 1e-4 * logit32.abs()).all()
    c64 = model.double().contributions(tokens, lengths, 1)
    assert completeness_error(c64).max() <= 1e-9
    torch.testing.assert_close(c64.logits.float(), c32.logits, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------- errors
@pytest.mark.parametrize("options, error, match", [
    ({"pooling": "max"}, ValueError, "pooling must be one of"),
    ({"b": 0.5}, ValueError, "b .a B-cos exponent. must be >= 1"),
    ({"b": (1.5, 2.0, 2.0)}, ValueError, "one per layer"),
    ({"b": "2"}, TypeError, "b must be a real number"),
    ({"head_b": True}, TypeError, "head_b must be a real number"),
    ({"num_heads": 3}, ValueError, "divisible by num_heads=3"),
])
def test_bad_options_are_named(options, error, match):
    with pytest.raises(error, match=match):
        BcosBertClassifier.from_config(TINY_BERT, 2, **options)


@pytest.mark.parametrize("config, match", [
    ({**TINY_BERT, "hidden_act": "relu"}, "hidden_act='gelu'"),
    ({**TINY_BERT, "position_embedding_type": "relative_key"},
     "position_embedding_type='absolute'"),
    ({k: v for k, v in TINY_BERT.items() if k != "intermediate_size"}, "intermediate_size"),
])
def test_unsupported_configs_are_refused(config, match):
    with pytest.raises(ValueError, match=match):
        BcosBertClassifier.from_config(config, 2)


def test_bad_checkpoints_are_refused():
    state = bert_model().state_dict()
    with pytest.raises(TypeError, match="BERT-family model or its state dict"):
        BcosBertClassifier.from_bert([1, 2], TINY_BERT, 2)
    with pytest.raises(ValueError, match="needs its encoder config"):
        BcosBertClassifier.from_bert(state, None, 2)
    missing = {k: v for k, v in state.items() if "layer.1.output.dense.weight" not in k}
    with pytest.raises(ValueError, match="no 'encoder.layer.1.output.dense.weight'"):
        BcosBertClassifier.from_bert(missing, TINY_BERT, 2)
    with pytest.raises(ValueError, match="shape"):
        BcosBertClassifier.from_bert(state, {**TINY_BERT, "intermediate_size": 8}, 2)
    prefixed = {f"bert.{k}": v for k, v in state.items() if not k.startswith("pooler.")}
    converted = BcosBertClassifier.from_bert(prefixed, TINY_BERT, 2)  # keeps a random pooler
    assert torch.equal(converted.word_embeddings.weight, state["embeddings.word_embeddings.weight"])


@pytest.mark.parametrize("call, error, match", [
    (lambda m, t: m(t, torch.tensor([9, 0, 3, 1])), ValueError, r"lengths must lie in \[1, 9\]"),
    (lambda m, t: m(t, torch.tensor([10, 6, 3, 1])), ValueError, r"lengths must lie in"),
    (lambda m, t: m(t, LENGTHS[:2]), ValueError, r"lengths must have shape \(4,\)"),
    (lambda m, t: m(t, LENGTHS, attention_mask=t > 0), ValueError, "not both"),
    (lambda m, t: m(t, attention_mask=(t > 0)[:, :3]), ValueError, "the shape of tokens"),
    (lambda m, t: m(t[0]), ValueError, r"tokens must have shape \(B, T\)"),
    (lambda m, t: m(torch.ones(1, 30, dtype=torch.long)), ValueError, "exceed the 24 positions"),
    (lambda m, t: m.contributions(t, LENGTHS, 3), ValueError, r"target must lie in \[0, 3\)"),
    (lambda m, t: m.contributions(t, LENGTHS, [0, 1]), ValueError, r"shape \(4,\)"),
    (lambda m, t: m.contributions(t, LENGTHS, 0.5), TypeError, "class indices"),
])
def test_bad_inputs_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call(tiny_model(), tiny_batch())


@pytest.mark.parametrize("b", [1.5, 2.0, 1.25])
@pytest.mark.parametrize("sizes", [(6, 16), (16, 6)], ids=["wide outputs", "wide inputs"])
def test_inference_forward_computes_the_training_forward(b, sizes):
    """Without autograd the layer computes in place (wide outputs: by scaling its inputs):
    the values of the differentiable forward, row gains included (float64)."""
    torch.manual_seed(0)
    layer = unscaled_bcos_linear(*sizes, b, matched=True, row_gains=True).double()
    with torch.no_grad():
        layer.row_gain.uniform_(0.5, 2.0)
    x = torch.randn(3, 5, sizes[0], dtype=torch.float64)
    with torch.no_grad():
        fast = layer(x)
    torch.testing.assert_close(fast, layer(x.requires_grad_(True)), rtol=1e-12, atol=1e-14)


def test_the_head_computes_in_the_parameters_precision_under_autocast():
    """bf16 prediction: the pooler and classifier run in float32 on the features cast to
    float32, so the logits are float32 and equal those of the head outside autocast."""
    model = tiny_model(dtype=torch.float32, pooling="cls")
    hidden = torch.randn(4, 9, TINY_BERT["hidden_size"]).to(torch.bfloat16)
    mask = torch.arange(9) < LENGTHS[:, None]
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model.head(hidden, mask)
        expected = model.head(hidden.float(), mask)
    assert logits.dtype == torch.float32
    torch.testing.assert_close(logits, expected, rtol=0, atol=0)
