"""The metric conventions (:mod:`interpretable.metrics._conventions`).

* ERASER is today's behaviour: its unit sets are those of ``faithfulness._erasure`` (the
  ``_ranks`` logic), AUPRC / F1 / IOU those of :func:`plausibility`, tau that of
  :func:`loo_kendall_tau`, on random scores with ties, and hand-computed values.
* FERRET is ferret 0.4.2: the unit sets, AOPC, AUPRC, hard rationale, F1 / IOU and tau of
  ``tests/data/ferret/reference.json`` (made by ferret's own evaluators, see
  ``make_reference.py`` there), and a verbatim copy of ferret's selection code on random scores.
  ferret breaks ties with numpy's default ``argsort``, whose order of tied values depends on
  the CPU's sorting kernel: where this machine's order of a fixture sample differs from the
  recorded one, its unit sets are compared up to ties (the same score values).
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import kendalltau
from sklearn.metrics import auc, precision_recall_curve

from interpretable.metrics._conventions import ERASER, FERRET, Convention, get_convention
from interpretable.metrics._faithfulness import ERASER_FRACTIONS, _ranks
from interpretable.metrics._plausibility import plausibility

DATA = Path(__file__).parent / "data" / "ferret"
REFERENCE = json.loads((DATA / "reference.json").read_text())
SAMPLES = REFERENCE["samples"]
IDS = [f"{i}-{s['case']}" for i, s in enumerate(SAMPLES)]


def nan_if_none(value):
    return float("nan") if value is None else value


def as_lists(sets):
    return [None if s is None else s.tolist() for s in sets]


def random_rows(seed, n_rows=60, max_len=40):
    """Scores with ties, zeros and negatives (half the rows), or continuous."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_rows):
        n = int(rng.integers(1, max_len + 1))
        rows.append(rng.integers(-3, 5, n) / 2 if i % 2 else rng.normal(size=n))
    return rows


# --- ERASER: today's behaviour ---------------------------------------------------------------

def erasure_today(rows, keep_top):
    """The unit sets of ``faithfulness._erasure``, per row and fraction (its own code)."""
    lengths = torch.tensor([len(r) for r in rows])
    scores = np.zeros((len(rows), int(lengths.max())))
    for i, r in enumerate(rows):
        scores[i, : len(r)] = r
    ranks = _ranks(scores, lengths.numpy())
    real = torch.arange(scores.shape[1])[None] < lengths[:, None]
    sets = [[] for _ in rows]
    for f in ERASER_FRACTIONS:
        k = torch.ceil(f * lengths.double()).long().clamp(min=1)
        if not keep_top:
            k = torch.minimum(k, lengths - 1)
        top = (ranks < k[:, None]) & real  # removed (comprehensiveness) or kept (sufficiency)
        for i in range(len(rows)):
            sets[i].append(torch.nonzero(top[i])[:, 0].tolist())
    return sets


@pytest.mark.parametrize("keep_top", [False, True])
def test_eraser_sets_are_todays(keep_top):
    rows = random_rows(0)
    assert ERASER.fractions == ERASER_FRACTIONS
    for row, expected in zip(rows, erasure_today(rows, keep_top), strict=True):
        assert as_lists(ERASER.erasure_sets(row, keep_top)) == expected


def test_eraser_sets_by_hand():
    scores = np.array([0.1, 0.9, 0.9, -0.5, 0.3, 0.0, 0.2, 0.4, 0.8, 0.7])
    # k = ceil(f·10) >= 1: 1, 1, 1, 2, 5; ties: the earlier unit first
    expected = [[1], [1], [1], [1, 2], [1, 2, 7, 8, 9]]
    assert as_lists(ERASER.erasure_sets(scores, False)) == expected
    assert as_lists(ERASER.erasure_sets(scores, True)) == expected
    # a one-unit text: comprehensiveness removes nothing, sufficiency keeps it
    assert as_lists(ERASER.erasure_sets([0.4], False)) == [[]] * 5
    assert as_lists(ERASER.erasure_sets([0.4], True)) == [[0]] * 5
    # comprehensiveness never removes all: 50 % of 2 units is 1, of 1 unit 0
    assert as_lists(ERASER.erasure_sets([0.1, 0.2], False))[-1] == [1]
    # 1 % of 150 units: ceil(1.5) = 2
    assert len(ERASER.erasure_sets(np.arange(150.0), False)[0]) == 2


