"""The model layer: the transformer and what it is built from and bridged to.

    transformer    the LLaMA-style decoder: norms (Pre-LN, LNS, ...), attention, SwiGLU or MoE, named states
    cpu_attention  softmax attention for small heads with a hand-written backward (the CPU's fast path)
    loss           cross-entropy through the unembedding without the full logits
    flops          training FLOPs per token of a shape
    vision         a ViT made of the same blocks (paper A, Table 5)
    interop        weights to and from Hugging Face LLaMA / Qwen2

`from cod.model import Transformer` is the usual entry; the names below are the transformer's public ones.
"""

from cod.model.transformer import (MoE, ModelOutput, RMSNorm, Routing, Sublayer, SwiGLU, Transformer, block_norm,
                                   deepnorm_alpha, router_losses)

__all__ = ["MoE", "ModelOutput", "RMSNorm", "Routing", "Sublayer", "SwiGLU", "Transformer", "block_norm",
           "deepnorm_alpha", "router_losses"]
