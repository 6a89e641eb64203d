"""Metrics of explanations and of the models behind them, computed through the estimators'
public methods (``predict_proba``, ``explain``), so they apply to any estimator of the package.

* Faithfulness: :func:`comprehensiveness`, :func:`sufficiency`, :func:`sensitivity`,
  :func:`top_k_overlap`, :func:`pixel_perturbation`, :func:`pixel_flipping` (deletion and
  insertion), :func:`grid_pointing_game`.
* Stability: :func:`embedding_stability`, :func:`word_stability`, :func:`seed_stability`,
  and the scikit-learn scorers :func:`make_explanation_scorer`, :func:`make_stability_scorer`.
* Which explanation to trust: :func:`evaluate_explanations` (an :class:`ExplanationReport`),
  the decision rule (:func:`rank_methods`, :func:`verdict`, :func:`plot_ranking`), ERASER's
  or ferret's definitions (:class:`Convention`, :func:`get_convention`),
  :func:`plausibility`, :func:`loo_kendall_tau`, :func:`image_stability` and the scorer
  :func:`make_plausibility_scorer`.
* Attention analyses (Diversity LSTM, SEAT): :func:`conicity`, :func:`hidden_state_conicity`,
  :func:`permutation_tvd`, :func:`decision_flip_fraction`, :func:`attribution_agreement`,
  :func:`pos_attention`.
* ISAN analyses: :func:`bias_similarity`, :func:`contribution_decay`,
  :func:`input_bias_analysis`, :func:`offsets_vs_bigram`, :func:`parentheses_state_analysis`,
  :func:`readout_bias_vs_unigram`, :func:`word_context_effects`.
"""
from interpretable.metrics.attention_analysis import (
    attribution_agreement,
    conicity,
    decision_flip_fraction,
    hidden_state_conicity,
    permutation_tvd,
    pos_attention,
)
from interpretable.metrics.conventions import Convention, get_convention
from interpretable.metrics.faithfulness import (
    comprehensiveness,
    sensitivity,
    sufficiency,
    top_k_overlap,
)
from interpretable.metrics.image_faithfulness import image_stability, pixel_flipping
from interpretable.metrics.isan_analysis import (
    bias_similarity,
    contribution_decay,
    input_bias_analysis,
    offsets_vs_bigram,
    parentheses_state_analysis,
    readout_bias_vs_unigram,
    word_context_effects,
)
from interpretable.metrics.localisation import grid_pointing_game
from interpretable.metrics.perturbation import pixel_perturbation
from interpretable.metrics.plausibility import plausibility
from interpretable.metrics.ranking import plot_ranking, rank_methods, verdict
from interpretable.metrics.report import ExplanationReport, evaluate_explanations, loo_kendall_tau
from interpretable.metrics.scorers import (
    make_explanation_scorer,
    make_plausibility_scorer,
    make_stability_scorer,
)
from interpretable.metrics.stability import embedding_stability, seed_stability, word_stability

__all__ = [
    "Convention", "ExplanationReport", "attribution_agreement", "bias_similarity",
    "comprehensiveness", "conicity", "contribution_decay", "decision_flip_fraction",
    "embedding_stability", "evaluate_explanations", "get_convention", "grid_pointing_game",
    "hidden_state_conicity", "image_stability", "input_bias_analysis", "loo_kendall_tau",
    "make_explanation_scorer", "make_plausibility_scorer", "make_stability_scorer",
    "offsets_vs_bigram", "parentheses_state_analysis", "permutation_tvd", "pixel_flipping",
    "pixel_perturbation", "plausibility", "plot_ranking", "pos_attention", "rank_methods",
    "readout_bias_vs_unigram", "seed_stability", "sensitivity", "sufficiency", "top_k_overlap",
    "verdict", "word_context_effects", "word_stability",
]
