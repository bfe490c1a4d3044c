"""Move weights between `cod.model.Transformer` and Hugging Face LLaMA / Qwen2 models.

A conversion is exact or refused. Supported: `LlamaForCausalLM` and `Qwen2ForCausalLM` (whose
q/k/v biases map to `qkv_bias`) with SiLU SwiGLU, full causal attention, head_dim =
hidden_size / heads and default or Llama 3.1 ("llama3") rotary embeddings. Any other value of
those config fields, and any tensor without a counterpart, raises `ConversionError`.

Only the Pre-LN model has an exact Hugging Face counterpart; LNS and the other norm
placements reuse the same weights with a different forward (e.g. load a LLaMA checkpoint,
then evaluate it with norm=lns to see what the factor alone does).
"""

from __future__ import annotations

import dataclasses
import re

import torch

from cod.config import BranchGain, ModelConfig, Norm, RopeScaling, apply_overrides
from cod.model import Transformer

HF, OURS = 0, 1  # the two sides of the tables below

# (Hugging Face tensor name pattern, ours); {i} is the block index
_NAME_MAP = [
    ("model.embed_tokens.weight", "embed_tokens.weight"),
    ("model.norm.weight", "final_norm.weight"),
    ("lm_head.weight", "lm_head.weight"),
    ("model.layers.{i}.input_layernorm.weight", "blocks.{i}.attn.norm.weight"),
    ("model.layers.{i}.post_attention_layernorm.weight", "blocks.{i}.mlp.norm.weight"),
    *[(f"model.layers.{{i}}.self_attn.{p}.weight", f"blocks.{{i}}.attn.branch.{p}.weight")
      for p in ("q_proj", "k_proj", "v_proj", "o_proj")],
    *[(f"model.layers.{{i}}.self_attn.{p}.bias", f"blocks.{{i}}.attn.branch.{p}.bias")
      for p in ("q_proj", "k_proj", "v_proj")],
    *[(f"model.layers.{{i}}.mlp.{p}.weight", f"blocks.{{i}}.mlp.branch.{p}.weight")
      for p in ("gate_proj", "up_proj", "down_proj")],
]

# (Hugging Face config field, our ModelConfig field)
_CONFIG_MAP = [
    ("vocab_size", "vocab_size"),
    ("hidden_size", "d_model"),
    ("num_hidden_layers", "n_layers"),
    ("num_attention_heads", "n_heads"),
    ("num_key_value_heads", "n_kv_heads"),
    ("intermediate_size", "d_ff"),
    ("max_position_embeddings", "max_seq_len"),
    ("rms_norm_eps", "norm_eps"),
    ("tie_word_embeddings", "tie_embeddings"),
]

# (key of Hugging Face's rope_parameters, our field); the llama3 keys for rope_type llama3 only
_ROPE_MAP = [("rope_theta", "rope_theta")]
_LLAMA3_MAP = [
    ("factor", "rope_factor"),
    ("low_freq_factor", "rope_low_freq_factor"),
    ("high_freq_factor", "rope_high_freq_factor"),
    ("original_max_position_embeddings", "rope_original_max_seq_len"),
]
_ROPE_TYPES = {"default": RopeScaling.NONE, "llama3": RopeScaling.LLAMA3}  # Hugging Face rope_type -> ours

_QKV_BIAS = {"llama": False, "qwen2": True}  # Hugging Face model_type -> our qkv_bias

# Hugging Face config fields and the only values we compute exactly (an absent field passes)
_REQUIRED = {
    "hidden_act": ("silu", "swish"),
    "attention_bias": (False,),  # LLaMA's bias on q, k, v *and* o
    "mlp_bias": (False,),
}


class ConversionError(ValueError):
    """A model or setting with no exact counterpart on the other side; the message names it
    and what is supported."""


def _unsupported(field: str, value, supported) -> ConversionError:
    return ConversionError(f"{field}={value!r} is not supported; supported: {supported}")


# ----------------------------------------------------------------------------- tensors


def _rename(name: str, source: int, target: int) -> str | None:
    for pair in _NAME_MAP:
        pattern = re.escape(pair[source]).replace(r"\{i\}", r"(\d+)")
        match = re.fullmatch(pattern, name)
        if match:
            return pair[target].replace("{i}", match.group(1)) if match.groups() else pair[target]
    return None


def _renamed(state: dict[str, torch.Tensor], source: int, target: int) -> dict[str, torch.Tensor]:
    """`state` under the names of side `target`; refuses tensors that have no counterpart."""
    renamed = {name: _rename(name, source, target) for name in state}
    unmapped = [name for name, new in renamed.items() if new is None]
    if unmapped:
        supported = ", ".join(pair[source] for pair in _NAME_MAP)
        raise ConversionError(f"tensors {', '.join(unmapped)} have no counterpart; supported: {supported}")
    return {new: state[name] for name, new in renamed.items()}


# ----------------------------------------------------------------------------- configs


