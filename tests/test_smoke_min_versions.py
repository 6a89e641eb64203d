"""A smoke test of the whole surface, run alone by ``.ci/min-versions.sh`` in a venv of the
declared minimum versions (it runs in ``make test`` too): every estimator of
``conformance.cases`` and the conventional BERT fit, predict, explain, save and load at a tiny
size, a checkpoint folder converts, and the README's quick start runs."""
import re
from pathlib import Path

import numpy as np
import pytest
from conformance.cases import _TINY_BERT, CASES, Case, _sentiment


def _bert_text():
    from interpretable import BertTextClassifier

    return BertTextClassifier(checkpoint=_TINY_BERT, max_length=16, max_epochs=1,
                              random_state=0)


@pytest.mark.parametrize(
    "case", [*CASES, Case("BertTextClassifier", _bert_text, _sentiment, "text")], ids=str)
def test_fit_predict_explain_save_load(case, tmp_path):
    X, y, X_test = case.data()
    est = case.make()
    est.fit(X, y) if y is not None else est.fit(X)
    predicted = est.predict(X_test)
    if case.explains:
        assert len(est.explain(X_test[:2], **case.explain_kwargs).to_frame()) > 0
    loaded = type(est).load(est.save(tmp_path / "model"), device="cpu")
    np.testing.assert_equal(loaded.predict(X_test), predicted)


def test_readme_quick_start(tmp_path, monkeypatch):
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    quick_start = re.search(r"```python\n(.*?)```", readme, re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(quick_start, "README.md", "exec"), {"__name__": "__main__"})
    assert (tmp_path / "quickstart.png").is_file()


def test_a_checkpoint_folder_is_converted_and_explained_exactly(tmp_path):
    from families import tiny_checkpoint

    from interpretable import BcosTextClassifier

    X, y, X_test = _sentiment()
    clf = BcosTextClassifier(checkpoint=tiny_checkpoint(tmp_path / "bert", "bert"),
                             max_length=32, max_epochs=1, random_state=0).fit(X, y)
    assert clf.explain(X_test, dtype="float64").completeness_error.max() <= 1e-9


def test_every_explanation_method_and_the_report():
    """The captum methods (occlusion, LIME, Kernel SHAP, integrated gradients' baselines) and
    the evaluation report at the floors of captum, scikit-learn and scipy."""
    from interpretable import EmbeddingBagClassifier
    from interpretable.metrics import evaluate_explanations

    X, y, X_test = _sentiment()
    clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=1, random_state=0).fit(X, y)
    for method in clf.explain_methods:
        assert len(clf.explain(X_test[:2], method=method).values) == 2, method
    clf.explain(X_test[:2], method="integrated_gradients", baseline="pad")
    report = evaluate_explanations(clf, X_test[:4], methods=["inherent", "occlusion"])
    assert {"comprehensiveness", "loo_kendall_tau"} <= set(report.to_frame()["metric"])


def test_a_fine_tuned_classifier_folder_is_an_estimator(tmp_path):
    from families import tiny_checkpoint

    from interpretable import BertTextClassifier

    folder = tiny_checkpoint(tmp_path / "roberta", "roberta", labels=["neg", "pos"])
    clf = BertTextClassifier.from_pretrained(folder, device="cpu")
    _, _, X_test = _sentiment()
    assert clf.predict_proba(X_test).shape == (len(X_test), 2)
    assert len(clf.explain(X_test[:2], method="lime", level="word").values) == 2


def test_the_text_data_and_parquet_extras(tmp_path):
    """The features of the ``text-data`` and ``parquet`` extras at the floors of gensim, nltk
    and pyarrow: the GloVe vectors, the POS tagger, synonym substitution and Parquet tables."""
    from gensim.models import KeyedVectors

    from interpretable import EmbeddingBagClassifier
    from interpretable.datasets import load_glove
    from interpretable.explanation import read_frame, write_frame
    from interpretable.preprocessing import SynonymSubstitution, pos_tag

    glove = load_glove()
    assert glove.vector_size == 50 and "film" in glove.key_to_index
    assert pos_tag(["a", "great", "film"]) == ["DET", "ADJ", "NOUN"]
    vectors = KeyedVectors(vector_size=2)
    vectors.add_vectors(["movie", "film", "great", "good"],
                        np.array([[1.0, 0.1], [1.0, 0.0], [0.0, 1.0], [0.1, 1.0]]))
    perturber = SynonymSubstitution(vectors=vectors, random_state=0).fit()
    assert perturber.substitute(["A great movie."])[0] == ["A great film."]
    X, y, X_test = _sentiment()
    clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=1, random_state=0).fit(X, y)
    frame = clf.explain(X_test).to_frame()
    back = read_frame(write_frame(frame, tmp_path / "explanation.parquet"))
    assert back.dtypes.to_dict() == frame.dtypes.to_dict() and len(back) == len(frame)
