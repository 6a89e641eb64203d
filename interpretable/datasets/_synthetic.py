"""Synthetic data generators; all deterministic given ``random_state`` and fully offline."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from sklearn.utils import Bunch, check_random_state

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["make_parentheses", "make_image_grid", "make_colored_shapes", "make_babi_task1",
           "make_planted_evidence_texts"]

PARENTHESES = "()[]{}<>"
NOISE_SYMBOL = "."


def make_parentheses(n_sequences: int = 1000, length: int = 100, n_types: int = 2,
                     max_count: int = 5, noise: float = 0.3,
                     random_state: int | np.random.RandomState | None = None
                     ) -> tuple[list[str], np.ndarray]:
    """Generate the multiple-parentheses counting task of the ISAN paper.

    Each sequence is a string over ``n_types`` bracket pairs ``()[]{}<>`` and the noise symbol
    ``"."`` (probability ``noise`` per step). Brackets are drawn so that every nesting count
    stays within ``[0, max_count]``. The target at step ``t`` is the vector of nesting counts
    *before* reading symbol ``t`` (a one-step delay, so the model must remember).

    Parameters
    ----------
    n_sequences : int, default=1000
        Sequences.
    length : int, default=100
        Their length.
    n_types : int, default=2
        Bracket types (at most 4).
    max_count : int, default=5
        The largest nesting count.
    noise : float, default=0.3
        Probability of the noise symbol at each step.
    random_state : int, RandomState or None, default=None
        Seeds the sequences.

    Returns
    -------
    X : list of str
        The sequences.
    Y : ndarray of shape (n_sequences, length, n_types)
        The counts, int64 in ``[0, max_count]``.

    Examples
    --------
    >>> from interpretable.datasets import make_parentheses
    >>> X, Y = make_parentheses(n_sequences=2, length=6, random_state=0)
    >>> X, Y.shape
    (['[][]([', '([...('], (2, 6, 2))
    """
    if not 1 <= n_types <= len(PARENTHESES) // 2:
        raise ValueError(f"n_types must be between 1 and {len(PARENTHESES) // 2}, got {n_types}.")
    if max_count < 1 or length < 1 or n_sequences < 1:
        raise ValueError("n_sequences, length and max_count must all be at least 1.")
    rng = check_random_state(random_state)
    X, Y = [], np.zeros((n_sequences, length, n_types), dtype=np.int64)
    for i in range(n_sequences):
        counts = np.zeros(n_types, dtype=np.int64)
        chars = []
        for t in range(length):
            Y[i, t] = counts
            if rng.rand() < noise:
                chars.append(NOISE_SYMBOL)
                continue
            kind = rng.randint(n_types)
            can_open, can_close = counts[kind] < max_count, counts[kind] > 0
            opening = can_open and (not can_close or rng.rand() < 0.5)
            counts[kind] += 1 if opening else -1
            chars.append(PARENTHESES[2 * kind + (0 if opening else 1)])
        X.append("".join(chars))
    return X, Y


def make_image_grid(images: ArrayLike, labels: ArrayLike, grid: int = 2, n_grids: int = 100,
                    random_state: int | np.random.RandomState | None = None) -> Bunch:
    """Tile ``grid × grid`` images of pairwise distinct classes into one image per grid.

    Parameters
    ----------
    images : ndarray of shape (n, H, W) or (n, H, W, C)
        The images.
    labels : ndarray of shape (n,)
        Their classes.
    grid : int, default=2
        Cells per side.
    n_grids : int, default=100
        Grid images.
    random_state : int, RandomState or None, default=None
        Seeds the choice of the cells.

    Returns
    -------
    Bunch
        ``data`` ``(n_grids, grid*H, grid*W[, C])``, ``cell_labels`` ``(n_grids, grid*grid)``
        (row-major cells), ``cell_index`` (source image of each cell) and ``grid``.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable.datasets import make_image_grid
    >>> grids = make_image_grid(np.zeros((6, 4, 4)), np.arange(6), n_grids=2, random_state=0)
    >>> grids.data.shape, grids.cell_labels.shape
    ((2, 8, 8), (2, 4))
    """
    images, labels = np.asarray(images), np.asarray(labels)
    if len(images) != len(labels):
        raise ValueError(f"{len(images)} images but {len(labels)} labels.")
    classes = np.unique(labels)
    cells = grid * grid
    if len(classes) < cells:
        raise ValueError(
            f"a {grid}x{grid} grid needs {cells} distinct classes, got {len(classes)}.")
    rng = check_random_state(random_state)
    by_class = {c: np.flatnonzero(labels == c) for c in classes}
    h, w = images.shape[1:3]
    data = np.zeros((n_grids, grid * h, grid * w) + images.shape[3:], dtype=images.dtype)
    cell_labels = np.zeros((n_grids, cells), dtype=labels.dtype)
    cell_index = np.zeros((n_grids, cells), dtype=np.int64)
    for g in range(n_grids):
        chosen = rng.choice(classes, size=cells, replace=False)
        for k, c in enumerate(chosen):
            idx = rng.choice(by_class[c])
            r, col = divmod(k, grid)
            data[g, r * h:(r + 1) * h, col * w:(col + 1) * w] = images[idx]
            cell_labels[g, k], cell_index[g, k] = c, idx
    return Bunch(data=data, cell_labels=cell_labels, cell_index=cell_index, grid=grid)


_COLORS = np.array([[0.9, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.2, 0.9], [0.9, 0.8, 0.1]])
_SHAPES = ("square", "circle", "triangle", "cross")


def make_colored_shapes(n_samples: int = 500, size: int = 32, n_shapes: int = 2,
                        n_colors: int = 2, noise: float = 0.05,
                        random_state: int | np.random.RandomState | None = None) -> Bunch:
    """Generate RGB images of one colored shape on a grey background.

    The class depends on both shape and color: ``target = shape * n_colors + color``.

    Parameters
    ----------
    n_samples : int, default=500
        Images.
    size : int, default=32
        Their side.
    n_shapes : int, default=2
        Shapes.
    n_colors : int, default=2
        Colors.
    noise : float, default=0.05
        Pixel noise.
    random_state : int, RandomState or None, default=None
        Seeds the images.

    Returns
    -------
    Bunch
        ``data`` float32 ``(n, size, size, 3)`` in [0, 1], ``target``, ``mask`` (bool
        ``(n, size, size)``, the object's pixels), ``shape`` and ``color`` indices.

    Examples
    --------
    >>> from interpretable.datasets import make_colored_shapes
    >>> shapes = make_colored_shapes(n_samples=4, size=16, random_state=0)
    >>> shapes.data.shape, shapes.mask.shape
    ((4, 16, 16, 3), (4, 16, 16))
    """
    if not (1 <= n_shapes <= len(_SHAPES) and 1 <= n_colors <= len(_COLORS)):
        raise ValueError(
            f"n_shapes must be in 1..{len(_SHAPES)} and n_colors in 1..{len(_COLORS)}.")
    if size < 8:
        raise ValueError(f"size must be at least 8, got {size}.")
    rng = check_random_state(random_state)
    yy, xx = np.mgrid[0:size, 0:size]
    data = np.empty((n_samples, size, size, 3), dtype=np.float32)
    masks = np.zeros((n_samples, size, size), dtype=bool)
    shapes = rng.randint(n_shapes, size=n_samples)
    colors = rng.randint(n_colors, size=n_samples)
    for i in range(n_samples):
        r = rng.randint(size // 6, size // 3)
        cy, cx = rng.randint(r, size - r, size=2)
        dy, dx = yy - cy, xx - cx
        kind = _SHAPES[shapes[i]]
        if kind == "square":
            m = (np.abs(dy) <= r) & (np.abs(dx) <= r)
        elif kind == "circle":
            m = dy**2 + dx**2 <= r**2
        elif kind == "triangle":
            m = (dy <= r) & (dy >= -r) & (np.abs(dx) <= (dy + r) / 2)
        else:
            m = (((np.abs(dy) <= r) & (np.abs(dx) <= r // 3))
                 | ((np.abs(dx) <= r) & (np.abs(dy) <= r // 3)))
        img = np.full((size, size, 3), 0.5) + noise * rng.randn(size, size, 3)
        img[m] = _COLORS[colors[i]]
        data[i], masks[i] = np.clip(img, 0, 1), m
    return Bunch(data=data, target=shapes * n_colors + colors, mask=masks, shape=shapes,
                 color=colors)


_PEOPLE = ("Mary", "John", "Sandra", "Daniel")
_PLACES = ("bathroom", "hallway", "kitchen", "garden", "office", "bedroom")
_VERBS = ("moved to", "went to", "journeyed to", "travelled to", "went back to")


def make_babi_task1(n_samples: int = 1000, n_sentences: tuple[int, int] = (2, 6),
                    random_state: int | np.random.RandomState | None = None) -> Bunch:
    """Generate stories, questions and answers in the style of bAbI task 1 (single supporting fact).

    Parameters
    ----------
    n_samples : int, default=1000
        Stories.
    n_sentences : tuple of int, default=(2, 6)
        The range of sentences per story.
    random_state : int, RandomState or None, default=None
        Seeds the stories.

    Returns
    -------
    Bunch
        ``data``: list of ``(story, question)`` pairs of str; ``target``: answer places (str);
        ``support``: index of the supporting sentence in the story.

    Examples
    --------
    >>> from interpretable.datasets import make_babi_task1
    >>> babi = make_babi_task1(n_samples=2, random_state=0)
    >>> babi.data[0][1], babi.target[0]
    ('Where is Mary?', 'kitchen')
    """
    lo, hi = n_sentences
    if lo < 1 or hi < lo:
        raise ValueError("n_sentences must be a (min, max) range with 1 <= min <= max, "
                         f"got {n_sentences}.")
    rng = check_random_state(random_state)
    data, target, support = [], [], []
    for _ in range(n_samples):
        n = rng.randint(lo, hi + 1)
        where, last = {}, {}
        sentences = []
        for k in range(n):
            person = _PEOPLE[rng.randint(len(_PEOPLE))]
            place = _PLACES[rng.randint(len(_PLACES))]
            sentences.append(f"{person} {_VERBS[rng.randint(len(_VERBS))]} the {place}.")
            where[person], last[person] = place, k
        person = list(where)[rng.randint(len(where))]
        data.append((" ".join(sentences), f"Where is {person}?"))
        target.append(where[person])
        support.append(last[person])
    return Bunch(data=data, target=np.array(target, dtype=object), support=np.array(support))


_FILLER = ("the", "a", "story", "about", "people", "who", "went", "there", "and", "then", "it",
           "was", "one", "day", "in", "town", "with", "some", "friends", "after", "work", "we",
           "saw", "that", "film", "on", "screen", "at", "night", "they", "said", "this", "plot",
           "of", "scene", "for", "time", "again", "all", "very")
_EVIDENCE = (("superb", "brilliant", "delightful", "wonderful", "masterful"),
             ("dreadful", "boring", "awful", "tedious", "clumsy"),
             ("hilarious", "witty", "funny", "comic", "playful"),
             ("terrifying", "creepy", "eerie", "chilling", "sinister"))


def make_planted_evidence_texts(n_samples: int = 200, length: tuple[int, int] = (6, 12),
                                n_evidence: tuple[int, int] = (1, 2), n_classes: int = 2,
                                random_state: int | np.random.RandomState | None = None) -> Bunch:
    """Generate texts whose class is given away by planted evidence words only.

    Each text is ``length`` random filler words (shared by all classes) with ``n_evidence``
    words of its class's evidence vocabulary inserted at random positions. The rationale
    marks those positions: the ground truth a plausible explanation should point at. Words are
    lowercase and separated by single spaces, so a text's words are the tokens of the package's
    text classifiers.

    Parameters
    ----------
    n_samples : int, default=200
        Texts.
    length : tuple of int, default=(6, 12)
        The range ``(min, max)`` of filler words per text.
    n_evidence : tuple of int, default=(1, 2)
        The range ``(min, max)`` of evidence words per text.
    n_classes : int, default=2
        Classes (2 to 4), each with five evidence words.
    random_state : int, RandomState or None, default=None
        Seeds the texts.

    Returns
    -------
    Bunch
        ``data``: list of str; ``target``: int64 ndarray (n_samples,); ``rationale``: list of
        int64 ndarrays, one per text with one 0/1 entry per word (1: planted evidence);
        ``evidence_words``: the evidence vocabulary of each class.

    Examples
    --------
    >>> from interpretable.datasets import make_planted_evidence_texts
    >>> planted = make_planted_evidence_texts(n_samples=2, length=(3, 3), n_evidence=(1, 1),
    ...                                       random_state=0)
    >>> planted.data[0], int(planted.target[0]), planted.rationale[0].tolist()
    ('the about about brilliant', 0, [0, 0, 0, 1])
    """
    (lo, hi), (e_lo, e_hi) = length, n_evidence
    if not (0 <= lo <= hi and 1 <= e_lo <= e_hi):
        raise ValueError("length and n_evidence must be (min, max) ranges with 0 <= min <= max "
                         f"(n_evidence: 1 <= min), got {length} and {n_evidence}.")
    if not 2 <= n_classes <= len(_EVIDENCE):
        raise ValueError(f"n_classes must be between 2 and {len(_EVIDENCE)}, got {n_classes}.")
    rng = check_random_state(random_state)
    target = rng.randint(n_classes, size=n_samples).astype(np.int64)
    data, rationale = [], []
    for label in target:
        words = list(rng.choice(_FILLER, size=rng.randint(lo, hi + 1)))
        marks = [0] * len(words)
        for word in rng.choice(_EVIDENCE[label], size=rng.randint(e_lo, e_hi + 1)):
            at = rng.randint(len(words) + 1)
            words.insert(at, str(word))
            marks.insert(at, 1)
        data.append(" ".join(words))
        rationale.append(np.array(marks, dtype=np.int64))
    return Bunch(data=data, target=target, rationale=rationale,
                 evidence_words={c: list(_EVIDENCE[c]) for c in range(n_classes)})
