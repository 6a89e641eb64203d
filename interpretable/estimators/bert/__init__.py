"""Fine-tuned BERT-family text classifiers: the B-cos one (exact word-piece contributions) and
the conventional one, their checkpoint reading (:mod:`.checkpoint`), training callbacks
(:mod:`.callbacks`) and explanation methods (:mod:`.explainers`)."""
from .estimators import BcosTextClassifier, BertTextClassifier

__all__ = ["BcosTextClassifier", "BertTextClassifier"]
