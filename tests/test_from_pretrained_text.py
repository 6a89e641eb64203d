"""A fine-tuned ``transformers`` sequence classifier as a fitted estimator (``from_pretrained``):
its own probabilities, every explanation method, persistence, pipelines, fine-tuning from it,
and Hub ids resolved through a local ``huggingface_hub`` cache (never the network)."""
import builtins
import io
import os
import pickle
import shutil
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from families import FAMILIES, MAX_POSITIONS, tiny_checkpoint
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from interpretable import BcosTextClassifier, BertTextClassifier
from interpretable.estimators.methods import explainers_for

pytest.importorskip("transformers")

TEXTS = ["A naïve, wonderfully-made film! Not bad at all.", "The ending makes no sense.",
         "Great actors cannot save a bad script.", "We laughed, we cried 😀",
         "Numbers like 1234 and 3.14 appear too, in a text long enough to be padded."]


def _reference_proba(folder, texts, dtype=torch.float32):
    """The checkpoint's own probabilities: softmax of AutoModelForSequenceClassification."""
    import transformers

    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        folder, local_files_only=True).to(dtype).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    with torch.no_grad():
        batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
        return torch.softmax(model(**batch).logits.to(torch.float64), -1).numpy()


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("classifiers")
    return {family: tiny_checkpoint(root / family, family, labels=["rotten", "fresh"])
            for family in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
def test_probabilities_equal_the_checkpoints_own(checkpoints, family):
    folder = checkpoints[family]
    clf = BertTextClassifier.from_pretrained(folder, device="cpu")
    assert clf.classes_.tolist() == ["fresh", "rotten"]  # sorted; the head reordered
    reference = _reference_proba(folder, TEXTS)[:, [1, 0]]
    np.testing.assert_allclose(clf.predict_proba(TEXTS), reference, atol=1e-6, rtol=0)
    assert clf.predict(TEXTS).tolist() == clf.classes_[reference.argmax(1)].tolist()


def test_camembert_checkpoint(tmp_path):
    import transformers

    folder = tiny_checkpoint(tmp_path / "xlmr", "xlm-roberta", labels=["neg", "pos"])
    config = transformers.AutoConfig.from_pretrained(folder)
    fields = {k: v for k, v in config.to_dict().items() if k not in ("model_type",)}
    camembert = transformers.CamembertConfig(**fields)
    model = transformers.AutoModelForSequenceClassification.from_config(camembert)
    model.save_pretrained(tmp_path / "camembert")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        if (folder / name).is_file():
            shutil.copy(folder / name, tmp_path / "camembert" / name)
    clf = BertTextClassifier.from_pretrained(tmp_path / "camembert", device="cpu")
    np.testing.assert_allclose(clf.predict_proba(TEXTS),
                               _reference_proba(tmp_path / "camembert", TEXTS), atol=1e-6)


def test_every_method_explains_it_and_completeness_holds(checkpoints):
    clf = BertTextClassifier.from_pretrained(checkpoints["roberta"], device="cpu")
    before = {k: v.clone() for k, v in clf.module_.state_dict().items()}
    for method in [explainer.name for explainer in explainers_for(clf)]:
        explanation = clf.explain(TEXTS[:2], method=method)
        assert len(explanation.values) == 2 and explanation.method == method
    ig = clf.explain(TEXTS[:2], method="integrated_gradients", n_steps=300)
    assert np.max(np.abs(ig.completeness_error)) < 1e-2
    after = clf.module_.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not clf.module_.training


def test_classes_reorder_the_outputs_exactly_and_generic_labels_warn(tmp_path):
    folder = tiny_checkpoint(tmp_path / "m", "bert", labels=["LABEL_0", "LABEL_1", "LABEL_2"])
    with pytest.warns(UserWarning, match="classes="):
        generic = BertTextClassifier.from_pretrained(folder, device="cpu")
    assert generic.classes_.tolist() == ["LABEL_0", "LABEL_1", "LABEL_2"]
    named = BertTextClassifier.from_pretrained(folder, classes=["z", "a", "m"], device="cpu")
    assert named.classes_.tolist() == ["a", "m", "z"]
    np.testing.assert_array_equal(named.decision_function(TEXTS),  # the rows permuted: exact
                                  generic.decision_function(TEXTS)[:, [1, 2, 0]])
    with pytest.raises(ValueError, match="name each of the checkpoint's 3 outputs once"):
        BertTextClassifier.from_pretrained(folder, classes=["a", "b"], device="cpu")
    with pytest.raises(ValueError, match="once"):
        BertTextClassifier.from_pretrained(folder, classes=["a", "a", "b"], device="cpu")


def test_save_load_pickle_clone_and_pipeline(checkpoints, tmp_path):
    clf = BertTextClassifier.from_pretrained(checkpoints["distilbert"], device="cpu")
    expected = clf.predict_proba(TEXTS)
    loaded = BertTextClassifier.load(clf.save(tmp_path / "saved"), device="cpu")
    np.testing.assert_array_equal(loaded.predict_proba(TEXTS), expected)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(clf)).predict_proba(TEXTS), expected)
    assert clone(clf).get_params()["pooling"] == "checkpoint"
    pipeline = make_pipeline(FunctionTransformer(lambda texts: [t.strip() for t in texts]), clf)
    np.testing.assert_array_equal(pipeline.predict_proba(TEXTS), expected)


