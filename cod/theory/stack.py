"""Random Pre-LN / LNS residual stacks of paper A, batched over independent draws of the weights.

One block (paper A eqs. 2-3; LNS eq. 51):
    x'_l    = x_l  + Attn(c_l * N(x_l))
    x_{l+1} = x'_l + FFN(c_l * N(x'_l)),      c_l = 1 (Pre-LN) or 1/sqrt(l) (LNS), l = 1..L
with N the RMS normalisation (no gain), every weight matrix i.i.d. N(0, sigma_W^2) (Assumption 3.1,
one "universal" sigma_W as in App. A), and either the uniform attention of App. A.1.1 (every query
weighs every key 1/n), softmax attention, or causal softmax attention. FFN is W2 ReLU(W1 u) (eq. 28)
or SwiGLU. All tensors carry a leading sample axis S: S independent stacks run at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
import torch


@dataclass(frozen=True)
class StackConfig:
    d_model: int = 64
    d_ff: int = 256
    n_heads: int = 4
    n_tokens: int = 16
    n_layers: int = 64
    norm: str = "pre_ln"  # "pre_ln" | "lns"
    attention: str = "uniform"  # "uniform" | "softmax" | "causal"
    ffn: str = "relu"  # "relu" | "swiglu"
    weight_std: float | None = None  # sigma_W; None -> 1/sqrt(d_model)
    input_std: float = 1.0  # std of the i.i.d. Gaussian input x_1
    eps: float = 1e-12

    @property
    def sigma_w(self) -> float:
        return self.weight_std if self.weight_std is not None else 1.0 / math.sqrt(self.d_model)

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def with_(self, **kw) -> "StackConfig":
        return replace(self, **kw)


class LayerWeights(NamedTuple):
    wq: torch.Tensor  # (S, d, d)
    wk: torch.Tensor  # (S, d, d)
    wv: torch.Tensor  # (S, d, d)
    wo: torch.Tensor  # (S, d, d)
    w1: torch.Tensor  # (S, d, d_ff)
    w3: torch.Tensor  # (S, d, d_ff), SwiGLU's gate (unused by ReLU)
    w2: torch.Tensor  # (S, d_ff, d)


def layer_weights(cfg: StackConfig, layer: int, n_samples: int, seed: int) -> LayerWeights:
    """Weights of block `layer` (1-based) for S stacks; regenerated identically from (seed, layer)."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + layer)
    d, f, s, sd = cfg.d_model, cfg.d_ff, n_samples, cfg.sigma_w
    shapes = [(s, d, d)] * 4 + [(s, d, f), (s, d, f), (s, f, d)]
    return LayerWeights(*[torch.randn(sh, generator=g) * sd for sh in shapes])


def lns_factor(cfg: StackConfig, layer: int) -> float:
    """c_l of LNS (paper A eq. 12), a plain float; 1 for Pre-LN."""
    return 1.0 / math.sqrt(layer) if cfg.norm == "lns" else 1.0


