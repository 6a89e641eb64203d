"""BcosSimpleViTClassifier (the B-cos v2 ViTs) and pretrained checkpoints: from_pretrained from
a checkpoint in the ``bcos`` layout (equal logits, complete explanations, ImageNet class
names), refused files, fine-tuning that learns, inputs of any size, clone / save / load, the
parameter rules, and explanation batches bounded in memory. A tiny v2 model stands in for the
released ones (nothing is downloaded)."""
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from interpretable import BcosSimpleViTClassifier, BcosViTClassifier
from interpretable.datasets._images import eval_crops, imagenet_class_names
from interpretable.estimators.core._nets import LearningRateSchedule
from interpretable.estimators.vision import _base as vision_base
from interpretable.nn._losses import OneHotBCE
from interpretable.nn.bcos._layers import encode_image
from interpretable.nn.bcos._simple_vit import BcosSimpleViT
from interpretable.nn.bcos._zoo import checkpoint_path, to_bcos_state_dict

TINY = dict(dim=16, depth=2, heads=2, mlp_dim=32, patch_size=8)  # token stride 8
FIT = dict(architecture=TINY, image_size=32, max_epochs=1, batch_size=16, random_state=0,
           device="cpu")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """(model, path): a tiny ImageNet-headed v2 ViT saved in the bcos layout."""
    torch.manual_seed(0)
    model = BcosSimpleViT(**TINY, num_classes=1000, image_size=32)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:  # LayerNorm weights away from ones
                p.uniform_(0.5, 1.5)
    path = tmp_path_factory.mktemp("checkpoint") / "tiny.pth"
    torch.save(to_bcos_state_dict(model), path)
    return model.eval(), path


@pytest.fixture(scope="module")
def imagenet(checkpoint):
    return BcosSimpleViTClassifier.from_pretrained(checkpoint[1], **FIT)


def _photos(n=4, seed=0):
    return np.random.RandomState(seed).randint(0, 256, (n, 40, 56, 3), dtype=np.uint8)


RGB, CMY = np.eye(3), 1 - np.eye(3)


def _shapes(n, seed=0, colors=RGB, side=16):
    """Squares on grey whose color (one of ``colors``) is the class, RGB 32 × 32."""
    rng = np.random.RandomState(seed)
    y = rng.randint(len(colors), size=n)
    X = np.full((n, 32, 32, 3), 0.5, np.float32)
    for i, c in enumerate(y):
        top, left = rng.randint(0, 32 - side, size=2)
        X[i, top:top + side, left:left + side] = colors[c]
    return X, y


@pytest.fixture(scope="module")
def color_checkpoint(tmp_path_factory):
    """A tiny v2 ViT trained on red / green / blue squares, saved in the bcos layout."""
    clf = BcosSimpleViTClassifier(**{**FIT, "image_size": None, "max_epochs": 4})
    clf.fit(*_shapes(240))
    assert clf.score(*_shapes(120, seed=1)) == 1.0
    path = tmp_path_factory.mktemp("colors") / "rgb.pth"
    torch.save(to_bcos_state_dict(clf.module_), path)
    return clf.module_, path


# ---------------------------------------------------------------------------- from_pretrained
def test_from_pretrained_gives_the_checkpoint_logits_and_imagenet_names(checkpoint, imagenet):
    model, _ = checkpoint
    names = np.asarray(imagenet_class_names())
    order = np.argsort(names)
    assert imagenet.classes_.tolist() == names[order].tolist()  # sorted, rows permuted
    X = _photos()
    crops, _ = eval_crops(X, 37, 32)
    with torch.no_grad():
        expected = model(encode_image(crops)).numpy()
    np.testing.assert_allclose(imagenet.decision_function(X), expected[:, order], rtol=1e-5,
                               atol=1e-6)
    assert imagenet.predict(X).tolist() == names[expected.argmax(1)].tolist()
    assert imagenet.fitted_params_["pretrained"] == checkpoint[1]


def test_v2_explanations_are_complete_with_the_positional_term(imagenet):
    X = _photos()
    exp = imagenet.explain(X)
    assert exp.completeness_error.max() <= 1e-4
    exp64 = imagenet.explain(X, dtype="float64")
    assert exp64.completeness_error.max() <= 1e-10
    positional = exp64.bias - imagenet.module_.logit_bias
    assert np.abs(positional).min() > 1e-3  # without it the explanation would be incomplete
    np.testing.assert_allclose(exp64.values.sum((1, 2)) + exp64.bias, exp64.logit, atol=1e-10)
    assert exp.weights.shape == (4, 32, 32, 6) and exp.images.shape == (4, 32, 32, 3)


