"""Exact Jacobians of the random stacks of `cod.theory.stack`.

- per-block and per-sublayer Jacobians d x'_l / d x_l, d x_{l+1} / d x'_l on the whole sequence
  (n d x n d, forward-mode autodiff) and their running product d x_{L+1} / d x_1 (Theorems 3.3, 4.2);
- the rigorous per-sublayer bounds 1 + c_l ||W_V W_O|| / min_j rms(x_j) (uniform attention) and
  1 + c_l ||W_1|| ||W_2|| / min_j rms(x'_j) (ReLU FFN), from ||J_N|| = 1/rms for RMS normalisation;
- ||J - I|| of one block as the scale of its input grows (eq. 5: deep blocks approach identity);
- the spectral norm of d x_{L+1} / d W_Q^(1), the first layer's query weights (Theorem 4.3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.func import jvp, vjp

from cod.theory.stack import (LayerWeights, StackConfig, attn_sublayer, ffn_sublayer, layer_weights,
                              lns_factor)


def _spec(m: torch.Tensor) -> torch.Tensor:
    """Spectral norm of each matrix of a batch (..., p, q), via the top eigenvalue of m^T m."""
    m = m.double()
    return torch.linalg.eigvalsh(m.mT @ m)[..., -1].clamp_min(0).sqrt()


# Forward-mode linearisations: primal x (S, n, d), tangents dx (K, S, n, d) (K directions at once).

def _rms_jvp(x, dx, eps):
    r2 = x.pow(2).mean(-1, keepdim=True) + eps
    return x / r2.sqrt(), dx / r2.sqrt() - x * (x * dx).mean(-1, keepdim=True) / r2.pow(1.5)


def _heads(t: torch.Tensor, cfg: StackConfig) -> torch.Tensor:
    """(..., n, d) -> (..., H, n, dh)"""
    return t.reshape(*t.shape[:-1], cfg.n_heads, cfg.d_head).transpose(-3, -2)


def _attention_jvp(u, du, w: LayerWeights, cfg: StackConfig):
    n = u.shape[-2]
    v, dv = _heads(u @ w.wv, cfg), _heads(du @ w.wv, cfg)
    if cfg.attention == "uniform":
        o, do = v.mean(-2, keepdim=True).expand(v.shape), dv.mean(-2, keepdim=True).expand(dv.shape)
    else:
        q, k = _heads(u @ w.wq, cfg), _heads(u @ w.wk, cfg)
        dq, dk = _heads(du @ w.wq, cfg), _heads(du @ w.wk, cfg)
        scale = cfg.d_head**-0.5
        logits = q @ k.transpose(-1, -2) * scale  # (S, H, n, n)
        dlogits = (dq @ k.transpose(-1, -2) + q @ dk.transpose(-1, -2)) * scale  # (K, S, H, n, n)
        if cfg.attention == "causal":
            logits = logits.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        p = torch.softmax(logits, -1)
        dp = p * (dlogits - (p * dlogits).sum(-1, keepdim=True))
        o, do = p @ v, dp @ v + p @ dv
    merge = lambda t: t.transpose(-3, -2).reshape(*t.shape[:-3], n, cfg.d_model)
    return merge(o) @ w.wo, merge(do) @ w.wo


def _ffn_jvp(u, du, w: LayerWeights, cfg: StackConfig):
    h, dh = u @ w.w1, du @ w.w1
    if cfg.ffn == "relu":
        z, dz = torch.relu(h), dh * (h > 0)
    else:
        g, dg = u @ w.w3, du @ w.w3
        sg = torch.sigmoid(h)
        z, dz = h * sg * g, dh * sg * (1 + h * (1 - sg)) * g + h * sg * dg
    return z @ w.w2, dz @ w.w2


def _sublayer_jvp(branch, x, dx, w, cfg, layer):
    c = lns_factor(cfg, layer)
    u, du = _rms_jvp(x, dx, cfg.eps)
    a, da = branch(c * u, c * du, w, cfg)
    return x + a, dx + da


def _jacobian(branch, x, w, cfg, layer):
    """Jacobian (S, n d, n d) of a sublayer at x (S, n, d); rows are outputs."""
    s, n, d = x.shape
    eye = torch.eye(n * d).reshape(n * d, 1, n, d).expand(n * d, s, n, d)
    y, dy = _sublayer_jvp(branch, x, eye, w, cfg, layer)  # dy (K, S, n, d)
    return y, dy.reshape(n * d, s, n * d).permute(1, 2, 0)


@dataclass
class JacobianRun:
    """Per-draw, per-layer records (S, L) of one stack; layer index l = 1..L along axis 1."""

    cfg: StackConfig
    rms_x: np.ndarray  # rms of x_l (block input), mean over tokens
    rms_mid: np.ndarray  # rms of x'_l
    norm_attn: np.ndarray  # ||d x'_l / d x_l||_2
    norm_ffn: np.ndarray  # ||d x_{l+1} / d x'_l||_2
    rigorous_attn: np.ndarray  # 1 + c_l ||W_V W_O||_2 / min_j rms(x_j)   (uniform attention only)
    rigorous_ffn: np.ndarray  # 1 + c_l ||W_1||_2 ||W_2||_2 / min_j rms(x'_j)   (ReLU only)
    dev_block: np.ndarray  # ||J_l - I||_2 of the whole block
    dev_diag: np.ndarray  # ||Jbar_l - I||_F / d, Jbar = token-average of the diagonal blocks (paper B)
    prod_norm: np.ndarray  # ||d x_{l+1} / d x_1||_2


def run_jacobians(cfg: StackConfig, n_samples: int, seed: int = 0) -> JacobianRun:
    """Propagate the exact Jacobian through cfg.n_layers blocks for S independent draws."""
    s, n, d = n_samples, cfg.n_tokens, cfg.d_model
    big = n * d
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(s, n, d, generator=g) * cfg.input_std
    prod = torch.eye(big).expand(s, big, big)
    eye = torch.eye(big)
    keys = (
        "rms_x",
        "rms_mid",
        "norm_attn",
        "norm_ffn",
        "rigorous_attn",
        "rigorous_ffn",
        "dev_block",
        "dev_diag",
        "prod_norm",
    )
    rec = {k: [] for k in keys}
    for layer in range(1, cfg.n_layers + 1):
        w = layer_weights(cfg, layer, s, seed)
        c = lns_factor(cfg, layer)
        with torch.no_grad():
            xm, ja = _jacobian(_attention_jvp, x, w, cfg, layer)  # ja (S, N, N)
            x_next, jf = _jacobian(_ffn_jvp, xm, w, cfg, layer)
            jb = jf @ ja
            prod = jb @ prod
            rms_tok, rms_tok_m = x.pow(2).mean(-1).sqrt(), xm.pow(2).mean(-1).sqrt()  # (S, n)
            rec["rms_x"].append(rms_tok.mean(-1))
            rec["rms_mid"].append(rms_tok_m.mean(-1))
            rec["norm_attn"].append(_spec(ja))
            rec["norm_ffn"].append(_spec(jf))
            rec["rigorous_attn"].append(1 + c * _spec(w.wv @ w.wo) / rms_tok.min(-1).values)
            rec["rigorous_ffn"].append(1 + c * _spec(w.w1) * _spec(w.w2) / rms_tok_m.min(-1).values)
            rec["dev_block"].append(_spec(jb - eye))
            diag = jb.reshape(s, n, d, n, d).diagonal(dim1=1, dim2=3).mean(-1)  # (S, d, d)
            rec["dev_diag"].append(torch.linalg.matrix_norm(diag - torch.eye(d)) / d)
            rec["prod_norm"].append(_spec(prod))
            x = x_next
    arr = {k: torch.stack(v, 1).double().numpy() for k, v in rec.items()}
    return JacobianRun(cfg, **arr)


@torch.no_grad()
def identity_approach(cfg: StackConfig, input_stds, n_samples: int, seed: int = 0, layer: int = 1) -> np.ndarray:
    """||J - I||_2 of block `layer` at inputs N(0, std^2 I), for each std. Returns (S, len(input_stds))."""
    s, n, d = n_samples, cfg.n_tokens, cfg.d_model
    w = layer_weights(cfg, layer, s, seed)
    z = torch.randn(s, n, d, generator=torch.Generator().manual_seed(seed))
    out = []
    for std in input_stds:
        xm, ja = _jacobian(_attention_jvp, z * std, w, cfg, layer)
        jf = _jacobian(_ffn_jvp, xm, w, cfg, layer)[1]
        out.append(_spec(jf @ ja - torch.eye(n * d)))
    return torch.stack(out, 1).double().numpy()


def _stack_output(wq1: torch.Tensor, x: torch.Tensor, weights: list, cfg: StackConfig) -> torch.Tensor:
    for layer, w in enumerate(weights, start=1):
        if layer == 1:
            w = w._replace(wq=wq1)
        x = ffn_sublayer(attn_sublayer(x, w, cfg, layer), w, cfg, layer)
    return x


def query_gradient_norm(cfg: StackConfig, depths, n_samples: int, seed: int = 0,
                        n_iter: int = 25) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """||d x_{L+1} / d W_Q^(1)||_2 (operator norm from R^{d x d} to R^{n x d}) for each depth L.

    Power iteration on J^T J, per draw (the draws are independent, so J is block-diagonal).
    Returns the norms (S, len(depths)) and the rms of x_l and x'_l along the deepest stack, (S, max L)
    each. The norm is zero for uniform attention, whose output does not depend on W_Q.
    """
    s, n, d = n_samples, cfg.n_tokens, cfg.d_model
    x = torch.randn(s, n, d, generator=torch.Generator().manual_seed(seed)) * cfg.input_std
    weights = [layer_weights(cfg, layer, s, seed) for layer in range(1, max(depths) + 1)]
    rms_x, rms_mid, h = [], [], x
    with torch.no_grad():
        for layer, w in enumerate(weights, start=1):
            hm = attn_sublayer(h, w, cfg, layer)
            rms_x.append(h.pow(2).mean(-1).sqrt().mean(-1))
            rms_mid.append(hm.pow(2).mean(-1).sqrt().mean(-1))
            h = ffn_sublayer(hm, w, cfg, layer)
    wq1 = weights[0].wq
    out = []
    for depth in depths:
        f = lambda wq: _stack_output(wq, x, weights[:depth], cfg)
        v = torch.randn(s, d, d, generator=torch.Generator().manual_seed(seed + 1))
        sv = torch.zeros(s)
        for _ in range(n_iter):
            v = v / v.flatten(1).norm(dim=1).clamp_min(1e-30)[:, None, None]
            _, jv = jvp(f, (wq1,), (v,))
            sv = jv.flatten(1).norm(dim=1)
            _, pull = vjp(f, wq1)
            v = pull(jv)[0].detach()
        out.append(sv.detach())
    to_np = lambda t: torch.stack(t, 1).double().numpy()
    return to_np(out), to_np(rms_x), to_np(rms_mid)
