"""``set_output`` of the text transformers (scikit-learn's API, so that
``Pipeline.set_output(transform=...)`` and ``sklearn.set_config(transform_output=...)`` work).

The text transformers output texts or token ids, not numeric features, so the setting means:

* transformers of texts into texts (:class:`~interpretable.preprocessing.SynonymSubstitution`):
  ``"default"`` a list of str, ``"pandas"`` a one-column DataFrame ``text`` (a pandas input's
  index kept, so a downstream estimator's explanations keep the sample ids), ``"polars"`` a
  one-column polars DataFrame (every estimator reads a one-column table as its column);
* encoders of texts into ids (:class:`~interpretable.preprocessing.TextEncoder`): accepted,
  but the ids stay an int64 array whatever the setting: they are model inputs padded to the
  longest text of each call, a matrix whose width changes from call to call, not a table of
  features.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import narwhals.stable.v2 as nw
import pandas as pd
from sklearn import get_config

if TYPE_CHECKING:
    from typing_extensions import Self

OUTPUTS = ("default", "pandas", "polars")


class TextOutputMixin:
    """``set_output(transform=...)``: what the container setting means is in :mod:`.output`."""

    def set_output(self, *, transform: str | None = None) -> Self:
        """Set the output container of ``transform``.

        Parameters
        ----------
        transform : {"default", "pandas", "polars"} or None, default=None
            The container; None leaves it unchanged.

        Returns
        -------
        self : estimator
            The transformer.

        Raises
        ------
        ValueError
            If ``transform`` is unknown.

        Examples
        --------
        >>> from interpretable.preprocessing import TextEncoder
        >>> encoder = TextEncoder().set_output(transform="pandas")
        >>> encoder.fit(["a film"]).transform(["a film"])  # ids stay an array
        array([[2, 3]])
        """
        if transform is None:
            return self
        if transform not in OUTPUTS:
            raise ValueError(f"transform must be one of {list(OUTPUTS)} or None, got "
                             f"{transform!r}.")
        self._sklearn_output_config = {**getattr(self, "_sklearn_output_config", {}),
                                       "transform": transform}
        return self

    def _texts_output(self, texts: list, X):
        """``texts`` (the transform of ``X``) in the configured container."""
        container = getattr(self, "_sklearn_output_config", {}).get(
            "transform", get_config()["transform_output"])
        if container == "default":
            return texts
        frame = nw.from_dict({"text": texts}, backend=container).to_native()
        if isinstance(getattr(X, "index", None), pd.Index):
            frame.index = X.index
        return frame
