"""Softmax attention for small heads, with a hand-written backward.

At the miniature's shapes (head size 6-16, a few hundred tokens at most) attention is a batch
of tiny matrix products, and a CPU BLAS is several times slower when a product's output has
only `head size` columns (P @ V is (T, T) x (T, hd)) than when it is computed transposed
(V^T @ P^T, an output of T columns). Every product here, forward and backward, is arranged
so its output is T or G*T wide, and the softmax backward uses FlashAttention's row sums
rowsum(dO * O) instead of rowsum(dP * P). The result equals
`F.scaled_dot_product_attention` to rounding; `torch.func` transforms (jacrev, vmap) work.
"""

from __future__ import annotations

import math

import torch


class _SoftmaxAttention(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool):
        """q (N, G*T, hd): the G query heads sharing a key/value head, stacked; k, v (N, T, hd).
        Returns the output (N, G*T, hd) and the probabilities (N, G*T, T)."""
        scale = 1 / math.sqrt(q.shape[-1])
        if causal:
            T, rows = k.shape[1], q.shape[1]
            mask = torch.full((T, T), float("-inf"), dtype=q.dtype, device=q.device).triu(1).repeat(rows // T, 1)
            scores = torch.baddbmm(mask, q, k.transpose(1, 2), alpha=scale)  # (N, G*T, T)
        else:
            scores = torch.bmm(q, k.transpose(1, 2)).mul_(scale)
        probs = scores.softmax(dim=-1)
        out = torch.bmm(v.transpose(1, 2), probs.transpose(1, 2)).transpose(1, 2)  # (N, G*T, hd), computed as O^T
        return out, probs

    @staticmethod
    def setup_context(ctx, inputs, output):
        q, k, v, _ = inputs
        out, probs = output
        ctx.save_for_backward(q, k, v, out, probs)
        ctx.mark_non_differentiable(probs)
        ctx.set_materialize_grads(False)  # no (N, G*T, T) zeros for the probabilities' gradient

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor | None, _grad_probs):
        if grad_out is None:  # nothing flowed back through the output
            return None, None, None, None
        q, k, v, out, probs = ctx.saved_tensors
        scale = 1 / math.sqrt(q.shape[-1])
        grad_v = torch.bmm(grad_out.transpose(1, 2), probs).transpose(1, 2)  # dV^T = dO^T P
        grad_probs = torch.bmm(grad_out, v.transpose(1, 2))  # (N, G*T, T)
        row = (grad_out * out).sum(dim=-1, keepdim=True)  # rowsum(dP * P) = rowsum(dO * O)
        grad_scores = grad_probs.sub_(row).mul_(probs)
        grad_k = torch.bmm(q.transpose(1, 2), grad_scores).transpose(1, 2).mul(scale)  # dK^T = Q^T dS
        grad_q = torch.bmm(k.transpose(1, 2), grad_scores.transpose(1, 2)).transpose(1, 2).mul(scale)  # dQ^T = K^T dS^T
        return grad_q, grad_k, grad_v, None


def softmax_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention output (N, G*T, hd) and probabilities (N, G*T, T) of grouped queries q
    (N, G*T, hd) over keys and values k, v (N, T, hd); N = batch x key/value heads."""
    return _SoftmaxAttention.apply(q, k, v, causal)
