"""A tiny self-contained Pre-LN / LNS language model, trained briefly on a synthetic Markov source.

Used to step off the lemmas' assumptions: causal softmax attention, RMSNorm with a learnable gain,
SwiGLU, learned positions, LLaMA's N(0, 0.02^2) initialisation, and a little Adam training. LNS
multiplies both pre-norm outputs of block l (1-based) by 1/sqrt(l) (paper A eq. 12), not the final norm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class TinyConfig:
    vocab: int = 64
    d_model: int = 64
    n_layers: int = 16
    n_heads: int = 4
    d_ff: int = 176  # ~ 8/3 d, SwiGLU
    max_len: int = 64
    norm: str = "pre_ln"  # "pre_ln" | "lns"
    init_std: float = 0.02


class _Block(nn.Module):
    def __init__(self, cfg: TinyConfig, layer: int):
        super().__init__()
        d = cfg.d_model
        self.n_heads, self.scale = cfg.n_heads, (1.0 / math.sqrt(layer) if cfg.norm == "lns" else 1.0)
        self.norm1, self.norm2 = nn.RMSNorm(d, eps=1e-6), nn.RMSNorm(d, eps=1e-6)
        self.qkv, self.proj = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.gate, self.up = nn.Linear(d, cfg.d_ff, bias=False), nn.Linear(d, cfg.d_ff, bias=False)
        self.down = nn.Linear(cfg.d_ff, d, bias=False)

    def attn(self, u: torch.Tensor) -> torch.Tensor:
        *b, t, d = u.shape
        q, k, v = (z.reshape(*b, t, self.n_heads, -1).transpose(-3, -2) for z in self.qkv(u).chunk(3, -1))
        logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (..., H, T, T)
        logits = logits.masked_fill(torch.ones(t, t, dtype=torch.bool, device=u.device).triu(1), float("-inf"))
        return self.proj((torch.softmax(logits, -1) @ v).transpose(-3, -2).reshape(*b, t, d))

    def mlp(self, u: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(u)) * self.up(u))

    def forward(self, x: torch.Tensor, branches: bool = False):
        a = self.attn(self.scale * self.norm1(x))
        xm = x + a
        f = self.mlp(self.scale * self.norm2(xm))
        return (xm + f, a, xm, f) if branches else xm + f


class TinyLM(nn.Module):
    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.cfg = cfg
        self.tok, self.pos = nn.Embedding(cfg.vocab, cfg.d_model), nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(_Block(cfg, layer) for layer in range(1, cfg.n_layers + 1))
        self.norm_f = nn.RMSNorm(cfg.d_model, eps=1e-6)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=cfg.init_std)

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        return self.tok(idx) + self.pos(torch.arange(idx.shape[-1], device=idx.device))

    def forward(self, idx: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """idx (B, T) -> logits (B, T, V), hidden states [h_0 (embeddings), h_1, ..., h_L] each (B, T, D)."""
        hs = [self.embed(idx)]
        for blk in self.blocks:
            hs.append(blk(hs[-1]))
        return self.head(self.norm_f(hs[-1])), hs


class MarkovSource:
    """First-order Markov chain over `vocab` symbols with Dirichlet(alpha) transition rows."""

    def __init__(self, vocab: int, alpha: float = 0.1, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.vocab = vocab
        self.trans = rng.dirichlet(np.full(vocab, alpha), size=vocab)  # (V, V)
        self.cum = np.cumsum(self.trans, -1)

    def entropy(self) -> float:
        """Entropy rate in nats (the best achievable loss), under the stationary distribution."""
        w, v = np.linalg.eig(self.trans.T)
        pi = np.abs(np.real(v[:, np.argmin(np.abs(w - 1))]))
        pi /= pi.sum()
        return float(-(pi[:, None] * self.trans * np.log(np.clip(self.trans, 1e-300, None))).sum())

    def sample(self, batch: int, seq_len: int, rng: np.random.Generator) -> torch.Tensor:
        out = np.empty((batch, seq_len), dtype=np.int64)
        out[:, 0] = rng.integers(0, self.vocab, batch)
        for t in range(1, seq_len):
            u = rng.random((batch, 1))
            out[:, t] = np.minimum((self.cum[out[:, t - 1]] < u).sum(-1), self.vocab - 1)
        return torch.from_numpy(out)


def train(model: TinyLM, source: MarkovSource, steps: int, batch: int, seq_len: int, lr: float, seed: int = 0,
          eval_idx: torch.Tensor | None = None, eval_at=()) -> tuple[list[float], dict[int, dict]]:
    """Adam (no weight decay), 10% linear warm-up then constant lr.

    Returns the loss of every step and {step: layer_profile(model, eval_idx)} for each step in eval_at
    (step s = after s updates).
    """
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.95))
    warm = max(1, steps // 10)
    losses, profiles = [], {}
    for step in range(steps + 1):
        if step in eval_at:
            profiles[step] = layer_profile(model, eval_idx)
        if step == steps:
            break
        for group in opt.param_groups:
            group["lr"] = lr * min(1.0, (step + 1) / warm)
        idx = source.sample(batch, seq_len + 1, rng)
        logits, _ = model(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), idx[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, profiles


@torch.no_grad()
def layer_profile(model: TinyLM, idx: torch.Tensor) -> dict[str, np.ndarray]:
    """Per-layer statistics on a batch: variance of h_l (B eq. 4), (L+1,); branch correlations
    with the residual they are added to, (L,); excess kurtosis of the coordinates of h_l, (L+1,)."""
    x = model.embed(idx)
    var, kurt, rho_a, rho_f = [], [], [], []

    def stats(t):
        var.append(float(t.var(-1, unbiased=False).mean()))
        z = (t - t.mean(-1, keepdim=True)) / t.std(-1, unbiased=False, keepdim=True)
        kurt.append(float(z.pow(4).mean() - 3))

    corr = lambda u, v: float(((u - u.mean(-1, keepdim=True)) * (v - v.mean(-1, keepdim=True))).mean()
                              / (u.var(-1, unbiased=False).mean() * v.var(-1, unbiased=False).mean()).sqrt())
    stats(x)
    for blk in model.blocks:
        y, a, xm, f = blk(x, branches=True)
        rho_a.append(corr(x, a))
        rho_f.append(corr(xm, f))
        x = y
        stats(x)
    return dict(var=np.array(var), kurtosis=np.array(kurt), rho_attn=np.array(rho_a), rho_ffn=np.array(rho_f))


def block_jacobians(model: TinyLM, idx: torch.Tensor) -> dict[str, np.ndarray]:
    """Exact Jacobians of every block on one sequence idx (T,): ||J_l - I||_2 over the whole sequence,
    ||Jbar_l - I||_F / d of the token-averaged diagonal blocks, and ||d h_l / d h_0||_2, each (L,)."""
    with torch.no_grad():
        x = model.embed(idx[None])[0]  # (T, D)
    t, d = x.shape
    eye = torch.eye(t * d)
    prod, dev, dev_diag, prod_norm = eye, [], [], []
    for blk in model.blocks:
        jac = torch.func.jacrev(lambda z: blk(z[None])[0])(x).reshape(t * d, t * d).detach()
        prod = jac @ prod
        dev.append(float(torch.linalg.matrix_norm(jac - eye, ord=2)))
        diag = jac.reshape(t, d, t, d).diagonal(dim1=0, dim2=2).mean(-1)
        dev_diag.append(float(torch.linalg.matrix_norm(diag - torch.eye(d)) / d))
        prod_norm.append(float(torch.linalg.matrix_norm(prod, ord=2)))
        with torch.no_grad():
            x = blk(x[None])[0]
    return dict(dev=np.array(dev), dev_diag=np.array(dev_diag), prod_norm=np.array(prod_norm))
