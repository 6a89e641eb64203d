"""The encoder families of the BERT lineage (BERT, RoBERTa, XLM-RoBERTa, CamemBERT, ELECTRA,
DistilBERT): configs read through one table, B-cos conversion that is the bias-free original
at B = 1 with the pretrained row norms, exact contributions, the conventional encoder's
recomputed attention, and refusals that name the problem. Tiny random models built from each
family's config."""
import numpy as np
import pytest
import torch

from interpretable.nn._bert_classifier import BertClassifier
from interpretable.nn._bert_encoder import BertEncoder
from interpretable.nn._encoder_families import (
    FAMILIES,
    checkpoint_key,
    encoder_family,
    encoder_options,
    usable_positions,
)
from interpretable.nn.bcos._bcosify import bcosify
from interpretable.nn.bcos._bert import BcosBertClassifier

transformers = pytest.importorskip("transformers")

SIZES = dict(vocab_size=50, max_position_embeddings=40)
BERT_LIKE = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=32, **SIZES)
CONFIGS = {
    "bert": lambda: transformers.BertConfig(**BERT_LIKE),
    "roberta": lambda: transformers.RobertaConfig(**BERT_LIKE, pad_token_id=1),
    "xlm-roberta": lambda: transformers.XLMRobertaConfig(**BERT_LIKE, pad_token_id=1),
    "camembert": lambda: transformers.CamembertConfig(**BERT_LIKE, pad_token_id=1),
    "electra": lambda: transformers.ElectraConfig(**BERT_LIKE, embedding_size=8),
    "distilbert": lambda: transformers.DistilBertConfig(dim=16, n_layers=2, n_heads=2,
                                                        hidden_dim=32, **SIZES),
}
LENGTHS = torch.tensor([7, 5, 2])


def random_encoder(model_type, seed=0):
    """A tiny base model of the family, every weight random (LayerNorm scales around 1),
    eager attention (returns its probabilities), float64."""
    config = CONFIGS[model_type]()
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    pooler = {"add_pooling_layer": True} if FAMILIES[encoder_family(config.to_dict())].pooler \
        else {}
    model = transformers.AutoModel.from_config(config, **pooler).double().eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            norm = name.endswith(("LayerNorm.weight", "layer_norm.weight"))
            param.normal_(1.0 if norm else 0.0, 0.3)
    return model


def padded_tokens(pad_token_id, seed=0):
    tokens = torch.randint(3, SIZES["vocab_size"], (len(LENGTHS), int(LENGTHS.max())),
                           generator=torch.Generator().manual_seed(seed))
    mask = torch.arange(tokens.shape[1]) < LENGTHS[:, None]
    return tokens.masked_fill(~mask, pad_token_id), mask


