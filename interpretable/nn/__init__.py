"""The networks behind the estimators, in torch alone (this layer imports nothing else of the
package): the conventional ViTs (:class:`ViT` with a CNN stem, :class:`ConventionalViT` in the
torchvision / timm layout), any torchvision or timm classifier as it is
(:class:`LibraryImageModel`), the orthogonal LSTM of the diversity model
(:class:`OrthogonalLSTM`), the BERT-lineage encoder families (:func:`encoder_options`) and
:func:`logits_of`; the B-cos networks are in :mod:`interpretable.nn.bcos`."""

# ``__all__`` is the public API; the names imported ``as`` themselves serve the
# package's other layers only
from interpretable.nn._attacks import (
    NORMS as NORMS,
    check_clamp as check_clamp,
    embedding_attack as embedding_attack,
    embedding_pgd as embedding_pgd,
)
from interpretable.nn._attention import (
    CONICITY_KINDS as CONICITY_KINDS,
    AttentionTextModule as AttentionTextModule,
    check_conicity_kind as check_conicity_kind,
    conicity as conicity,
)
from interpretable.nn._bert_classifier import (
    BertClassifier as BertClassifier,
)
from interpretable.nn._bert_encoder import (
    BertEncoder as BertEncoder,
    UntrainedHeadError as UntrainedHeadError,
    config_from_fields as config_from_fields,
    load_encoder as load_encoder,
    load_sequence_classifier as load_sequence_classifier,
    load_tokenizer as load_tokenizer,
    read_config as read_config,
)
from interpretable.nn._char_lstm import (
    CharLSTM as CharLSTM,
    lstm_parameter_count as lstm_parameter_count,
)
from interpretable.nn._embedding_bag import (
    MeanEmbeddingClassifier as MeanEmbeddingClassifier,
)
from interpretable.nn._encoder_families import (
    FAMILIES as FAMILIES,
    EncoderFamily,
    encoder_family as encoder_family,
    encoder_options,
    usable_positions as usable_positions,
)
from interpretable.nn._generic_classifier import (
    GenericSequenceClassifier as GenericSequenceClassifier,
    calibrate as calibrate,
    structure_config as structure_config,
)
from interpretable.nn._heads import (
    check_mha as check_mha,
    mha_heads as mha_heads,
)
from interpretable.nn._isan import (
    ISAN as ISAN,
    isan_parameter_count as isan_parameter_count,
)
from interpretable.nn._library_image import (
    LibraryImageModel,
    as_channels_first as as_channels_first,
    build_model as build_model,
    channels_last as channels_last,
    check_options as check_options,
    find_feature_map,
    fixed_input_size as fixed_input_size,
    head_keys as head_keys,
    import_library as import_library,
    libraries_with as libraries_with,
    library_of as library_of,
    map_layout,
    split_architecture as split_architecture,
    state_shapes as state_shapes,
    token_grid as token_grid,
)
from interpretable.nn._library_vit import (
    CHECKPOINT_LAYOUTS as CHECKPOINT_LAYOUTS,
    ConventionalViT,
)
from interpretable.nn._losses import (
    IGNORE_INDEX as IGNORE_INDEX,
    DistillationLoss as DistillationLoss,
    DiversityLoss as DiversityLoss,
    OneHotBCE as OneHotBCE,
    OutputCrossEntropy as OutputCrossEntropy,
    SequenceLoss as SequenceLoss,
    explained_logits as explained_logits,
    logits_of,
    prediction_divergence as prediction_divergence,
)
from interpretable.nn._recurrent import (
    RECURRENT_KINDS as RECURRENT_KINDS,
    OrthogonalLSTM,
    autocast_fallbacks as autocast_fallbacks,
    orthogonal_lstm,
)
from interpretable.nn._seat import (
    AUTHORS_PARAM_GROUPS as AUTHORS_PARAM_GROUPS,
    AuthorsSEATCriterion as AuthorsSEATCriterion,
    AuthorsSEATTrainer as AuthorsSEATTrainer,
    RobustCriterion as RobustCriterion,
    RobustTrainer as RobustTrainer,
    SEATCriterion as SEATCriterion,
    SEATTrainer as SEATTrainer,
    top_k_overlap as top_k_overlap,
)
from interpretable.nn._sequence_classifier import (
    PretrainedSequenceClassifier as PretrainedSequenceClassifier,
)
from interpretable.nn._stem_vit import (
    ViT,
)
from interpretable.nn._tensors import (
    listed_keys as listed_keys,
    make_generator as make_generator,
    pad_sequences as pad_sequences,
    resolve_device as resolve_device,
)

__all__ = [
    "logits_of", "ViT", "ConventionalViT", "LibraryImageModel", "find_feature_map",
    "map_layout", "OrthogonalLSTM", "orthogonal_lstm", "encoder_options", "EncoderFamily",
]
