"""Move weights between `cod.model.Transformer` and Hugging Face `LlamaForCausalLM`.

Only the Pre-LN model has an exact Hugging Face counterpart; LNS and the other norm
placements reuse the same weights with a different forward (e.g. load a LLaMA checkpoint,
then evaluate it with norm=lns to see what the factor alone does).
"""

from __future__ import annotations

import re

import torch

from cod.config import ModelConfig, Norm
from cod.model import Transformer

# (Hugging Face name pattern, our name pattern); {i} is the block index
_NAME_MAP = [
    ("model.embed_tokens.weight", "embed_tokens.weight"),
    ("model.norm.weight", "final_norm.weight"),
    ("lm_head.weight", "lm_head.weight"),
    ("model.layers.{i}.input_layernorm.weight", "blocks.{i}.attn.norm.weight"),
    ("model.layers.{i}.post_attention_layernorm.weight", "blocks.{i}.mlp.norm.weight"),
    *[(f"model.layers.{{i}}.self_attn.{p}.weight", f"blocks.{{i}}.attn.branch.{p}.weight")
      for p in ("q_proj", "k_proj", "v_proj", "o_proj")],
    *[(f"model.layers.{{i}}.mlp.{p}.weight", f"blocks.{{i}}.mlp.branch.{p}.weight")
      for p in ("gate_proj", "up_proj", "down_proj")],
]


def _rename(name: str, source: int, target: int) -> str | None:
    for pair in _NAME_MAP:
        pattern = re.escape(pair[source]).replace(r"\{i\}", r"(\d+)")
        match = re.fullmatch(pattern, name)
        if match:
            return pair[target].replace("{i}", match.group(1)) if match.groups() else pair[target]
    return None


def config_from_hf(hf_config, **overrides) -> ModelConfig:
    """Our ModelConfig for a Hugging Face LlamaConfig (extra fields: e.g. norm='lns')."""
    fields = dict(
        vocab_size=hf_config.vocab_size,
        d_model=hf_config.hidden_size,
        n_layers=hf_config.num_hidden_layers,
        n_heads=hf_config.num_attention_heads,
        n_kv_heads=hf_config.num_key_value_heads,
        d_ff=hf_config.intermediate_size,
        max_seq_len=hf_config.max_position_embeddings,
        rope_theta=float(_rope_theta(hf_config)),
        norm_eps=hf_config.rms_norm_eps,
        tie_embeddings=bool(getattr(hf_config, "tie_word_embeddings", False)),
    )
    fields.update(overrides)
    return ModelConfig(**fields)


def _rope_theta(hf_config) -> float:
    params = getattr(hf_config, "rope_parameters", None) or {}
    return params.get("rope_theta", getattr(hf_config, "rope_theta", 10000.0))


def hf_config_from(cfg: ModelConfig):
    """A Hugging Face LlamaConfig with our model's shape (Pre-LN only)."""
    from transformers import LlamaConfig

    if cfg.norm != Norm.PRE_LN:
        raise ValueError(f"only model.norm=pre_ln has a LlamaForCausalLM equivalent, not {cfg.norm}")
    return LlamaConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.d_model,
        intermediate_size=cfg.ffn_width,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.kv_heads,
        max_position_embeddings=cfg.max_seq_len,
        rms_norm_eps=cfg.norm_eps,
        rope_theta=cfg.rope_theta,
        tie_word_embeddings=cfg.tie_embeddings,
        attention_bias=False,
        mlp_bias=False,
    )


def from_hf_llama(hf_model, **overrides) -> Transformer:
    """Our Transformer holding the weights of a Hugging Face LLaMA-architecture model."""
    model = Transformer(config_from_hf(hf_model.config, **overrides))
    state = {}
    for name, tensor in hf_model.state_dict().items():
        ours = _rename(name, source=0, target=1)
        if ours is not None:
            state[ours] = tensor.detach().float()
    if "lm_head.weight" not in state:  # tied embeddings (e.g. SmolLM2)
        state["lm_head.weight"] = state["embed_tokens.weight"]
    model.load_state_dict(state, strict=True)
    return model


def to_hf_llama(model: Transformer):
    """A Hugging Face LlamaForCausalLM with the weights of our Pre-LN Transformer."""
    from transformers import LlamaForCausalLM

    hf_model = LlamaForCausalLM(hf_config_from(model.cfg))
    state = {_rename(name, source=1, target=0): t for name, t in model.state_dict().items()}
    with torch.no_grad():
        hf_model.load_state_dict(state, strict=True)
    return hf_model.eval()
