"""Variance growth with depth: paper A Lemma 3.2 (Pre-LN) and Lemma 4.1 (LNS).

Lemma 3.2:  sigma^2_{x_{l+1}} = sigma^2_{x_l} Theta(1 + 1/sigma_{x_l})  (eqs. 6, 30-31), and
            Theta(L) <= sigma^2_{x_L} <= Theta(exp L)  (eq. 7).
Lemma 4.1:  sigma^2_{x_{l+1}} = sigma^2_{x_l} Theta(1 + 1/(sqrt(l) sigma_{x_l}))  (eqs. 13, 54), and
            Theta(L) <= sigma^2_{x_L} <= Theta(L^(2-eps)), 1/2 <= eps < 1  (eq. 14).

Checks here: the growth exponent of the depth profile of simulated stacks; the exponents of the
per-layer law (g_l - 1) ~ sigma_l^b l^c with input scales varied so that sigma_l and l decouple;
a rigorous polynomial bound on the variance of any Pre-LN/LNS stack with ReLU FFN; and the
lemmas' own recursions and proof steps evaluated exactly.
"""

from __future__ import annotations

import numpy as np
import torch

from cod.theory import fits
from cod.theory.stack import StackConfig, StackStats, layer_weights, lns_factor


def growth_exponent(stats: StackStats, first: int = 1, n_boot: int = 400, seed: int = 0) -> fits.Estimate:
    """beta in sigma^2_{x_l} - sigma^2_{x_1} ~ l^beta over blocks l >= first, bootstrap over draws."""
    layer = np.arange(first, stats.var.shape[1])
    return fits.bootstrap(stats.var, lambda v: fits.power_law(layer, (v.mean(0) - v[:, 0].mean())[first:]).coef[:1],
                          n_boot, seed)[0]


def growth_models(stats: StackStats, first: int = 1) -> dict[str, float]:
    """RMS log-error of the best power / exponential / log law through sigma^2_l - sigma^2_1."""
    v = stats.var.mean(0)
    layer = np.arange(first, v.size)
    return fits.growth_models(layer, (v - v[0])[first:])


def local_law(runs: list[StackStats], n_boot: int = 400, seed: int = 0) -> tuple[fits.Estimate, fits.Estimate]:
    """Exponents (b, c) of g_l - 1 ~ sigma_{x_l}^b l^c, g_l = sigma^2_{x_{l+1}} / sigma^2_{x_l}.

    Points of all runs (different input scales, same S) are pooled; the bootstrap resamples draws.
    Lemma 3.2 says b = -1, c = 0; Lemma 4.1 says b = -1, c = -1/2.
    """
    draws = np.stack([r.var for r in runs], 1)  # (S, R, L+1)

    def est(v):
        m = v.mean(0)  # (R, L+1)
        gain = m[:, 1:] / m[:, :-1] - 1
        sig = np.sqrt(m[:, :-1])
        layer = np.broadcast_to(np.arange(1, m.shape[1]), gain.shape)
        ok = gain > 0
        design = np.stack([np.log(sig[ok]), np.log(layer[ok]), np.ones(ok.sum())], 1)
        return fits.ols(design, np.log(gain[ok])).coef[:2]

    b, c = fits.bootstrap(draws, est, n_boot, seed)
    return b, c


@torch.no_grad()
def rms_bound(cfg: StackConfig, n_samples: int, seed: int = 0) -> np.ndarray:
    """A rigorous bound on the rms of every token of x_l, (S, L+1), for the draws of `simulate`.

    Each branch sees a normalised input u with ||u|| = c_l sqrt(d); each head returns a convex
    combination of its value rows and ReLU is 1-Lipschitz with ReLU(0) = 0, so
    rms(x_{l+1}) <= rms(x_l) + c_l (K_attn + ||W_1||_2 ||W_2||_2), K_attn = ||W_V W_O||_2 for uniform
    attention (all heads share the weights) and ||W_O||_2 (sum_h ||W_V^h||_2^2)^(1/2) otherwise.
    Hence sigma_{x_L} grows at most linearly (Pre-LN) or like sqrt(L) (LNS) whatever the draw:
    sigma^2 is O(L^2) (Pre-LN) and O(L) (LNS), never exponential.
    """
    if cfg.ffn != "relu":
        raise ValueError("the bound needs a Lipschitz FFN (ReLU)")
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n_samples, cfg.n_tokens, cfg.d_model, generator=g) * cfg.input_std
    spec = lambda m: torch.linalg.matrix_norm(m.double(), ord=2)
    out = [x.double().pow(2).mean(-1).sqrt().amax(-1)]
    for layer in range(1, cfg.n_layers + 1):
        w = layer_weights(cfg, layer, n_samples, seed)
        if cfg.attention == "uniform":
            k_attn = spec(w.wv @ w.wo)
        else:
            wv_heads = w.wv.reshape(n_samples, cfg.d_model, cfg.n_heads, cfg.d_head).transpose(1, 2)  # (S, H, d, dh)
            k_attn = spec(w.wo) * spec(wv_heads).pow(2).sum(-1).sqrt()
        out.append(out[-1] + lns_factor(cfg, layer) * (k_attn + spec(w.w1) * spec(w.w2)))
    return torch.stack(out, 1).numpy()


def iterate_recursion(n_layers: int, a: float = 1.0, sigma2_1: float = 1.0, lns: bool = False,
                      form: str = "paper") -> np.ndarray:
    """sigma^2_l, l = 1..L, from a recursion of the lemmas, taken literally.

    form="paper":       sigma^2_{l+1} = sigma^2_l (1 + a / (t_l sigma_l))      (eqs. 6 / 13)
    form="independent": sigma^2_{l+1} = sigma^2_l + a / t_l^2                (branch independent of x_l)
    with t_l = sqrt(l) for LNS, 1 for Pre-LN.
    """
    s2 = np.empty(n_layers)
    s2[0] = sigma2_1
    for layer in range(1, n_layers):
        t = np.sqrt(layer) if lns else 1.0
        s2[layer] = (
            s2[layer - 1] * (1 + a / (t * np.sqrt(s2[layer - 1]))) if form == "paper" else s2[layer - 1] + a / t**2
        )
    return s2


def proof_lower_bound(n_layers: np.ndarray) -> np.ndarray:
    """exp(sum_{k<L} (1/k - 1/(2k))), the lower bound of eqs. 34 and 57 evaluated with sigma^2_k = k.

    The paper states it is Theta(exp(sqrt L)) (eq. 34) and Theta(L) (eq. 57); it is Theta(sqrt L).
    """
    n_layers = np.asarray(n_layers)
    harmonic = np.cumsum(1.0 / np.arange(1, n_layers.max()))
    return np.exp(0.5 * np.concatenate([[0.0], harmonic])[n_layers - 1])

