"""Training FLOPs per token of a model shape: what equal-FLOPs comparisons and benchmarks count.

    6 x (parameters of every matrix product a token goes through) + attention's scores and values

A mixture-of-experts block counts the experts a token is routed to (its active parameters),
the shared expert and the router; embeddings are lookups and are not counted.
`step_products` lists the matrix products of one dense training step at their shapes, which
`cod.tools.benchmark` times alone for the MFU no implementation built on them can exceed.
"""

from __future__ import annotations

from cod.config import FFN, ModelConfig

Product = tuple[int, int, int, int, int]  # (count, batch, m, k, n): count products (batch, m, k) @ (batch, k, n)


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


def step_products(cfg: ModelConfig, batch: int, seq_len: int) -> list[Product]:
    """The matrix products of one dense training step at their shapes, forward and backward,
    fused as far as they can be (q/k/v one product, gate/up one): each linear layer's
    X W^T, dY W and dY^T X, and per head attention's Q K^T and dO V^T ((T, hd) @ (hd, T)) and
    P V, P^T dO, dS K, dS^T Q ((T, T) @ (T, hd)), at full T x T. Their time bounds a step
    from below: what remains when everything but the products costs nothing."""
    if cfg.ffn == FFN.MOE:
        raise ValueError("step_products counts dense models only (model.ffn=moe routes tokens unevenly)")
    d, hd, tokens = cfg.d_model, cfg.head_dim, batch * seq_len
    linears = [(d, (cfg.n_heads + 2 * cfg.kv_heads) * hd), (cfg.n_heads * hd, d), (d, 2 * cfg.ffn_width),
               (cfg.ffn_width, d)]
    products: list[Product] = []
    for n_in, n_out in linears:
        products += [(cfg.n_layers, 1, tokens, n_in, n_out), (cfg.n_layers, 1, tokens, n_out, n_in),
                     (cfg.n_layers, 1, n_out, tokens, n_in)]
    heads = batch * cfg.n_heads
    products += [(2 * cfg.n_layers, heads, seq_len, hd, seq_len), (4 * cfg.n_layers, heads, seq_len, seq_len, hd)]
    vocab = cfg.vocab_size
    products += [(1, 1, tokens, d, vocab), (1, 1, tokens, vocab, d), (1, 1, vocab, tokens, d)]  # the unembedding
    return products
