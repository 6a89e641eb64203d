"""Every ``transformers`` sequence classifier as it is: the architectures the package
does not convert (GPT-2, Llama, Qwen2, DeBERTa-v2, ModernBERT, ALBERT, and XLNet, one it never
saw before) run as ``transformers`` runs them (:class:`TransformersTextClassifier`): their own
probabilities on padded batches, every explanation method, persistence, fine-tuning, threads,
the report; and what ``from_pretrained`` refuses (no trained head, multi-label, a partial Hub
snapshot), each refusal naming what is missing and what to do."""
import copy
import json
import pickle
import shutil
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from architectures import ARCHITECTURES, tiny_classifier
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from interpretable import BertTextClassifier, TransformersTextClassifier

pytest.importorskip("transformers")

TEXTS = ["A naïve, wonderfully-made film! Not bad at all.", "The ending makes no sense.",
         "Great actors cannot save a bad script.", "We laughed, we cried 😀",
         "Numbers like 1234 and 3.14 appear too, in a text long enough to be padded."]
#: the padding of the batches ``transformers`` runs them on in the reference: the tokenizer's
#: own, and for the rotary decoders both sides (GPT-2's absolute positions make its
#: left-padded batches differ from its texts alone; XLNet reads the last position)
SIDES = {"gpt2": ("right",), "llama": ("left", "right"), "qwen2": ("left", "right"),
         "deberta-v2": ("right",), "modernbert": ("right",), "albert": ("right",),
         "xlnet": ("left",)}
#: where each head reads the final states, and how each network pads its batches
POOLING = {"gpt2": "last", "llama": "last", "qwen2": "last", "deberta-v2": "cls",
           "modernbert": "cls", "albert": "cls", "xlnet": "last"}
#: cheap options of the slower methods
CHEAP = {"integrated_gradients": {"n_steps": 8}, "lime": {"n_samples": 64},
         "kernel_shap": {"n_samples": 24}, "smoothgrad": {"nt_samples": 3},
         "smoothgrad_integrated_gradients": {"nt_samples": 2, "n_steps": 4},
         "gradient_shap": {"n_samples": 3}}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("architectures")
    return {name: tiny_classifier(root / name, name, labels=("rotten", "fresh"))
            for name in ARCHITECTURES}


@pytest.fixture(scope="module")
def models(folders):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Llama's config names no pad token (tested below)
        return {name: BertTextClassifier.from_pretrained(folder, device="cpu")
                for name, folder in folders.items()}