@pytest.fixture
def float64():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_b_one_with_pretrained_row_norms_is_the_bias_free_original(model_type, float64):
    """The function-preserving point of the conversion: at B = 1 with the checkpoint's row
    norms as gains, the B-cos encoder computes the original encoder with its biases removed
    (hidden states and attention probabilities of the real tokens)."""
    encoder = random_encoder(model_type)
    model = BcosBertClassifier.from_bert(encoder, None, 3, b=1.0, row_gains=True).eval()
    with torch.no_grad():
        for name, param in encoder.named_parameters():
            if name.endswith("bias"):
                param.zero_()
    tokens, mask = padded_tokens(encoder.config.pad_token_id)
    reference = encoder(tokens, attention_mask=mask.long(), output_attentions=True)
    summed = model.embed(tokens) + model.position_type_embeddings(tokens)
    hidden, attentions = model.hidden_states(summed, mask)
    torch.testing.assert_close(hidden[mask], reference.last_hidden_state[mask], rtol=0,
                               atol=1e-12)
    for ours, theirs in zip(attentions, reference.attentions, strict=True):
        real = mask[:, None, :, None] & mask[:, None, None, :]
        torch.testing.assert_close(ours * real, theirs * real, rtol=0, atol=1e-12)


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_bcosify_keeps_the_encoders_dtype_and_is_exact_in_it(model_type):
    """bcosify of a float64 encoder (the default dtype float32) is a float64 network, and at
    its defaults (b = 1, the row norms as gains) computes the encoder with zero biases to
    1e-12; a float32 encoder stays float32."""
    encoder = random_encoder(model_type)
    network = bcosify(encoder, n_classes=3).eval()
    assert {t.dtype for t in [*network.parameters(), *network.buffers()]
            if t.is_floating_point()} == {torch.float64}
    with torch.no_grad():
        for name, param in encoder.named_parameters():
            if name.endswith("bias"):
                param.zero_()
        tokens, mask = padded_tokens(encoder.config.pad_token_id)
        reference = encoder(tokens, attention_mask=mask.long()).last_hidden_state
        summed = network.embed(tokens) + network.position_type_embeddings(tokens)
        hidden = network.hidden_states(summed, mask, need_probs=False)[0]
    torch.testing.assert_close(hidden[mask], reference[mask], rtol=0, atol=1e-12)
    assert next(bcosify(encoder.float(), n_classes=3).parameters()).dtype == torch.float32


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
@pytest.mark.parametrize("b", [1.0, 1.5, 2.0])
def test_converted_contributions_are_complete_in_float64(model_type, b, float64):
    model = BcosBertClassifier.from_bert(random_encoder(model_type), None, 3, b=b,
                                         gate_biases=True, logit_bias=0.3).eval()
    tokens, _ = padded_tokens(model.word_embeddings.padding_idx)
    for target in range(3):
        c = model.contributions(tokens, LENGTHS, target)
        logit = c.logits[:, target]
        assert (c.pieces.sum(1) + c.position_type + c.bias - logit).abs().max() <= 1e-9


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_every_converted_weight_comes_from_the_checkpoint(model_type):
    encoder = random_encoder(model_type)
    family = encoder_family(encoder.config.to_dict())
    model = BcosBertClassifier.from_bert(encoder, None, 2)
    source = encoder.state_dict()
    copied = 0
    for name, value in model.named_parameters():
        key = checkpoint_key(family, name)
        if key in source:
            torch.testing.assert_close(value.double(), source[key].double(), rtol=0, atol=1e-7)
            copied += 1
        else:  # new: the classifier, and the pooler of a family without one
            assert name.startswith(("classifier", "pooler")), name
    assert copied >= 3 + 2 * 8  # embeddings and LayerNorm, then 8 weights a layer


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_conventional_encoder_recomputes_the_attention_it_ran(model_type, float64):
    encoder = random_encoder(model_type)
    reference_model = random_encoder(model_type)  # the same weights, kept whole
    classifier = BertClassifier(BertEncoder(encoder), 2).double().eval()
    tokens, mask = padded_tokens(encoder.config.pad_token_id)
    reference = reference_model(tokens, attention_mask=mask.long(), output_attentions=True)
    _, attentions = classifier.forward_with_attention(tokens, LENGTHS)
    real = mask[:, None, :, None] & mask[:, None, None, :]
    for ours, theirs in zip(attentions, reference.attentions, strict=True):
        torch.testing.assert_close(ours * real, theirs * real, rtol=0, atol=1e-12)


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_structure_from_the_kept_config_fields_loads_the_converted_weights(model_type):
    """What a saved model rebuilds from: the config fields alone, then load_state_dict."""
    config = CONFIGS[model_type]().to_dict()
    converted = BcosBertClassifier.from_bert(random_encoder(model_type), None, 2)
    rebuilt = BcosBertClassifier.from_config(config, 2)
    rebuilt.load_state_dict(converted.state_dict())
    conventional = BertClassifier.from_bert(random_encoder(model_type), None, 2)
    BertClassifier.from_config(config, 2).load_state_dict(conventional.state_dict())


def test_positions_roberta_counts_after_the_pad_id():
    roberta = CONFIGS["roberta"]().to_dict()
    assert encoder_options(roberta)["position_offset"] == 2
    assert usable_positions(roberta) == SIZES["max_position_embeddings"] - 2
    assert usable_positions(CONFIGS["bert"]().to_dict()) == SIZES["max_position_embeddings"]
    distilbert = encoder_options(CONFIGS["distilbert"]().to_dict())
    assert distilbert["type_vocab_size"] == 0 and distilbert["hidden_size"] == 16