def test_inputs_of_any_size_and_kind_are_cropped_as_the_model_sees_them(imagenet, tmp_path):
    path = tmp_path / "photo.png"
    Image.fromarray(_photos(1, seed=1)[0][:33, :33]).save(path)
    images = [_photos(1)[0], Image.fromarray(_photos(1, seed=2)[0][:50, :30]), str(path),
              np.random.RandomState(3).rand(36, 36)]  # grey float becomes RGB
    exp = imagenet.explain(images, target=imagenet.classes_[0])
    crops, boxes = eval_crops(images, 37, 32, channels_last=True)
    np.testing.assert_array_equal(exp.images, crops.numpy())
    np.testing.assert_allclose(exp.crop_boxes, np.asarray(boxes))
    # 40 × 30 -> 49 × 37, crop rows 8..40, columns 2..34, in source pixels
    assert exp.crop_boxes[1].tolist() == pytest.approx([8 * 40 / 49, 2 * 30 / 37, 40 * 40 / 49,
                                                        34 * 30 / 37])
    single = [imagenet.predict([image])[0] for image in images]
    assert imagenet.predict(images).tolist() == single
    assert exp[2:].crop_boxes.shape == (2, 4)


# ---------------------------------------------------------------------------- refused files
def _refused(error, match, *args, **kwargs):
    with pytest.raises(error, match=match):
        BcosSimpleViTClassifier.from_pretrained(*args, **{**FIT, **kwargs})


class _Exploit:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return Path.touch, (Path(self.marker),)


def test_corrupt_mismatched_and_hostile_checkpoints_are_refused(checkpoint, tmp_path):
    _, path = checkpoint
    truncated = tmp_path / "truncated.pth"
    truncated.write_bytes(path.read_bytes()[:1000])
    _refused(ValueError, "not a readable PyTorch checkpoint", truncated)
    _refused(ValueError, r"does not fit the architecture.*mis-shaped", path,
             architecture={**TINY, "dim": 32})
    state = torch.load(path)
    del state["0.linear_head.norm.weight"]
    torch.save(state, tmp_path / "missing.pth")
    _refused(ValueError, r"missing keys: 0\.linear_head\.norm\.weight", tmp_path / "missing.pth")
    marker = tmp_path / "pwned"
    torch.save({"0.x": _Exploit(marker)}, tmp_path / "hostile.pth")
    _refused(ValueError, "was refused", tmp_path / "hostile.pth")
    (tmp_path / "raw.pth").write_bytes(pickle.dumps(_Exploit(marker)))
    _refused(ValueError, "not a readable PyTorch checkpoint|was refused", tmp_path / "raw.pth")
    assert not marker.exists()
    _refused(ValueError, "cannot tell the architecture", path, architecture=None)
    _refused(FileNotFoundError, "no checkpoint file", tmp_path / "absent.pth")
    with pytest.raises(ValueError, match="does not fit the architecture"):  # at fit, too
        BcosSimpleViTClassifier(**{**FIT, "architecture": {**TINY, "depth": 3}},
                                pretrained=path).fit(*_shapes(8))


def test_released_checkpoints_come_only_from_the_hub_cache_unless_download(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path))
    name = "simple_vit_ti_patch16_224"
    _refused(FileNotFoundError, "download=True", name, architecture=None)
    with pytest.raises(FileNotFoundError, match="download"):
        BcosSimpleViTClassifier(pretrained=name, max_epochs=1).fit(*_shapes(4))
    calls = []

    def fake_download(url, dst, hash_prefix=None, progress=True):
        calls.append((url, hash_prefix))
        Path(dst).write_bytes(b"not the released file")

    monkeypatch.setattr(torch.hub, "download_url_to_file", fake_download)
    _refused(ValueError, "SHA-256 prefix 4b0824b1c1", name, architecture=None, download=True)
    assert calls == [(f"https://github.com/B-cos/B-cos-v2/releases/download/v0.0.1-weights/"
                      f"{checkpoint_path(name).name}", "4b0824b1c1")]


