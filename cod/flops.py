"""Training FLOPs per token of a model shape: what equal-FLOPs comparisons and benchmarks count.

    6 x (parameters of every matrix product a token goes through) + attention's scores and values

A mixture-of-experts block counts the experts a token is routed to (its active parameters),
the shared expert and the router; embeddings are lookups and are not counted.
"""

from __future__ import annotations

from cod.config import FFN, ModelConfig


def flops_per_token(cfg: ModelConfig, seq_len: int) -> float:
    """Forward and backward FLOPs per training token at sequence length `seq_len`."""
    d, L, kv = cfg.d_model, cfg.n_layers, cfg.kv_heads * cfg.head_dim
    if cfg.ffn == FFN.MOE:
        active = cfg.moe_top_k + int(cfg.moe_shared_expert)
        ffn = 3 * d * cfg.expert_width * active + d * cfg.moe_experts  # experts (gate, up, down) and the router
    else:
        ffn = 3 * d * cfg.ffn_width
    per_block = 2 * d * d + 2 * d * kv + ffn  # q and o, k and v, the feed-forward
    matmul_params = L * per_block + d * cfg.vocab_size
    return 6 * matmul_params + 6 * L * seq_len * d  # causal attention: half of 12 L T d