def test_unsupported_families_and_fields_are_named():
    with pytest.raises(ValueError, match=r"cannot convert a 'gpt2' encoder: the supported "
                                         r"model types are \[.*'distilbert'.*'roberta'"):
        encoder_options(transformers.GPT2Config().to_dict())
    distilbert = CONFIGS["distilbert"]().to_dict()
    with pytest.raises(ValueError, match="only activation='gelu' converts"):
        encoder_options({**distilbert, "activation": "relu"})
    with pytest.raises(ValueError, match=r"the distilbert config lacks \['n_heads'\]"):
        encoder_options({k: v for k, v in distilbert.items() if k != "n_heads"})
    with pytest.raises(ValueError, match="'dim' must be int"):
        encoder_options({**distilbert, "dim": "16"})
    with pytest.raises(ValueError, match="leaves no positions"):
        encoder_options({**CONFIGS["roberta"]().to_dict(), "max_position_embeddings": 2})
    with pytest.raises(ValueError, match="this encoder has no token types"):
        model = BcosBertClassifier.from_config(distilbert, 2)
        model(torch.ones(1, 3, dtype=torch.long), token_types=torch.zeros(1, 3,
                                                                          dtype=torch.long))


def test_a_task_model_converts_like_its_base_model():
    """A fine-tune with a task head (``roberta.`` prefix) converts its encoder."""
    config = CONFIGS["roberta"]()
    torch.manual_seed(0)
    task = transformers.RobertaForSequenceClassification(config)
    from_task = BcosBertClassifier.from_bert(task.state_dict(), config, 2)
    assert torch.equal(from_task.layers[1].feed_forward.output.weight,
                       task.roberta.encoder.layer[1].output.dense.weight)


# ---------------------------------------------------------------------------- estimators
TEXTS = ["A naïve, wonderfully-made film!", "Not bad at all.", "An awful, dull film.",
         "I left early; boring.", "The plot was moving.", "Great acting, great fun."]
LABELS = ["pos", "pos", "neg", "neg", "pos", "pos"]
FIT = dict(max_length=32, max_epochs=1, batch_size=3, random_state=0, device="cpu")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    from families import FAMILIES as TINY_FAMILIES, tiny_checkpoint

    root = tmp_path_factory.mktemp("checkpoints")
    return {family: tiny_checkpoint(root / family, family) for family in TINY_FAMILIES}


@pytest.mark.parametrize("family", ["bert", "distilbert", "electra", "roberta", "xlm-roberta"])
def test_bcos_text_classifier_fine_tunes_explains_and_saves_every_family(family, checkpoints,
                                                                         tmp_path):
    import pickle

    from sklearn.base import clone

    from interpretable import BcosTextClassifier

    clf = BcosTextClassifier(checkpoint=str(checkpoints[family]), b=1.5, **FIT)
    clf.fit(TEXTS, LABELS)
    assert clf.config_["model_type"] == family
    exact = clf.explain(TEXTS[:3], dtype="float64")
    assert exact.completeness_error.max() <= 1e-9
    words = clf.explain(TEXTS[:1], level="word")
    assert "".join(words.units[0]) == TEXTS[0].replace(" ", "")  # the text's words, in order
    loaded = BcosTextClassifier.load(clf.save(tmp_path / "model"), "cpu")
    np.testing.assert_array_equal(loaded.predict_proba(TEXTS), clf.predict_proba(TEXTS))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(clf)).predict_proba(TEXTS),
                                  clf.predict_proba(TEXTS))
    assert clone(clf).get_params() == clf.get_params()


@pytest.mark.parametrize("family", ["distilbert", "roberta"])
def test_bert_text_classifier_fine_tunes_every_family(family, checkpoints, tmp_path):
    from interpretable import BertTextClassifier

    clf = BertTextClassifier(checkpoint=checkpoints[family], **FIT).fit(TEXTS, LABELS)
    explanation = clf.explain(TEXTS[:2], method="rollout")
    assert explanation.units[0][0] == clf.text_encoder_.settings_["cls_token"]
    loaded = BertTextClassifier.load(clf.save(tmp_path / "model"), "cpu")
    np.testing.assert_array_equal(loaded.predict_proba(TEXTS), clf.predict_proba(TEXTS))


