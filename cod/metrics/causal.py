"""Causal score matrix and global causal score (paper B eq. 5-6, after Csordas et al. 2025).

With block s skipped, block l > s adds delta'_l = h'_l - h'_{l-1} to the residual stream
instead of delta_l = h_l - h_{l-1}. The causal effect of s on l is the relative change

    c(s, l) = mean_t ||delta'_{l,t} - delta_{l,t}|| / mean_t ||delta_{l,t}||     (eq. 5)

(norms over the hidden dimension, means over tokens t), and the global score averages it
over all pairs s < l:  C = 2 / (L (L - 1)) sum_{s < l} c(s, l)                  (eq. 6).
A block whose update is zero (an identity block) unchanged by the skip counts 0 (0/0 := 0).

Residual updates are taken on the stream before the final norm, also for the last block:
the authors' code does so since pUmpKin-Co/SparsityAndCoD 47d0929 (2026-05-01, "fix feature
collection bug"); before it, and so for the paper (March 2026), its Hugging Face wrapper
appended the last hidden state after the final norm (the registry's `final_hidden_state`
departure). Each skip resumes from the cached input of block s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from cod.metrics.stream import LayeredModel, Stream, resume


@dataclass
class CausalScores:
    matrix: np.ndarray  # (L, L): [s, l] = c(s, l) for s < l (0-based), NaN elsewhere
    global_score: float  # eq. 6


def _mean_norm(x: torch.Tensor) -> float:
    return x.float().norm(dim=-1).mean().item()


@torch.no_grad()
def causal_scores(model: LayeredModel, stream: Stream) -> CausalScores:
    n = stream.n_layers
    matrix = np.full((n, n), np.nan)
    h = stream.h
    for s in range(n - 1):
        states: dict[str, torch.Tensor] = {}
        resume(model, stream, s, range(s + 1, n), states=states)
        before = h[s]  # with block s skipped, block s + 1 sees block s's input
        for step, l in enumerate(range(s + 1, n), start=s):
            after = states[f"resid_post.{step}"]
            delta = h[l + 1] - h[l]
            change, size = _mean_norm(after - before - delta), _mean_norm(delta)
            matrix[s, l] = change / size if size > 0 else 0.0 if change == 0 else float("inf")
            before = after
    pairs = matrix[np.triu_indices(n, k=1)]
    return CausalScores(matrix, float(pairs.mean()) if pairs.size else float("nan"))
