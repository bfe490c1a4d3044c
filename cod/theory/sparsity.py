"""Feature masks as variance regulators: paper B Theorem 1 (residual recursion) and Theorem 2 (Transformer block).

Theorem 1 (reconstructed from the proof in B App. B.1): x_{l+1} = x_l + W_l M_l x_l with M_l a
diagonal 0-1 mask and W_l a random linear map independent of (x_l, M_l), E||W_l z||^2 <= sigma^2 ||z||^2 and
E||M_l z||^2 <= rho ||z||^2. Then, by Cauchy-Schwarz on the cross term,
    E||x_{l+1}||^2 <= (1 + sigma sqrt(rho))^2 E||x_l||^2,   E||x_L||^2 <= (1 + sigma sqrt(rho))^(2L) E||x_0||^2.
For zero-mean W the cross term vanishes and the exact gain is 1 + sigma^2 rho.

Theorem 2 (B App. B.2-B.3): X' = X + MSA(X M), X'' = X' + FFN(X' M) with one mask M shared by both
sublayers, no LayerNorm, E||MSA(Z)||^2 <= gamma_A E||Z||^2, E||FFN(Z)||^2 <= gamma_F E||Z||^2. Then
    E||X''||^2 <= (1 + sqrt(rho gamma_A))^2 (1 + sqrt(rho gamma_F))^2 E||X||^2.
Here gamma_A = ||W_O||^2 sum_h ||A_h||^2 ||W_V^h||^2 (eqs. 48-51) and gamma_F = ||W_1||^2 ||W_2||^2 (ReLU),
taken as the largest value over the draws so that they are valid constants.
"""

from __future__ import annotations

import math

import numpy as np
import torch


def _mask(x: torch.Tensor, rho: float, kind: str, g: torch.Generator) -> torch.Tensor:
    """0-1 mask shaped like x: i.i.d. Bernoulli(rho) ("bernoulli"), or the ceil(rho d) largest |x_i| per row ("magnitude")."""
    if kind == "bernoulli":
        return (torch.rand(x.shape, generator=g) < rho).to(x.dtype)
    k = max(1, math.ceil(rho * x.shape[-1]))
    idx = x.abs().topk(k, dim=-1).indices
    return torch.zeros_like(x).scatter_(-1, idx, 1.0)


@torch.no_grad()
def residual_recursion(d: int, n_layers: int, rho: float, sigma: float, n_draws: int, mask: str = "bernoulli",
                       seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 1's recursion. Returns (||x_l||^2 / d of each draw (D, L+1), energy retention E||Mx||^2/E||x||^2 per layer (L,))."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n_draws, d, generator=g, dtype=torch.float64)
    norms, keep = [x.pow(2).mean(-1)], []
    for _ in range(n_layers):
        m = _mask(x, rho, mask, g)
        w = torch.randn(n_draws, d, d, generator=g, dtype=torch.float64) * (
            sigma / math.sqrt(d)
        )  # E||Wz||^2 = sigma^2 ||z||^2
        keep.append(float((x * m).pow(2).sum() / x.pow(2).sum()))
        x = x + ((x * m).unsqueeze(1) @ w).squeeze(1)
        norms.append(x.pow(2).mean(-1))
    return torch.stack(norms, 1).numpy(), np.array(keep)


def theorem1_bound(rho, sigma: float, n_layers: int):
    """(1 + sigma sqrt(rho))^(2L): Theorem 1's bound on E||x_L||^2 / E||x_0||^2."""
    return (1 + sigma * np.sqrt(rho)) ** (2 * n_layers)


@torch.no_grad()
def transformer_block(d: int, n_tokens: int, n_heads: int, d_ff: int, rho: float, n_draws: int, seed: int = 0) -> dict:
    """One masked attention + FFN block without normalisation (Theorem 2), N(0, 1/fan_in) weights.

    Returns the measured gain E||X''||^2 / E||X||^2, the attention- and FFN-sublayer gains, the
    constants gamma_A, gamma_F (max over draws) and Theorem 2's bound.
    """
    g = torch.Generator().manual_seed(seed)
    dh = d // n_heads
    rn = lambda *s, fan: torch.randn(*s, generator=g, dtype=torch.float64) / math.sqrt(fan)
    x = torch.randn(n_draws, n_tokens, d, generator=g, dtype=torch.float64)
    wq, wk, wv, wo = (rn(n_draws, d, d, fan=d) for _ in range(4))
    w1, w2 = rn(n_draws, d, d_ff, fan=d), rn(n_draws, d_ff, d, fan=d_ff)
    m = (torch.rand(n_draws, 1, d, generator=g) < rho).double()  # one feature mask per draw, shared by both sublayers
    heads = lambda t: t.reshape(n_draws, n_tokens, n_heads, dh).transpose(1, 2)  # (D, H, n, dh)
    z = x * m
    attn = torch.softmax(heads(z @ wq) @ heads(z @ wk).transpose(-1, -2) / math.sqrt(dh), -1)  # (D, H, n, n)
    msa = (attn @ heads(z @ wv)).transpose(1, 2).reshape(n_draws, n_tokens, d) @ wo
    xm = x + msa
    xo = xm + torch.relu((xm * m) @ w1) @ w2
    spec = lambda t: torch.linalg.matrix_norm(t, ord=2)
    wv_h = wv.reshape(n_draws, d, n_heads, dh).transpose(1, 2)  # (D, H, d, dh)
    gamma_a = float((spec(wo) ** 2 * (spec(attn) ** 2 * spec(wv_h) ** 2).sum(1)).max())
    gamma_f = float((spec(w1) ** 2 * spec(w2) ** 2).max())
    e0, e1, e2 = (float(t.pow(2).sum((1, 2)).mean()) for t in (x, xm, xo))
    return dict(rho=rho, gain=e2 / e0, gain_attn=e1 / e0, gain_ffn=e2 / e1, gamma_attn=gamma_a, gamma_ffn=gamma_f,
                bound=(1 + math.sqrt(rho * gamma_a)) ** 2 * (1 + math.sqrt(rho * gamma_f)) ** 2,
                sq_norms=x.pow(2).sum((1, 2)).numpy(), sq_norms_out=xo.pow(2).sum((1, 2)).numpy())
