"""Block Jacobians and their distance from the identity (paper B section 2, Fig. 2b, Fig. 3, Fig. 12).

For block l with input x (B, T, D) and output y = f_l(x), the per-token Jacobian is

    J_{l,t} = d y_t / d x_t    (D, D),

the derivative of the output at position t with respect to the input at the same position,
every other position held fixed (attention mixes positions, so the full derivative of
y_t also has blocks d y_t / d x_s for s != t; they are left out). The reported matrix is
the mean over sampled tokens, J_l = mean_t J_{l,t}, and its deviation from the identity is

    ||J_l - I||_F / d.

The authors' script instead backpropagates the sum over all positions of one output
coordinate and averages the input gradient over positions, which mixes in the d y_t / d x_s
terms; the per-position definition follows the paper's reading of J as the map from one
token's x_l to its x_{l+1}.

Sampling: one token per sequence of the stream, at a uniformly random position, so that
the D backward passes per block recover all sampled tokens at once (sequences do not
interact). Cost: D backward passes of the block over the stream's B x T tokens, batched into
forwards and backwards of about CHUNK_TOKENS tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from cod.metrics.stream import LayeredModel, Stream
from cod.progress import progress_bar

CHUNK_TOKENS = 512  # tokens per batched forward and backward of one block (larger ones ran slower on CPU)


@dataclass
class BlockJacobians:
    mean: np.ndarray  # (L, D, D) float32: J_l averaged over sampled tokens, [out, in]
    deviation: np.ndarray  # (L,): ||J_l - I||_F / d


def token_jacobians(model: LayeredModel, block: int, x: torch.Tensor, positions: torch.Tensor,
                    chunk_tokens: int = CHUNK_TOKENS) -> torch.Tensor:
    """(B, D, D) Jacobians d y_{b,t_b} / d x_{b,t_b} of block `block` at positions t_b (B,).

    Row i of every Jacobian is the gradient of output coordinate i; the D rows come from one
    backward pass each, batched: the sequences are repeated once per row in a chunk, so a chunk
    of c rows is one forward and one backward over c x B x T tokens.
    """
    batch, seq_len, d = x.shape
    rows, positions = torch.arange(batch, device=x.device), positions.to(x.device)
    basis = torch.eye(d, dtype=x.dtype, device=x.device)
    per_chunk = max(1, chunk_tokens // (batch * seq_len))
    jacobian_rows = []
    for first in range(0, d, per_chunk):
        c = min(per_chunk, d - first)
        copies_positions, flat = positions.repeat(c), torch.arange(c * batch, device=x.device)  # (c*B,) copy-major
        with torch.enable_grad():
            picked = x[rows, positions].detach().repeat(c, 1).requires_grad_(True)  # (c*B, D)
            copies = x.detach().repeat(c, 1, 1).index_put((flat, copies_positions), picked)  # (c*B, T, D)
            y = model.run_blocks(copies, order=[block])[flat, copies_positions]  # (c*B, D)
            cotangent = basis[first:first + c].repeat_interleave(batch, dim=0)  # (c*B, D): copy k gets row first + k
            (grad,) = torch.autograd.grad(y, picked, cotangent)
        jacobian_rows.append(grad.view(c, batch, d))
    return torch.cat(jacobian_rows).transpose(0, 1)  # (B, D, D) [out, in]


def block_jacobians(model: LayeredModel, stream: Stream, seed: int = 0, progress: bool | None = None) -> BlockJacobians:
    """Mean per-token Jacobian of every block over one random position per sequence.
    `progress`: a bar of the blocks done on stderr (see cod.progress)."""
    batch, seq_len, d = stream.h[0].shape
    generator = torch.Generator().manual_seed(seed)  # on the CPU: the same positions on every device
    positions = torch.randint(seq_len, (batch,), generator=generator, device="cpu")
    blocks = progress_bar("Jacobian blocks", stream.n_layers, progress, "block", range(stream.n_layers))
    means = [token_jacobians(model, l, stream.h[l], positions).double().mean(0).cpu() for l in blocks]
    deviation = np.array([(m - torch.eye(d, dtype=m.dtype, device="cpu")).norm().item() / d for m in means])
    return BlockJacobians(torch.stack(means).float().numpy(), deviation)


def diagonal_share(j: torch.Tensor) -> torch.Tensor:
    """Share of the squared Frobenius norm on the diagonal, per matrix: (..., D, D) -> (...)."""
    return j.diagonal(dim1=-2, dim2=-1).pow(2).sum(-1) / j.pow(2).sum((-2, -1))


def identity_deviation(j: torch.Tensor) -> torch.Tensor:
    """||J - I||_F / d per matrix: (..., D, D) -> (...)."""
    d = j.shape[-1]
    return torch.linalg.matrix_norm(j - torch.eye(d, dtype=j.dtype, device=j.device)) / d