def test_fit_encodes_ids_only_and_explain_aligns_the_pieces_it_explains(checkpoints,
                                                                         monkeypatch):
    """Fit reads the ids alone: no text is aligned with its characters (was: every training
    text); explain aligns the texts it explains, once."""
    from interpretable import BertTextClassifier
    from interpretable.preprocessing import WordPieceEncoder

    aligned, align = [], WordPieceEncoder.align

    def counting_align(self, text):
        aligned.append(text)
        return align(self, text)

    monkeypatch.setattr(WordPieceEncoder, "align", counting_align)
    clf = BertTextClassifier(checkpoint=checkpoints["roberta"], **FIT).fit(TEXTS, LABELS)
    assert aligned == []
    clf.explain(TEXTS[:2], method="gradient", level="word")
    assert aligned == TEXTS[:2]


def test_checkpoints_that_do_not_fit_are_refused_at_fit(checkpoints, tmp_path):
    import json
    import shutil

    from interpretable import BcosTextClassifier

    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir()
    (gpt2 / "config.json").write_text(json.dumps(transformers.GPT2Config(n_layer=1).to_dict()))
    with pytest.raises(ValueError, match="cannot convert a 'gpt2' encoder: the supported"):
        BcosTextClassifier(checkpoint=gpt2, **FIT).fit(TEXTS, LABELS)
    fitted = BcosTextClassifier(checkpoint=checkpoints["distilbert"], **FIT).fit(TEXTS, LABELS)
    before = fitted.predict_proba(TEXTS)
    with pytest.raises(ValueError, match="cannot convert a 'gpt2' encoder"):  # a refit
        fitted.set_params(checkpoint=gpt2).fit(TEXTS, LABELS)
    assert fitted.config_["model_type"] == "distilbert"  # the failed fit left the model as it was
    np.testing.assert_array_equal(fitted.predict_proba(TEXTS), before)
    small = shutil.copytree(checkpoints["bert"], tmp_path / "small")
    config = json.loads((small / "config.json").read_text())
    (small / "config.json").write_text(json.dumps({**config, "vocab_size": 10}))
    with pytest.raises(ValueError, match="vocab_size=10 but the tokenizer"):
        BcosTextClassifier(checkpoint=small, **FIT).fit(TEXTS, LABELS)
    with pytest.raises(ValueError, match="max_length=65 exceeds the model.s 64 positions"):
        BcosTextClassifier(checkpoint=checkpoints["roberta"], **{**FIT, "max_length": 65}) \
            .fit(TEXTS, LABELS)


def test_a_checkpoint_with_code_in_its_weights_is_refused_without_running_it(checkpoints,
                                                                             tmp_path):
    import os
    import pickle
    import shutil

    from interpretable import BcosTextClassifier

    folder = shutil.copytree(checkpoints["bert"], tmp_path / "hostile")
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"weight": Payload()}))
    with pytest.raises(ValueError, match="cannot read the weights in .*a file's code is never"):
        BcosTextClassifier(checkpoint=folder, **FIT).fit(TEXTS, LABELS)
    assert not marker.exists()


def _edited_copy(checkpoint, folder, edit=None, drop=()):
    """A copy of a checkpoint folder whose weights went through ``edit`` (a state dict ->
    None) and without the files ``drop``."""
    import shutil

    from safetensors.torch import load_file, save_file

    folder = shutil.copytree(checkpoint, folder)
    for name in drop:
        (folder / name).unlink()
    if edit is not None:
        state = load_file(folder / "model.safetensors")
        edit(state)
        save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


def _nan(state):
    state["encoder.layer.0.output.dense.weight"][1, 2] = float("nan")


