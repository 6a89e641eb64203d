"""Character-level LSTM language model: the non-interpretable baseline for the ISAN.

Embedding → ``nn.LSTM`` → linear readout; same input/output contract as
:class:`interpretable.nn._isan.ISAN` (x (B, T) long → logits (B, T, O)).
"""

from __future__ import annotations

import torch
from torch import nn

from interpretable.nn._recurrent import recurrent_forward


def lstm_parameter_count(
    n_symbols: int, hidden_size: int, embedding_dim: int, n_outputs: int | None = None,
    num_layers: int = 1,
) -> int:
    """Number of parameters of :class:`CharLSTM`."""
    n_outputs = n_symbols if n_outputs is None else n_outputs
    total = n_symbols * embedding_dim + n_outputs * (hidden_size + 1)
    d_in = embedding_dim
    for _ in range(num_layers):
        total += 4 * hidden_size * (d_in + hidden_size + 2)
        d_in = hidden_size
    return total


class CharLSTM(nn.Module):
    """Embedding (S, E) → LSTM (E → H, ``num_layers``) → Linear (H → O). Under autocast, an
    LSTM without a kernel in autocast's dtype runs in float32
    (:func:`~interpretable.nn._recurrent.recurrent_forward`)."""

    #: its LSTM runs through :func:`~interpretable.nn._recurrent.recurrent_forward`
    portable_autocast = True

    def __init__(
        self,
        n_symbols: int,
        hidden_size: int,
        n_outputs: int | None = None,
        embedding_dim: int = 32,
        num_layers: int = 1,
    ):
        super().__init__()
        self.n_symbols = int(n_symbols)
        self.hidden_size = int(hidden_size)
        self.n_outputs = int(n_symbols if n_outputs is None else n_outputs)
        self.embedding = nn.Embedding(n_symbols, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_size, num_layers=num_layers, batch_first=True)
        self.readout = nn.Linear(hidden_size, self.n_outputs)

    def forward(self, x: torch.Tensor, state=None) -> torch.Tensor:
        """x (B, T) long, optional ``(h, c)`` LSTM state → logits (B, T, O)."""
        out, _ = recurrent_forward(self.lstm, self.embedding(x), state)
        return self.readout(out)
