"""Attributions computed from a model's parts over forward functions, called as captum's are: the
exact per-head split of a B-cos ViT's contributions (:func:`head_contributions`), token
attributions (:func:`attribute_tokens`), pixel attributions (:func:`attribute_pixels`), the
perturbation engine behind occlusion, LIME and Kernel SHAP (:func:`perturbation_attributions`),
noise tunnels (:func:`noise_tunnel`), layer methods of any image classifier
(:func:`layer_attribution`, :func:`layer_gradcam`) and the Quantus adapter
(:class:`QuantusModel`)."""

# ``__all__`` is the public API; the names imported ``as`` themselves serve the
# package's other layers only
from interpretable.attribution._feature_maps import (
    layer_attribution,
    layer_gradcam,
    named_layer as named_layer,
    pixel_deeplift,
    pixel_gradient,
    spread_cells,
)
from interpretable.attribution._heads import (
    HeadContributions,
    head_contributions,
)
from interpretable.attribution._hooked import (
    LIBRARY_LINEAR,
    deeplift_blockers,
    deeplift_copy,
    deeplift_refusal,
    find_layer,
    own_hooks_copy,
)
from interpretable.attribution._images import (
    PIXEL_METHODS,
    attribute_pixels,
    gaussian_blur as gaussian_blur,
    gradcam,
    inherent,
    inherent_terms,
    patch_features,
)
from interpretable.attribution._noise import (
    Draws,
    draw,
    gradient_shap,
    noise_tunnel,
    seeded_generator,
)
from interpretable.attribution._perturbation import (
    PERTURBATION_METHODS,
    draw_coalitions,
    perturbation_attributions,
)
from interpretable.attribution._quantus import (
    QuantusModel,
    explain_func,
)
from interpretable.attribution._tokens import (
    TokenAttributions,
    attribute_tokens,
)

__all__ = [
    "head_contributions", "HeadContributions", "attribute_tokens", "TokenAttributions",
    "attribute_pixels", "PIXEL_METHODS", "inherent", "inherent_terms", "gradcam",
    "patch_features", "noise_tunnel", "gradient_shap", "draw", "Draws", "seeded_generator",
    "perturbation_attributions", "draw_coalitions", "PERTURBATION_METHODS", "own_hooks_copy",
    "deeplift_blockers", "deeplift_refusal", "find_layer", "deeplift_copy", "LIBRARY_LINEAR",
    "layer_gradcam", "layer_attribution", "spread_cells", "pixel_deeplift", "pixel_gradient",
    "QuantusModel", "explain_func",
]
