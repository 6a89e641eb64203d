import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import FunctionTransformer

from interpretable import EmbeddingBagClassifier
from interpretable.explanation import iter_explanations
from interpretable.integrations._pipeline import ExplainablePipeline, make_explainable_pipeline
from interpretable.integrations._streaming import explanations_to_frame


def _strip_html(texts):
    return [t.replace("<br>", " ").strip() for t in texts]


@pytest.fixture(scope="module")
def fitted(sentiment_data):
    X, y = sentiment_data
    return EmbeddingBagClassifier(embed_dim=8, max_epochs=5, lr=0.05, random_state=0).fit(X, y)


def test_explainable_pipeline_keeps_original_inputs(sentiment_data):
    X, y = sentiment_data
    pipe = make_explainable_pipeline(
        FunctionTransformer(_strip_html),
        EmbeddingBagClassifier(embed_dim=8, max_epochs=5, lr=0.05, random_state=0),
    )
    assert isinstance(pipe, ExplainablePipeline)
    with pytest.raises(NotFittedError):
        pipe.explain(X[:2])
    pipe.fit(X, y)
    raw = ["the movie<br>was great", "dull<br>plot"]
    exp = pipe.explain(raw)
    assert exp.inputs == raw
    assert "<br>" not in " ".join(exp.units[0])
    assert exp.completeness_error.max() < 1e-5
    direct = pipe[-1].explain(_strip_html(raw))
    np.testing.assert_allclose(np.concatenate(exp.values), np.concatenate(direct.values))


def test_streaming_matches_one_shot(fitted, sentiment_data, tmp_path):
    X, _ = sentiment_data
    whole = fitted.explain(X[:25]).to_frame()
    chunked = explanations_to_frame(fitted, X[:25], chunk_size=7)
    pd.testing.assert_frame_equal(chunked, whole)
    offsets = [o for o, _ in iter_explanations(fitted, iter(X[:25]), chunk_size=10)]
    assert offsets == [0, 10, 20]
    for suffix in (".csv", ".parquet"):
        path = explanations_to_frame(fitted, X[:25], path=tmp_path / f"e{suffix}", chunk_size=7)
        back = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
        assert len(back) == len(whole)
        np.testing.assert_allclose(back["attribution"], whole["attribution"])
        assert back["sample"].tolist() == whole["sample"].tolist()
    with pytest.raises(ValueError, match="parquet or .csv"):
        explanations_to_frame(fitted, X[:3], path=tmp_path / "e.json")
    with pytest.raises(ValueError, match="chunk_size"):
        explanations_to_frame(fitted, X[:3], chunk_size=0)