def config_from_hf(hf_config, **overrides) -> ModelConfig:
    """Our ModelConfig for a Hugging Face Llama or Qwen2 config (extra fields: e.g. norm='lns')."""
    _check_hf_config(hf_config)
    fields = {ours: getattr(hf_config, theirs) for theirs, ours in _CONFIG_MAP}
    fields.update(_rope_from_hf(hf_config), qkv_bias=_QKV_BIAS[hf_config.model_type])
    return apply_overrides(ModelConfig(), {**fields, **overrides})


def _check_hf_config(hf_config) -> None:
    model_type = getattr(hf_config, "model_type", None)
    if model_type not in _QKV_BIAS:
        raise _unsupported("model_type", model_type, ", ".join(_QKV_BIAS))
    for field, allowed in _REQUIRED.items():
        value = getattr(hf_config, field, allowed[0])
        if value not in allowed:
            raise _unsupported(field, value, ", ".join(map(repr, allowed)))
    head_dim = hf_config.hidden_size // hf_config.num_attention_heads
    if getattr(hf_config, "head_dim", None) not in (None, head_dim):
        raise _unsupported("head_dim", hf_config.head_dim, f"hidden_size / num_attention_heads = {head_dim}")
    layer_types = getattr(hf_config, "layer_types", None) or []
    if set(layer_types) - {"full_attention"}:
        raise _unsupported("layer_types", layer_types, "full_attention in every layer (no sliding window)")


def _rope_from_hf(hf_config) -> dict:
    """Our rope_* fields from a config's rope_parameters (transformers 5) or rope_scaling (4)."""
    params = dict(getattr(hf_config, "rope_parameters", None) or getattr(hf_config, "rope_scaling", None) or {})
    params.setdefault("rope_theta", getattr(hf_config, "rope_theta", 10000.0))
    rope_type = params.get("rope_type", params.get("type", "default"))
    if rope_type not in _ROPE_TYPES:
        raise _unsupported("rope_type", rope_type, ", ".join(_ROPE_TYPES))
    if params.get("partial_rotary_factor", 1.0) != 1.0:
        raise _unsupported("partial_rotary_factor", params["partial_rotary_factor"], 1.0)
    scaling = _ROPE_TYPES[rope_type]
    return {"rope_scaling": scaling, **{ours: params[theirs] for theirs, ours in _rope_keys(scaling)}}


def hf_config_from(cfg: ModelConfig):
    """A Hugging Face config computing what our Pre-LN model computes: a LlamaConfig, or a
    Qwen2Config when the model has q/k/v biases."""
    from transformers import AutoConfig  # lazy: transformers takes seconds to import; only exports need it

    _check_exportable(cfg)
    resolved = dataclasses.replace(cfg, n_kv_heads=cfg.kv_heads, d_ff=cfg.ffn_width)
    fields = {theirs: getattr(resolved, ours) for theirs, ours in _CONFIG_MAP}
    model_type = next(name for name, bias in _QKV_BIAS.items() if bias == cfg.qkv_bias)
    return AutoConfig.for_model(model_type, rope_parameters=_rope_to_hf(cfg), **fields)


def _check_exportable(cfg: ModelConfig) -> None:
    if cfg.norm != Norm.PRE_LN:
        raise _unsupported("model.norm", str(cfg.norm), f"{Norm.PRE_LN} (the only norm with a Hugging Face equivalent)")
    if cfg.branch_gain != BranchGain.NONE:
        raise _unsupported("model.branch_gain", str(cfg.branch_gain), BranchGain.NONE)


def _rope_to_hf(cfg: ModelConfig) -> dict:
    rope_type = next(name for name, scaling in _ROPE_TYPES.items() if scaling == cfg.rope_scaling)
    return {"rope_type": rope_type, **{theirs: getattr(cfg, ours) for theirs, ours in _rope_keys(cfg.rope_scaling)}}


def _rope_keys(scaling: RopeScaling) -> list[tuple[str, str]]:
    return _ROPE_MAP + (_LLAMA3_MAP if scaling == RopeScaling.LLAMA3 else [])


# ----------------------------------------------------------------------------- models


def from_hf_llama(hf_model, **overrides) -> Transformer:
    """Our Transformer holding the weights of a Hugging Face LLaMA or Qwen2 model."""
    model = Transformer(config_from_hf(hf_model.config, **overrides))
    state = {name: t.detach().float() for name, t in _renamed(hf_model.state_dict(), HF, OURS).items()}
    if "lm_head.weight" not in state:  # tied embeddings (e.g. SmolLM2)
        state["lm_head.weight"] = state["embed_tokens.weight"]
    model.load_state_dict(state, strict=True)
    return model


def to_hf_llama(model: Transformer):
    """A Hugging Face LlamaForCausalLM (Qwen2ForCausalLM with q/k/v biases) with the weights
    of our Pre-LN Transformer."""
    from transformers import AutoModelForCausalLM  # lazy: transformers takes seconds to import; only exports need it

    hf_model = AutoModelForCausalLM.from_config(hf_config_from(model.cfg))
    with torch.no_grad():
        hf_model.load_state_dict(_renamed(model.state_dict(), OURS, HF), strict=True)
    return hf_model.eval()