def rms_norm(x: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def attention(u: torch.Tensor, w: LayerWeights, cfg: StackConfig) -> torch.Tensor:
    """Multi-head attention of u (..., n, d) -> (..., n, d); leading axes are batch axes."""
    *b, n, d = u.shape
    split = lambda t: t.reshape(*b, n, cfg.n_heads, cfg.d_head).transpose(-3, -2)  # (..., H, n, dh)
    v = split(u @ w.wv)
    if cfg.attention == "uniform":
        heads = v.mean(-2, keepdim=True).expand(v.shape)
    else:
        logits = split(u @ w.wq) @ split(u @ w.wk).transpose(-1, -2) / math.sqrt(cfg.d_head)  # (..., H, n, n)
        if cfg.attention == "causal":
            logits = logits.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        heads = torch.softmax(logits, -1) @ v
    return heads.transpose(-3, -2).reshape(*b, n, d) @ w.wo


def ffn(u: torch.Tensor, w: LayerWeights, cfg: StackConfig) -> torch.Tensor:
    h = u @ w.w1
    z = torch.relu(h) if cfg.ffn == "relu" else torch.nn.functional.silu(h) * (u @ w.w3)
    return z @ w.w2


def attn_sublayer(x, w: LayerWeights, cfg: StackConfig, layer: int) -> torch.Tensor:
    return x + attention(lns_factor(cfg, layer) * rms_norm(x, cfg.eps), w, cfg)


def ffn_sublayer(x, w: LayerWeights, cfg: StackConfig, layer: int) -> torch.Tensor:
    return x + ffn(lns_factor(cfg, layer) * rms_norm(x, cfg.eps), w, cfg)


def token_variance(x: torch.Tensor) -> torch.Tensor:
    """Paper B eq. 4: variance across features of each token, averaged over tokens. (S, n, d) -> (S,)"""
    return x.var(-1, unbiased=False).mean(-1)


def _corr(x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """Correlation of x and a across features, pooled over tokens (the rho of paper A eqs. 21-22)."""
    xc, ac = x - x.mean(-1, keepdim=True), a - a.mean(-1, keepdim=True)
    return (xc * ac).mean((-1, -2)) / torch.sqrt(xc.pow(2).mean((-1, -2)) * ac.pow(2).mean((-1, -2)))


def _excess_kurtosis(x: torch.Tensor) -> torch.Tensor:
    """Excess kurtosis of all coordinates of a draw, each token standardised first. (S, n, d) -> (S,)"""
    z = (x - x.mean(-1, keepdim=True)) / x.std(-1, unbiased=False, keepdim=True)
    return z.pow(4).mean((-1, -2)) - 3.0


@dataclass
class StackStats:
    """Per-draw statistics of one simulated stack; index l = 0 is the input x_1 (paper A's x_1)."""

    cfg: StackConfig
    var: np.ndarray  # (S, L+1) sigma^2_{x_l}: var[:, 0] input, var[:, l] output of block l
    var_mid: np.ndarray  # (S, L) sigma^2_{x'_l}
    var_attn: np.ndarray  # (S, L) variance of the attention branch output
    var_ffn: np.ndarray  # (S, L) variance of the FFN branch output
    rho_attn: np.ndarray  # (S, L) corr(x_l, Attn branch)
    rho_ffn: np.ndarray  # (S, L) corr(x'_l, FFN branch)
    kurtosis: np.ndarray  # (S, L+1) excess kurtosis of the coordinates of x_l
    mean_over_std: np.ndarray  # (S, L+1) |token mean| / token std, averaged over tokens

    @property
    def depth(self) -> np.ndarray:
        return np.arange(self.var.shape[1])


@torch.no_grad()
def simulate(cfg: StackConfig, n_samples: int, seed: int = 0) -> StackStats:
    """Run S independent random stacks on i.i.d. Gaussian inputs and record the variance profile."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n_samples, cfg.n_tokens, cfg.d_model, generator=g) * cfg.input_std
    rec = {k: [] for k in ("var", "var_mid", "var_attn", "var_ffn", "rho_attn", "rho_ffn", "kurtosis", "mos")}

    def snap(t):
        rec["var"].append(token_variance(t))
        rec["kurtosis"].append(_excess_kurtosis(t))
        rec["mos"].append((t.mean(-1).abs() / t.std(-1, unbiased=False)).mean(-1))

    snap(x)
    for layer in range(1, cfg.n_layers + 1):
        w = layer_weights(cfg, layer, n_samples, seed)
        a = attention(lns_factor(cfg, layer) * rms_norm(x, cfg.eps), w, cfg)
        xm = x + a
        f = ffn(lns_factor(cfg, layer) * rms_norm(xm, cfg.eps), w, cfg)
        rec["var_attn"].append(token_variance(a))
        rec["var_mid"].append(token_variance(xm))
        rec["var_ffn"].append(token_variance(f))
        rec["rho_attn"].append(_corr(x, a))
        rec["rho_ffn"].append(_corr(xm, f))
        x = xm + f
        snap(x)
    arr = {k: torch.stack(v, 1).double().numpy() for k, v in rec.items()}
    return StackStats(cfg, arr["var"], arr["var_mid"], arr["var_attn"], arr["var_ffn"], arr["rho_attn"],
                      arr["rho_ffn"], arr["kurtosis"], arr["mos"])
