"""Training FLOPs per token (cod.model.flops), counted by hand on small shapes."""

import pytest

from cod.config import ModelConfig
from cod.model.flops import flops_per_token, step_products


def test_dense_counts_every_product_and_causal_attention():
    cfg = ModelConfig(vocab_size=10, d_model=4, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=8)
    per_block = 4 * 4 + 4 * 2 + 4 * 2 + 4 * 4 + 3 * 4 * 8  # q, k, v (one kv head of 2), o, gate/up/down
    matmul_params = 2 * per_block + 4 * 10  # blocks and the unembedding
    attention = 2 * 6 * 5 * 4  # per layer: QK^T and PV take 2 T d FLOPs each forward, x3 to train, halved (causal)
    assert flops_per_token(cfg, seq_len=5) == 6 * matmul_params + attention


def test_moe_counts_the_active_experts_the_shared_one_and_the_router():
    moe = dict(vocab_size=10, d_model=4, n_layers=1, n_heads=2, d_ff=8, ffn="moe", moe_experts=6, moe_top_k=2,
               moe_d_ff=3)
    attention = 6 * 5 * 4
    attn_params, head = 4 * 4 * 4, 4 * 10
    routed = 6 * (attn_params + 2 * 3 * 4 * 3 + 4 * 6 + head) + attention  # two experts of width 3, router 4 x 6
    assert flops_per_token(ModelConfig(**moe), seq_len=5) == routed
    shared = ModelConfig(**moe, moe_shared_expert=True)
    assert flops_per_token(shared, seq_len=5) == routed + 6 * 3 * 4 * 3
    # one expert of the dense width with k = 1 is the dense model plus its router
    one = ModelConfig(**{**moe, "moe_experts": 1, "moe_top_k": 1, "moe_d_ff": None})
    dense = ModelConfig(**{k: v for k, v in moe.items() if not k.startswith("moe") and k != "ffn"})
    assert flops_per_token(one, seq_len=5) == flops_per_token(dense, seq_len=5) + 6 * 4


def test_a_steps_products_are_its_model_flops_plus_the_masked_half_of_attention():
    cfg = ModelConfig(vocab_size=10, d_model=4, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=8)
    batch, seq_len = 3, 5
    products = step_products(cfg, batch, seq_len)
    flops = sum(2 * count * b * m * k * n for count, b, m, k, n in products)
    masked_half = 6 * cfg.n_layers * seq_len * cfg.d_model  # causal attention is counted full, not halved
    assert flops == batch * seq_len * (flops_per_token(cfg, seq_len) + masked_half)
    assert (1, 1, batch * seq_len, 4, 10) in products  # the unembedding's forward product, (N, D) @ (D, V)


def test_step_products_refuse_a_mixture_of_experts():
    with pytest.raises(ValueError, match="model.ffn=moe"):
        step_products(ModelConfig(vocab_size=10, d_model=4, n_layers=1, n_heads=2, ffn="moe", moe_experts=2), 1, 5)
