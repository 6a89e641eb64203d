"""bfloat16 on every CPU: where torch has no bfloat16 kernel of a recurrent layer
(oneDNN's LSTM without AVX-512), ``precision="bf16"`` and ``inference_precision="bf16"`` run
those layers in float32 and the rest in bfloat16, with one warning; a custom module that runs
such a layer itself runs in float32 throughout, with one warning."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

from interpretable import AttentionTextClassifier, SEATClassifier
from interpretable.estimators.core import _classifier as classifier
from interpretable.nn import _recurrent as recurrent
from interpretable.nn._char_lstm import CharLSTM
from interpretable.nn._recurrent import RecurrentEncoder, autocast_fallbacks

X = ["a great film", "an awful film", "great acting", "dull acting"] * 4
Y = ["pos", "neg", "pos", "neg"] * 4
TINY = dict(embed_dim=8, hidden_size=8, max_epochs=1, random_state=0, device="cpu")

#: fits the three LSTM classifiers in bfloat16 and reports, as JSON, whether the probe found
#: the bfloat16 LSTM kernel and each fit's warnings and predictions
CHILD = """
import json, warnings
import torch
import interpretable
from interpretable.nn._recurrent import autocast_failure

X = ["a great film", "an awful film", "great acting", "dull acting"] * 4
y = ["pos", "neg", "pos", "neg"] * 4
report = {"failure": autocast_failure("LSTM", torch.device("cpu"), torch.bfloat16)}
for name in ("AttentionTextClassifier", "DiversityLSTMClassifier", "SEATClassifier"):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = getattr(interpretable, name)(
            embed_dim=8, hidden_size=8, max_epochs=1, random_state=0, device="cpu",
            precision="bf16", inference_precision="bf16").fit(X, y)
        proba = clf.predict_proba(X)
        predicted = clf.predict(X)
    report[name] = {"warnings": [str(w.message) for w in caught],
                    "classes": clf.classes_.tolist(), "predicted": predicted.tolist(),
                    "proba": proba.tolist()}