def _reference(folder, texts, side=None):
    """The checkpoint's own probabilities: the softmax of
    ``AutoModelForSequenceClassification``'s logits on a batch padded on ``side`` (None: each
    text alone); a config without pad id pads with the end-of-text token, as the usual
    recipe does."""
    import transformers

    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        folder, local_files_only=True).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    if model.config.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
        model.config.pad_token_id = tokenizer.eos_token_id
    with torch.no_grad():
        if side is None:
            logits = torch.cat([model(**tokenizer([t], return_tensors="pt")).logits
                                for t in texts])
        else:
            tokenizer.padding_side = side
            logits = model(**tokenizer(texts, padding=True, return_tensors="pt")).logits
    return torch.softmax(logits.double(), -1).numpy()


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_probabilities_are_the_models_own_on_padded_batches(folders, models, name):
    clf = models[name]
    assert type(clf) is TransformersTextClassifier
    assert clf.classes_.tolist() == ["fresh", "rotten"]  # sorted; the head reordered
    assert clf.pooling_ == POOLING[name]
    assert clf.padding_side_ == ("left" if name == "xlnet" else "right")
    proba = clf.predict_proba(TEXTS)
    for side in (*SIDES[name], None):
        np.testing.assert_allclose(proba, _reference(folders[name], TEXTS, side)[:, [1, 0]],
                                   atol=1e-5, rtol=0, err_msg=f"padding {side}")
    single = np.concatenate([clf.predict_proba([text]) for text in TEXTS])
    np.testing.assert_allclose(single, proba, atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_every_method_explains_it_and_integrated_gradients_complete(models, name):
    """Each method at either level, finite and not constant; integrated gradients from the padding
    token complete (from ``"zeros"`` the models that normalise their input embeddings,
    DeBERTa, ModernBERT and the RMSNorm decoders, have no gradient path: their embedding
    norm ignores the scale)."""
    clf = models[name]
    before = {k: v.clone() for k, v in clf.module_.state_dict().items()}
    for method in clf.explain_methods:
        for level in ("piece", "word"):
            explanation = clf.explain(TEXTS[:2], method=method, level=level,
                                      **CHEAP.get(method, {}))
            assert explanation.method == method and len(explanation.values) == 2
            values = np.concatenate(explanation.values)
            assert np.isfinite(values).all(), (method, level)
            # LIME's Lasso may zero every word where only [CLS] / <cls> weighs (never replaced)
            assert np.ptp(values) > 0 or (method, level) == ("lime", "word"), (method, level)
    ig = clf.explain(TEXTS[:2], method="integrated_gradients", n_steps=300, baseline="pad")
    assert np.max(np.abs(ig.completeness_error)) < 1e-2
    after = clf.module_.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not clf.module_.training


def test_words_come_from_the_tokenizers_offsets(models):
    """Byte-level BPE (GPT-2), SentencePiece BPE without a pre-tokenizer (Llama: whitespace
    makes the words), SentencePiece Unigram (DeBERTa) and WordPiece (ALBERT); the special
    tokens (Llama's ``<s>`` before, XLNet's ``<sep> <cls>`` after) belong to no word."""
    text = "A naïve, wonderfully-made film 😀"
    expected = {"gpt2": ["A", "naïve", ",", "wonderfully", "-", "made", "film", "😀"],
                "llama": ["A", "naïve,", "wonderfully-made", "film", "😀"],
                "deberta-v2": ["A", "naïve,", "wonderfully-made", "film", "😀"],
                "albert": ["A", "naïve", ",", "wonderfully", "-", "made", "film", "😀"],
                "xlnet": ["A", "naïve,", "wonderfully-made", "film", "😀"]}
    for name, words in expected.items():
        pieces = models[name].word_pieces([text])[0]
        assert [text[start:end] for start, end in pieces.spans] == words, name
        explanation = models[name].explain([text], method="occlusion", level="word")
        assert explanation.units == [words], name
    llama, xlnet = models["llama"].word_pieces([text])[0], models["xlnet"].word_pieces([text])[0]
    assert llama.pieces[0] == "<s>" and llama.words[0] == -1 and (llama.words[1:] >= 0).all()
    assert xlnet.pieces[-2:] == ["<sep>", "<cls>"] and xlnet.words[-2:].tolist() == [-1, -1]


def test_a_config_without_pad_id_pads_with_its_end_token(folders):
    with pytest.warns(UserWarning, match=r"names no pad_token_id.*'</s>'"):
        clf = TransformersTextClassifier.from_pretrained(folders["llama"], device="cpu")
    assert clf.text_encoder_.settings_["pad_token"] == "</s>"
    assert clf.config_["pad_token_id"] == clf.text_encoder_.pad_token_id_


def test_attention_needs_the_probabilities(models):
    """A module whose attention computes no probabilities (SDPA) is refused by name."""
    clf = copy.deepcopy(models["gpt2"])
    clf.module_.model.set_attn_implementation("sdpa")
    with pytest.raises(ValueError, match=r"returns no attention probabilities .*'sdpa'.*"
                                         r"attn_implementation=\"eager\""):
        clf.explain(TEXTS[:1], method="attention")
    assert clf.explain(TEXTS[:1], method="gradient").values[0].size


@pytest.mark.parametrize("name", ["llama", "xlnet"])
def test_save_load_pickle_clone_and_pipeline(models, name, tmp_path):
    clf = models[name]
    expected = clf.predict_proba(TEXTS)
    explained = clf.explain(TEXTS[:2], method="rollout").values
    loaded = TransformersTextClassifier.load(clf.save(tmp_path / "saved"), device="cpu")
    config = json.loads((tmp_path / "saved" / "config.json").read_text())
    assert config["fitted"]["config"]["model_type"] == name
    assert "id2label" not in config["fitted"]["config"]
    for copy_ in (loaded, pickle.loads(pickle.dumps(clf))):
        np.testing.assert_array_equal(copy_.predict_proba(TEXTS), expected)
        assert (copy_.padding_side_, copy_.pooling_) == (clf.padding_side_, clf.pooling_)
        for a, b in zip(copy_.explain(TEXTS[:2], method="rollout").values, explained, strict=True):
            np.testing.assert_array_equal(a, b)
    assert clone(clf).get_params()["checkpoint"] == clf.checkpoint
    pipeline = make_pipeline(FunctionTransformer(lambda texts: [t.strip() for t in texts]), clf)
    np.testing.assert_array_equal(pipeline.predict_proba(TEXTS), expected)


def test_fit_fine_tunes_it_from_the_checkpoint_or_a_base_model(folders, models, tmp_path):
    clf = models["qwen2"]
    labels = ["fresh", "rotten", "fresh", "rotten", "fresh"]
    refit = clone(clf).set_params(max_epochs=1, lr=1e-9, random_state=0).fit(TEXTS, labels)
    # a negligible step from the checkpoint: its head (outputs matched by name), its output
    np.testing.assert_allclose(refit.predict_proba(TEXTS), clf.predict_proba(TEXTS), atol=1e-5)
    assert (refit.padding_side_, refit.pooling_) == ("right", "last")
    with pytest.warns(UserWarning, match="output layer is new"):
        three = clone(clf).set_params(max_epochs=1, random_state=0).fit(
            TEXTS, ["a", "b", "c", "a", "b"])
    assert three.predict_proba(TEXTS).shape == (5, 3)
    base = tiny_classifier(tmp_path / "base", "gpt2", head=False)
    with pytest.warns(UserWarning, match="initialised at random"):
        tuned = TransformersTextClassifier(checkpoint=base, max_length=64, max_epochs=2,
                                           lr=1e-2, random_state=0, device="cpu")
        tuned.fit(TEXTS, labels)
    assert tuned.pooling_ == "last" and tuned.predict(TEXTS).shape == (5,)
    before = tuned.predict_proba(TEXTS)
    tuned.set_params(checkpoint=str(tmp_path / "missing_folder"))
    with pytest.raises(ValueError, match="missing_folder"):  # a refused refit: unchanged
        tuned.fit(TEXTS, labels)
    np.testing.assert_array_equal(tuned.predict_proba(TEXTS), before)


def test_a_b_cos_encoder_distils_it(models):
    """Any architecture teaches a B-cos encoder (its probabilities of the training texts)."""
    from interpretable import BcosTextClassifier

    tiny = {"vocab_size": 30522, "hidden_size": 8, "num_hidden_layers": 1,
            "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 64,
            "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1}
    labels = ["fresh", "rotten", "fresh", "rotten", "fresh"]
    student = BcosTextClassifier(checkpoint=tiny, teacher=models["gpt2"], max_epochs=1,
                                 random_state=0, device="cpu").fit(TEXTS, labels)
    assert student.predict_proba(TEXTS).shape == (5, 2)
    assert pickle.loads(pickle.dumps(student)).teacher is None  # borrowed, never stored


def _attributes(module):
    """Every submodule's attributes (tensors, hooks and children by identity)."""
    def frozen(value):
        if isinstance(value, dict):
            return {k: frozen(v) for k, v in value.items()}
        return value if isinstance(value, (bool, int, float, str, type(None))) else id(value)

    return {name: frozen(vars(m)) for name, m in module.named_modules()}


def test_threads_get_the_sequential_results_and_leave_the_model_unchanged(models):
    clf = models["llama"]
    calls = [(method, text) for method in clf.explain_methods for text in TEXTS[:3]]

    def run(call):
        method, text = call
        if method == "proba":
            return clf.predict_proba([text])[0]
        return clf.explain([text], method=method, **CHEAP.get(method, {})).values[0]

    calls += [("proba", text) for text in TEXTS]
    sequential = [run(call) for call in calls]
    state, attributes = copy.deepcopy(clf.module_.state_dict()), _attributes(clf.module_)
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(run, calls * 3))
    for i, values in enumerate(threaded):
        np.testing.assert_array_equal(values, sequential[i % len(calls)], err_msg=calls[i % len(
            calls)][0])
    assert _attributes(clf.module_) == attributes
    assert all(torch.equal(v, state[k]) for k, v in clf.module_.state_dict().items())


def test_the_report_ranks_its_methods(models):
    from interpretable.metrics import evaluate_explanations

    report = evaluate_explanations(models["gpt2"], TEXTS[:3], level="word",
                                   methods=["attention", "integrated_gradients", "occlusion"])
    frame = report.to_frame()
    assert set(frame["method"]) == {"attention", "integrated_gradients", "occlusion"}
    assert report.summary().attrs["verdict"]


# --------------------------------------------------------------------------- refusals
def test_a_checkpoint_without_a_trained_head_is_refused(folders, tmp_path):
    from interpretable.datasets import load_minilm

    with pytest.raises(ValueError, match=r"no trained classification head: classifier.bias, "
                                         r"classifier.weight are missing.*BertTextClassifier\("
                                         r"checkpoint=.*\).fit\(X, y\).*BcosTextClassifier"):
        BertTextClassifier.from_pretrained(load_minilm(), device="cpu")
    base = tiny_classifier(tmp_path / "gpt2-base", "gpt2", head=False)
    for cls in (BertTextClassifier, TransformersTextClassifier):
        with pytest.raises(ValueError, match=r"no trained classification head: score.weight "
                                             r"is missing.*TransformersTextClassifier\("
                                             r"checkpoint=.*\).fit\(X, y\)"):
            cls.from_pretrained(base, device="cpu")


def test_multi_label_and_regression_heads_are_refused(tmp_path):
    multi = tiny_classifier(tmp_path / "multi", "gpt2", problem_type="multi_label_classification")
    with pytest.raises(ValueError, match="multi-label classifier.*sigmoid"):
        BertTextClassifier.from_pretrained(multi, device="cpu")
    regression = tiny_classifier(tmp_path / "regression", "albert", labels=("score",))
    with pytest.raises(ValueError, match="regression"):
        TransformersTextClassifier.from_pretrained(regression, device="cpu")


def test_the_native_families_still_refuse_other_architectures(folders):
    with pytest.raises(ValueError, match="cannot convert a 'gpt2' encoder: the supported "
                                         "model types are .*TransformersTextClassifier"):
        BertTextClassifier(checkpoint=folders["gpt2"], max_epochs=1).fit(TEXTS, ["a", "b"] * 2
                                                                         + ["a"])


def test_a_partial_hub_snapshot_names_the_id(folders, tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    revision = "0123456789abcdef0123456789abcdef01234567"
    root = tmp_path / "hub" / "models--someone--tiny-gpt2"
    (root / "refs").mkdir(parents=True)
    (root / "refs" / "main").write_text(revision)
    shutil.copytree(folders["gpt2"], root / "snapshots" / revision)
    clf = TransformersTextClassifier.from_pretrained("someone/tiny-gpt2", device="cpu")
    np.testing.assert_allclose(clf.predict_proba(TEXTS), _reference(folders["gpt2"], TEXTS,
                                                                    "right")[:, [1, 0]],
                               atol=1e-5)
    (root / "snapshots" / revision / "model.safetensors").unlink()
    with pytest.raises(ValueError, match=r"'someone/tiny-gpt2' is only partly in the cache .*"
                                         r"no weights.*HF_HUB_OFFLINE"):
        BertTextClassifier.from_pretrained("someone/tiny-gpt2", device="cpu")