def test_offline_download_names_the_url_the_cache_and_the_alternative(tmp_path, monkeypatch):
    """No network: torch.hub's opener raises URLError (nothing is downloaded); from_pretrained
    raises an OSError naming the URL, the cache path and the local-path alternative, and
    leaves no file in the cache."""
    import urllib.error

    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path))
    opened = []

    def offline(request, *args, **kwargs):
        opened.append(getattr(request, "full_url", request))
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(torch.hub, "urlopen", offline)
    name = "vitc_ti_patch1_14"
    cached = checkpoint_path(name)
    with pytest.raises(OSError) as raised:
        BcosSimpleViTClassifier.from_pretrained(name, download=True)
    message = str(raised.value)
    assert not isinstance(raised.value, urllib.error.URLError)
    assert opened and opened[0] in message and "releases/download" in opened[0]
    assert str(cached) in message and "name resolution" in message
    assert "BcosSimpleViTClassifier.from_pretrained('/path/to/" in message
    assert not cached.exists()


# ---------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("params, match", [
    (dict(), r"needs architecture= .* or pretrained="),
    (dict(architecture="holistic"), "the network of BcosViTClassifier"),
    (dict(architecture="holistic", pretrained="simple_vit_ti_patch16_224"),
     "the network of BcosViTClassifier"),
    (dict(architecture={**TINY, "num_classes": 3}), r"sets \['num_classes'\], which the "
                                                    "estimator sets"),
    (dict(architecture={**TINY, "width": 3}), r"unknown \['width'\]"),
    (dict(architecture={**TINY, "dim": 18}), "divisible by heads=2 and by 4"),
    (dict(architecture="vit_xl"), "is not a released name"),
    (dict(architecture="vitc_ti_patch1_14", pretrained="simple_vit_ti_patch16_224"),
     "holds the weights of simple_vit_ti_patch16_224"),
    (dict(pretrained="my_model.pth"), "cannot tell the architecture"),
    (dict(architecture=TINY, finetune="head"), "without pretrained= use finetune='all'"),
    (dict(architecture=TINY, pretrained="m.pth", finetune=3), "3 blocks, but the architecture "
                                                              "has 2"),
])
def test_parameter_rules(params, match):
    with pytest.raises(ValueError, match=match):
        BcosSimpleViTClassifier(max_epochs=1, **params).fit(*_shapes(4))


def test_one_estimator_per_network():
    """The holistic ViT is BcosViTClassifier's alone: its parameters are not
    BcosSimpleViTClassifier's, nor the v2 ones BcosViTClassifier's (a TypeError, as for any
    unknown parameter); BcosSimpleViTClassifier has no default network."""
    with pytest.raises(ValueError, match="architecture= .* or pretrained="):
        BcosSimpleViTClassifier().fit(*_shapes(4))
    for params in (dict(architecture=TINY), dict(pretrained="simple_vit_ti_patch16_224"),
                   dict(finetune="head")):
        with pytest.raises(TypeError, match="unexpected keyword"):
            BcosViTClassifier(**params)
    with pytest.raises(TypeError, match="unexpected keyword"):
        BcosSimpleViTClassifier(TINY, embed_dim=32)
    assert not hasattr(BcosViTClassifier, "from_pretrained")
    clf = BcosViTClassifier(max_epochs=1, patch_size=4, embed_dim=8, depth=1, num_heads=2,
                            stem_channels=(4,)).fit(*_shapes(8))
    assert clf.crop_size_ is None and not hasattr(clf, "architecture_")
    assert type(clf.module_).__name__ == "BcosViT" and clf.warmup == 0.0
    with pytest.raises(ValueError, match=r"size \(40, 56\)"):  # fixed input size from fit
        clf.predict(_photos())


# ---------------------------------------------------------------------------- fine-tuning
def test_fine_tuning_learns_and_trains_only_what_finetune_says(color_checkpoint):
    """From weights trained on red / green / blue squares to cyan / magenta / yellow ones."""
    model, path = color_checkpoint
    X, y = _shapes(240, seed=2, colors=CMY, side=12)
    X_test, y_test = _shapes(120, seed=3, colors=CMY, side=12)
    before = model.state_dict()
    trained = {"head": {"linear_head"}, 1: {"linear_head", "transformer.encoder_1"},
               "all": {"linear_head", "transformer.encoder_0", "transformer.encoder_1",
                       "to_patch_embedding"}}
    for finetune, parts in trained.items():
        clf = BcosSimpleViTClassifier(pretrained=path, finetune=finetune,
                                      **{**FIT, "image_size": None, "max_epochs": 4}).fit(X, y)
        assert clf.score(X_test, y_test) >= 0.9, finetune  # chance: 1/3
        after = clf.module_.state_dict()
        changed = {".".join(k.split(".")[:2 if k.startswith("transformer") else 1])
                   for k in after if not k.startswith("linear_head.linear")
                   and not torch.equal(after[k], before[k])}
        assert changed == parts, finetune
        assert all(p.requires_grad for p in clf.module_.parameters())
    assert clf.classes_.tolist() == [0, 1, 2] and clf.module_.linear_head.linear.out_features == 3


