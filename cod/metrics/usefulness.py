"""Usefulness score: which layers do more than an affine map (paper B eq. 9-10, Table 1's E/W).

For each block l, fit the least-squares affine map of its input to its output over the
tokens of a held-out batch (`fit` stream),

    (W, b) = argmin sum_t ||x_t W + b - y_t||^2,     x_t = h_{l-1,t},  y_t = h_{l,t},

replace the block by y = x W + b and measure the relative rise in loss on the evaluation
batch,  U_l = (L(model with block l affine) - L(model)) / L(model)             (eq. 9).
Block l is useful when U_l > tau (tau = 0.1 in the paper); the score is the fraction of
useful blocks (eq. 10), E = the number of useful blocks and W = L - E the wasted ones.

The map is applied as fitted, x W + b. The authors' script (compute_usefulness.py) solves
for the same (D, D) matrix W but copies it into nn.Linear.weight, which computes x W^T + b,
so their replacement applies the transpose of the fit; we follow the paper's definition.
Fitting on tokens other than the evaluation ones keeps the fit from being scored on its own
training data (the authors fit and score on the same sample). The fit needs more tokens than
its D + 1 unknowns per output (`check_fit_tokens`): on fewer it passes through every token.

`usefulness_authors` measures the authors' variant, a reading of ours registered beside the
paper's definition (cod/claims/registry.yaml, definition `usefulness_authors`): the same least-squares
(W, b), fitted on the scoring tokens themselves and applied transposed, x W^T + b. Their script
also runs in bf16; this one keeps the model's precision.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import nn

from cod.metrics.stream import LayeredModel, Stream, loss_after
from cod.progress import progress_bar


class Affine(nn.Module):
    """y = x W + b on the last dimension; W (D_in, D_out), b (D_out,)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor):
        super().__init__()
        self.register_buffer("weight", weight)
        self.register_buffer("bias", bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight + self.bias


class TransposedAffine(Affine):
    """y = x W^T + b: what nn.Linear computes with W as its weight (the authors' replacement)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight.T + self.bias


def check_fit_tokens(tokens: int, width: int) -> None:
    """Refuse to fit the affine maps of blocks of `width` on `tokens` tokens when that is at most
    width + 1, where a least-squares fit interpolates instead of fitting."""
    if tokens <= width + 1:
        raise ValueError(f"fit_tokens={tokens} is too few to fit the usefulness maps at width {width}: "
                         f"at least {width + 2} (width + 2) are needed")


def fit_affine(x: torch.Tensor, y: torch.Tensor) -> Affine:
    """Least-squares affine map from x (..., D_in) to y (..., D_out), solved in float64."""
    x2, y2 = x.reshape(-1, x.shape[-1]).double(), y.reshape(-1, y.shape[-1]).double()
    design = torch.cat([x2, torch.ones_like(x2[:, :1])], dim=1)  # (N, D_in + 1)
    driver = "gelsy" if x.device.type == "cpu" else None  # CPU: pivoted QR, gelsd's minimum-norm solution in a tenth of its time; CUDA has only QR
    solution = torch.linalg.lstsq(design, y2, driver=driver).solution  # (D_in + 1, D_out)
    return Affine(solution[:-1].to(x.dtype), solution[-1].to(x.dtype))


@dataclass
class Usefulness:
    base_loss: float
    loss: np.ndarray  # (L,) loss with block l (0-based) replaced by its affine fit
    tau: float

    @property
    def relative_increase(self) -> np.ndarray:
        """U_l, eq. 9."""
        return (self.loss - self.base_loss) / self.base_loss

    @property
    def useful(self) -> np.ndarray:
        return self.relative_increase > self.tau

    @property
    def effective(self) -> int:
        """E: the number of useful blocks."""
        return int(self.useful.sum())

    @property
    def wasted(self) -> int:
        """W = L - E."""
        return len(self.loss) - self.effective

    @property
    def score(self) -> float:
        """Eq. 10: the fraction of useful blocks."""
        return self.effective / len(self.loss)

    def at(self, tau: float) -> Usefulness:
        """The same replacements judged at another threshold (the usefulness curve over tau)."""
        return dataclasses.replace(self, tau=tau)


def matched_tau(baseline: Sequence[Usefulness], share: float) -> float:
    """The threshold at which about a fraction `share` of the baseline's blocks (pooled over its
    runs) count as useful, the interpolated quantile of their loss rises: the paper's tau carried
    to a model whose loss rises are on another scale by matching a reference model's useful
    share instead of the threshold."""
    if not 0 < share < 1:
        raise ValueError(f"share={share} is not allowed; allowed: strictly between 0 and 1")
    rises = np.concatenate([u.relative_increase for u in baseline])
    return float(np.quantile(rises, 1 - share))


@torch.no_grad()
def usefulness_scores(model: LayeredModel, stream: Stream, fit: Stream, tau: float = 0.1,
                      progress: bool | None = None) -> Usefulness:
    """`stream` (with targets) scores the replacements; `fit` (other tokens) fits them.
    `progress`: a bar of the blocks done on stderr (see cod.progress)."""
    check_fit_tokens(fit.h[0][..., 0].numel(), fit.h[0].shape[-1])
    n = stream.n_layers
    loss = np.array([
        loss_after(model, stream, l, [fit_affine(fit.h[l], fit.h[l + 1]), *range(l + 1, n)])
        for l in progress_bar("usefulness blocks", n, progress, "block", range(n))
    ])
    return Usefulness(stream.loss, loss, tau)


@torch.no_grad()
def usefulness_authors(model: LayeredModel, stream: Stream, tau: float = 0.1,
                       progress: bool | None = None) -> Usefulness:
    """The authors' usefulness (their compute_usefulness.py): each block's least-squares affine map
    fitted on the tokens of `stream` (with targets) and scored on the same tokens, applied
    transposed (`TransposedAffine`), as their nn.Linear applies the solved matrix."""
    check_fit_tokens(stream.h[0][..., 0].numel(), stream.h[0].shape[-1])
    n = stream.n_layers

    def replacement(l: int) -> TransposedAffine:
        fitted = fit_affine(stream.h[l], stream.h[l + 1])
        return TransposedAffine(fitted.weight, fitted.bias)

    loss = np.array([loss_after(model, stream, l, [replacement(l), *range(l + 1, n)])
                     for l in progress_bar("usefulness blocks (authors' fit)", n, progress, "block", range(n))])
    return Usefulness(stream.loss, loss, tau)
