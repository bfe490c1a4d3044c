"""Cross-entropy through the unembedding without the full logits.

`linear_cross_entropy(h, weight, targets)` equals
`F.cross_entropy((h @ weight.T).float(), targets, ignore_index=-100)` but walks the rows in
chunks of about `CHUNK_ELEMENTS` logits on the CPU, `DEVICE_CHUNK_ELEMENTS` on a GPU (at least
`MIN_ROWS` rows; `chunk_rows`), so the (N, V) logits and their fp32 copy never exist:
peak memory is one chunk's logits; on the CPU each chunk stays in cache while it is used, on a
GPU a chunk is large enough to keep it busy (at a 50K vocabulary, 2,668 rows: 13 chunks of a
32K-token micro-batch rather than 128 of 256 rows). The
gradients are formed in the same pass (softmax minus one-hot, times the rows and the weight) and
scaled by the incoming gradient in backward, so the unembedding is never recomputed.

Under autocast the products run in the autocast dtype, as `nn.Linear` would; the softmax, the
loss and the accumulated gradients are fp32 (float64 stays float64).
"""

from __future__ import annotations

import torch

IGNORE_INDEX = -100  # target id without a loss, as F.cross_entropy's default
CHUNK_ELEMENTS = 2**17  # logits per chunk on the CPU: 512 KiB in fp32
DEVICE_CHUNK_ELEMENTS = 2**27  # logits per chunk on a GPU: 512 MiB in fp32 (cod.tools.memory sizes the loss at it)
MIN_ROWS = 256  # rows per chunk at least, so a large vocabulary's weight is not reread for every few rows


def chunk_rows(vocab: int, device: torch.device) -> int:
    """Rows of one chunk of the loss at vocabulary `vocab` on `device`."""
    elements = CHUNK_ELEMENTS if device.type == "cpu" else DEVICE_CHUNK_ELEMENTS
    return max(MIN_ROWS, elements // vocab)


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, compute_dtype: torch.dtype):
        wide = torch.promote_types(h.dtype, torch.float32)
        w = weight.to(compute_dtype)
        counted = (targets != IGNORE_INDEX).to(wide)
        safe = targets.clamp(min=0)
        n = counted.sum().clamp(min=1)
        need_grad = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        grad_h = torch.empty_like(h, dtype=wide) if need_grad else None
        grad_w_t = torch.zeros(weight.shape[::-1], dtype=wide, device=h.device) if need_grad else None  # (D, V)
        total = torch.zeros((), dtype=wide, device=h.device)
        rows = chunk_rows(weight.shape[0], h.device)
        for start in range(0, h.shape[0], rows):
            x = h[start:start + rows].to(compute_dtype)  # (r, D)
            t, keep = safe[start:start + rows], counted[start:start + rows]
            r = torch.arange(len(t), device=t.device)
            logits = (x @ w.T).to(wide)  # (r, V)
            logits -= logits.amax(dim=-1, keepdim=True)  # shifted: the largest is 0
            picked = logits[r, t]
            exps = logits.exp_()  # in place: the logits are not needed again
            sums = exps.sum(dim=-1)
            total += ((sums.log() - picked) * keep).sum()
            if need_grad:  # d loss_i / d logits_i = softmax_i - onehot_i, zero for ignored rows
                grad = exps.mul_((keep / sums)[:, None])
                grad[r, t] -= keep
                grad = grad.to(compute_dtype)
                # both products are taken transposed, so their outputs are wide (see cod.model.cpu_attention)
                grad_h[start:start + rows] = (w.T @ grad.T).T
                grad_w_t += x.T @ grad
        if need_grad:
            ctx.save_for_backward(grad_h / n, grad_w_t.T / n)
        ctx.dtypes = (h.dtype, weight.dtype)
        return total / n

    @staticmethod
    def backward(ctx, grad_loss: torch.Tensor):
        grad_h, grad_w = ctx.saved_tensors
        h_dtype, w_dtype = ctx.dtypes
        return (grad_h * grad_loss).to(h_dtype), (grad_w * grad_loss).to(w_dtype), None, None


def linear_cross_entropy(h: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of the logits h @ weight.T against targets, over targets other than
    IGNORE_INDEX. h: (N, D) hidden states, weight: (V, D), targets: (N,) token ids."""
    if torch.is_autocast_enabled(h.device.type):
        compute_dtype = torch.get_autocast_dtype(h.device.type)
    else:
        compute_dtype = torch.promote_types(h.dtype, weight.dtype)
    with torch.autocast(h.device.type, enabled=False):
        return _LinearCrossEntropy.apply(h, weight, targets, compute_dtype)
