"""The explanation report on word-piece models: ferret's numbers reproduced on the fixture that
ferret 0.4.2's own evaluators scored (tests/data/ferret), word-level rationales and erasure,
special tokens left out or kept, precomputed explanations, the budget."""

import json
from pathlib import Path

import numpy as np
import pytest

from interpretable import BertTextClassifier
from interpretable.explanation import WordPieceExplanation
from interpretable.metrics import evaluate_explanations
from interpretable.metrics._erasure import keep_mask, text_units

FERRET = Path(__file__).parent / "data" / "ferret"
#: ferret's metric names -> the report's
FERRET_METRICS = {"aopc_compr": "comprehensiveness", "aopc_suff": "sufficiency",
                  "taucorr_loo": "loo_kendall_tau", "auprc_plau": "auprc",
                  "token_f1_plau": "token_f1", "token_iou_plau": "token_iou"}
TINY_BERT = {"vocab_size": 30522, "hidden_size": 8, "num_hidden_layers": 1,
             "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 32,
             "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1,
             "attention_probs_dropout_prob": 0.1}
TEXTS = ["an unbelievably good film", "a dreadful, boring plot", "good", "bad acting"]


@pytest.fixture(scope="module")
def ferret_case():
    reference = json.loads((FERRET / "reference.json").read_text())
    clf = BertTextClassifier.from_pretrained(FERRET / "model", device="cpu")
    return reference["samples"], clf


@pytest.fixture(scope="module")
def tiny():
    clf = BertTextClassifier(checkpoint=TINY_BERT, max_length=16, max_epochs=1, random_state=0)
    return clf.fit(TEXTS * 2, ["pos", "neg", "pos", "neg"] * 2)


def test_convention_ferret_reproduces_ferrets_benchmark(ferret_case):
    samples, clf = ferret_case
    texts = [s["text"] for s in samples]
    labels = clf.classes_[[s["target"] for s in samples]]
    assert (clf.predict(texts) == labels).all()  # ferret explained the predicted classes
    given = WordPieceExplanation(
        units=[s["tokens"] for s in samples],
        values=[np.array(s["scores"], dtype=np.float64) for s in samples],
        target=labels, prediction=labels, method="fixed")
    report = evaluate_explanations(clf, texts, methods=[], explanations={"fixed": given},
                                   rationales=[s["rationale"] for s in samples],
                                   convention="ferret")
    values = report.samples.pivot(index="sample", columns="metric", values="value")
    compared = 0
    for i, sample in enumerate(samples):
        ties_as_recorded = np.array_equal(
            np.argsort(np.array(sample["scores"][1:-1])), sample["argsort"])
        for name, ours in FERRET_METRICS.items():
            if name.startswith("aopc") and not ties_as_recorded:
                continue  # ferret's tie order is numpy's unstable argsort on its machine
            expected = sample["metrics"][name]
            expected = np.nan if expected is None else expected
            np.testing.assert_allclose(values.loc[i, ours], expected, atol=2e-6,
                                       err_msg=f"{name} of sample {i} ({sample['case']})")
            compared += 1
    assert compared >= 0.8 * len(samples) * len(FERRET_METRICS)
    # ERASER's definitions differ from ferret's on the same explanations
    eraser = evaluate_explanations(clf, texts, methods=[], explanations={"fixed": given},
                                   rationales=[s["rationale"] for s in samples])
    assert not np.allclose(eraser.frame["mean"][:2], report.frame["mean"][:2])


def test_word_level_erases_the_pieces_of_a_word_together(tiny):
    pieces = tiny.word_pieces(TEXTS[:1])[0]
    assert len(pieces.pieces) > 6  # "unbelievably" is several pieces
    units = text_units(tiny, TEXTS[:1], level="word")
    assert units.names[0] == ["an", "unbelievably", "good", "film"]
    groups = units.groups[0]
    assert groups[0] == groups[-1] == -1  # [CLS] and [SEP] belong to no word
    kept = keep_mask(groups, [1], keep_units=False)
    assert [p for p, k in zip(pieces.pieces, kept, strict=True) if not k] == \
        [p for p, w in zip(pieces.pieces, pieces.words, strict=True) if w == 1]
    assert kept[0] and kept[-1]
    only = keep_mask(groups, [2], keep_units=True)  # sufficiency: the specials stay
    assert [p for p, k in zip(pieces.pieces, only, strict=True) if k] == ["[CLS]", "good", "[SEP]"]