def test_eraser_aopc():
    assert ERASER.aopc(np.array([0.1, 0.2, 0.3, 0.4, 0.5]), False) == pytest.approx(0.3)
    assert ERASER.aopc([0.5, np.nan, 0.25], True) == 0.375
    assert math.isnan(ERASER.aopc([], False))
    drops = np.random.default_rng(1).normal(size=(20, 5))
    assert [ERASER.aopc(d, False) for d in drops] == drops.mean(1).tolist()


@pytest.mark.parametrize("top_k", [None, 2])
def test_eraser_plausibility_is_todays(top_k):
    rng = np.random.default_rng(2)
    rows = random_rows(3, n_rows=40, max_len=15)
    rationales = [(rng.random(len(r)) < 0.4).astype(int) for r in rows]
    rationales[0][:] = 0  # an empty rationale: NaN
    frame = plausibility(rows, rationales, top_k=top_k).frame
    for i, (row, rationale) in enumerate(zip(rows, rationales, strict=True)):
        expected = frame.loc[i, ["auprc", "token_f1", "token_iou"]].tolist()
        got = [ERASER.auprc(rationale, row), *ERASER.token_f1_iou(rationale, row, top_k)]
        np.testing.assert_array_equal(got, expected)


def test_eraser_plausibility_by_hand():
    scores, rationale = [0.9, 0.1, 0.5, -0.2], [1, 0, 0, 1]
    assert ERASER.auprc(rationale, scores) == 0.75
    assert ERASER.hard_rationale(scores, 2).tolist() == [True, False, True, False]
    assert ERASER.hard_rationale(scores, 2, top_k=4).tolist() == [True, True, True, False]
    assert ERASER.token_f1_iou(rationale, scores) == (0.5, 1 / 3)
    assert ERASER.hard_rationale([0.5, 0.5, 0.5], 2).tolist() == [True, True, False]
    assert all(map(math.isnan, ERASER.token_f1_iou([0, 0], [0.1, 0.2])))
    assert math.isnan(ERASER.auprc([0, 0], [0.1, 0.2]))


def test_eraser_tau_is_todays():
    rng = np.random.default_rng(4)
    rows = random_rows(5, n_rows=40, max_len=12) + [np.ones(3), np.zeros(1)]
    for scores in rows:
        drops = rng.integers(-2, 3, scores.size) / 4 if rng.random() < 0.5 else \
            rng.normal(size=scores.size)
        n = scores.size  # report.loo_kendall_tau's expression
        expected = kendalltau(scores, drops).statistic \
            if n > 1 and np.ptp(scores) > 0 and np.ptp(drops) > 0 else np.nan
        np.testing.assert_array_equal(ERASER.loo_tau(scores, drops), expected)
    assert ERASER.loo_tau([0.3, 0.1, 0.2], [0.5, 0.0, 0.1]) == 1.0
    assert math.isnan(ERASER.loo_tau([0.3, 0.1], [0.2, 0.2]))


# --- FERRET: ferret 0.4.2's own code ---------------------------------------------------------

def ferret_top_k(scores, k):
    """``ferret.evaluators.utils_from_soft_to_discrete._get_id_tokens_top_k`` (only_pos)."""
    id_top_k = [i for i in np.array(scores).argsort()[-k:][::-1] if scores[i] > 0]
    if id_top_k == []:
        return None
    return id_top_k


def ferret_sets(scores):
    """The bins of ferret's ``AOPC_*_Evaluation.compute_evaluation`` (default arguments)."""
    sets, last_id_top = [], None
    for v in np.arange(0.1, 1.1, 0.1):
        k = int(v * len(scores))
        id_top = ferret_top_k(scores, k) if 0 < k <= len(scores) else None
        if id_top is not None and last_id_top is not None and set(id_top) == last_id_top:
            id_top = None
        sets.append(None if id_top is None else sorted(int(i) for i in id_top))
        if id_top is not None:
            last_id_top = set(id_top)
    return sets


