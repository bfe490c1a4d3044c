"""Adapters: Hugging Face models behind the layer protocol of cod.model.Transformer."""

import numpy as np
import pytest
import torch
from torch import nn
from transformers import (BertConfig, BertModel, Gemma3ForCausalLM, Gemma3TextConfig, Qwen2Config,
                          Qwen2ForCausalLM)

from cod.metrics.adapters import HFDecoder, HFEncoder, as_layer_model
from cod.config import ModelConfig
from cod.metrics.attention_sparsity import attention_pattern, attention_stats
from cod.model.interop import to_hf_llama
from cod.metrics.stream import residual_stream
from cod.model import Transformer

SMALL = dict(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
             max_position_embeddings=64)


@pytest.fixture
def idx():
    return torch.randint(0, 97, (2, 17), generator=torch.Generator().manual_seed(0))


def test_transformer_and_hf_adapter_agree_state_by_state(idx):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=97, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2,
                                    max_seq_len=64)).eval()
    for p in model.parameters():
        p.data.add_(0.05 * torch.randn_like(p))
    adapter = HFDecoder(to_hf_llama(model))
    targets = torch.roll(idx, -1, dims=1)
    replacement = nn.Linear(32, 32)
    for order in (None, [0, 2], [2, 1, 1], [0, replacement, 2]):
        with torch.no_grad():
            ours = model(idx, targets, order=order, keep=["resid_pre", "resid_post"])
            theirs = adapter(idx, targets, order=order, keep=["resid_pre", "resid_post"])
        assert ours.states.keys() == theirs.states.keys()
        for name in ours.states:
            torch.testing.assert_close(theirs.states[name], ours.states[name], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(theirs.logits, ours.logits, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(theirs.loss, ours.loss, atol=1e-6, rtol=1e-6)
    stream_ours, stream_theirs = residual_stream(model, idx, targets), residual_stream(adapter, idx, targets)
    assert stream_ours.loss == pytest.approx(stream_theirs.loss, rel=1e-6)


@pytest.mark.parametrize("family", ["qwen2", "gemma3"])
def test_other_decoders_match_their_own_forward(family, idx):
    torch.manual_seed(0)
    if family == "qwen2":  # sliding-window layers with a window shorter than the sequence
        hf = Qwen2ForCausalLM(Qwen2Config(**SMALL, num_key_value_heads=2, use_sliding_window=True, sliding_window=4,
                                          layer_types=["full_attention", "sliding_attention", "sliding_attention"]))
    else:  # local and global rotary tables, embedding scale, logit soft-capping
        types = ["sliding_attention", "full_attention", "sliding_attention"]
        hf = Gemma3ForCausalLM(Gemma3TextConfig(**SMALL, num_key_value_heads=2, head_dim=8, sliding_window=4,
                                                final_logit_softcapping=30.0, layer_types=types))
    hf.eval()
    adapter = as_layer_model(hf)
    assert isinstance(adapter, HFDecoder)
    with torch.no_grad():
        expected = hf(idx, labels=idx)
        x = adapter.run_blocks(adapter.embed(idx))
        logits, _ = adapter.head(x)
        _, loss = adapter.head(x[:, :-1], idx[:, 1:])
    torch.testing.assert_close(logits, expected.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(loss, expected.loss, atol=1e-5, rtol=1e-5)


def test_bert_encoder(idx):
    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=97, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                                intermediate_size=64, max_position_embeddings=64)).eval()
    adapter = as_layer_model(bert)
    assert isinstance(adapter, HFEncoder) and len(adapter.blocks) == 3
    with torch.no_grad():
        out = adapter(idx, idx, keep=["resid_post"])
        torch.testing.assert_close(out.states["resid_post.2"], bert(idx).last_hidden_state)
        torch.testing.assert_close(out.logits.norm(dim=-1), torch.ones(2))  # unit sentence embeddings
        assert out.loss.item() == pytest.approx(0.0, abs=1e-6)  # intact model: no drop
        assert adapter(idx, idx, order=[0, 2]).loss.item() > 1e-4  # a block removed: a drop


def test_jacobian_through_an_adapter_block(idx):
    hf = Qwen2ForCausalLM(Qwen2Config(**SMALL, num_key_value_heads=2)).eval()
    adapter = as_layer_model(hf)
    x = adapter.embed(idx)[:1, :5].detach()
    jac = torch.func.jacrev(lambda z: adapter.run_blocks(z, order=[1]))(x)
    assert jac.shape == (1, 5, 32, 1, 5, 32)
    assert jac[0, 1, :, 0, 3].abs().max() == 0  # causal: position 1 ignores position 3


def test_bad_input_is_explained():
    with pytest.raises(ValueError, match="allowed: resid_pre, resid_post"):
        HFDecoder(Qwen2ForCausalLM(Qwen2Config(**SMALL))).run_blocks(torch.zeros(1, 2, 32), keep=["attn_out"])
    with pytest.raises(TypeError, match="no adapter for Linear"):
        as_layer_model(nn.Linear(2, 2))
    model = Transformer(ModelConfig(vocab_size=97, d_model=32, n_layers=1, n_heads=4))
    assert as_layer_model(model) is model


def test_every_score_is_the_same_on_our_model_and_on_hf_llama(idx):
    import numpy as np

    from cod.metrics.angular import angular_distances
    from cod.metrics.causal import causal_scores
    from cod.metrics.jacobian import block_jacobians
    from cod.metrics.permutation import permutation_scores
    from cod.metrics.pruning import layer_removal
    from cod.metrics.usefulness import usefulness_scores

    torch.manual_seed(1)
    model = Transformer(ModelConfig(vocab_size=97, d_model=32, n_layers=4, n_heads=4, n_kv_heads=2,
                                    max_seq_len=64)).eval()
    adapter = HFDecoder(to_hf_llama(model))
    targets = torch.roll(idx, -1, dims=1)
    scores = []
    for m in (model, adapter):
        with torch.no_grad():
            stream = residual_stream(m, idx, targets)
            fit = residual_stream(m, idx.flip(0), targets.flip(0))
            scores.append([angular_distances(stream), layer_removal(m, stream).loss_increase,
                           causal_scores(m, stream).matrix, permutation_scores(m, stream).matrix,
                           usefulness_scores(m, stream, fit).relative_increase])
        scores[-1].append(block_jacobians(m, residual_stream(m, idx[:, :8]), seed=0).deviation)
    for ours, theirs in zip(*scores):
        np.testing.assert_allclose(np.asarray(theirs, dtype=float), np.asarray(ours, dtype=float),
                                   rtol=1e-4, atol=1e-6)


def test_attention_pattern_of_an_adapter_equals_ours(idx):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=97, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2,
                                    max_seq_len=64)).eval()
    for p in model.parameters():
        p.data.add_(0.05 * torch.randn_like(p))
    adapter = HFDecoder(to_hf_llama(model))
    stream = residual_stream(model, idx)
    for layer in range(3):
        with torch.no_grad():
            theirs = attention_pattern(adapter, layer, stream.h[layer])
            ours = attention_pattern(model, layer, stream.h[layer])
        torch.testing.assert_close(theirs, ours, atol=1e-6, rtol=1e-5)
    assert adapter.config._attn_implementation != "eager"  # left as it was
    stats = attention_stats(adapter, stream, [1e-2])
    np.testing.assert_allclose(stats.entropy, attention_stats(model, stream, [1e-2]).entropy, rtol=1e-5)


def test_attention_pattern_of_a_sliding_window_layer(idx):
    torch.manual_seed(0)
    types = ["sliding_attention", "full_attention"]
    hf = Gemma3ForCausalLM(Gemma3TextConfig(**{**SMALL, "num_hidden_layers": 2}, num_key_value_heads=2, head_dim=8,
                                            sliding_window=4, layer_types=types)).eval()
    adapter = as_layer_model(hf)
    x = adapter.embed(idx)
    with torch.no_grad():
        sliding, full = attention_pattern(adapter, 0, x), attention_pattern(adapter, 1, x)
    T = idx.shape[1]
    distance = torch.arange(T)[:, None] - torch.arange(T)[None, :]  # query minus key position
    for pattern, window in ((sliding, 4), (full, T)):
        assert pattern.shape == (2, 4, T, T)
        torch.testing.assert_close(pattern.sum(-1), torch.ones(2, 4, T))
        allowed = (distance >= 0) & (distance < window)
        assert pattern[..., ~allowed].abs().max() == 0 and pattern[..., allowed].min() > 0