def test_fit_fine_tunes_from_the_checkpoint_head_included(checkpoints):
    folder = checkpoints["electra"]
    clf = BertTextClassifier.from_pretrained(folder, device="cpu")
    head = clf.module_.output_layer.weight.detach().clone()
    labels = ["fresh", "rotten", "fresh", "rotten", "fresh"]
    refit = clone(clf).set_params(max_epochs=1, lr=1e-9, random_state=0).fit(TEXTS, labels)
    # a negligible step from the checkpoint: its head (outputs matched by name) and probabilities
    np.testing.assert_allclose(refit.module_.output_layer.weight.detach(), head, atol=1e-6)
    np.testing.assert_allclose(refit.predict_proba(TEXTS), clf.predict_proba(TEXTS), atol=1e-5)
    with pytest.warns(UserWarning, match="output layer is new"):
        three = clone(clf).set_params(max_epochs=1, random_state=0).fit(
            TEXTS, ["a", "b", "c", "a", "b"])
    assert three.predict_proba(TEXTS).shape == (5, 3)


def test_a_refused_checkpoint_leaves_the_fitted_model(checkpoints, tmp_path):
    clf = BertTextClassifier.from_pretrained(checkpoints["bert"], device="cpu")
    expected = clf.predict_proba(TEXTS)
    clf.set_params(checkpoint=str(tmp_path / "missing_folder"))
    with pytest.raises(ValueError, match="missing_folder"):
        clf.fit(TEXTS, ["fresh", "rotten", "fresh", "rotten", "fresh"])
    np.testing.assert_array_equal(clf.predict_proba(TEXTS), expected)


# --------------------------------------------------------------------------- the Hub cache
def _config_reads(monkeypatch) -> Counter:
    """Count the opens of every ``config.json`` by the name of its folder (``transformers``
    opens with ``open``, ``pathlib`` with ``io.open``: the same function)."""
    reads, real = Counter(), builtins.open

    def counting_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and Path(file).name == "config.json":
            reads[Path(file).parent.name] += 1
        return real(file, *args, **kwargs)

    for module in (builtins, io):
        monkeypatch.setattr(module, "open", counting_open)
    return reads


def test_a_fit_resolves_the_checkpoint_and_reads_each_config_once(checkpoints, tmp_path,
                                                                   monkeypatch):
    """The student's checkpoint (its config read for the encoder, the tokenizer and the
    classifier head alike) and a ``transformers`` teacher: one read of each config.json; the
    bundled MiniLM (``checkpoint=None``) is looked up once."""
    import interpretable.datasets

    y = ["fresh", "rotten", "fresh", "rotten", "fresh"]
    student = tiny_checkpoint(tmp_path / "student", "bert")
    reads = _config_reads(monkeypatch)
    BcosTextClassifier(checkpoint=student, teacher=checkpoints["bert"], max_length=16,
                       max_epochs=1, device="cpu").fit(TEXTS, y)
    assert reads == {"student": 1, "bert": 1}  # before: student 2, teacher 3
    reads.clear()
    BertTextClassifier(checkpoint=checkpoints["roberta"], pooling="checkpoint", max_length=16,
                       max_epochs=1, device="cpu").fit(TEXTS, y)
    assert reads == {"roberta": 1}  # before: 4
    lookups, load_minilm = Counter(), interpretable.datasets.load_minilm

    def counting_load_minilm():
        lookups["minilm"] += 1
        return load_minilm()

    monkeypatch.setattr(interpretable.datasets, "load_minilm", counting_load_minilm)
    reads.clear()
    BertTextClassifier(max_length=16, max_epochs=1, device="cpu").fit(TEXTS, y)
    assert lookups == {"minilm": 1} and sum(reads.values()) == 1  # before: 2 and 2