def ferret_plausibility(rationale, scores, top_k=5):
    """ferret's AUPRC, token F1 and token IOU of one sample (its formulas, default args)."""
    clipped = [v if v > 0 else 0 for v in scores]
    precision, recall, _ = precision_recall_curve(rationale, clipped)
    auprc = auc(recall, precision)
    top = ferret_top_k(scores, top_k)
    if top is None:
        return auprc, 0, 0
    pred = np.array([1 if i in top else 0 for i in range(len(scores))])
    true = np.array(rationale)
    tp, pos, pred_pos = (true & pred).sum(), true.sum(), pred.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        p, r = tp / pred_pos, tp / pos
    f1 = 0 if p == 0 or r == 0 else 2 * p * r / (p + r)
    return auprc, f1, (true & pred).sum() / (true | pred).sum()


def test_ferret_fractions():
    assert FERRET.fractions == tuple(np.arange(0.1, 1.1, 0.1).tolist())
    assert list(FERRET.fractions) == REFERENCE["fractions"]
    assert FERRET.top_k == REFERENCE["top_k_rationale"] == 5


def test_ferret_sets_are_ferrets():
    """The verbatim selection code of ferret on random scores (same argsort on both sides)."""
    for scores in random_rows(6, n_rows=120, max_len=60):
        expected = ferret_sets(scores)
        assert as_lists(FERRET.erasure_sets(scores, False)) == expected
        assert as_lists(FERRET.erasure_sets(scores, True)) == expected
        assert FERRET.hard_rationale(scores, 3).tolist() == \
            [i in (ferret_top_k(scores, 5) or []) for i in range(scores.size)]


@pytest.mark.filterwarnings("ignore::UserWarning")  # scikit-learn: an empty rationale
def test_ferret_plausibility_is_ferrets():
    rng = np.random.default_rng(7)
    for scores in random_rows(8, n_rows=60, max_len=15):
        rationale = (rng.random(scores.size) < 0.4).astype(int)
        expected = ferret_plausibility(rationale.tolist(), scores)
        got = (FERRET.auprc(rationale, scores), *FERRET.token_f1_iou(rationale, scores))
        assert got == expected


def test_ferret_by_hand():
    scores = np.array([0.5, 0.25, -1.0, 0.0, 2.0])  # no ties
    # int(f·5): 0 (skipped), 1, 1 (same set), 2, 2, 3, 3, 4 (one more unit, not positive)...
    assert as_lists(FERRET.erasure_sets(scores, False)) == \
        [None, [4], None, [0, 4], None, [0, 1, 4], None, None, None, None]
    assert FERRET.erasure_sets([-0.5, 0.0], True) == [None] * 10  # nothing positive
    assert as_lists(FERRET.erasure_sets([0.3], False))[-1] == [0]  # removes the whole text
    assert FERRET.aopc([], False) == 0.0 and FERRET.aopc([], True) == 1.0
    assert FERRET.aopc([0.25, np.nan, 0.75], False) == 0.5
    drops = np.array([0.1, 0.2, 0.7], dtype=np.float32)  # statistics.mean, in float32
    assert FERRET.aopc(drops, False) == float(statistics.mean(list(drops)))
    assert FERRET.token_f1_iou([0, 0, 0], [0.2, 0.1, 0.3]) == (0.0, 0.0)
    assert FERRET.auprc([0, 0, 0], [0.2, 0.1, 0.3]) == 0.5
    assert FERRET.token_f1_iou([1, 0], [-0.2, -0.1]) == (0.0, 0.0)
    assert math.isnan(FERRET.loo_tau([0.3], [0.1]))
    assert math.isnan(FERRET.loo_tau([0.3, 0.3], [0.1, 0.2]))


def same_ties(sample) -> bool:
    """Whether numpy orders this sample's tied scores here as where the fixture was made."""
    return np.asarray(sample["scores"][1:-1]).argsort().tolist() == sample["argsort"]


