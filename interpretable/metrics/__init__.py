"""metrics"""
from .localisation import grid_pointing_game  # noqa: E402,F401
from .perturbation import pixel_perturbation  # noqa: E402,F401
from .faithfulness import comprehensiveness, sensitivity, sufficiency, top_k_overlap  # noqa: E402,F401
from .scorers import make_explanation_scorer, make_stability_scorer  # noqa: E402,F401
from .stability import embedding_stability, seed_stability, word_stability  # noqa: E402,F401
from .attention_analysis import (  # noqa: E402,F401
    attribution_agreement, conicity, decision_flip_fraction, hidden_state_conicity, permutation_tvd,
    pos_attention)
from .isan_analysis import (  # noqa: E402,F401
    bias_similarity, contribution_decay, input_bias_analysis, offsets_vs_bigram,
    parentheses_state_analysis, readout_bias_vs_unigram, word_context_effects)