def test_the_new_classifier_starts_from_the_class_means_of_the_features(color_checkpoint):
    model, path = color_checkpoint
    X, y = _shapes(60, seed=2, colors=CMY, side=12)
    clf = BcosSimpleViTClassifier(pretrained=path, finetune="head",
                                  **{**FIT, "image_size": None})
    clf.set_params(lr=1e-12, warmup=0.0).fit(X, y)  # (almost) no step: the imprinted start
    features = clf._features(model, X).double()
    centred = features - features.mean(0)
    means = torch.stack([centred[torch.as_tensor(y) == k].mean(0) for k in range(3)])
    rows = clf.module_.linear_head.linear.weight.double()
    torch.testing.assert_close(rows / rows.norm(dim=1, keepdim=True),
                               means / means.norm(dim=1, keepdim=True), rtol=0, atol=1e-6)
    assert clf.score(X, y) == 1.0


def test_losses_stay_finite_on_degenerate_images_and_extreme_logits():
    logits = torch.tensor([[1e4, -1e4, 0.0], [-3e38, 3e38, 1.0]], requires_grad=True)
    for off in (0.0, "uniform"):
        loss = OneHotBCE(off)(logits, torch.tensor([0, 2]))
        gradient, = torch.autograd.grad(loss, logits)
        assert torch.isfinite(loss) and torch.isfinite(gradient).all()
    X = np.concatenate([np.zeros((8, 32, 32, 3)), np.ones((8, 32, 32, 3))])
    y = [0] * 8 + [1] * 8
    clf = BcosSimpleViTClassifier(**{**FIT, "image_size": None, "max_epochs": 10}).fit(X, y)
    assert all(np.isfinite(h["train_loss"]) for h in clf.history_)
    assert clf.score(X, y) == 1.0


def test_warm_up_then_step_decay():
    schedule = LearningRateSchedule(warmup=0.25, decay="step", decay_at=0.75)
    schedule.total_, schedule.steps_per_epoch_ = 16, 2  # 8 epochs of 2 steps, decay after 6
    assert [schedule.factor(t) for t in range(16)] == [0.25, 0.5, 0.75, 1, 1, 1, 1, 1, 1, 1,
                                                       1, 1, 0.1, 0.1, 0.1, 0.1]
    clf = BcosSimpleViTClassifier(pretrained="m.pth", architecture=TINY, max_epochs=10,
                                  batch_size=10)
    phase = clf._phase(95)  # pretrained: 10 % warm-up, the paper's step decay
    name, schedule = phase["callbacks"][0]
    assert name == "lr_schedule" and (schedule.warmup, schedule.decay) == (0.1, "step")
    assert phase["optimizer__param_groups"] == [("linear_head.*", {"lr": 1e-2})]
    scratch = clf.set_params(pretrained=None)._phase(95)["callbacks"][0][1]
    assert scratch.warmup == 0 and scratch.decay_at == clf.lr_decay_at


def test_clone_and_grid_search_start_from_the_pretrained_weights(imagenet, checkpoint):
    X, y = _shapes(32)
    search = GridSearchCV(clone(imagenet).set_params(finetune="head", max_epochs=1),
                          {"lr": [1e-2, 1e-3]}, cv=2).fit(X, y)
    best = search.best_estimator_
    assert best.classes_.tolist() == [0, 1, 2] and best.pretrained == checkpoint[1]
    source, tuned = checkpoint[0].state_dict(), best.module_.state_dict()
    assert all(torch.equal(tuned[k], v) for k, v in source.items() if "linear_head" not in k)


def test_save_and_load_pretrained_and_fine_tuned_models(imagenet, checkpoint, tmp_path):
    X = _photos()
    tuned = BcosSimpleViTClassifier(pretrained=checkpoint[1], finetune="head", **FIT)
    tuned.fit(*_shapes(16))
    for est in (imagenet, tuned):
        path = est.save(tmp_path / type(est.module_).__name__ / str(len(est.classes_)))
        loaded = BcosSimpleViTClassifier.load(path, device="cpu")
        np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))
        np.testing.assert_array_equal(loaded.explain(X).values, est.explain(X).values)
        assert loaded.architecture_ == est.architecture_ and loaded.crop_size_ == 32
    assert tuned.architecture_["num_classes"] == 3


