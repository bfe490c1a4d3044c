"""Paper A's Jacobian bounds as functions of the variance profile, in log space.

- Theorem 3.3 / eq. 9 and Theorem 4.2 / eq. 15: prod_l (1 + A/(l^p sigma_l) + B/(l^{2p} sigma_l^2)),
  p = 0 (Pre-LN) or 1 (LNS), with A, B of eqs. 47-48 (Takase et al.'s constants).
- Lemma A.2 / eq. 36 (Pre-LN) and eq. 61 (LNS): the same product written per sublayer.
- Theorem 4.3 / eq. 81: eq. 36's product times a prefactor for the first layer's query weights.
- eq. 49: the constant M the product is claimed to converge to when sigma^2_l = e^l.
Also the rigorous per-sublayer bounds that follow from ||J_N|| = 1/rms(x) for RMS normalisation and
the realised spectral norms of the weights (used to check the printed ones).
"""

from __future__ import annotations

import math

import numpy as np


def takase_constants(sigma: float, d: int, d_ff: int, n_heads: int, seq_len: int) -> tuple[float, float]:
    """A and B of paper A eqs. 47-48 for weight std sigma."""
    d_head = d / n_heads
    k = 2 * d * n_heads * (math.sqrt(seq_len) + 2 + 1 / math.sqrt(seq_len))
    a = sigma**2 / (math.sqrt(d) + math.sqrt(d_ff)) ** 2 + k * sigma**2 * (
        d * math.sqrt(d_head) + 1 + math.sqrt(d_head / d)
    )
    b = k * sigma**4 * d * math.sqrt(d_head)
    return a, b


def log10_product_bound(sigma_x: np.ndarray, a: float, b: float, lns: bool = False) -> np.ndarray:
    """log10 of the running product of eq. 9 (lns=False) or eq. 15 (lns=True).

    sigma_x: (..., L) std of x_l for l = 1..L; returns (..., L), entry l-1 = log10 prod_{k<=l}.
    """
    sigma_x = np.asarray(sigma_x, float)
    layer = np.arange(1, sigma_x.shape[-1] + 1)
    t = layer if lns else np.ones_like(layer)
    return np.cumsum(np.log1p(a / (t * sigma_x) + b / (t * sigma_x) ** 2), -1) / math.log(10)


def lemma_a2_factors(
    sigma_x, sigma_mid, sigma: float, d: int, d_ff: int, n_heads: int, seq_len: int, lns: bool = False
):
    """Per-sublayer factors of eq. 36 (Pre-LN) / eq. 61 (LNS) as printed: (attention (..., L), FFN (..., L))."""
    sigma_x, sigma_mid = np.asarray(sigma_x, float), np.asarray(sigma_mid, float)
    layer = np.arange(1, sigma_x.shape[-1] + 1)
    t = layer if lns else np.ones_like(layer)
    d_head = d / n_heads
    k = 2 * d * n_heads * (math.sqrt(seq_len) + 2 + 1 / math.sqrt(seq_len))
    ffn = 1 + sigma**2 / (t * sigma_mid * (math.sqrt(d) + math.sqrt(d_ff)) ** 2)
    attn = 1 + k * sigma**2 / (t * sigma_x) * (sigma**2 * d * math.sqrt(d_head) + 1 + math.sqrt(d_head / d))
    return attn, ffn


def thm43_prefactor(sigma_x1: float, sigma: float, d: int, n_heads: int, seq_len: int) -> float:
    """The factor multiplying eq. 36's product in eq. 81 (the first layer's query-weight gradient)."""
    d_head = d / n_heads
    s = math.sqrt(seq_len) + 2 + 1 / math.sqrt(seq_len)
    return (sigma_x1**2 * sigma * (math.sqrt(d) + math.sqrt(n_heads * d_head)) * n_heads
            * (s * sigma**3 * math.sqrt(d**3 * d_head) + sigma_x1 * (math.sqrt(d) + math.sqrt(d_head))))


def paper_m(a: float, b: float) -> float:
    """The limit M of eq. 49 (second-order Taylor expansion of the product with sigma_l = e^l)."""
    e = math.e
    return math.exp(
        a / (e - 1) + b / (e**2 - 1) - 0.5 * (a**2 / (e**2 - 1) + 2 * a * b / (e**3 - 1) + b**2 / (e**4 - 1))
    )


def log_product(a: float, b: float, sigma: np.ndarray, layer_power: float = 0.0) -> np.ndarray:
    """Natural log of the running product prod_{l<=L} (1 + a/(l^p s_l) + b/(l^p s_l)^2) for given s_l."""
    sigma = np.asarray(sigma, float)
    t = np.arange(1, sigma.size + 1) ** layer_power * sigma
    return np.cumsum(np.log1p(a / t + b / t**2))
