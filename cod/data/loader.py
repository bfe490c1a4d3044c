"""Batches of token windows from the arrays written by `cod.data.prepare`.

Training: the array is cut into windows of `seq_len + 1` tokens at a stride of `seq_len`,
shifted by a random phase and visited in a random order in each epoch, so each epoch sees
every window once. The `batch_size` windows of step `s` are the global sample indices
`s * batch_size ...`, so a batch depends only on (seed, step): a resumed run sees exactly
the same data, and rank `r` of `world_size` takes rows `r * b ... (r + 1) * b` of the
global batch (b = batch_size // world_size), so DDP sees the same global batch as one
process. Validation: `eval_windows` walks fixed non-overlapping windows from the start.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Iterator

import numpy as np
import torch


def open_tokens(path: str | Path) -> np.memmap:
    """A read-only memmap of a token array, its dtype read from the sibling meta.json."""
    path = Path(path)
    meta = path.parent / "meta.json"
    if not path.is_file() or not meta.is_file():
        from cod.data.prepare import prepare_command_of  # lazy: the tokenizers library, for this message only

        raise FileNotFoundError(f"{path} (with {meta.name} beside it) not found: "
                                f"run `{prepare_command_of(path.parent)}`")
    return np.memmap(path, dtype=json.loads(meta.read_text())["dtype"], mode="r")


def unigram_perplexity(dataset_dir: str | Path, eval_tokens: int | None = None) -> float:
    """Perplexity on val.bin (its first `eval_tokens` tokens) of token frequencies counted on
    train.bin, add-one smoothed: the line `cod.claims.tables.mark_failed` marks a failed run against."""
    dataset_dir = Path(dataset_dir)
    if not (dataset_dir / "meta.json").is_file():
        raise FileNotFoundError(f"no token arrays in {dataset_dir} to draw the failure line from: "
                                "`dvc repro prepare` makes them")
    vocab = json.loads((dataset_dir / "meta.json").read_text())["vocab_size"]
    counts = np.bincount(np.asarray(open_tokens(dataset_dir / "train.bin")), minlength=vocab) + 1.0
    val = np.asarray(open_tokens(dataset_dir / "val.bin")[:eval_tokens])
    return float(np.exp(-np.mean(np.log(counts[val] / counts.sum()))))


def _to_xy(windows: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    tokens = torch.from_numpy(windows.astype(np.int64))
    return tokens[:, :-1], tokens[:, 1:]


class TokenBatches:
    """Deterministic training batches: `.batch(step) -> (x, y)`, int64, (batch_size // world_size, seq_len)."""

    def __init__(self, path: str | Path, seq_len: int, batch_size: int, seed: int, rank: int = 0, world_size: int = 1):
        if batch_size % world_size:
            raise ValueError(f"batch_size {batch_size} is not divisible by world_size {world_size}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in [0, {world_size})")
        self.tokens = open_tokens(path)
        self.n_windows = (len(self.tokens) - 1 - seq_len) // seq_len  # windows that fit at any phase
        if self.n_windows < 1:
            raise ValueError(f"{path} has {len(self.tokens)} tokens, too few for seq_len {seq_len}")
        self.seq_len, self.batch_size, self.seed = seq_len, batch_size, seed
        self.rows = slice(rank * batch_size // world_size, (rank + 1) * batch_size // world_size)
        self._offsets = lru_cache(maxsize=2)(self._epoch_offsets)

    def _epoch_offsets(self, epoch: int) -> np.ndarray:
        """Start offsets of the windows in the order epoch `epoch` visits them."""
        rng = np.random.default_rng([self.seed, epoch])
        phase = int(rng.integers(self.seq_len))
        return phase + self.seq_len * rng.permutation(self.n_windows)

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        samples = np.arange(step * self.batch_size, (step + 1) * self.batch_size)[self.rows]
        epochs, positions = np.divmod(samples, self.n_windows)
        starts = np.empty_like(samples)
        for epoch in np.unique(epochs):
            here = epochs == epoch
            starts[here] = self._offsets(int(epoch))[positions[here]]
        return _to_xy(self.tokens[starts[:, None] + np.arange(self.seq_len + 1)])


def eval_windows(
    path: str | Path, seq_len: int, batch_size: int, max_tokens: int | None = None
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Batches of the fixed windows [k * seq_len, (k + 1) * seq_len] from the start of the
    array, up to `max_tokens` predicted tokens in all; the last batch may be smaller."""
    tokens = open_tokens(path)
    n_windows = (len(tokens) - 1) // seq_len
    if max_tokens is not None:
        n_windows = min(n_windows, max_tokens // seq_len)
    for first in range(0, n_windows, batch_size):
        starts = seq_len * np.arange(first, min(first + batch_size, n_windows))
        yield _to_xy(tokens[starts[:, None] + np.arange(seq_len + 1)])
