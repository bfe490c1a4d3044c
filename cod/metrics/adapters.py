"""Any model behind one small protocol, so every layer metric works on it.

The protocol (`cod.metrics.stream.LayeredModel`) is the one `cod.model.Transformer`
implements, its reference implementation:

    embed(idx) -> x                 (B, T) token ids -> (B, T, D) stream entering block 0
    blocks                          a sequence of the L blocks
    run_blocks(x, order=None, keep=(), states=None, first_step=0) -> x
                                    runs `order` (block indices, or modules (B, T, D) -> (B, T, D)),
                                    storing resid_pre.{step} / resid_post.{step} when kept
    head(x, targets) -> (out, loss) the model's output on the last stream, and a loss

Adapters here give the protocol to Hugging Face models without copying weights:

- `HFDecoder`: decoders whose model holds `embed_tokens`, `layers`, `norm`, `rotary_emb`
  (LLaMA, Qwen2, Gemma3 and most others). Causal masks and rotary tables are made the way the
  model's own forward makes them, per attention type (full / sliding window), for an unpadded
  batch at positions 0..T-1. `head` = final norm, unembedding (Gemma's logit soft-capping
  when configured) and next-token cross-entropy, exactly like `Transformer.head`.
- `HFEncoder`: BERT-style encoders (`BertModel`, sentence-transformers' MiniLM; `MPNetModel`,
  whose layers share one relative-position attention bias, made the way its encoder makes it).
  No padding: feed equal-length windows. `head` returns the mean-pooled, L2-normalised sentence
  embedding (B, D), as sentence-transformers' all-MiniLM-L6-v2 and all-mpnet-base-v2 compute
  it. The shipped encoders have no masked-LM head (a freshly initialised one would measure
  nothing), so the loss is a representation drop: 1 - cos(embedding, reference) averaged over
  the batch, where the reference is the unmodified model's embedding of `targets`, the token
  ids (pass the input ids themselves: then the intact model scores exactly 0, and a pruned one
  how far its sentence embedding moved). It is not a task loss: compare it across the layers
  of one model, not with a decoder's cross-entropy.

`as_layer_model(model)` picks the right one (our Transformer is returned as is).
"""

from __future__ import annotations

import inspect
from typing import Iterable

import torch
import torch.nn.functional as F
from torch import nn

from cod.metrics.stream import LayeredModel
from cod.model import ModelOutput, Transformer

KEEP_KINDS = ("resid_pre", "resid_post")  # states the adapters can record


def _check_keep(keep: Iterable[str]) -> frozenset[str]:
    keep = frozenset([keep] if isinstance(keep, str) else keep)
    unknown = keep - set(KEEP_KINDS)
    if unknown:
        raise ValueError(f"keep={sorted(unknown)} not recorded by Hugging Face adapters; "
                         f"allowed: {', '.join(KEEP_KINDS)}")
    return keep


class _Adapter(nn.Module):
    """Shared loop of `run_blocks`; subclasses supply `_context(x)` and `_call(i, block, x, ctx)`."""

    def __init__(self, hf_model: nn.Module, base: nn.Module, blocks: nn.ModuleList):
        super().__init__()
        self.hf, self.base, self.blocks = hf_model, base, blocks
        self.config = base.config

    def run_blocks(self, x, order=None, keep=(), states=None, first_step=0):
        keep = _check_keep(keep)
        states = {} if states is None else states
        ctx = self._context(x)
        order = range(len(self.blocks)) if order is None else order
        for step, entry in enumerate(order, start=first_step):
            if "resid_pre" in keep:
                states[f"resid_pre.{step}"] = x
            if isinstance(entry, nn.Module):
                x = entry(x)
            else:
                out = self._call(entry, self.blocks[entry], x, ctx)
                x = out[0] if isinstance(out, tuple) else out
            if "resid_post" in keep:
                states[f"resid_post.{step}"] = x
        return x

    def forward(self, idx, targets=None, *, order=None, keep=()) -> ModelOutput:
        states: dict[str, torch.Tensor] = {}
        x = self.run_blocks(self.embed(idx), order=order, keep=keep, states=states)
        out, loss = self.head(x, targets)
        return ModelOutput(logits=out, loss=loss, states=states)


