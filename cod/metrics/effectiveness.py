"""Every layer-effectiveness metric of one model on one batch of held-out tokens, timed.

The residual stream is computed once per batch and shared: the evaluation batch scores
removal, causal, permutation and usefulness; a second batch (other tokens) fits the
usefulness maps; a third, smaller one samples the Jacobians (one token per sequence). The
authors' usefulness (fitted and scored on the evaluation batch, applied transposed) is
measured beside the paper's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from cod.data.loader import eval_windows
from cod.metrics.angular import angular_distances
from cod.metrics.attention_sparsity import AttentionStats, attention_stats
from cod.metrics.causal import CausalScores, causal_scores
from cod.metrics.jacobian import BlockJacobians, block_jacobians
from cod.metrics.kurtosis import LayerKurtosis, layer_kurtosis
from cod.metrics.permutation import PermutationScores, permutation_scores
from cod.metrics.pruning import LayerRemoval, TaskScore, layer_removal
from cod.metrics.stream import LayeredModel, device_of, first_sequences, residual_stream
from cod.metrics.usefulness import Usefulness, check_fit_tokens, usefulness_authors, usefulness_scores
from cod.metrics.variance import token_variance
from cod.metrics.weights import weight_sparsity

WEIGHT_THRESHOLDS = (1e-1, 1e-2, 1e-4)  # epsilon of weight sparsity (paper B Fig. 4 b-d)


@dataclass
class LayerAnalysis:
    variance: np.ndarray  # (L,) output variance of every block (paper B eq. 4)
    angular: np.ndarray  # (L + 1, L + 1) angular distances between h_i and h_j
    removal: LayerRemoval
    causal: CausalScores
    permutation: PermutationScores
    usefulness: Usefulness
    jacobians: BlockJacobians
    kurtosis: LayerKurtosis
    weight_sparsity: np.ndarray  # (len(thresholds),) over all parameters
    attention: AttentionStats | None  # None unless attention thresholds were given
    seconds: dict[str, float] = field(default_factory=dict)  # wall time of each metric
    # the authors' usefulness (cod.metrics.usefulness.usefulness_authors); None in analyses stored before it,
    # and where the scoring tokens, which it is fitted on, number at most width + 1 (an open-weight model's few)
    usefulness_authors: Usefulness | None = None


def held_out_tokens(path: str | Path, seq_len: int, eval_tokens: int, fit_tokens: int):
    """Consecutive windows of a validation array: (x, y) to score on and x_fit (other windows) to fit on."""
    n_eval, n_fit = eval_tokens // seq_len, fit_tokens // seq_len
    x, y = next(eval_windows(path, seq_len, n_eval + n_fit, (n_eval + n_fit) * seq_len))
    if len(x) < n_eval + n_fit:
        raise ValueError(f"{path} holds {len(x)} windows of {seq_len}, fewer than {n_eval + n_fit}")
    return x[:n_eval], y[:n_eval], x[n_eval:]


def analyse_layers(model: LayeredModel, idx: torch.Tensor, targets: torch.Tensor, fit_idx: torch.Tensor,
                   jacobian_idx: torch.Tensor, tau: float = 0.1, weight_thresholds: Sequence[float] = WEIGHT_THRESHOLDS,
                   attention_thresholds: Sequence[float] | None = None, task: TaskScore | None = None,
                   seed: int = 0, permutation_sequences: int | None = None,
                   permutation_pairs: int | None = None, progress: bool | None = None) -> LayerAnalysis:
    """All metrics on tokens idx/targets (B, T); usefulness fits on fit_idx; Jacobians at one
    random position of each sequence of jacobian_idx. The permutation score, whose L(L - 1) / 2
    swaps cost the most, can be cheapened: on the first `permutation_sequences` sequences of idx
    (None: all), over `permutation_pairs` pairs drawn at random (None: all pairs).
    The tokens are moved to the model's device. `progress`: bars of the permutation, usefulness
    and Jacobian loops on stderr (see cod.progress)."""
    device = device_of(model)
    idx, targets, fit_idx, jacobian_idx = (t.to(device) for t in (idx, targets, fit_idx, jacobian_idx))
    check_fit_tokens(fit_idx.numel(), model.embed(fit_idx[:1, :1]).shape[-1])  # before any metric runs
    seconds: dict[str, float] = {}

    def timed(name, fn, *args, **kwargs):
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        seconds[name] = time.perf_counter() - start
        return out

    stream = timed("stream", residual_stream, model, idx, targets)
    fit = timed("fit_stream", residual_stream, model, fit_idx)
    jac_stream = timed("jacobian_stream", residual_stream, model, jacobian_idx)
    return LayerAnalysis(
        variance=np.array([token_variance(h) for h in stream.h[1:]]),
        angular=timed("angular", angular_distances, stream),
        removal=timed("removal", layer_removal, model, stream, task),
        causal=timed("causal", causal_scores, model, stream),
        permutation=timed("permutation", lambda: permutation_scores(
            model, first_sequences(model, stream, permutation_sequences or len(idx)), permutation_pairs, seed,
            progress)),
        usefulness=timed("usefulness", usefulness_scores, model, stream, fit, tau, progress),
        usefulness_authors=(timed("usefulness_authors", usefulness_authors, model, stream, tau, progress)
                            if stream.h[0][..., 0].numel() > stream.h[0].shape[-1] + 1 else None),
        jacobians=timed("jacobian", block_jacobians, model, jac_stream, seed, progress),
        kurtosis=timed("kurtosis", layer_kurtosis, stream),
        weight_sparsity=timed("weight_sparsity", weight_sparsity, model.parameters(), weight_thresholds),
        attention=None if attention_thresholds is None
        else timed("attention", attention_stats, model, stream, attention_thresholds),
        seconds=seconds,
    )
