"""The package's real Pre-LN / LNS model (`cod.model.Transformer`), trained briefly on a synthetic Markov source.

Used to step off the lemmas' assumptions: causal softmax attention, RMSNorm with a learnable gain,
SwiGLU, rotary positions, LLaMA's N(0, 0.02^2) initialisation, and a little Adam training. LNS
multiplies both pre-norm outputs of block l (1-based) by 1/sqrt(l) (paper A eq. 12), not the final norm.
The statistics are read from the model's named states: h_0 = resid_pre.0 (the token embeddings),
h_l = resid_post.{l-1}, so h_L is taken before the final norm.

Earlier versions used a self-contained copy of this architecture. The differences: rotary position
embeddings instead of learned ones added to h_0 (h_0 now holds the token embeddings alone), RMSNorm
eps 1e-5 instead of 1e-6, and another parameter layout, so the same seed draws different weights.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from cod.config import ModelConfig, Norm
from cod.model import Transformer

_STATES = ["resid_pre", "attn_out", "resid_mid", "mlp_out", "resid_post"]


def tiny_lm(norm: str = "pre_ln", vocab: int = 64, d_model: int = 64, n_layers: int = 16, n_heads: int = 4,
            max_seq_len: int = 64) -> Transformer:
    """A small `Transformer` (SwiGLU width 8/3 d rounded up to a multiple of 8, untied embeddings)."""
    return Transformer(ModelConfig(vocab_size=vocab, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
                                   max_seq_len=max_seq_len, norm=Norm(norm)))


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


def train(model: Transformer, source: MarkovSource, steps: int, batch: int, seq_len: int, lr: float, seed: int = 0,
          eval_idx: torch.Tensor | None = None, eval_at=()) -> tuple[list[float], dict[int, dict]]:
    """Adam (no weight decay, no clipping), 10% linear warm-up then constant lr.

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
        loss = model(idx[:, :-1], idx[:, 1:]).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, profiles


def _var(t: torch.Tensor) -> torch.Tensor:
    """Per-token variance across features (paper B eq. 4), averaged over tokens."""
    return t.var(-1, unbiased=False).mean()


def _corr(u: torch.Tensor, v: torch.Tensor) -> float:
    """Feature-wise covariance of u and v averaged over tokens, over the root of their mean variances."""
    cov = ((u - u.mean(-1, keepdim=True)) * (v - v.mean(-1, keepdim=True))).mean()
    return float(cov / (_var(u) * _var(v)).sqrt())


def _kurtosis(t: torch.Tensor) -> float:
    """Excess kurtosis of the coordinates of each token, averaged over tokens."""
    z = (t - t.mean(-1, keepdim=True)) / t.std(-1, unbiased=False, keepdim=True)
    return float(z.pow(4).mean() - 3)


@torch.no_grad()
def layer_profile(model: Transformer, idx: torch.Tensor) -> dict[str, np.ndarray]:
    """Per-layer statistics on a batch idx (B, T): variance of h_l (B eq. 4), (L+1,); correlation of the
    attention / FFN output of block l with the residual it is added to, (L,); excess kurtosis of the
    coordinates of h_l, (L+1,)."""
    s = model(idx, keep=_STATES).states
    n = len(model.blocks)
    hs = [s["resid_pre.0"]] + [s[f"resid_post.{i}"] for i in range(n)]
    return dict(var=np.array([float(_var(h)) for h in hs]), kurtosis=np.array([_kurtosis(h) for h in hs]),
                rho_attn=np.array([_corr(s[f"resid_pre.{i}"], s[f"attn_out.{i}"]) for i in range(n)]),
                rho_ffn=np.array([_corr(s[f"resid_mid.{i}"], s[f"mlp_out.{i}"]) for i in range(n)]))


def block_jacobians(model: Transformer, idx: torch.Tensor) -> dict[str, np.ndarray]:
    """Exact Jacobians of every block on one sequence idx (T,): ||J_l - I||_2 over the whole sequence,
    ||Jbar_l - I||_F / d of the token-averaged diagonal blocks, and ||d h_l / d h_0||_2, each (L,)."""
    with torch.no_grad():
        x = model.embed(idx[None])[0]  # (T, D)
    t, d = x.shape
    rope = model.rotary(t)
    eye = torch.eye(t * d)
    prod, dev, dev_diag, prod_norm = eye, [], [], []
    for blk in model.blocks:
        step = lambda z: blk(z[None], rope)[0][0]  # noqa: E731
        with warnings.catch_warnings():  # vmap loops over the backward of CPU attention: slower, still exact
            warnings.filterwarnings("ignore", message="There is a performance drop")
            jac = torch.func.jacrev(step)(x).reshape(t * d, t * d).detach()
        prod = jac @ prod
        dev.append(float(torch.linalg.matrix_norm(jac - eye, ord=2)))
        diag = jac.reshape(t, d, t, d).diagonal(dim1=0, dim2=2).mean(-1)
        dev_diag.append(float(torch.linalg.matrix_norm(diag - torch.eye(d)) / d))
        prod_norm.append(float(torch.linalg.matrix_norm(prod, ord=2)))
        with torch.no_grad():
            x = step(x)
    return dict(dev=np.array(dev), dev_diag=np.array(dev_diag), prod_norm=np.array(prod_norm))