# ---------------------------------------------------------------------------- inference
def test_post_hoc_methods_on_non_square_v2_inputs():
    X = np.random.RandomState(0).rand(6, 24, 40, 3).astype(np.float32)
    clf = BcosSimpleViTClassifier(**{**FIT, "image_size": None}).fit(X, [0, 1] * 3)
    assert clf.module_.grid_size == (3, 5)
    for method in clf.explain_methods:
        options = {"n_steps": 4} if method == "integrated_gradients" else {}
        exp = clf.explain(X[:2], method=method, **options)
        assert exp.values.shape == (2, 24, 40) and np.isfinite(exp.values).all(), method
    exp = clf.explain(X[:2], by="head", dtype="float64")  # exact split per attention head
    assert exp.component_names == ["tokens", "layer0.head0", "layer0.head1", "layer0.mlp",
                                   "layer1.head0", "layer1.head1", "layer1.mlp"]
    np.testing.assert_allclose(exp.components.sum(1), exp.values, rtol=0, atol=1e-12)
    assert exp.completeness_error.max() <= 1e-10


def test_explanation_batches_are_bounded_in_memory(imagenet, monkeypatch):
    X = _photos(12)
    x = imagenet.encode(X).inputs["x"]
    # Only this model's estimate: other tests' models see the same image size.
    monkeypatch.setattr(vision_base, "_BYTES_PER_IMAGE", {})
    full = imagenet.explain(X)
    (per_image,) = vision_base._BYTES_PER_IMAGE.values()
    monkeypatch.setattr(vision_base, "INFERENCE_MEMORY", 3 * per_image)
    assert [len(range(*rows.indices(12))) for rows, _ in imagenet.iter_batches({"x": x})] == \
        [3, 3, 3, 3]
    assert len(list(imagenet.iter_batches({"x": x}, batch_size=12))) == 1  # explicit: as asked
    bounded = imagenet.explain(X)
    np.testing.assert_allclose(bounded.values, full.values, rtol=1e-5, atol=1e-6)
    model = BcosSimpleViT(**TINY, num_classes=3, image_size=64)
    small, large = (vision_base.activation_bytes(model.to("meta"), (6, s, s), torch.float32)
                    for s in (32, 64))
    # 4 × the pixels: token-sized tensors grow 4 ×, the attention probabilities 16 ×
    assert 4 < large / small < 16


PEAK_MEMORY = """
import sys, numpy as np, torch
from interpretable import BcosSimpleViTClassifier
from interpretable.estimators.vision import _base as vision_base
torch.set_num_threads(1)
vision_base.INFERENCE_MEMORY = 16 * 2**20
X = np.random.RandomState(0).rand(256, 96, 96, 3).astype(np.float32)
clf = BcosSimpleViTClassifier(architecture=dict(dim=32, depth=4, heads=4, mlp_dim=64,
                                                patch_size=8),
                              image_size=None, max_epochs=1, batch_size=256, random_state=0)
clf.fit(X[:8], [0, 1] * 4)
def status_kib(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))
with open("/proc/self/clear_refs", "w") as f:  # the high-water mark restarts from now
    f.write("5")
before = status_kib("VmRSS")
clf.explain(X, batch_size=None if sys.argv[1] == "auto" else int(sys.argv[1]))
print((status_kib("VmHWM") - before) / 1024)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="Linux /proc only")
def test_a_large_explanation_stays_within_the_memory_budget():
    """256 images of 96 px, explanations 130 MB: the bounded batches add little to that, one
    batch of all 256 images over 500 MB of activations (peak resident memory of the explain
    call, fresh processes; the process's own high-water mark, since ``ru_maxrss`` can carry
    the parent's over a vfork + exec)."""
    def peak_mib(batch_size):
        run = subprocess.run([sys.executable, "-c", PEAK_MEMORY, batch_size], check=True,
                             capture_output=True, text=True,
                             env={**os.environ, "OMP_NUM_THREADS": "1"})
        return float(run.stdout.split()[-1])

    bounded, whole = peak_mib("auto"), peak_mib("256")
    assert bounded < 300 and whole > 2 * bounded, (bounded, whole)