BAD_CHECKPOINTS = {  # how the copy of the tiny BERT differs -> what the refusal names
    "missing": (dict(edit=lambda state: state.pop("encoder.layer.1.attention.self.query.weight")),
                r"model.safetensors does not hold the encoder .*missing encoder tensors: "
                r"encoder.layer.1.attention.self.query.weight"),
    "unexpected": (dict(edit=lambda state: state.update(
        {"encoder.layer.2.output.dense.weight": torch.zeros(16, 32)})),
        r"model.safetensors does not hold .*unexpected encoder tensors: "
        r"encoder.layer.2.output.dense.weight"),
    "non-finite": (dict(edit=_nan), r"model.safetensors has NaN or infinite values in: "
                                    r"encoder.layer.0.output.dense.weight"),
    "no tokenizer": (dict(drop=("tokenizer.json", "tokenizer_config.json")),
                     r"'.*no-tokenizer' has no tokenizer files: BertTokenizer reads "
                     r"tokenizer.json or vocab.txt"),
}


@pytest.mark.parametrize("estimator", ["BcosTextClassifier", "BertTextClassifier"])
def test_checkpoints_with_weights_or_tokenizers_missing_or_broken_are_refused_at_load(
        estimator, checkpoints, tmp_path):
    """A missing or unexpected encoder tensor (transformers would start it at random), a NaN
    in the weights (training would diverge) or a folder without tokenizer files (a vocabulary
    of the special tokens alone) is refused before training, naming the tensor or the files;
    a refit that is refused leaves the fitted model as it was."""
    import interpretable

    cls = getattr(interpretable, estimator)
    fitted = cls(checkpoint=checkpoints["bert"], **FIT).fit(TEXTS, LABELS)
    before, vocabulary = fitted.predict_proba(TEXTS), fitted.text_encoder_.index_to_token_
    for kind, (change, message) in BAD_CHECKPOINTS.items():
        folder = _edited_copy(checkpoints["bert"], tmp_path / kind.replace(" ", "-"), **change)
        with pytest.raises(ValueError, match=message):
            cls(checkpoint=folder, **FIT).fit(TEXTS, LABELS)
        with pytest.raises(ValueError, match=message):
            fitted.set_params(checkpoint=folder).fit(TEXTS, LABELS)
        assert fitted.config_["model_type"] == "bert"
        assert fitted.text_encoder_.index_to_token_ == vocabulary
        np.testing.assert_array_equal(fitted.predict_proba(TEXTS), before)


def test_a_missing_pooler_or_task_head_starts_at_random_with_one_warning(checkpoints,
                                                                         tmp_path):
    from interpretable import BcosTextClassifier
    from interpretable.nn._bert_encoder import load_sequence_classifier

    def no_pooler(state):
        del state["pooler.dense.weight"], state["pooler.dense.bias"]

    folder = _edited_copy(checkpoints["bert"], tmp_path / "no-pooler", edit=no_pooler)
    with pytest.warns(UserWarning) as record:
        BcosTextClassifier(checkpoint=folder, pooler=True, **FIT).fit(TEXTS, LABELS)
    notes = [str(w.message) for w in record if "initialised at random" in str(w.message)]
    assert notes == [f"{folder / 'model.safetensors'} holds no pooler or task head weights "
                     "for pooler.dense.bias, pooler.dense.weight: initialised at random."]
    with pytest.warns(UserWarning, match=r"no pooler or task head weights for "
                                         r"classifier.bias, classifier.weight: initialised"):
        load_sequence_classifier(checkpoints["bert"], tokenizer=False)
    with pytest.raises(ValueError, match="no-tokenizer' has no tokenizer files"), \
            pytest.warns(UserWarning, match="initialised at random"):
        load_sequence_classifier(_edited_copy(checkpoints["bert"], tmp_path / "no-tokenizer",
                                              drop=("tokenizer.json",)))


def test_explanations_from_threads_equal_sequential_ones_and_leave_the_model_unchanged(
        checkpoints):
    from concurrent.futures import ThreadPoolExecutor

    from interpretable import BcosTextClassifier

    clf = BcosTextClassifier(checkpoint=checkpoints["roberta"], **FIT).fit(TEXTS, LABELS)
    state = {k: v.clone() for k, v in clf.module_.state_dict().items()}
    sequential = [clf.explain([text]).values[0] for text in TEXTS]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(lambda text: clf.explain([text]).values[0], TEXTS * 3))
    for i, values in enumerate(threaded):
        np.testing.assert_array_equal(values, sequential[i % len(TEXTS)])
    assert all(torch.equal(v, state[k]) for k, v in clf.module_.state_dict().items())
