"""Angular distance between the inputs of layers l and l + n (paper A eq. 1, Fig. 2-3, Fig. 7).

    d(x^l, x^{l+n}) = (1 / pi) arccos( x^l . x^{l+n} / (||x^l|| ||x^{l+n}||) )

for one token, averaged over the tokens of a batch (paper A does not say how tokens are
pooled; we take the plain mean). The inputs are the cached stream h_0 .. h_L (`Stream`):
h[l] is the input of block l + 1 (0-based l), and h[L], the last output before the final
norm, stands in as the input of a block after the last.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from cod.metrics.stream import Stream


def angular_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-vector angular distance in [0, 1] along the last dimension: (..., D), (..., D) -> (...)."""
    cos = torch.nn.functional.cosine_similarity(a.double(), b.double(), dim=-1)
    return torch.arccos(cos.clamp(-1.0, 1.0)) / math.pi


@torch.no_grad()
def angular_distances(stream: Stream) -> np.ndarray:
    """(L + 1, L + 1) symmetric matrix: mean over tokens of d(h_i, h_j)."""
    n = len(stream.h)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            out[i, j] = out[j, i] = angular_distance(stream.h[i], stream.h[j]).mean().item()
    return out


def by_offset(distances: np.ndarray) -> np.ndarray:
    """Paper A's layout: (L, L) array whose [n - 1, l] entry is d(h_l, h_{l+n}); NaN past the end."""
    n = distances.shape[0] - 1
    out = np.full((n, n), np.nan)
    for offset in range(1, n + 1):
        for start in range(n + 1 - offset):
            out[offset - 1, start] = distances[start, start + offset]
    return out


def adjacent_distances(distances: np.ndarray) -> np.ndarray:
    """(L,) d(h_{l-1}, h_l) for l = 1 .. L: how far block l turns its input (paper A Fig. 7 right)."""
    return np.diag(distances, 1)


def column_scaled(grid: np.ndarray) -> np.ndarray:
    """A `by_offset` grid with each column (start layer) min-max scaled to [0, 1] over its
    offsets, as paper A Fig. 3 draws it; NaN where a column has fewer than two values."""
    low, high = np.nanmin(grid, axis=0), np.nanmax(grid, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(high > low, (grid - low) / (high - low), np.nan)
