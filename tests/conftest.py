import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """The tests' tiny models run fastest on one thread (and are not disturbed by other jobs
    on a shared machine); the previous setting is restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def sentiment_data():
    """A tiny, learnable two-class text task (no data package needed)."""
    rng = np.random.RandomState(0)
    pos = ["great", "wonderful", "superb", "moving", "brilliant"]
    neg = ["awful", "boring", "dull", "terrible", "lifeless"]
    filler = ["the", "movie", "was", "a", "plot", "and", "film", "story", "acting", "really"]
    X, y = [], []
    for i in range(160):
        label = i % 2
        words = list(rng.choice(filler, size=rng.randint(3, 8)))
        words.insert(rng.randint(len(words) + 1), rng.choice(pos if label else neg))
        X.append(" ".join(words))
        y.append("pos" if label else "neg")
    return X, np.array(y)
