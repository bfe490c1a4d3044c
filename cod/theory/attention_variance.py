"""Attention-output variance: paper A eq. 27 and Lemma A.1, paper B Theorems 4 and 5.

One output coordinate of one attention head is o = sum_j p_j v_j over n keys, with value coordinates
v_j ~ N(0, sigma^2) (zero-mean, independent across keys unless `corr` > 0, when they share a common
component with correlation `corr`) and attention weights p either uniform (p_j = 1/n, the
assumption of A App. A.1.1 and B Theorems 4-5) or softmax of i.i.d. N(0, s^2) logits drawn
independently of the values (s = `logit_scale`; s = 0 is uniform). Then Var(o) = sigma^2 E[sum_j p_j^2]
(sigma^2 (corr + (1 - corr) E sum p_j^2) with correlated values).

Grouped-query attention (B Theorem 5): H query heads, n_kv = H / G key-value heads, G = query heads
per KV head (B Table 4's G: 1 = MHA, H = MQA). Heads of one group share their value rows. Three read-outs
of the attention layer's output coordinate: one head ("head"), the mean of the H head outputs
("mean", the averaging the theorem's proof invokes), or a random output projection
y = sum_h w_h o_h with w_h ~ N(0, 1/H) ("wo", what the layer computes).
"""

from __future__ import annotations

import numpy as np


def _weights(rng, shape, n: int, logit_scale: float) -> np.ndarray:
    """Attention weights (..., n) over n keys."""
    if logit_scale == 0:
        return np.full((*shape, n), 1.0 / n)
    z = logit_scale * rng.standard_normal((*shape, n))
    z -= z.max(-1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(-1, keepdims=True)


def head_output_draws(ns, n_draws: int, logit_scale: float = 0.0, corr: float = 0.0, sigma: float = 1.0,
                      seed: int = 0) -> np.ndarray:
    """Draws (n_draws, len(ns)) of one output coordinate of a head attending n keys, for each n."""
    rng = np.random.default_rng(seed)
    out = np.empty((n_draws, len(ns)))
    for i, n in enumerate(ns):
        p = _weights(rng, (n_draws,), n, logit_scale)
        v = np.sqrt(corr) * rng.standard_normal((n_draws, 1)) + np.sqrt(1 - corr) * rng.standard_normal((n_draws, n))
        out[:, i] = sigma * (p * v).sum(-1)
    return out


def softmax_concentration(ns, n_draws: int, logit_scale: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Lemma A.1 of paper A: E sum_i (p_i - 1/N)^2 and E sum_i p_i^2 for softmax of N i.i.d. N(0, s^2) logits.

    Returns two arrays of draws (n_draws, len(ns)). For large N, N E sum p_i^2 -> e^(s^2) (not 1).
    """
    rng = np.random.default_rng(seed)
    dist, conc = np.empty((n_draws, len(ns))), np.empty((n_draws, len(ns)))
    for i, n in enumerate(ns):
        p = _weights(rng, (n_draws,), n, logit_scale)
        dist[:, i] = ((p - 1.0 / n) ** 2).sum(-1)
        conc[:, i] = (p**2).sum(-1)
    return dist, conc


def gqa_output_draws(n_keys: int, n_heads: int, group_sizes, n_draws: int, logit_scale: float = 0.0,
                     readout: str = "mean", seed: int = 0) -> np.ndarray:
    """Draws (n_draws, len(group_sizes)) of the attention layer's output coordinate for each G."""
    rng = np.random.default_rng(seed)
    out = np.empty((n_draws, len(group_sizes)))
    for i, g in enumerate(group_sizes):
        if n_heads % g:
            raise ValueError(f"group size {g} must divide n_heads={n_heads}")
        p = _weights(rng, (n_draws, n_heads), n_keys, logit_scale)  # (D, H, n)
        v = rng.standard_normal((n_draws, n_heads // g, n_keys)).repeat(
            g, axis=1
        )  # (D, H, n): heads of a group share values
        heads = (p * v).sum(-1)  # (D, H)
        if readout == "head":
            out[:, i] = heads[:, 0]
        elif readout == "mean":
            out[:, i] = heads.mean(1)
        elif readout == "wo":
            out[:, i] = (heads * rng.standard_normal((n_draws, n_heads)) / np.sqrt(n_heads)).sum(1)
        else:
            raise ValueError(f"readout {readout!r}")
    return out