class HFDecoder(_Adapter):
    """The protocol for a Hugging Face decoder (`*ForCausalLM`), weights shared, not copied."""

    def __init__(self, hf_model: nn.Module):
        base = getattr(hf_model, "model", None)
        missing = [a for a in ("embed_tokens", "layers", "norm", "rotary_emb") if not hasattr(base, a)]
        if missing or not hasattr(hf_model, "lm_head"):
            raise TypeError(f"{type(hf_model).__name__} is not a supported decoder: its .model lacks "
                            f"{missing or ['(lm_head on the outer model)']}; supported: LLaMA-style *ForCausalLM")
        super().__init__(hf_model, base, base.layers)
        types = getattr(self.config, "layer_types", None)
        self.layer_types = list(types) if types else ["full_attention"] * len(self.blocks)
        self._rope_per_type = "layer_type" in inspect.signature(base.rotary_emb.forward).parameters

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        return self.base.embed_tokens(idx)  # Gemma's embedding module applies its sqrt(D) scale

    def _context(self, x: torch.Tensor) -> dict:
        # lazy: transformers takes seconds to import, and the trainer imports this module (cod.eval.lm)
        from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask

        positions = torch.arange(x.shape[1], device=x.device).unsqueeze(0)
        makers = {"full_attention": create_causal_mask, "sliding_attention": create_sliding_window_causal_mask}
        ctx = {"positions": positions, "mask": {}, "rope": {}}
        for kind in set(self.layer_types):
            # the cache goes by position: transformers renamed it (past_key_values, then cache)
            ctx["mask"][kind] = makers[kind](self.config, x, None, None, position_ids=positions)
            rope_args = (kind,) if self._rope_per_type else ()
            ctx["rope"][kind] = self.base.rotary_emb(x, positions, *rope_args)
        return ctx

    def _call(self, i, block, x, ctx):
        kind = self.layer_types[i]
        return block(x, attention_mask=ctx["mask"][kind], position_embeddings=ctx["rope"][kind],
                     position_ids=ctx["positions"])

    def attention_pattern(self, layer: int, x: torch.Tensor) -> torch.Tensor:
        """(B, H, T, T) attention probabilities of block `layer` on its input x (B, T, D), from the
        model's own attention module run with eager attention (the fused kernels return none);
        sliding-window layers give zero beyond their window."""
        block, config = self.blocks[layer], self.config
        implementation = config._attn_implementation
        config._attn_implementation = "eager"  # masks and attention both read it
        try:
            ctx, kind = self._context(x), self.layer_types[layer]
            _, pattern = block.self_attn(block.input_layernorm(x), attention_mask=ctx["mask"][kind],
                                         position_embeddings=ctx["rope"][kind], position_ids=ctx["positions"])
        finally:
            config._attn_implementation = implementation
        return pattern

    def head(self, x, targets=None, logits=True):  # the logits are always formed
        logits = self.hf.lm_head(self.base.norm(x))
        cap = getattr(self.config, "final_logit_softcapping", None)
        if cap:
            logits = torch.tanh(logits / cap) * cap
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())
        return logits, loss


class HFEncoder(_Adapter):
    """The protocol for a BERT-style encoder; `head` gives sentence embeddings and their drop."""

    def __init__(self, hf_model: nn.Module):
        base = getattr(hf_model, "bert", hf_model)
        if not (hasattr(base, "embeddings") and hasattr(getattr(base, "encoder", None), "layer")):
            raise TypeError(f"{type(hf_model).__name__} is not a supported encoder: it needs .embeddings and "
                            ".encoder.layer (BertModel, MPNetModel and compatible)")
        super().__init__(hf_model, base, base.encoder.layer)

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        segments = hasattr(self.base.embeddings, "token_type_embeddings")  # BERT has them, MPNet not
        return self.base.embeddings(input_ids=idx, **({"token_type_ids": torch.zeros_like(idx)} if segments else {}))

    def _context(self, x):  # no padding, so no mask: every token attends to every token
        bias = getattr(self.base.encoder, "compute_position_bias", None)  # MPNet's relative positions
        return {"position_bias": bias(x)} if bias else {}

    def _call(self, i, block, x, ctx):
        return block(x, **ctx)

    def head(self, x, targets=None, logits=True):  # the embeddings are always formed
        pooled = F.normalize(x.mean(dim=1), dim=-1)
        loss = None
        if targets is not None:
            with torch.no_grad():
                reference = F.normalize(self.run_blocks(self.embed(targets)).mean(dim=1), dim=-1)
            loss = (1 - (pooled * reference).sum(-1)).mean()
        return pooled, loss


def as_layer_model(model: nn.Module) -> LayeredModel:
    """`model` behind the layer protocol: ours as is, HF decoders and BERT-style encoders adapted."""
    if isinstance(model, (Transformer, _Adapter)):
        return model
    if hasattr(getattr(model, "model", None), "layers"):
        return HFDecoder(model)
    if hasattr(getattr(getattr(model, "bert", model), "encoder", None), "layer"):
        return HFEncoder(model)
    raise TypeError(f"no adapter for {type(model).__name__}; supported: cod.model.Transformer, "
                    "Hugging Face LLaMA-style *ForCausalLM (LLaMA, Qwen2, Gemma3), BertModel-style encoders "
                    "(BERT, MPNet)")
