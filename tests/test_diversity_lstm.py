"""Orthogonal LSTM cell and DiversityLSTMClassifier."""
import pytest
import torch
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from interpretable import DiversityLSTMClassifier
from interpretable.nn.losses import DiversityLoss
from interpretable.nn.attention import AttentionOutput
from interpretable.nn.recurrent import OrthogonalLSTM

SMALL = dict(embed_dim=12, hidden_size=12, batch_size=16, lr=1e-2, device="cpu")
MASK = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]], dtype=torch.bool)


def test_orthogonal_cell_is_orthogonal_to_sum_of_previous_states():
    torch.manual_seed(0)
    cell = OrthogonalLSTM(5, 8).double()
    h = cell(torch.randn(3, 6, 5, dtype=torch.double), MASK)
    previous = torch.cumsum(h, 1) - h
    dots = (h * previous).sum(-1)
    assert dots.abs().max() < 1e-10
    assert (h[~MASK] == 0).all()
    assert torch.isfinite(h).all() and h[:, 0].abs().sum() > 0   # t = 0: nothing to remove


def test_diversity_loss_adds_weighted_conicity():
    hidden = torch.tensor([[[1.0, 0.0], [1.0, 0.0]]])      # conicity 1
    out = AttentionOutput(torch.zeros(1, 2), torch.full((1, 2), 0.5), hidden, torch.ones(1, 2, dtype=torch.bool))
    y = torch.tensor([0])
    base = DiversityLoss(0.0)(out, y)
    assert float(DiversityLoss(0.5)(out, y) - base) == pytest.approx(0.5)


@pytest.fixture(scope="module")
def fits(sentiment_data):
    X, y = sentiment_data
    return {cell: DiversityLSTMClassifier(cell=cell, max_epochs=8, random_state=0, **SMALL).fit(X, y)
            for cell in ("vanilla", "diversity", "orthogonal")}


def test_diversity_term_lowers_conicity(fits, sentiment_data):
    X, y = sentiment_data
    con = {cell: clf.hidden_conicity(X).mean() for cell, clf in fits.items()}
    assert con["diversity"] < 0.7 * con["vanilla"]
    assert con["orthogonal"] < con["vanilla"]
    for clf in fits.values():
        assert clf.score(X, y) > 0.85


def test_cell_selects_encoder(fits):
    from interpretable.nn.recurrent import OrthogonalLSTM as Cell
    assert isinstance(fits["orthogonal"].module_.encoder.rnn, Cell)
    assert isinstance(fits["vanilla"].module_.encoder.rnn, torch.nn.LSTM)


def test_estimator_contracts(fits, sentiment_data, tmp_path):
    X, y = sentiment_data
    fits["orthogonal"].save(tmp_path / "ortho")
    loaded = DiversityLSTMClassifier.load(tmp_path / "ortho", device="cpu")
    assert loaded.cell == "orthogonal"
    torch.testing.assert_close(torch.from_numpy(loaded.predict_proba(X[:8])),
                               torch.from_numpy(fits["orthogonal"].predict_proba(X[:8])))
    est = clone(fits["diversity"])
    assert est.get_params()["cell"] == "diversity" and est.get_params()["diversity_weight"] == 0.5
    assert "encoder" not in est.get_params()
    exp = fits["orthogonal"].explain(X[:2], method="integrated_gradients", n_steps=20)
    assert exp.completeness_error.max() < 0.05
    search = GridSearchCV(DiversityLSTMClassifier(max_epochs=1, random_state=0, **SMALL),
                          {"cell": ["vanilla", "diversity"], "diversity_weight": [0.5]}, cv=2)
    search.fit(X[:48], y[:48])
    assert search.best_params_["cell"] in ("vanilla", "diversity")


def test_bad_params(sentiment_data):
    X, y = sentiment_data
    with pytest.raises(ValueError, match="cell"):
        DiversityLSTMClassifier(cell="gru").fit(X, y)
    with pytest.raises(ValueError, match="diversity_weight"):
        DiversityLSTMClassifier(diversity_weight=-1).fit(X, y)
    with pytest.raises(ValueError, match="diversity_weight"):
        DiversityLSTMClassifier(diversity_weight=float("nan")).fit(X, y)
