"""B-cos text classifier and its conventional counterpart: exact contributions per
word piece and per word, the mapping back to the original text, the B -> 1 limit, truncation,
persistence without the data package, the warm-up schedule, learning and bad inputs."""
import json
import warnings

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

pytest.importorskip("transformers")

from interpretable import BcosTextClassifier, BertTextClassifier
from interpretable.estimators.core._nets import LearningRateSchedule

TINY = {"vocab_size": 30522, "hidden_size": 16, "num_hidden_layers": 2,
        "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 32,
        "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1}
TEXT = "A naïve, wonderfully-made film 😀!! Not “bad” at all…"


def sentiment(n=96, seed=0, classes=("neg", "pos")):
    rng = np.random.RandomState(seed)
    cues = {"neg": ["awful", "dull", "boring"], "pos": ["great", "superb", "moving"],
            "mixed": ["uneven", "patchy", "odd"]}
    filler = ["the", "movie", "was", "a", "plot", "and", "film", ","]
    X, y = [], []
    for i in range(n):
        label = classes[i % len(classes)]
        words = list(rng.choice(filler, size=rng.randint(2, 6)))
        words.insert(rng.randint(len(words) + 1), rng.choice(cues[label]))
        X.append(" ".join(words))
        y.append(label)
    return X, np.array(y)


def tiny(cls=BcosTextClassifier, **params):
    options = dict(checkpoint=TINY, max_length=24, lr=3e-3, max_epochs=4, batch_size=16,
                   warmup=0.1, random_state=0, device="cpu")
    return cls(**{**options, **params})


@pytest.fixture(scope="module")
def fitted():
    X, y = sentiment()
    return tiny().fit(X, y), X, y


# ---------------------------------------------------------------------------- exactness
@pytest.mark.parametrize("epochs", [None, 4], ids=["random", "fine-tuned"])
@pytest.mark.parametrize("level", ["piece", "word"])
def test_contributions_are_complete_in_float64(fitted, epochs, level):
    clf, X, y = fitted
    if epochs is None:  # a random model: the learning rate too small to move the weights
        clf = tiny(lr=1e-12, max_epochs=1).fit(X, y)
    texts = X[:5] + [TEXT]
    for target in (None, "neg", "pos"):
        exp = clf.explain(texts, target, level=level, dtype="float64")
        assert exp.completeness_error.max() <= 1e-9
        totals = [v.sum() + b for v, b in zip(exp.values, exp.bias, strict=True)]
        np.testing.assert_allclose(totals, exp.logit, rtol=0, atol=1e-12)
    exp32 = clf.explain(texts, level=level)
    assert exp32.completeness_error.max() <= 1e-4
    np.testing.assert_allclose(exp32.logit, clf.explain(texts, dtype="float64").logit, rtol=1e-4,
                               atol=1e-6)


def test_the_logit_is_the_model_output_and_bias_holds_the_position_share(fitted):
    clf, X, _ = fitted
    exp = clf.explain(X[:6], dtype="float64")
    margin = clf.decision_function(X[:6])
    explained = np.array([clf.explain(X[:6], c, dtype="float64").logit for c in clf.classes_])
    np.testing.assert_allclose(explained[1] - explained[0], margin, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(exp.bias, exp.position_type, rtol=0, atol=1e-12)  # logit bias 0
    frame = exp.to_frame("samples")
    assert {"position_type", "truncated", "completeness_error"} <= set(frame.columns)


# ---------------------------------------------------------------------------- words and text
def test_word_level_maps_to_the_original_text(fitted):
    clf, _, _ = fitted
    pieces = clf.explain([TEXT], dtype="float64")
    words = clf.explain([TEXT], level="word", dtype="float64")
    assert words.units[0] == ["A", "naïve", ",", "wonderfully", "-", "made", "film", "😀", "!",
                              "!", "Not", "“", "bad", "”", "at", "all", "…"]
    for unit, (start, end) in zip(words.units[0], words.offsets[0], strict=True):
        assert TEXT[start:end] == unit
    frame = words.to_frame()
    assert frame.char_start.notna().all() and frame.token.tolist() == words.units[0]
    # every word is the sum of its pieces; [CLS] and [SEP] join the bias
    aligned = clf.word_pieces([TEXT])[0]
    assert pieces.units[0][0] == "[CLS]" and "[UNK]" in pieces.units[0]
    expected = np.bincount(aligned.words[1:-1], weights=pieces.values[0][1:-1])
    np.testing.assert_allclose(words.values[0], expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(words.bias[0], pieces.bias[0] + pieces.values[0][[0, -1]].sum(),
                               rtol=0, atol=1e-12)
    assert words.completeness_error[0] <= 1e-9
    # piece spans are the tokenizer's: "##ly" is "ly" of "wonderfully", [CLS] is nowhere
    spans = dict(zip(pieces.units[0], pieces.offsets[0].tolist(), strict=True))
    assert spans["[CLS]"] == [-1, -1] and TEXT[slice(*spans["##ly"])] == "ly"
    html = words.to_html()
    assert "naïve" in html and "Truncated" not in html


def test_over_long_texts_are_truncated_with_a_warning_and_the_explanation_says_so(fitted):
    clf, _, _ = fitted
    long = " ".join(["great"] * 40) + " but awful"
    with pytest.warns(UserWarning, match="max_length=24 word pieces"):
        exp = clf.explain([long, "great film"], level="word")
    assert exp.truncated.tolist() == [42 - 22, 0]
    assert len(exp.units[0]) == 22 and "awful" not in exp.units[0]
    assert "Truncated" in exp.to_html()
    with pytest.warns(UserWarning, match="1 of 1 texts"):
        clf.predict([long])


def test_truncation_warnings_point_at_the_callers_line(fitted):
    """fit, predict and explain warn at the user's call (this file), not at the package's
    source line; so does the TextEncoder of the other text models."""
    from interpretable import EmbeddingBagClassifier
    from interpretable.preprocessing import TextEncoder

    clf, X, y = fitted
    long = " ".join(["great"] * 40)
    calls = {"fit": lambda: clone(clf).set_params(max_epochs=1).fit([long] + X[1:], y),
             "predict": lambda: clf.predict([long]),
             "explain": lambda: clf.explain([long], level="word"),
             "bag": lambda: EmbeddingBagClassifier(text_encoder=TextEncoder(max_len=3),
                                                   max_epochs=1).fit([long] + X[1:], y)}
    for name, call in calls.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        truncation = [w for w in caught if "longer than max_len" in str(w.message)]
        assert truncation, name
        assert {w.filename for w in truncation} == {__file__}, (name, truncation[0].filename)


def test_missing_transformers_names_the_extra(monkeypatch):
    """Without transformers: an ImportError that says which extra installs it."""
    import sys

    monkeypatch.setitem(sys.modules, "transformers", None)
    X, y = sentiment(n=8)
    with pytest.raises(ImportError, match=r'pip install "interpretable-models\[bert\]"'):
        tiny(max_epochs=1).fit(X, y)
    from interpretable.nn._bert_encoder import BertEncoder

    with pytest.raises(ImportError, match=r"interpretable-models\[bert\]"):
        BertEncoder.from_config(TINY)


# Blank texts are predicted from no evidence (tests/conformance/test_bad_input.py).
@pytest.mark.parametrize("bad, error, match", [
    ([3], TypeError, "str"),
    ("a text", TypeError, "list"), ([b"x"], TypeError, "bytes")])
def test_bad_inputs_are_named(fitted, bad, error, match):
    clf, _, _ = fitted
    with pytest.raises(error, match=match):
        clf.explain(bad)


def test_bad_options_and_parameters_are_named(fitted):
    clf, X, y = fitted
    with pytest.raises(ValueError, match="level"):
        clf.explain(X[:1], level="sentence")
    with pytest.raises(TypeError, match="n_steps"):
        clf.explain(X[:1], method="gradient", n_steps=4)
    for params, match in ((dict(b=0.5), "'b' parameter"), (dict(b=[1.5, "x"]), "b must be"),
                          (dict(max_length=2), "max_length"), (dict(warmup=1.0), "warmup"),
                          (dict(checkpoint={**TINY, "hidden_size": "8"}), "hidden_size"),
                          (dict(checkpoint={**TINY, "vocab_size": 99}), "vocab_size"),
                          (dict(max_length=64), "positions")):
        with pytest.raises(ValueError, match=match):
            tiny(**params).fit(X, y)


# ---------------------------------------------------------------------------- B -> 1
def test_b_to_one_is_continuous_and_b_one_stays_exact(fitted):
    """b = 1: no alignment pressure, still dynamic linear (exact); the model is continuous in b."""
    clf, X, y = fitted
    at_one = tiny(b=1.0).fit(X, y)
    assert at_one.explain(X[:4], dtype="float64").completeness_error.max() <= 1e-9
    state = at_one.module_.state_dict()
    near = clone(at_one).set_params(b=1 + 1e-7)
    near.__dict__.update({k: v for k, v in vars(at_one).items() if k.endswith("_")})
    near.module_ = near._build_module()
    near.module_.load_state_dict(state)
    near.module_.eval()
    np.testing.assert_allclose(near.predict_proba(X[:8]), at_one.predict_proba(X[:8]),
                               rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------------------- training
def test_learns_a_tiny_task_with_class_and_sample_weights():
    X, y = sentiment(classes=("neg", "pos", "mixed"), n=120)
    X_test, y_test = sentiment(classes=("neg", "pos", "mixed"), n=60, seed=1)
    # from random weights: the gains matched to a pretrained encoder's scale do not apply
    clf = tiny(gain="unit", b_anneal=0.0, lr=3e-2, max_epochs=6, class_weight="balanced")
    clf.fit(X, y, sample_weight=np.ones(len(X)))
    assert clf.score(X_test, y_test) >= 0.9
    losses = [h["train_loss"] for h in clf.history_]
    assert losses[-1] < 0.5 * losses[0]
    conventional = tiny(BertTextClassifier, lr=1e-2, max_epochs=6).fit(X, y)
    assert conventional.score(X_test, y_test) >= 0.9


def test_warm_up_then_linear_decay():
    schedule = LearningRateSchedule(warmup=0.25, decay="linear")
    schedule.total_ = 8
    factors = [schedule.factor(step) for step in range(8)]
    np.testing.assert_allclose(factors, [0.5, 1.0, 1.0, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6])
    clf = tiny(max_epochs=2, validation_fraction=0.25, early_stopping=True)
    X, y = sentiment(n=64)
    clf.fit(X, y)
    assert [h["epoch"] for h in clf.history_] == [1, 2] and "valid_acc" in clf.history_[-1]


def test_grid_search_over_b():
    X, y = sentiment(n=48)
    search = GridSearchCV(tiny(max_epochs=1), {"b": [1.25, [1.0, 2.0]]}, cv=2).fit(X, y)
    assert search.best_params_["b"] in (1.25, [1.0, 2.0])


# ---------------------------------------------------------------------------- persistence
def test_save_load_is_bit_identical_without_the_data_package(fitted, tmp_path, monkeypatch):
    clf, X, _ = fitted
    path = clf.save(tmp_path / "model")
    config = json.loads((path / "config.json").read_text())
    assert config["fitted"]["config"]["hidden_size"] == 16
    from interpretable import datasets

    def unavailable():
        raise ImportError("no data package")

    monkeypatch.setattr(datasets, "load_minilm", unavailable)
    loaded = BcosTextClassifier.load(path, device="cpu")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    ours, theirs = loaded.explain([TEXT], level="word"), clf.explain([TEXT], level="word")
    assert ours.units == theirs.units
    np.testing.assert_array_equal(np.concatenate(ours.values), np.concatenate(theirs.values))


def test_a_local_checkpoint_folder_is_converted(tmp_path):
    """A BERT folder (config, weights, tokenizer): the B-cos model starts from its weights."""
    import transformers

    from interpretable.datasets import load_minilm

    torch.manual_seed(0)
    bert = transformers.BertModel(transformers.BertConfig(**TINY))
    bert.save_pretrained(tmp_path)
    transformers.AutoTokenizer.from_pretrained(str(load_minilm()), local_files_only=True) \
        .save_pretrained(tmp_path)
    X, y = sentiment(n=32)
    clf = tiny(checkpoint=str(tmp_path), lr=1e-12, max_epochs=1).fit(X, y)
    np.testing.assert_allclose(clf.module_.layers[0].attention.query.weight.detach(),
                               bert.encoder.layer[0].attention.self.query.weight.detach(),
                               atol=1e-9)
    assert clf.config_["hidden_size"] == 16
    with pytest.raises(ValueError, match="nowhere.*no Hugging Face Hub id|no local folder"):
        tiny(checkpoint=str(tmp_path / "nowhere")).fit(X, y)


# ---------------------------------------------------------------------------- the real MiniLM
def test_converted_minilm_fine_tunes_and_explains_exactly(capfd):
    """... and loads the MiniLM quietly: no "Loading weights" bar, no load report;
    transformers' own settings are restored afterwards."""
    import transformers

    X, y = sentiment(n=16)
    bars = transformers.logging.is_progress_bar_enabled()
    verbosity = transformers.logging.get_verbosity()
    capfd.readouterr()
    clf = BcosTextClassifier(max_length=16, batch_size=8, random_state=0,
                             device="cpu").fit(X, y)
    printed = capfd.readouterr()
    assert "Loading weights" not in printed.err + printed.out
    assert transformers.logging.is_progress_bar_enabled() == bars
    assert transformers.logging.get_verbosity() == verbosity
    assert clf.config_["num_hidden_layers"] == 6 and clf.text_encoder_.max_len == 16
    exp = clf.explain([TEXT], level="word", dtype="float64")
    assert exp.completeness_error[0] <= 1e-9 and exp.units[0][1] == "naïve"


@pytest.mark.parametrize("cls", [BcosTextClassifier, BertTextClassifier])
def test_attention_and_rollout_are_distributions_over_the_tokens(cls):
    X, y = sentiment(n=32)
    clf = tiny(cls, max_epochs=1).fit(X, y)
    for method in ("attention", "rollout"):
        exp = clf.explain(X[:4] + [TEXT], method=method)
        assert exp.class_independent
        np.testing.assert_allclose([v.sum() for v in exp.values], 1.0, rtol=1e-5)
        words = clf.explain([TEXT], method=method, level="word")
        assert words.bias is None and words.units[0][1] == "naïve"
    if cls is BertTextClassifier:  # probabilities recomputed from the layer inputs = eager
        bert = clf.module_.encoder.bert
        batch = clf.encode([TEXT]).inputs
        _, ours = clf.forward_with_attention(batch)
        bert.set_attn_implementation("eager")
        theirs = bert(inputs_embeds=clf.module_.embed(batch["tokens"]),
                      output_attentions=True).attentions
        for a, b in zip(ours, theirs, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_b_annealed_from_one_ends_at_b():
    from interpretable.estimators.transformer._callbacks import AnnealExponent
    from interpretable.nn.bcos._bert_layers import BertBcosLinear, alignment_gain

    X, y = sentiment(n=32)
    clf = tiny(b=[1.25, 2.0], b_anneal=1.0, max_epochs=2).fit(X, y)
    layers = [m for m in clf.module_.modules() if isinstance(m, BertBcosLinear)]
    assert {m.b for m in layers} == {1.25, 2.0}
    assert all(m.scale == pytest.approx(alignment_gain(m.in_features, m.b)) for m in layers)
    schedule = AnnealExponent(share=0.5)
    schedule.total_, schedule.step_ = 10, 2

    class Net:
        module_ = clf.module_

    schedule.at_step(Net)  # 2 of the 5 annealing steps: B = 1 + 0.4 (B - 1)
    assert sorted({round(m.b, 12) for m in layers}) == [1.1, 1.4]
    clf.module_.anneal(1.0)
    assert clf.explain(X[:3], dtype="float64").completeness_error.max() <= 1e-9


def test_reproduction_runs_end_to_end_on_a_tiny_setting(monkeypatch, tmp_path):
    from interpretable.reproduce import bcos_text as repro

    monkeypatch.setitem(repro.SETTINGS, "quick", dict(
        train=96, test=40, epochs=1, b=(1.5,), eval=12, ig_steps=4, speed=16, lstm_train=96,
        lstm_epochs=1))
    monkeypatch.setattr(repro, "BERT", {**repro.BERT, "checkpoint": TINY, "max_length": 24})
    results = repro.run(quick=True, lr=1e-2, view=tmp_path / "view.html")
    assert set(results["models"]) == {"tfidf_logreg", "minilm", "bcos_minilm_b1.5", "seat_rnn",
                                      "diversity_lstm"}
    assert set(results["faithfulness"]["minilm"]) == set(repro.POST_HOC)
    checks = results["targets"]["bcos_minilm_b1.5"]
    assert all(isinstance(c["met"], bool) for c in checks.values()) and len(checks) == 6
    assert 'data-method="inherent"' in (tmp_path / "view.html").read_text()
    json.dumps(results, default=float)
    assert repro.results_suffix({"dataset": "convention", "b": [1.5]}) == "-convention-b1.5"
    assert repro.results_suffix({"bcos_lr": 1e-4, "bcos_params": {"gate_biases": True}}) == \
        "-bcoslr0.0001-gate_biases-True"
    models = repro.make_models(repro.SETTINGS["quick"], 0, 5e-5, 1e-4, {"pooler": False})
    assert models["bcos_minilm_b1.5"].get_params()["lr"] == 1e-4
    assert not models["bcos_minilm_b1.5"].pooler and models["minilm"].lr == 5e-5


# ---------------------------------------------------------------------------- parity options
OPTIONS = {"pretrained_rows": dict(row_norms="pretrained"), "no_pooler": dict(pooler=False),
           "fixed_scale": dict(logit_scale=3.0), "learned_scale": dict(logit_scale="learned"),
           "head_lr": dict(head_lr=3e-2), "gate_biases": dict(gate_biases=True),
           "all": dict(row_norms="pretrained", pooler=False, logit_scale="learned",
                       head_lr=3e-2, gate_biases=True, b=[1.0, 1.5])}


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    """A tiny random BERT checkpoint folder (weights with row norms far from 1, biases)."""
    import transformers

    from interpretable.datasets import load_minilm

    folder = tmp_path_factory.mktemp("bert")
    torch.manual_seed(0)
    bert = transformers.BertModel(transformers.BertConfig(**TINY))
    with torch.no_grad():
        for name, param in bert.named_parameters():
            if name.endswith("dense.weight"):
                param.mul_(torch.rand(param.shape[0], 1) * 20 + 1)  # rows of varied norms
            elif name.endswith("bias"):
                param.normal_()
    bert.save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(str(load_minilm()), local_files_only=True) \
        .save_pretrained(folder)
    return folder, bert


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_every_parity_option_keeps_contributions_complete_and_saves_bit_identically(
        options, bert_folder, tmp_path):
    X, y = sentiment(n=48)
    clf = tiny(checkpoint=str(bert_folder[0]), max_epochs=2, **options).fit(X, y)
    texts = X[:4] + [TEXT]
    for level in ("piece", "word"):
        exp = clf.explain(texts, "pos", level=level, dtype="float64")
        assert exp.completeness_error.max() <= 1e-9
    loaded = BcosTextClassifier.load(clf.save(tmp_path / "model"), device="cpu")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(np.concatenate(loaded.explain([TEXT]).values),
                                  np.concatenate(clf.explain([TEXT]).values))
    assert loaded.get_params() == clf.get_params() | {"device": "cpu"}


def test_pretrained_row_norms_at_b_one_are_the_bias_free_checkpoint(bert_folder):
    """row_norms="pretrained", b = 1: the converted encoder is the checkpoint without biases;
    unit-norm rows are not."""
    import copy

    folder, bert = bert_folder
    X, y = sentiment(n=32)
    bias_free = copy.deepcopy(bert).eval()
    with torch.no_grad():
        for name, param in bias_free.named_parameters():
            if name.endswith("bias"):
                param.zero_()
    states = {}
    for rows in ("pretrained", "unit"):
        clf = tiny(checkpoint=str(folder), b=1.0, b_anneal=0.0, row_norms=rows, lr=1e-12,
                   gate_biases=False, max_epochs=1).fit(X, y)
        batch = clf.encode(X[:6]).inputs
        module = clf.module_
        mask = module.padding_mask(batch["tokens"], batch["lengths"])
        with torch.no_grad():
            summed = module.embed(batch["tokens"]) + module.position_type_embeddings(
                batch["tokens"])
            states[rows] = module.hidden_states(summed, mask, need_probs=False)[0]
            theirs = bias_free(input_ids=batch["tokens"],
                               attention_mask=mask.long()).last_hidden_state
    real = mask[..., None]
    torch.testing.assert_close(states["pretrained"] * real, theirs * real, rtol=1e-4, atol=1e-5)
    assert not torch.allclose(states["unit"] * real, theirs * real, rtol=1e-2, atol=1e-2)
    # gate_biases: the query / key / intermediate biases come from the checkpoint
    gated = tiny(checkpoint=str(folder), gate_biases=True, lr=1e-12, max_epochs=1).fit(X, y)
    layer, theirs = gated.module_.layers[1], bert.encoder.layer[1]
    for ours, source in ((layer.attention.query.bias, theirs.attention.self.query.bias),
                         (layer.attention.key.bias, theirs.attention.self.key.bias),
                         (layer.feed_forward.gate_bias, theirs.intermediate.dense.bias)):
        torch.testing.assert_close(ours.detach(), source.detach(), rtol=0, atol=1e-6)


def test_logit_scale_multiplies_the_logits_and_head_lr_trains_the_head_alone():
    X, y = sentiment(n=32)
    clf = tiny(logit_scale=3.0, max_epochs=1).fit(X, y)
    unscaled = clone(clf).set_params(logit_scale=1.0)
    unscaled.__dict__.update({k: v for k, v in vars(clf).items() if k.endswith("_")})
    unscaled.module_ = unscaled._build_module()
    unscaled.module_.load_state_dict(clf.module_.state_dict())
    unscaled.module_.eval()
    np.testing.assert_allclose(clf.decision_function(X[:8]),
                               3 * unscaled.decision_function(X[:8]), rtol=1e-5, atol=1e-6)
    # encoder at a negligible rate, the head at a high one: only the head moves
    start = tiny(lr=1e-12, max_epochs=1).fit(X, y).module_.state_dict()
    moved = tiny(lr=1e-12, head_lr=1e-1, logit_scale="learned").fit(X, y).module_.state_dict()
    for name, value in moved.items():
        if name in ("classifier.weight", "log_logit_scale"):
            assert not torch.allclose(value, start.get(name, torch.zeros(())), atol=1e-4), name
        else:
            torch.testing.assert_close(value, start[name], rtol=0, atol=1e-6)


def test_parity_options_clone_grid_search_and_validate():
    X, y = sentiment(n=48)
    grid = {"row_norms": ["unit", "pretrained"], "pooler": [True, False],
            "logit_scale": [2.0, "learned"], "head_lr": [None, 1e-2]}
    clf = tiny(max_epochs=1, row_norms="pretrained", pooler=False, logit_scale="learned",
               head_lr=1e-2)
    assert clone(clf).get_params() == clf.get_params()
    search = GridSearchCV(tiny(max_epochs=1), {k: v for k, v in grid.items()
                                               if k in ("pooler", "logit_scale")}, cv=2)
    search.fit(X, y)
    assert set(search.best_params_) == {"pooler", "logit_scale"}
    for params, match in ((dict(row_norms="raw"), "row_norms"), (dict(pooler="no"), "pooler"),
                          (dict(logit_scale=0.0), "logit_scale"),
                          (dict(logit_scale="fixed"), "logit_scale"),
                          (dict(head_lr=-1.0), "head_lr"),
                          (dict(gate_biases=1), "gate_biases")):
        with pytest.raises(ValueError, match=match):
            tiny(**params).fit(X, y)


def test_the_demo_text_model_is_trained_enough_to_be_right():
    """What ``make demo`` shows of the B-cos MiniLM (measured .732 on this machine): at least
    .7 held-out accuracy, and the demo's two reviews read the way they are written."""
    from interpretable.reproduce.bcos_text import demo_model

    clf, accuracy, _ = demo_model()
    assert accuracy >= 0.7
    reviews = ["a gorgeous, witty and heartfelt film", "dull, lifeless and far too long"]
    assert clf.predict(reviews).tolist() == ["fresh", "rotten"]


# ---------------------------------------------------------------------------- distillation
def test_distillation_loss_is_cross_entropy_plus_the_scaled_kl_to_the_softened_teacher():
    from interpretable.nn._losses import DistillationLoss

    torch.manual_seed(0)
    logits, y = torch.randn(6, 3, dtype=torch.float64), torch.tensor([0, 1, 2, 0, 1, 2])
    teacher = torch.softmax(torch.randn(6, 3, dtype=torch.float64), -1)
    weight = torch.rand(6, dtype=torch.float64)
    ce = torch.nn.functional.cross_entropy(logits, y, reduction="none")
    soft = torch.softmax(torch.log(teacher) / 2.0, -1)
    kl = torch.nn.functional.kl_div(torch.log_softmax(logits / 2.0, -1), soft,
                                    reduction="none").sum(-1)
    expected = ((0.3 * ce + 0.7 * 4.0 * kl) * weight).sum() / weight.sum()
    loss = DistillationLoss(0.7, 2.0)(logits, y, sample_weight=weight,
                                      teacher_probabilities=teacher)
    torch.testing.assert_close(loss, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(DistillationLoss(0.0, 2.0)(logits, y, teacher_probabilities=teacher),
                               ce.mean(), rtol=1e-12, atol=1e-12)
    # matching the teacher exactly (T = 1, labels ignored) is the minimum: zero
    assert float(DistillationLoss(1.0, 1.0)(torch.log(teacher), y,
                                            teacher_probabilities=teacher)) == pytest.approx(0)


@pytest.fixture(scope="module")
def taught():
    """A teacher (TF-IDF + logistic regression) and the labels it contradicts: the student is
    fitted on labels that disagree with the teacher on a third of the texts."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    X, y = sentiment(n=96)
    teacher = make_pipeline(TfidfVectorizer(), LogisticRegression(C=100)).fit(X, y)
    noisy = y.copy()
    noisy[::3] = np.where(y[::3] == "pos", "neg", "pos")
    return teacher, X, y, noisy


def test_the_student_follows_the_teacher_in_proportion_to_its_weight(taught):
    teacher, X, y, noisy = taught
    agreement = {}
    for weight in (0.0, 1.0):
        clf = tiny(teacher=teacher, teacher_weight=weight, teacher_temperature=1.0,
                   max_epochs=8).fit(X, noisy)
        agreement[weight] = np.mean(clf.predict(X) == teacher.predict(X))
    assert agreement[1.0] >= 0.95 > agreement[0.0]
    # the labels alone (no teacher) train exactly as teacher_weight=0
    alone = tiny(max_epochs=2).fit(X, noisy)
    ignored = tiny(teacher=teacher, teacher_weight=0.0, max_epochs=2).fit(X, noisy)
    np.testing.assert_array_equal(alone.predict_proba(X), ignored.predict_proba(X))


def test_a_distilled_student_explains_exactly_and_never_stores_its_teacher(taught, tmp_path):
    import pickle

    teacher, X, y, _ = taught
    teacher_file = pickle.dumps(teacher)
    clf = tiny(teacher=teacher, max_epochs=2).fit(X, y)
    assert pickle.dumps(teacher) == teacher_file  # only read
    for level in ("piece", "word"):
        exp = clf.explain(X[:4] + [TEXT], "pos", level=level, dtype="float64")
        assert exp.completeness_error.max() <= 1e-9
    folder = clf.save(tmp_path / "student")
    config = json.loads((folder / "config.json").read_text())
    assert "teacher" in config["dropped_params"] and "teacher" not in config["params"]
    loaded = BcosTextClassifier.load(folder, device="cpu")
    assert loaded.teacher is None
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(np.concatenate(loaded.explain([TEXT]).values),
                                  np.concatenate(clf.explain([TEXT]).values))
    # a fitted student's pickle holds no teacher (it is as large as one fitted without)...
    restored = pickle.loads(pickle.dumps(clf))
    assert restored.teacher is None and restored.fitted_params_["teacher"] is None
    np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))
    alone = tiny(max_epochs=2).fit(X, y)
    assert len(pickle.dumps(clf)) < len(pickle.dumps(alone)) + 500
    assert clf.teacher is teacher  # the parameter itself is unchanged
    # ... while an unfitted one (e.g. sent to a joblib worker) keeps it
    assert pickle.loads(pickle.dumps(tiny(teacher=teacher))).teacher.predict(X[:3]).tolist() \
        == teacher.predict(X[:3]).tolist()


def test_a_saved_teacher_is_named_by_its_folder(tmp_path):
    X, y = sentiment(n=48)
    conventional = tiny(BertTextClassifier, max_epochs=2).fit(X, y)
    path = str(conventional.save(tmp_path / "teacher"))
    by_path = tiny(teacher=path, max_epochs=1).fit(X, y)
    by_object = tiny(teacher=conventional, max_epochs=1).fit(X, y)
    np.testing.assert_array_equal(by_path.predict_proba(X), by_object.predict_proba(X))
    # the folder is a reference: saved and pickled as the path
    loaded = BcosTextClassifier.load(by_path.save(tmp_path / "student"), device="cpu")
    assert loaded.teacher == path
    import pickle
    assert pickle.loads(pickle.dumps(by_path)).teacher == path


def test_clones_share_the_fitted_teacher_through_a_grid_search(taught):
    teacher, X, y, _ = taught
    student = tiny(teacher=teacher, max_epochs=1)
    assert clone(student).teacher is teacher
    assert clone(student).get_params() == student.get_params()
    search = GridSearchCV(student, {"teacher_weight": [0.2, 0.8],
                                    "teacher_temperature": [1.0, 3.0]}, cv=2).fit(X, y)
    assert search.best_estimator_.teacher is teacher
    assert set(search.best_params_) == {"teacher_weight", "teacher_temperature"}


def test_bad_teachers_are_named_and_a_failed_refit_keeps_the_model(taught, tmp_path):
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import LinearRegression

    teacher, X, y, _ = taught
    clf = tiny(max_epochs=1).fit(X, y)
    before = clf.predict_proba(X)
    three = np.array(["neg", "pos", "mixed"] * 32)
    for bad, error, match in (
            (clone(teacher), NotFittedError, "teacher .*not fitted"),
            (LinearRegression().fit(np.ones((2, 1)), [0, 1]), ValueError, "teacher"),
            (str(tmp_path), ValueError, "teacher .* without config.json"),
            (3, ValueError, "teacher")):
        with pytest.raises(error, match=match):
            clf.set_params(teacher=bad).fit(X, y)
        np.testing.assert_array_equal(clf.predict_proba(X), before)
    with pytest.raises(ValueError, match=r"teacher predicts the classes \['neg', 'pos'\]"):
        clf.set_params(teacher=teacher).fit(X, three)
    for params, match in ((dict(teacher_weight=1.5), "teacher_weight"),
                          (dict(teacher_temperature=0.0), "teacher_temperature")):
        with pytest.raises(ValueError, match=match):
            tiny(teacher=teacher, **params).fit(X, y)
    np.testing.assert_array_equal(clf.predict_proba(X), before)


def test_a_fine_tuned_transformers_classifier_folder_teaches_by_its_label_names(tmp_path):
    """A ``...ForSequenceClassification`` folder: its probabilities, columns matched to the
    student's classes by ``id2label`` (stated in reverse order here); generic labels are
    refused, not guessed."""
    import pickle

    import transformers

    from interpretable.datasets import load_minilm
    from interpretable.estimators.core._teacher import teacher_probabilities
    from interpretable.estimators.transformer._checkpoint import ClassifierCheckpoint

    X, y = sentiment(n=48)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(load_minilm()),
                                                           local_files_only=True)
    folders = {}
    for name, labels in (("named", {0: "pos", 1: "neg"}), ("generic", None)):
        torch.manual_seed(0)
        config = transformers.BertConfig(**TINY, num_labels=2,
                                         **({} if labels is None else {"id2label": labels}))
        model = transformers.BertForSequenceClassification(config).eval()
        folders[name] = tmp_path / name
        model.save_pretrained(folders[name])
        tokenizer.save_pretrained(folders[name])
    with torch.no_grad():  # the reference: the checkpoint's own forward pass
        batch = tokenizer(X[:5], padding=True, return_tensors="pt")
        expected = torch.softmax(model(**batch).logits.double(), -1).numpy()[:, ::-1]
    adapter = ClassifierCheckpoint(folders["named"], np.array(["neg", "pos"]), batch_size=2)
    np.testing.assert_allclose(adapter.predict_proba(X[:5]), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(teacher_probabilities(adapter, X[:5], np.array(["neg", "pos"])),
                               expected, rtol=1e-5, atol=1e-6)
    student = tiny(teacher=str(folders["named"]), max_epochs=1).fit(X, y)
    assert student.explain([TEXT], dtype="float64").completeness_error.max() <= 1e-9
    assert pickle.loads(pickle.dumps(student)).teacher == str(folders["named"])
    with pytest.raises(ValueError, match=r"predicts the labels \['LABEL_0', 'LABEL_1'\].*"
                                         r"\['neg', 'pos'\]"):
        tiny(teacher=str(folders["generic"]), max_epochs=1).fit(X, y)


def test_inherent_explanations_of_perturbed_embeddings_are_exact(fitted):
    """``embedding_offset`` (the stability metrics' perturbation) reaches the inherent
    explanation: zero offset changes nothing, a real one gives the exact explanation of the
    perturbed input (it sums to that input's logit), and the report's stability metric runs."""
    from interpretable.estimators.methods import get_explainer
    from interpretable.metrics import embedding_stability

    clf, X, _ = fitted
    inherent = get_explainer(clf, "inherent")  # the call the metrics make
    texts = list(X[:6])
    encoded = clf.encode(texts)
    n, t = encoded.inputs["tokens"].shape
    width = clf.module_.embed(encoded.inputs["tokens"][:1]).shape[-1]
    plain = clf.explain(texts)
    zero = inherent.explain(clf, texts, embedding_offset=np.zeros((n, t, width), np.float32))
    for a, b in zip(plain.values, zero.values, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    offset = np.random.default_rng(0).normal(0, 0.05, (n, t, width)).astype(np.float32)
    moved = inherent.explain(clf, texts, embedding_offset=offset)
    assert not all(np.allclose(a, b) for a, b in zip(plain.values, moved.values, strict=True))
    assert np.abs(moved.completeness_error).max() < 1e-4
    result = embedding_stability(clf, texts, 1e-3, "inherent", random_state=0)
    assert np.isfinite(result.frame.jsd).all()
