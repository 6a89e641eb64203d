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

# ``__all__`` is the public API; the names imported ``as`` themselves serve the
# package's other layers only
from interpretable.metrics._attention_analysis import (
    attribution_agreement,
    conicity,
    hidden_state_conicity,
    pos_attention,
)
from interpretable.metrics._attention_interventions import (
    decision_flip_fraction,
    permutation_tvd,
)
from interpretable.metrics._common import (
    AnalysisResult,
    check_text_model,
)
from interpretable.metrics._conventions import (
    ERASER,
    FERRET,
    Convention,
    get_convention,
)
from interpretable.metrics._faithfulness import (
    comprehensiveness,
    sensitivity,
    sufficiency,
    top_k_overlap,
)
from interpretable.metrics._image_faithfulness import (
    image_stability,
    pixel_flipping,
)
from interpretable.metrics._isan_analysis import (
    bias_similarity,
    input_bias_analysis,
    offsets_vs_bigram,
    readout_bias_vs_unigram,
)
from interpretable.metrics._isan_context_analysis import (
    contribution_decay,
    parentheses_state_analysis,
    word_context_effects,
)
from interpretable.metrics._localisation import (
    confident_grids,
    grid_pointing_game,
    smoothing_kernel as smoothing_kernel,
)
from interpretable.metrics._perturbation import (
    pixel_perturbation,
)
from interpretable.metrics._plausibility import (
    plausibility,
)
from interpretable.metrics._ranking import (
    plot_ranking,
    rank_methods,
    verdict,
)
from interpretable.metrics._report import (
    ExplanationReport,
    evaluate_explanations,
    loo_kendall_tau,
)
from interpretable.metrics._scorers import (
    make_explanation_scorer,
    make_plausibility_scorer,
    make_stability_scorer,
)
from interpretable.metrics._stability import (
    embedding_stability,
    seed_stability,
    word_stability,
)

__all__ = [
    "Convention", "ExplanationReport", "attribution_agreement", "bias_similarity",
    "comprehensiveness", "conicity", "contribution_decay", "decision_flip_fraction",
    "embedding_stability", "evaluate_explanations", "get_convention", "grid_pointing_game",
    "hidden_state_conicity", "image_stability", "input_bias_analysis", "loo_kendall_tau",
    "make_explanation_scorer", "make_plausibility_scorer", "make_stability_scorer",
    "offsets_vs_bigram", "parentheses_state_analysis", "permutation_tvd", "pixel_flipping",
    "pixel_perturbation", "plausibility", "plot_ranking", "pos_attention", "rank_methods",
    "readout_bias_vs_unigram", "seed_stability", "sensitivity", "sufficiency", "top_k_overlap",
    "verdict", "word_context_effects", "word_stability", "ERASER", "FERRET", "confident_grids",
    "AnalysisResult", "check_text_model",
]
