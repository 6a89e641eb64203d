"""Metrics of explanations and of the models behind them, computed through the estimators'
public methods (``predict_proba``, ``explain``), so they apply to any estimator of the package.

* Faithfulness: :func:`comprehensiveness`, :func:`sufficiency`, :func:`sensitivity`,
  :func:`top_k_overlap`, :func:`pixel_perturbation`, :func:`grid_pointing_game`.
* Stability: :func:`embedding_stability`, :func:`word_stability`, :func:`seed_stability`,
  and the scikit-learn scorers :func:`make_explanation_scorer`, :func:`make_stability_scorer`.
* Which explanation to trust: :func:`evaluate_explanations` (an :class:`ExplanationReport`),
  :func:`plausibility`, :func:`loo_kendall_tau` and the scorer
  :func:`make_plausibility_scorer`.
* Attention analyses (Diversity LSTM, SEAT): :func:`conicity`, :func:`hidden_state_conicity`,
  :func:`permutation_tvd`, :func:`decision_flip_fraction`, :func:`attribution_agreement`,
  :func:`pos_attention`.
* ISAN analyses: :func:`bias_similarity`, :func:`contribution_decay`,
  :func:`input_bias_analysis`, :func:`offsets_vs_bigram`, :func:`parentheses_state_analysis`,
  :func:`readout_bias_vs_unigram`, :func:`word_context_effects`.
"""
from .attention_analysis import (
    attribution_agreement,
    conicity,
    decision_flip_fraction,
    hidden_state_conicity,
    permutation_tvd,
    pos_attention,
)
from .faithfulness import comprehensiveness, sensitivity, sufficiency, top_k_overlap
from .isan_analysis import (
    bias_similarity,
    contribution_decay,
    input_bias_analysis,
    offsets_vs_bigram,
    parentheses_state_analysis,
    readout_bias_vs_unigram,
    word_context_effects,
)
from .localisation import grid_pointing_game
from .perturbation import pixel_perturbation
from .plausibility import plausibility
from .report import ExplanationReport, evaluate_explanations, loo_kendall_tau
from .scorers import make_explanation_scorer, make_plausibility_scorer, make_stability_scorer
from .stability import embedding_stability, seed_stability, word_stability

__all__ = [
    "ExplanationReport", "attribution_agreement", "bias_similarity", "comprehensiveness",
    "conicity", "contribution_decay", "decision_flip_fraction", "embedding_stability",
    "evaluate_explanations", "grid_pointing_game", "hidden_state_conicity",
    "input_bias_analysis", "loo_kendall_tau", "make_explanation_scorer",
    "make_plausibility_scorer", "make_stability_scorer", "offsets_vs_bigram",
    "parentheses_state_analysis", "permutation_tvd", "pixel_perturbation", "plausibility",
    "pos_attention", "readout_bias_vs_unigram", "seed_stability", "sensitivity",
    "sufficiency", "top_k_overlap", "word_context_effects", "word_stability",
]
