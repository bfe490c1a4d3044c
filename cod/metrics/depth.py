"""Paper A's measures of what each layer does with depth, on one model (section 2.1, Fig. 2, Fig. 5):

    removal    the rise in loss when each block is removed (`cod.metrics.pruning`), on each group of windows
    angular    the angular distance between the inputs of every two blocks (eq. 1, `cod.metrics.angular`), on
               each group: their mean over the groups, and the adjacent blocks' of each group
    dominant   the few dimensions that carry most of a token's squared norm, and the adjacent distance
               without them: why a decoder's adjacent distances are small at every depth
    jacobians  per-token Jacobians d y_t / d x_t (`cod.metrics.jacobian`) of evenly spaced blocks at one
               sampled token of each sequence: ||J_t - I||_F / d per token, statistics of the token mean

The groups of windows are disjoint, so each gives its own estimate of every layer's value: a claim
can be checked group by group (repeated measurements of one model, not seeds). The notebook
a1_open_weight_models reads these measures of the open-weight models (`cod.runs.analysis`, the
analyse_open_weight_depth stage).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from cod.metrics.angular import angular_distance, angular_distances
from cod.metrics.jacobian import diagonal_share, identity_deviation, token_jacobians
from cod.metrics.pruning import LayerRemoval, layer_removal
from cod.metrics.stream import LayeredModel, device_of, residual_stream
from cod.progress import progress_bar

CORNER = 48  # rows and columns of the token-mean J - I kept of a block (the heatmaps' top-left corner)


@dataclass
class DominantDimensions:
    dims: list[int]  # (k,) the dimensions of largest mean square at h[(L + 1) // 3], largest first
    share: np.ndarray  # (L,) mean over tokens of the share of |x|^2 in those dimensions, at the input of each block
    adjacent: np.ndarray  # (L,) d(h_{l-1}, h_l) for l = 1 .. L, mean over tokens
    without: np.ndarray  # (L,) the same with those dimensions left out


@dataclass
class SampledJacobians:
    """Per-token Jacobians of K blocks at one sampled token of each of B sequences."""

    blocks: list[int]  # (K,) 0-based, ascending
    deviation: np.ndarray  # (K, B) ||J_t - I||_F / d of each block at each token
    deviation_per_token: np.ndarray  # (K,) its mean over the tokens
    diag_share_per_token: np.ndarray  # (K,) mean over the tokens of diag(J_t)^2 / |J_t|^2
    deviation_from_I: np.ndarray  # (K,) ||J - I||_F / d of the token-mean J
    diag_share_mean_J: np.ndarray  # (K,) diag(J)^2 / |J|^2 of the token-mean J
    mean_abs_diag: np.ndarray  # (K,) mean |J_ii| of the token-mean J
    mean_abs_offdiag: np.ndarray  # (K,) mean |J_ij|, i != j, of the token-mean J
    corner_blocks: list[int]  # (C,) the blocks whose corner is kept: `shown_blocks`, each once
    corner: np.ndarray | None = None  # (C, CORNER, CORNER) top-left corner of their token-mean J - I

    def corner_of(self, block: int) -> np.ndarray:
        """(CORNER, CORNER) the kept corner of the token-mean J - I of `block` (one of corner_blocks)."""
        return self.corner[self.corner_blocks.index(block)]


@dataclass
class DepthMeasures:
    width: int  # D, the residual stream's
    removal: list[LayerRemoval]  # one per group of windows: the loss with each block removed
    angular: np.ndarray  # (L + 1, L + 1) d(h_i, h_j): mean over tokens, then over the groups
    adjacent: np.ndarray  # (L, groups) d(h_{l-1}, h_l) for l = 1 .. L, of each group
    jacobians: SampledJacobians
    dominant: DominantDimensions | None  # None unless asked for
    seconds: dict[str, float] = field(default_factory=dict)  # wall time of each measure


def shown_blocks(blocks: list[int]) -> list[int]:
    """The shallow, middle and deep block of `blocks` (ascending) that a figure of Jacobians shows:
    the first, the middle one and the last (fewer than three blocks repeat)."""
    return [blocks[0], blocks[len(blocks) // 2], blocks[-1]]


def spaced_blocks(n_layers: int, count: int) -> list[int]:
    """`count` evenly spaced 0-based blocks of `n_layers`, the first and the last included (all of
    them when count >= n_layers; fewer where two round to the same block)."""
    return sorted({int(b) for b in np.linspace(0, n_layers - 1, min(count, n_layers)).round()})


@torch.no_grad()
def dominant_dimensions(model: LayeredModel, idx: torch.Tensor, k: int = 3) -> DominantDimensions:
    """The `k` dimensions of largest mean square over tokens idx (B, T) at the input of the block a
    third of the way in, their share of each token's squared norm at the input of every block,
    and the adjacent angular distance with and without them."""
    h = residual_stream(model, idx).h
    top = h[len(h) // 3].pow(2).mean((0, 1)).topk(k).indices
    rest = torch.ones(h[0].shape[-1], dtype=torch.bool, device=h[0].device)
    rest[top] = False
    pairs = list(zip(h[:-1], h[1:]))
    share = [(x[..., top].pow(2).sum(-1) / x.pow(2).sum(-1)).mean().item() for x in h[:-1]]
    adjacent = [angular_distance(a, b).mean().item() for a, b in pairs]
    without = [angular_distance(a[..., rest], b[..., rest]).mean().item() for a, b in pairs]
    return DominantDimensions(top.tolist(), np.array(share), np.array(adjacent), np.array(without))


def sampled_jacobians(model: LayeredModel, idx: torch.Tensor, blocks: list[int], seed: int = 0,
                      progress: bool | None = None) -> SampledJacobians:
    """Per-token Jacobians of `blocks` (0-based, ascending) at one position of each sequence of idx
    (B, T), drawn uniformly by a CPU generator seeded `seed` (the same positions on every device);
    summarised block by block, in float64; the corners of the `shown_blocks` kept. `progress`: a bar
    of the blocks on stderr (cod.progress)."""
    stream = residual_stream(model, idx)
    positions = torch.randint(idx.shape[1], (len(idx),), generator=torch.Generator().manual_seed(seed))
    corner_blocks = sorted(set(shown_blocks(blocks)))
    rows, corners = [], []
    for block in progress_bar("Jacobian blocks", len(blocks), progress, "block", blocks):
        j = token_jacobians(model, block, stream.h[block], positions).double().cpu()  # (B, D, D) [out, in]
        mean = j.mean(0)  # (D, D)
        d, deviation = mean.shape[0], identity_deviation(j)  # (B,)
        rows.append({
            "deviation": deviation.numpy(),
            "deviation_per_token": deviation.mean().item(),
            "diag_share_per_token": diagonal_share(j).mean().item(),
            "deviation_from_I": identity_deviation(mean).item(),
            "diag_share_mean_J": diagonal_share(mean).item(),
            "mean_abs_diag": mean.diagonal().abs().mean().item(),
            "mean_abs_offdiag": ((mean.abs().sum() - mean.diagonal().abs().sum()) / (d * d - d)).item(),
        })
        if block in corner_blocks:
            corners.append((mean - torch.eye(d, dtype=mean.dtype))[:CORNER, :CORNER].numpy())
    return SampledJacobians(list(blocks), **{key: np.stack([row[key] for row in rows]) for key in rows[0]},
                            corner_blocks=corner_blocks, corner=np.stack(corners))


def measure_depth(model: LayeredModel, idx: torch.Tensor, targets: torch.Tensor, groups: int,
                  jacobian_idx: torch.Tensor, jacobian_blocks: int, dominant_sequences: int = 0,
                  progress: bool | None = None) -> DepthMeasures:
    """Every measure of this module on one model, timed: removal and angular distances on each of
    `groups` groups of the windows idx, targets (B, T) (consecutive windows, as np.array_split cuts
    them), the dominant dimensions on the first `dominant_sequences` windows (0: not measured), the
    Jacobians of `jacobian_blocks` evenly spaced blocks (`spaced_blocks`) on jacobian_idx (B', T').
    The tokens are moved to the model's device. `progress`: bars of the groups and the Jacobian
    blocks on stderr (cod.progress)."""
    device = device_of(model)
    idx, targets, jacobian_idx = (t.to(device) for t in (idx, targets, jacobian_idx))
    seconds, start = {}, time.perf_counter()
    removal, distances = [], []
    parts = np.array_split(np.arange(len(idx)), groups)
    for part in progress_bar("removal groups", groups, progress, "group", parts):
        stream = residual_stream(model, idx[part], targets[part])
        removal.append(layer_removal(model, stream))
        distances.append(angular_distances(stream))  # (L + 1, L + 1)
    seconds["removal"], start = time.perf_counter() - start, time.perf_counter()
    dominant = dominant_dimensions(model, idx[:dominant_sequences]) if dominant_sequences else None
    seconds["dominant"], start = time.perf_counter() - start, time.perf_counter()
    jacobians = sampled_jacobians(model, jacobian_idx, spaced_blocks(len(model.blocks), jacobian_blocks),
                                  progress=progress)
    seconds["jacobians"] = time.perf_counter() - start
    return DepthMeasures(width=stream.h[0].shape[-1], removal=removal, angular=np.mean(distances, axis=0),
                         adjacent=np.stack([np.diag(d, 1) for d in distances], axis=1), jacobians=jacobians,
                         dominant=dominant, seconds=seconds)