print(json.dumps(report))
"""


def test_bf16_fits_under_portable_kernels():
    """The three LSTM classifiers fit and predict in bfloat16 under torch's portable kernels
    with oneDNN capped below AVX-512 (as on a CPU without it: ``ATEN_CPU_CAPABILITY=default``
    alone leaves oneDNN its AVX-512 bfloat16 here)."""
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "AVX2",
           "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    failure = report.pop("failure")
    for name, fit in report.items():
        proba = np.array(fit["proba"])
        assert proba.shape == (len(X), 2) and np.isfinite(proba).all(), name
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-6)
        assert set(fit["predicted"]) <= set(fit["classes"]) == {"pos", "neg"}
        training = [m for m in fit["warnings"] if m.startswith(f"{name}: precision='bf16'")]
        predicting = [m for m in fit["warnings"]
                      if m.startswith(f"{name}: inference_precision='bf16'")]
        if failure is None:  # the kernel runs here: nothing falls back
            assert training == [], training
        else:
            assert training == [f"{name}: precision='bf16' but torch has no bfloat16 LSTM "
                                f"kernel on cpu ({failure}); training runs the LSTM layers "
                                "in float32 and the rest in bfloat16."], fit["warnings"]
        # float32 LSTMs, or float32 throughout where bfloat16 is not native
        assert len(predicting) == (failure is not None or not classifier.native_bf16("cpu")), \
            fit["warnings"]


# ---------------------------------------------------------------------------- in process
@pytest.fixture
def no_bf16_lstm(monkeypatch):
    """torch taken to have no bfloat16 LSTM kernel (the other layers keep theirs)."""
    monkeypatch.setattr(recurrent, "autocast_failure",
                        lambda mode, device, dtype: "no LSTM kernel" if mode == "LSTM" else None)


class _AutocastLog:
    """Records, per module class, whether autocast was on when each module ran, and the
    floating dtypes of the outputs (a global forward hook, removed on exit)."""

    def __enter__(self):
        self.autocast, self.dtypes = {}, {}

        def record(module, inputs, output):
            name = type(module).__name__
            self.autocast.setdefault(name, set()).add(torch.is_autocast_enabled("cpu"))
            for out in output if isinstance(output, tuple) else (output,):
                if isinstance(out, torch.Tensor) and out.is_floating_point():
                    self.dtypes.setdefault(name, set()).add(out.dtype)

        self.hook = torch.nn.modules.module.register_module_forward_hook(record)
        return self

    def __exit__(self, *exc):
        self.hook.remove()


@pytest.mark.parametrize("kind", ["lstm", "bilstm", "rnn"])
def test_encoder_runs_a_layer_without_kernel_in_float32(no_bf16_lstm, kind):
    torch.manual_seed(0)
    encoder = RecurrentEncoder(kind, 4, 3)
    embedded = torch.randn(2, 5, 4).bfloat16()  # as a bfloat16 layer before it would give
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    expected = encoder(embedded.float(), mask)
    with _AutocastLog() as log, torch.autocast("cpu", dtype=torch.bfloat16):
        hidden = encoder(embedded, mask)
    if kind == "rnn":  # its kernel runs: under autocast, in bfloat16
        assert log.autocast["RNN"] == {True} and hidden.dtype == torch.bfloat16
    else:  # autocast off, float32 inputs: the float32 result
        assert log.autocast["LSTM"] == {False} and hidden.dtype == torch.float32
        torch.testing.assert_close(hidden, expected, rtol=0, atol=0)


def test_char_lstm_state_is_cast_too(no_bf16_lstm):
    torch.manual_seed(0)
    model = CharLSTM(5, 4, embedding_dim=3)
    x = torch.randint(0, 5, (2, 6))
    state = (torch.zeros(1, 2, 4, dtype=torch.bfloat16), torch.zeros(1, 2, 4))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(x, state)
    assert logits.shape == (2, 6, 5) and logits.dtype == torch.bfloat16  # the readout's
    torch.testing.assert_close(logits.float(), model(x), atol=0.05, rtol=0)


def test_probe_keeps_the_global_rng_and_ignores_inference_mode():
    probe = recurrent.autocast_failure.__wrapped__  # uncached
    state = torch.get_rng_state()
    reason = probe("LSTM", torch.device("cpu"), torch.bfloat16)
    assert torch.equal(torch.get_rng_state(), state)
    with torch.inference_mode():
        assert probe("LSTM", torch.device("cpu"), torch.bfloat16) == reason
    assert probe("GRU", torch.device("cpu"), torch.bfloat16) is None  # not cast on CPU


def test_fallbacks_name_the_layers_and_who_runs_them(no_bf16_lstm):
    class Custom(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = RecurrentEncoder("lstm", 4, 3)
            self.lstm = torch.nn.LSTM(3, 3)
            self.gru = torch.nn.GRU(3, 3)

    found = autocast_fallbacks(Custom(), "cpu", torch.bfloat16)
    assert [(f.name, f.kind, f.reason, f.handled) for f in found] == [
        ("encoder.rnn", "LSTM", "no LSTM kernel", True),
        ("lstm", "LSTM", "no LSTM kernel", False)]
    assert autocast_fallbacks(Custom().double(), "cpu", torch.bfloat16) == []  # not cast


def test_two_phase_fit_warns_once_and_runs_lstm_in_float32(no_bf16_lstm):
    with _AutocastLog() as log, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = SEATClassifier(precision="bf16", **TINY).fit(X, Y)
    messages = [str(w.message) for w in caught if "bf16" in str(w.message)]
    assert messages == ["SEATClassifier: precision='bf16' but torch has no bfloat16 LSTM kernel "
                        "on cpu (no LSTM kernel); training runs the LSTM layers in float32 and "
                        "the rest in bfloat16."]
    assert caught[0].filename == __file__  # at the user's call
    assert log.autocast["LSTM"] == {False} and log.dtypes["LSTM"] == {torch.float32}
    assert torch.bfloat16 in log.dtypes["Linear"]  # the rest in bfloat16
    assert set(clf.predict(X)) <= set(clf.classes_)


def test_custom_module_trains_and_predicts_in_float32(no_bf16_lstm, monkeypatch):
    class Encoder(torch.nn.Module):
        output_size = 8

        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(8, 8, batch_first=True)

        def forward(self, embedded, mask):
            return self.lstm(embedded)[0] * mask.unsqueeze(-1)

    monkeypatch.setattr(classifier, "native_bf16", lambda device: True)
    params = dict(TINY, encoder=Encoder(), precision="bf16", inference_precision="bf16")
    with _AutocastLog() as log, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = AttentionTextClassifier(**params).fit(X, Y)
        proba = clf.predict_proba(X)
        clf.predict(X)
    messages = [str(w.message) for w in caught if "bf16" in str(w.message)]
    assert messages == [
        f"AttentionTextClassifier: {option}='bf16' but torch has no bfloat16 LSTM kernel on cpu "
        f"(no LSTM kernel); LSTM 'encoder.lstm' of a custom module cannot switch alone, so "
        f"{doing} runs in float32 throughout."
        for option, doing in (("precision", "training"), ("inference_precision", "predicting"))]
    assert all(seen == {False} for seen in log.autocast.values())
    np.testing.assert_array_equal(proba, AttentionTextClassifier(**{
        **params, "precision": "float32", "inference_precision": "float32"}).fit(X, Y)
        .predict_proba(X))


def test_prediction_warns_once_and_leaves_the_model(no_bf16_lstm, monkeypatch):
    clf = AttentionTextClassifier(**TINY).fit(X, Y)
    exact, state = clf.predict_proba(X), {k: v.clone() for k, v in clf.module_.state_dict().items()}
    attributes = {id(m): dict(vars(m)) for m in clf.module_.modules()}
    monkeypatch.setattr(classifier, "native_bf16", lambda device: True)
    clf.set_params(inference_precision="bf16")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        proba = clf.predict_proba(X)
        clf.predict(X)
    messages = [str(w.message) for w in caught if "bf16" in str(w.message)]
    assert messages == ["AttentionTextClassifier: inference_precision='bf16' but torch has no "
                        "bfloat16 LSTM kernel on cpu (no LSTM kernel); predicting runs the LSTM "
                        "layers in float32 and the rest in bfloat16."]
    np.testing.assert_allclose(proba, exact, atol=0.03)
    assert all(torch.equal(v, state[k]) for k, v in clf.module_.state_dict().items())
    assert {id(m): dict(vars(m)) for m in clf.module_.modules()} == attributes
