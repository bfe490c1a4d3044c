"""Permutation score of every pair of layers and global score (paper B eq. 7-8, after Kapl et al. 2025).

    P(i, j) = |L(model with blocks i and j swapped) - L(model)| / L(model)     (eq. 7)
    P = 2 / (L (L - 1)) sum_{i < j} P(i, j)                                     (eq. 8)

with L(.) the mean next-token loss. A swap runs each block with its own weights (and its
own depth factors, e.g. LNS's 1/sqrt(l)) at the other's position. Blocks before i are
unchanged, so each swap resumes from the cached input of block i: L(L - 1) / 2 forwards
of L - i blocks each instead of L.

For large models the pairs can be sampled (`pairs=n`: n pairs drawn uniformly without
replacement, seeded); P is then the mean over the sampled pairs, an unbiased estimate of
eq. 8, and the matrix holds NaN at the pairs not drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from cod.metrics.stream import LayeredModel, Stream, loss_after
from cod.progress import progress_bar


@dataclass
class PermutationScores:
    matrix: np.ndarray  # (L, L): [i, j] = P(i, j) for i < j (0-based), NaN elsewhere
    global_score: float  # eq. 8


def swapped(n: int, i: int, j: int) -> list[int]:
    """Block order 0 .. n-1 with i and j exchanged."""
    order = list(range(n))
    order[i], order[j] = j, i
    return order


@torch.no_grad()
def permutation_scores(model: LayeredModel, stream: Stream, pairs: int | None = None,
                       seed: int = 0, progress: bool | None = None) -> PermutationScores:
    """`stream` needs targets. All pairs i < j, or `pairs` of them drawn uniformly (seeded).
    `progress`: a bar of the pairs done on stderr (see cod.progress)."""
    n, base = stream.n_layers, stream.loss
    every = list(zip(*np.triu_indices(n, k=1)))
    if pairs is not None and pairs < len(every):
        drawn = np.random.default_rng(seed).choice(len(every), size=pairs, replace=False)
        every = [every[k] for k in sorted(drawn)]
    matrix = np.full((n, n), np.nan)
    for i, j in progress_bar("permutation pairs", len(every), progress, "pair", every):
        matrix[i, j] = abs(loss_after(model, stream, i, swapped(n, i, j)[i:]) - base) / base
    scored = matrix[~np.isnan(matrix)]
    return PermutationScores(matrix, float(scored.mean()) if scored.size else float("nan"))
