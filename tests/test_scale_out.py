"""Scaling out on existing engines: training on 2 CPU processes through Hugging Face
Accelerate (torchrun, gloo), explanation of Dask collections to Parquet and GridSearchCV on a
Dask ``LocalCluster``. Every process and the cluster run on localhost and are started and
stopped here."""

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from conformance.cases import _TINY_VIT, _digits, _sentiment
from sklearn.model_selection import GridSearchCV

from interpretable import BcosViTClassifier, EmbeddingBagClassifier
from interpretable.integrations._scale import explain_to_parquet
from interpretable.integrations._streaming import explanations_to_frame

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
pytest.importorskip("accelerate")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "accelerate_train.py"


def _example():
    """examples/accelerate_train.py as a module (its data and estimator definitions)."""
    spec = importlib.util.spec_from_file_location("accelerate_train", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("model", ["diversity-lstm", "bcos-vit"])
def test_two_processes_train_like_one_process_with_the_summed_batch(tmp_path, model):
    """2 processes × 8 samples per step average their gradients (DDP), which is one process
    with batches of 16 drawn in the same order (the shuffling generator is seeded alike): the
    losses and predictions match up to float rounding (1e-5). The weights are compared
    within ``lr * steps``: Adam scales updates to about ``lr`` whatever the gradient's size,
    so rounding-level gradients of one weight can move it by up to ``lr`` per step."""
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
               "--master_addr", "127.0.0.1", "--master_port", str(_free_port()),
               str(EXAMPLE), "--cpu", "--model", model, "--samples", "64", "--epochs", "2",
               "--batch-size", "8", "--out", str(tmp_path / "model")]
    run = subprocess.run(command, capture_output=True, text=True, timeout=150, cwd=tmp_path,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    reports = sorted((json.loads(line) for line in run.stdout.splitlines()
                      if line.startswith("{")), key=lambda r: r["rank"])
    assert [(r["rank"], r["saved"]) for r in reports] == [(0, True), (1, False)]
    assert reports[0]["train_loss"] == reports[1]["train_loss"]  # one history everywhere

    example = _example()
    X, y = example.load_data(model, 64)
    one = example.make_estimator(model, max_epochs=2, batch_size=16).fit(X, y)
    two = type(one).load(tmp_path / "model", device="cpu")
    assert reports[0]["train_loss"] == pytest.approx(one.history_[-1]["train_loss"], rel=1e-5)
    np.testing.assert_allclose(two.predict_proba(X), one.predict_proba(X), atol=1e-5)
    bound = one.lr * 2 * 64 / 16
    for name, value in one.module_.state_dict().items():
        torch.testing.assert_close(two.module_.state_dict()[name], value, atol=bound, rtol=0)


# ---------------------------------------------------------------------------------- Dask
@pytest.fixture(scope="module")
def client():
    """A 2-worker, 1-thread-each process cluster on localhost, stopped after the tests."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def text_model():
    X, y, _ = _sentiment(64)
    return EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def texts_and_table(text_model):
    """20k short texts and their explanation table computed in this process."""
    texts = _sentiment(20_000, seed=1)[0]
    return texts, explanations_to_frame(text_model, texts)


def _read(folder) -> pd.DataFrame:
    return pd.read_parquet(folder).sort_values(["sample", "unit"], ignore_index=True)


def test_dask_dataframe_of_texts_explained_to_parquet(client, text_model, texts_and_table,
                                                      tmp_path):
    import dask.dataframe as dd

    texts, expected = texts_and_table
    ids = 10**6 + np.arange(len(texts))  # the DataFrame's index numbers the samples
    frame = dd.from_pandas(pd.DataFrame({"text": texts}, index=ids), npartitions=4)
    files = explain_to_parquet(text_model, frame["text"], tmp_path / "out", client=client)
    assert [f.name for f in files] == [f"part-{i:05d}.parquet" for i in range(4)]
    got = _read(tmp_path / "out")
    assert list(got.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(got, expected.assign(sample=expected["sample"] + 10**6),
                                  rtol=1e-6, atol=1e-7)


def test_dask_bag_of_texts_explained_to_parquet(client, text_model, texts_and_table, tmp_path):
    import dask.bag as db

    texts, expected = texts_and_table
    bag = db.from_sequence(texts, partition_size=6_000)
    files = explain_to_parquet(text_model, bag, tmp_path / "out", client=client)
    assert len(files) == bag.npartitions == 4
    pd.testing.assert_frame_equal(_read(tmp_path / "out"), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("architecture", ["roberta", "gpt2"])
def test_a_pretrained_transformers_classifier_is_explained_on_dask(client, tmp_path,
                                                                   architecture):
    """A fine-tuned checkpoint taken as it is (``from_pretrained``), converted (RoBERTa) or
    run by ``transformers`` itself (GPT-2), travels to the workers like a model trained
    here."""
    import dask.bag as db
    from architectures import tiny_classifier
    from families import tiny_checkpoint

    from interpretable import BertTextClassifier

    if architecture == "roberta":
        folder = tiny_checkpoint(tmp_path / "checkpoint", "roberta", labels=["neg", "pos"])
    else:
        folder = tiny_classifier(tmp_path / "checkpoint", "gpt2")
    model = BertTextClassifier.from_pretrained(folder, device="cpu")
    texts = _sentiment(40, seed=2)[0]
    files = explain_to_parquet(model, db.from_sequence(texts, npartitions=2), tmp_path / "out",
                               client=client, method="integrated_gradients")
    assert len(files) == 2
    pd.testing.assert_frame_equal(
        _read(tmp_path / "out"),
        explanations_to_frame(model, texts, method="integrated_gradients"), rtol=1e-5, atol=1e-6)


def test_dask_array_of_images_explained_to_parquet(client, tmp_path):
    import dask.array as da

    X, y, _ = _digits(60)
    model = BcosViTClassifier(**_TINY_VIT).fit(X, y)
    images = da.from_array(X, chunks=(16, 4, 8))  # also split along a pixel axis
    files = explain_to_parquet(model, images, tmp_path / "out", client=client)
    assert len(files) == 4
    pd.testing.assert_frame_equal(_read(tmp_path / "out"), explanations_to_frame(model, X),
                                  rtol=1e-5, atol=1e-6)


def test_grid_search_on_the_dask_backend(client):
    from distributed import get_task_stream
    from joblib import parallel_backend

    X, y, _ = _sentiment(96)
    grid = {"lr": [1e-3, 0.1], "max_epochs": [1, 3]}

    def search(n_jobs):
        return GridSearchCV(EmbeddingBagClassifier(embed_dim=8, random_state=0), grid, cv=3,
                            n_jobs=n_jobs).fit(X, y)

    local = search(n_jobs=1)
    with get_task_stream(client) as tasks, parallel_backend("dask"):
        remote = search(n_jobs=-1)
    # the candidates' fits ran on the cluster (joblib batches fast fits: fewer tasks than fits)
    assert tasks.data and all(t["worker"].startswith("tcp://") for t in tasks.data)
    assert remote.best_params_ == local.best_params_
    np.testing.assert_allclose(remote.cv_results_["mean_test_score"],
                               local.cv_results_["mean_test_score"])


def test_a_torchvision_model_as_it_is_is_explained_on_dask(client, tmp_path):
    """A torchvision classifier run as it is (``ImageClassifier.from_pretrained``) travels to
    the workers, which import the real torchvision (tests/_real_vision.py) to rebuild it from
    its recipe. Last in this module: the workers keep torchvision once imported."""
    import dask.array as da
    from _real_vision import real_vision

    from interpretable import ImageClassifier

    torchvision, _ = real_vision()
    client.run(lambda: real_vision() and None)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = torchvision.models.resnet18(num_classes=3).eval()
    clf = ImageClassifier.from_pretrained(model, classes=["a", "b", "c"], image_size=32,
                                          device="cpu")
    X = np.random.default_rng(0).random((12, 32, 32, 3), dtype=np.float32)
    files = explain_to_parquet(clf, da.from_array(X, chunks=(6, 32, 32, 3)), tmp_path / "out",
                               client=client, method="integrated_gradients", n_steps=4)
    assert len(files) == 2
    pd.testing.assert_frame_equal(
        _read(tmp_path / "out"),
        explanations_to_frame(clf, X, method="integrated_gradients", n_steps=4),
        rtol=1e-5, atol=1e-6)
