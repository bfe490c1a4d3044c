"""Permutation score of every pair of layers and global score (paper B eq. 7-8, after Kapl et al. 2025).

    P(i, j) = |L(model with blocks i and j swapped) - L(model)| / L(model)     (eq. 7)
    P = 2 / (L (L - 1)) sum_{i < j} P(i, j)                                     (eq. 8)

with L(.) the mean next-token loss. A swap runs each block with its own weights (and its
own depth factors, e.g. LNS's 1/sqrt(l)) at the other's position. Blocks before i are
unchanged, so each swap resumes from the cached input of block i: L(L - 1) / 2 forwards
of L - i blocks each instead of L.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from cod.metrics.stream import LayeredModel, Stream, loss_after


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
def permutation_scores(model: LayeredModel, stream: Stream) -> PermutationScores:
    """`stream` needs targets."""
    n, base = stream.n_layers, stream.loss
    matrix = np.full((n, n), np.nan)
    for i in range(n):
        for j in range(i + 1, n):
            matrix[i, j] = abs(loss_after(model, stream, i, swapped(n, i, j)[i:]) - base) / base
    pairs = matrix[np.triu_indices(n, k=1)]
    return PermutationScores(matrix, float(pairs.mean()) if pairs.size else float("nan"))
