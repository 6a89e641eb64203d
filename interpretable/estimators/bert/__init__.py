"""Text classifiers over ``transformers`` checkpoints: the fine-tuned BERT-family ones, B-cos
(exact word-piece contributions) and conventional (:mod:`.estimators`), and any sequence
classifier run as it is (:mod:`.transformers_model`); what they share (:mod:`.base`), their
checkpoint reading (:mod:`.checkpoint`), training callbacks (:mod:`.callbacks`) and
explanation methods (:mod:`.explainers`)."""
from interpretable.estimators.bert.estimators import BcosTextClassifier, BertTextClassifier
from interpretable.estimators.bert.transformers_model import TransformersTextClassifier

__all__ = ["BcosTextClassifier", "BertTextClassifier", "TransformersTextClassifier"]
