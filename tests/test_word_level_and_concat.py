"""Word-level gradient methods of the BERT-family estimators, and concatenating explanations
of different methods."""

import dataclasses

import numpy as np
import pytest

from interpretable import (
    BcosTextClassifier,
    BertTextClassifier,
    ImageExplanation,
    concat_explanations,
)
from interpretable.estimators.methods import get_explainer
from interpretable.estimators.transformer._explainers import BertExplainer

TINY_BERT = {"vocab_size": 30522, "hidden_size": 16, "num_hidden_layers": 2,
             "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 32,
             "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1,
             "attention_probs_dropout_prob": 0.1}
WORDS = ["unbelievably good film", "the plot was dull", "great", "a boring, awful movie"]


@pytest.fixture(scope="module")
def bert():
    return BertTextClassifier(checkpoint=TINY_BERT, max_length=24, lr=3e-3, max_epochs=1,
                              batch_size=8, random_state=0, device="cpu").fit(
        WORDS * 2, ["pos", "neg", "pos", "neg"] * 2)


@pytest.mark.parametrize("method", ["integrated_gradients", "input_x_gradient"])
def test_additive_methods_sum_the_pieces_of_a_word(bert, method):
    options = {"n_steps": 16} if method == "integrated_gradients" else {}
    pieces = bert.explain(WORDS, target="pos", method=method, **options)
    words = bert.explain(WORDS, target="pos", method=method, level="word", **options)
    assert words.level == "word" and words.units[0] == ["unbelievably", "good", "film"]
    for i, text in enumerate(WORDS):
        of = bert.encode([text]).alignments[0].words
        real = of >= 0
        expected = np.bincount(of[real], weights=pieces.values[i][real],
                               minlength=len(words.units[i]))
        np.testing.assert_allclose(words.values[i], expected, atol=1e-12)


def test_integrated_gradients_stay_complete_at_word_level(bert):
    """word values + bias reproduce the logit within the convergence error of the pieces."""
    pieces = bert.explain(WORDS, method="integrated_gradients", n_steps=16)
    words = bert.explain(WORDS, method="integrated_gradients", n_steps=16, level="word")
    np.testing.assert_array_equal(words.logit, pieces.logit)

    def gap(e):
        return np.array([v.sum() for v in e.values]) + e.bias - e.logit

    np.testing.assert_allclose(gap(words), gap(pieces), atol=1e-9)
    assert (np.abs(gap(words)) <= 1e-3 * np.abs(words.logit) + 1e-6).all()
    assert words.completeness_error.max() < 1e-3


def test_saliency_of_a_word_is_the_norm_of_its_pieces_gradients(bert):
    pieces = bert.explain(WORDS, target="neg", method="gradient")
    words = bert.explain(WORDS, target="neg", method="gradient", level="word")
    assert words.bias is None
    for i, text in enumerate(WORDS):
        of = bert.encode([text]).alignments[0].words
        for w in range(len(words.units[i])):
            np.testing.assert_allclose(words.values[i][w],
                                       np.linalg.norm(pieces.values[i][of == w]), rtol=1e-12)
    several = bert.encode(["unbelievably"]).alignments[0].words
    assert (several == 0).sum() > 1  # a word of several pieces is covered


def test_every_bert_method_takes_level_and_names_stay(bert):
    for method in bert.explain_methods:
        explainer = get_explainer(bert, method)
        assert "level" in explainer.options(), method
    assert {"gradient", "integrated_gradients", "input_x_gradient"} <= set(bert.explain_methods)
    with pytest.raises(ValueError, match="level"):
        bert.explain(WORDS[:1], method="gradient", level="sentence")
    for method in ("gradient", "integrated_gradients", "input_x_gradient"):
        assert isinstance(get_explainer(BcosTextClassifier, method), BertExplainer)


# ---------------------------------------------------------------------------- concatenation
def test_methods_concatenate_and_keep_each_rows_method(bert):
    ig = bert.explain(WORDS, method="integrated_gradients", n_steps=8, level="word")
    gradient = bert.explain(WORDS, method="gradient", level="word")
    attention = bert.explain(WORDS, method="attention", level="word")
    both = concat_explanations([ig, gradient, attention])
    assert both.method.tolist() == (["integrated_gradients"] * 4 + ["gradient"] * 4
                                    + ["attention"] * 4)
    assert both.class_independent.tolist() == [False] * 8 + [True] * 4
    units = both.to_frame()
    assert set(units.groupby("method")["class_independent"].first().items()) == {
        ("integrated_gradients", False), ("gradient", False), ("attention", True)}
    samples = both.to_frame(kind="samples")
    assert samples["method"].tolist() == both.method.tolist()
    # completeness only where the method has it: NaN for the others
    np.testing.assert_array_equal(both.completeness_error[:4], ig.completeness_error)
    assert np.isnan(both.completeness_error[4:]).all() and np.isnan(both.logit[4:]).all()
    # selecting one method gives back a one-method explanation, views included
    again = both[both.method == "gradient"]
    assert again.method == "gradient" and again.class_independent is False
    assert 'data-method="gradient"' in again.to_html()
    for i, v in enumerate(gradient.values):
        np.testing.assert_array_equal(again.values[i], v)
    with pytest.raises(ValueError, match="holds the methods"):
        both.to_html()


def test_mismatches_that_would_be_silently_wrong_are_refused(bert):
    words = bert.explain(WORDS[:2], method="gradient", level="word")
    pieces = bert.explain(WORDS[:2], method="input_x_gradient")
    with pytest.raises(ValueError, match="different 'level': 'word' and 'piece'"):
        concat_explanations([words, pieces])
    image = ImageExplanation(values=np.ones((1, 2, 2)), target=np.array([0]),
                             prediction=np.array([0]), method="gradient")
    with pytest.raises(TypeError, match="WordPieceExplanation and ImageExplanation"):
        concat_explanations([words, image])
    # one method whose parts disagree on carrying a field stays refused
    with pytest.raises(ValueError, match="only some carry 'logit'"):
        concat_explanations([words, dataclasses.replace(words, logit=np.zeros(2))])


def test_global_explanation_refuses_mixed_methods(bert):
    from interpretable.explanation import global_explanation

    both = concat_explanations([bert.explain(WORDS, method="gradient"),
                                bert.explain(WORDS, method="input_x_gradient")])
    with pytest.raises(ValueError, match="different methods"):
        global_explanation(both)
    assert global_explanation(both[both.method == "gradient"]).method == "gradient"