def test_word_level_rationales_one_entry_per_word(tiny):
    rationales = [[0, 0, 1, 0], [0, 1, 0, 1, 1], [1], [1, 0]]  # "dreadful", ",", "boring", ...
    report = evaluate_explanations(tiny, TEXTS, methods=["gradient", "occlusion"],
                                   rationales=rationales, level="word", random_state=0)
    frame = report.to_frame().set_index(["method", "metric"])
    assert frame.loc[("occlusion", "auprc"), "n_samples"] == 4
    assert {"comprehensiveness", "sufficiency", "loo_kendall_tau"} <= set(
        report.samples.metric)
    with pytest.raises(ValueError, match=r"sample 1 has 4 entries but 5 were expected: one "
                                         r"0/1 entry per word of the text \(words: "
                                         "whitespace-separated runs and single punctuation"):
        evaluate_explanations(tiny, TEXTS, methods="gradient", level="word",
                              rationales=[[0, 0, 1, 0], [0, 1, 1, 1], [1], [1, 0]])
    with pytest.raises(ValueError, match="include_special_tokens=True needs level='piece'"):
        evaluate_explanations(tiny, TEXTS, level="word", include_special_tokens=True)


def test_special_tokens_are_left_out_unless_kept(tiny):
    n_pieces = [len(p.pieces) for p in tiny.word_pieces(TEXTS)]
    without = [np.zeros(n - 2, int) + 1 for n in n_pieces]
    with_specials = [np.r_[0, r, 0] for r in without]
    with pytest.raises(ValueError, match=rf"sample 0 has {n_pieces[0]} entries but "
                                         rf"{n_pieces[0] - 2} were expected: one 0/1 entry per "
                                         r"token \(special tokens such as \[CLS\] / \[SEP\] not "
                                         r"counted: pass include_special_tokens=True"):
        evaluate_explanations(tiny, TEXTS, methods="gradient", rationales=with_specials)
    left_out = evaluate_explanations(tiny, TEXTS, methods="gradient", rationales=without,
                                     random_state=0)
    kept = evaluate_explanations(tiny, TEXTS, methods="gradient", rationales=with_specials,
                                 include_special_tokens=True, random_state=0)
    units = text_units(tiny, TEXTS, include_special_tokens=True)
    assert [len(n) for n in units.names] == n_pieces
    # the one-piece text "good": with the specials as units the erasure can remove [CLS]
    comp = {name: r.samples.query("metric == 'comprehensiveness'").value.to_numpy()
            for name, r in (("left_out", left_out), ("kept", kept))}
    assert comp["left_out"][2] == 0.0  # a one-unit text keeps its only word
    assert not np.allclose(comp["left_out"], comp["kept"])


def test_budget_stops_cleanly_with_what_it_has(tiny):
    report = evaluate_explanations(tiny, TEXTS * 40, methods="attention", max_samples=70)
    assert report.to_frame().set_index("metric").loc["comprehensiveness", "n_samples"] == 70
    with pytest.warns(UserWarning, match="the budget of 1e-09 s was spent after 32 of 160"):
        report = evaluate_explanations(tiny, TEXTS * 40, methods="attention",
                                       max_seconds=1e-9)
    assert report.samples["sample"].max() == 31
    with pytest.raises(ValueError, match="max_samples must be a positive integer"):
        evaluate_explanations(tiny, TEXTS, max_samples=0)


def test_stability_on_the_first_samples_only(tiny):
    report = evaluate_explanations(tiny, TEXTS * 20, methods="gradient", stability_samples=40,
                                   random_state=0)
    counts = report.to_frame().set_index("metric").n_samples
    assert counts["stability_jsd"] == 64 and counts["comprehensiveness"] == 80  # whole chunks
    report = evaluate_explanations(tiny, TEXTS, methods="gradient", stability_samples=0)
    assert "stability_jsd" not in set(report.samples.metric)
    assert report.skipped.set_index("metric").reason["stability_jsd"] == "stability_samples=0"
    with pytest.raises(ValueError, match="stability_samples must be an integer >= 0 or None"):
        evaluate_explanations(tiny, TEXTS, stability_samples=-1)
