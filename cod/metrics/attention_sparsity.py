"""Attention sparsity and entropy (paper B eq. 15-16, 21-23; Fig. 5-6, 14-18).

For the attention probabilities A^{l,h} (T x T) of layer l and head h:

    S^{l,h}_eps = (1 / |V|) sum_{(i,j) in V} 1[A^{l,h}_{ij} < eps]                 (eq. 15)
    H^{l,h}_i   = - sum_{j in V_i} A^{l,h}_{ij} log A^{l,h}_{ij}   (nats)           (eq. 21)
    H^{l,h}     = mean_i H^{l,h}_i                                                  (eq. 22)

and the global values average over layers and heads (eq. 16, 23). V is the set of entries
a query may attend to: with causal attention the pairs j <= i (the masked upper triangle is
zero by construction and is not counted as sparsity; the paper does not say, and counting
it would add about one half at any eps). Sequences of the batch are pooled: the fractions
and means run over every sequence's entries and queries.

The patterns (B, H, T, T) come from `attention_pattern`: our Transformer's attention branch, or
a Hugging Face decoder's own attention through `cod.metrics.adapters.HFDecoder.attention_pattern`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from cod.metrics.stream import Stream, residual_stream


def _valid(pattern: torch.Tensor, causal: bool) -> torch.Tensor:
    seq_len = pattern.shape[-1]
    full = torch.ones(seq_len, seq_len, dtype=torch.bool, device=pattern.device)
    return full.tril() if causal else full


def attention_sparsity(pattern: torch.Tensor, thresholds: Sequence[float], causal: bool = True) -> np.ndarray:
    """(B, H, T, T) probabilities -> (H, len(thresholds)) fractions of valid entries below eps (eq. 15)."""
    valid = _valid(pattern, causal)
    entries = pattern[..., valid]  # (B, H, |V|)
    return np.array([[(entries[:, h] < eps).double().mean().item() for eps in thresholds]
                     for h in range(pattern.shape[1])])


def attention_entropy(pattern: torch.Tensor, causal: bool = True) -> np.ndarray:
    """(B, H, T, T) probabilities -> (H,) mean over queries of -sum_j p log p (eq. 21-22)."""
    p = pattern.double().masked_fill(~_valid(pattern, causal), 0.0)
    plogp = torch.where(p > 0, p * p.clamp_min(1e-300).log(), torch.zeros_like(p))
    return (-plogp.sum(-1)).mean(dim=(0, 2)).cpu().numpy()


@dataclass
class AttentionStats:
    thresholds: list[float]
    sparsity: np.ndarray  # (L, H, len(thresholds)), eq. 15
    entropy: np.ndarray  # (L, H), eq. 22

    @property
    def global_sparsity(self) -> np.ndarray:
        """(len(thresholds),): eq. 16."""
        return self.sparsity.mean(axis=(0, 1))

    @property
    def global_entropy(self) -> float:
        """Eq. 23."""
        return float(self.entropy.mean())


def attention_pattern(model, layer: int, x: torch.Tensor) -> torch.Tensor:
    """(B, H, T, T) probabilities of block `layer` on its input x: a model's own
    `attention_pattern(layer, x)` when it has one (`cod.metrics.adapters.HFDecoder`), else our Transformer's."""
    if hasattr(model, "attention_pattern"):
        return model.attention_pattern(layer, x)
    attn = model.blocks[layer].attn
    return attn.branch.pattern(attn.normed_input(x), model.rotary(x.shape[1]))


@torch.no_grad()
def attention_stats(model, stream: Stream, thresholds: Sequence[float]) -> AttentionStats:
    """Sparsity and entropy of every layer and head on the stream's tokens (our Transformer or a
    Hugging Face decoder behind `cod.metrics.adapters`); the evaluation length is the stream's sequence length."""
    sparsity, entropy = [], []
    for l in range(len(model.blocks)):
        pattern = attention_pattern(model, l, stream.h[l])
        sparsity.append(attention_sparsity(pattern, thresholds))
        entropy.append(attention_entropy(pattern))
    return AttentionStats(list(thresholds), np.stack(sparsity), np.stack(entropy))


@torch.no_grad()
def attention_at_lengths(model, idx: torch.Tensor, lengths: Sequence[int],
                         thresholds: Sequence[float]) -> dict[int, AttentionStats]:
    """Sparsity and entropy at several evaluation lengths (paper B Figs. 5b-c, 6, 14-18): for each
    length T, the stats of the first T tokens of every sequence of idx (B, T_max)."""
    too_long = [t for t in lengths if not 1 <= t <= idx.shape[1]]
    if too_long:
        raise ValueError(f"lengths {too_long} are not allowed for sequences of {idx.shape[1]} tokens; "
                         f"allowed: 1..{idx.shape[1]}")
    return {t: attention_stats(model, residual_stream(model, idx[:, :t]), thresholds) for t in lengths}
