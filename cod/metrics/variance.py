"""Per-layer output variance (paper B eq. 4; paper A Fig. 4).

Var(h) = mean over tokens t of the variance of h_t across the hidden dimension, i.e. for
h of shape (B, T, D): h.var(dim=-1, unbiased=False).mean(). Measured on the residual
stream leaving each block (the last one before the final norm) and on what the attention
and MLP branches add to it. Read from the model's named states, so a ViT is measured alike
(over its patch and class tokens).
"""

from __future__ import annotations

import torch

from cod.model import Transformer


def token_variance(h: torch.Tensor) -> float:
    """Per-token variance across the last (hidden) dimension, averaged over tokens."""
    return h.to(torch.promote_types(h.dtype, torch.float32)).var(dim=-1, unbiased=False).mean().item()


@torch.no_grad()
def layer_variances(model: Transformer, idx: torch.Tensor) -> dict[str, list[float]]:
    """Variances of every block's output and branch outputs on inputs idx: tokens (B, T), or
    images (B, C, H, W) for a ViT (`cod.model.vision`), whose states are (B, T, D) alike.

    Returns lists indexed by block (0-based): resid_var, attn_var, mlp_var.
    """
    states = model(idx, keep=("resid_post", "attn_out", "mlp_out")).states
    n = len(model.blocks)
    return {
        f"{name}_var": [token_variance(states[f"{kind}.{i}"]) for i in range(n)]
        for name, kind in (("resid", "resid_post"), ("attn", "attn_out"), ("mlp", "mlp_out"))
    }
