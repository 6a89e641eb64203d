"""Code as a strictly typed user writes it against the public API: ``mypy --strict`` on this
file (``tests/test_typing.py``) fails on a call to an unannotated public function or method
and on a result whose annotated type does not fit its use. Never run, only checked."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from interpretable import (
    BcosResNetClassifier,
    BcosViTClassifier,
    EmbeddingBagClassifier,
    ImageClassifier,
    ISANLanguageModel,
    SEATClassifier,
    TokenExplanation,
    concat_explanations,
)
from interpretable.attribution import attribute_pixels, attribute_tokens
from interpretable.datasets import make_colored_shapes, make_planted_evidence_texts
from interpretable.estimators.core import load_estimator, save_estimator
from interpretable.estimators.methods import describe_explainers, get_explainer
from interpretable.explanation import ImageExplanation, read_frame, write_frame
from interpretable.integrations import ExplainablePipeline, explanations_to_frame
from interpretable.metrics import (
    AnalysisResult,
    ExplanationReport,
    comprehensiveness,
    evaluate_explanations,
    make_explanation_scorer,
    rank_methods,
    sufficiency,
)
from interpretable.nn.bcos import BcosLinear, bcosify, explanation_mode
from interpretable.preprocessing import TextEncoder
from interpretable.utils import Interval, validate_parameters


def text_workflow(texts: list[str], labels: np.ndarray, folder: str) -> float:
    clf = EmbeddingBagClassifier(max_epochs=2, random_state=0)
    fitted: EmbeddingBagClassifier = clf.fit(texts, labels)
    proba: np.ndarray = fitted.predict_proba(texts)
    scores: np.ndarray = fitted.decision_function(texts)
    explanation = fitted.explain(texts[:4], method="integrated_gradients")
    frame: pd.DataFrame = explanation.to_frame()
    html: str = explanation.to_html()
    both = concat_explanations([explanation, fitted.explain(texts[4:8])])
    assert isinstance(both, TokenExplanation)
    save_estimator(fitted, folder)
    loaded: EmbeddingBagClassifier = load_estimator(EmbeddingBagClassifier, folder)
    assert loaded is not None and frame is not None and html
    result: AnalysisResult = comprehensiveness(fitted, texts[:8])
    assert sufficiency(fitted, texts[:8]).summary is not None
    report: ExplanationReport = evaluate_explanations(fitted, texts[:8], labels[:8])
    ranking: pd.DataFrame = rank_methods(report)
    assert ranking is not None and result.frame is not None
    listing: str = describe_explainers([EmbeddingBagClassifier, BcosViTClassifier])
    assert listing
    get_explainer(fitted, "gradient")
    return float(proba.sum() + scores.sum() + fitted.score(texts, labels))


def other_estimators(texts: list[str], labels: np.ndarray, images: np.ndarray,
                     classes: np.ndarray) -> None:
    SEATClassifier(max_epochs=1).fit(texts, labels)
    isan = ISANLanguageModel(max_epochs=1).fit(texts)
    isan.explain(texts[:1])
    vit = BcosViTClassifier(max_epochs=1).fit(images, classes)
    image_explanation: ImageExplanation = vit.explain(images[:2])
    image_explanation.plot()
    BcosResNetClassifier(max_epochs=1).fit(images, classes).predict(images)
    ImageClassifier(max_epochs=1).fit(images, classes).predict_proba(images)


def data_and_tables(path: str) -> pd.DataFrame:
    planted = make_planted_evidence_texts(n_samples=20, random_state=0)
    texts, labels = planted.data, planted.target
    shapes = make_colored_shapes(n_samples=8, size=16, random_state=0)
    images, classes = shapes.data, shapes.target
    clf = EmbeddingBagClassifier(max_epochs=1).fit(texts, labels)
    frame = explanations_to_frame(clf, texts)
    write_frame(frame, path)
    encoder = TextEncoder().fit(texts)
    assert encoder is not None and images is not None and classes is not None
    pipeline = ExplainablePipeline([("model", EmbeddingBagClassifier(max_epochs=1))])
    pipeline.fit(texts, labels)
    scorer = make_explanation_scorer("comprehensiveness")
    assert scorer is not None
    return read_frame(path)


def torch_level(model: torch.nn.Module, x: torch.Tensor, embeddings: torch.Tensor,
                mask: torch.Tensor) -> None:
    maps: torch.Tensor = attribute_pixels(model, x, 0, method="integrated_gradients")
    target = torch.zeros(len(embeddings), dtype=torch.long)
    tokens = attribute_tokens(model, embeddings, target, method="gradient", mask=mask)
    layer = BcosLinear(4, 2)
    with explanation_mode():
        layer(x)
    bcos_model = bcosify(model)
    validate_parameters({"n": [Interval(int, 1, None, closed="left")]}, {"n": 3}, caller_name="f")
    assert maps is not None and tokens is not None and bcos_model is not None