def assert_sets_equal(got, expected, scores, exact):
    if exact:
        assert as_lists(got) == expected
        return
    assert [g is None for g in got] == [e is None for e in expected]
    for g, e in zip(got, expected, strict=True):  # other tie order: the same scores
        if e is not None:
            assert sorted(scores[g]) == sorted(scores[e])


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
@pytest.mark.parametrize("metric, keep_top", [("aopc_compr", False), ("aopc_suff", True)])
def test_ferret_aopc_matches_reference(sample, metric, keep_top):
    scores = np.asarray(sample["scores"][1:-1])
    record = sample[metric]
    assert_sets_equal(FERRET.erasure_sets(scores, keep_top), record["sets"], scores,
                      same_ties(sample))
    drops = np.array(record["drops"], dtype=np.float32)
    assert FERRET.aopc(drops, keep_top) == sample["metrics"][metric]
    # the fixture's drops are ferret's: p(target|x) − p(target|x'), in float32
    expected = np.float32(record["baseline"]) - np.array(record["probabilities"], np.float32)
    np.testing.assert_array_equal(drops, expected)


@pytest.mark.filterwarnings("ignore::UserWarning")  # scikit-learn: the empty rationale
@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_ferret_plausibility_matches_reference(sample):
    scores = np.asarray(sample["scores"][1:-1])
    rationale = np.array(sample["rationale"], dtype=bool)
    metrics = sample["metrics"]
    assert FERRET.auprc(rationale, scores) == metrics["auprc_plau"]
    hard = FERRET.hard_rationale(scores, int(rationale.sum()))
    f1, iou = FERRET.token_f1_iou(rationale, scores)
    if same_ties(sample):
        assert hard.astype(int).tolist() == (sample["hard_rationale"] or [0] * scores.size)
        assert (f1, iou) == (metrics["token_f1_plau"], metrics["token_iou_plau"])
    else:
        assert hard.sum() == sum(sample["hard_rationale"] or [])


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_ferret_tau_matches_reference(sample):
    scores = np.asarray(sample["scores"][1:-1])
    drops = np.array(sample["loo"]["drops"], dtype=np.float32)
    np.testing.assert_array_equal(FERRET.loo_tau(scores, drops),
                                  nan_if_none(sample["metrics"]["taucorr_loo"]))
    assert len(sample["loo"]["texts"]) == scores.size


def test_reference_covers_the_cases():
    cases = {s["case"] for s in SAMPLES}
    assert {"one word", "all negative", "all equal (ties)", "empty rationale",
            "ties at the bin cuts", "two positive scores (repeated sets)"} <= cases
    lengths = [len(s["rationale"]) for s in SAMPLES]
    assert min(lengths) == 1 and max(lengths) >= 12
    assert REFERENCE["versions"]["ferret"] == "0.4.2"
    assert any(s["metrics"]["taucorr_loo"] is None for s in SAMPLES)
    assert any(s["aopc_compr"]["sets"] == [None] * 10 for s in SAMPLES)


def test_reference_checkpoint_is_small():
    files = {p.name: p.stat().st_size for p in (DATA / "model").iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "vocab.txt"} <= set(files)
    assert sum(files.values()) < 200_000


def test_reference_model_gives_the_recorded_probabilities():
    """The committed checkpoint is the one ferret ran (texts, perturbed texts, LOO)."""
    transformers = pytest.importorskip("transformers")
    model = transformers.BertForSequenceClassification.from_pretrained(DATA / "model").eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(DATA / "model")
    for sample in SAMPLES:
        encoded = tokenizer(sample["text"])
        assert tokenizer.convert_ids_to_tokens(encoded["input_ids"]) == sample["tokens"]
        assert tokenizer.decode(encoded["input_ids"][1:-1]) == sample["text"]
        texts = [sample["text"], *(b["text"] for b in sample["aopc_compr"]["bins"]
                                   if b["kept"]), *sample["loo"]["texts"]]
        expected = [sample["aopc_compr"]["baseline"], *sample["aopc_compr"]["probabilities"],
                    *sample["loo"]["probabilities"]]
        with torch.no_grad():
            batch = tokenizer(texts, return_tensors="pt", padding=True)
            probs = model(**batch).logits.softmax(-1)[:, sample["target"]]
        np.testing.assert_allclose(probs.numpy(), expected, atol=1e-5)
        assert sample["target"] == int(np.argmax(sample["probabilities"]))


def test_get_convention():
    assert get_convention("ferret") is FERRET and get_convention("ERASER") is ERASER
    assert get_convention(FERRET) is FERRET
    assert isinstance(ERASER, Convention)
    with pytest.raises(ValueError, match=r"\['eraser', 'ferret'\]"):
        get_convention("lime")
    with pytest.raises(AttributeError):
        ERASER.top_k = 3  # frozen