def _cache_layout(cache, repo_id, folder, revision="0123456789abcdef0123456789abcdef01234567"):
    """What ``huggingface_hub`` writes for a downloaded repository: refs/main naming the
    commit, the files under snapshots/<commit>/ (copies instead of links into blobs/)."""
    root = cache / ("models--" + repo_id.replace("/", "--"))
    (root / "refs").mkdir(parents=True)
    (root / "refs" / "main").write_text(revision)
    shutil.copytree(folder, root / "snapshots" / revision)
    return root / "snapshots" / revision


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def test_hub_id_resolves_through_the_cache_offline(checkpoints, hub_cache):
    _cache_layout(hub_cache, "someone/tiny-sentiment", checkpoints["bert"])
    clf = BertTextClassifier.from_pretrained("someone/tiny-sentiment", device="cpu")
    reference = _reference_proba(checkpoints["bert"], TEXTS)[:, [1, 0]]
    np.testing.assert_allclose(clf.predict_proba(TEXTS), reference, atol=1e-6)
    # checkpoint= and teacher= take Hub ids too
    student = BcosTextClassifier(checkpoint="someone/tiny-sentiment",
                                 teacher="someone/tiny-sentiment", max_length=16, max_epochs=1,
                                 random_state=0, device="cpu")
    student.fit(TEXTS, ["fresh", "rotten", "fresh", "rotten", "fresh"])
    assert student.predict_proba(TEXTS).shape == (5, 2)


def test_from_pretrained_resolves_a_hub_id_and_reads_its_config_once(checkpoints, hub_cache,
                                                                     monkeypatch):
    """``max_length=None`` takes the checkpoint's positions from the config read for the
    model, not from a read of its own."""
    from interpretable.estimators.transformer import _checkpoint as checkpoint

    snapshot = _cache_layout(hub_cache, "someone/tiny-sentiment", checkpoints["bert"])
    resolved, resolve = Counter(), checkpoint.resolve_model_folder

    def counting_resolve(name, **kwargs):
        resolved[name] += 1
        return resolve(name, **kwargs)

    monkeypatch.setattr(checkpoint, "resolve_model_folder", counting_resolve)
    reads = _config_reads(monkeypatch)
    clf = BertTextClassifier.from_pretrained("someone/tiny-sentiment", device="cpu")
    assert clf.max_length == MAX_POSITIONS  # the checkpoint's own
    assert resolved == {"someone/tiny-sentiment": 1}  # before: 2
    assert reads == {snapshot.name: 1}  # before: 2


def test_missing_hub_model_names_the_id_the_cache_and_the_fix(hub_cache):
    with pytest.raises(ValueError) as error:
        BertTextClassifier.from_pretrained("someone/not-downloaded", device="cpu")
    message = str(error.value)
    assert "someone/not-downloaded" in message and str(hub_cache) in message
    assert "HF_HUB_OFFLINE" in message


def test_a_mistyped_folder_is_named_as_a_folder(tmp_path, hub_cache):
    with pytest.raises(ValueError, match="no folder|no local folder") as error:
        BertTextClassifier.from_pretrained(tmp_path / "no" / "such" / "folder", device="cpu")
    assert str(tmp_path / "no" / "such" / "folder") in str(error.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="without config.json"):
        BertTextClassifier.from_pretrained(tmp_path / "empty", device="cpu")


def test_hub_code_files_are_never_fetched_or_run(checkpoints, hub_cache):
    snapshot = _cache_layout(hub_cache, "someone/with-code", checkpoints["bert"])
    (snapshot / "modeling_evil.py").write_text("raise SystemExit('ran code from the Hub')\n")
    import json

    config = json.loads((snapshot / "config.json").read_text())
    config["auto_map"] = {"AutoModelForSequenceClassification": "modeling_evil.Evil"}
    (snapshot / "config.json").write_text(json.dumps(config))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = BertTextClassifier.from_pretrained("someone/with-code", device="cpu")
    assert clf.predict_proba(TEXTS).shape == (5, 2)
