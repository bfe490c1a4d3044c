"""The model: equivalence with Hugging Face LLaMA, named states, layer order, norm placements."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from cod.config import ConfigError, ModelConfig
from cod.model.interop import from_hf_llama, to_hf_llama
from cod.model import Transformer


def tiny(**kw) -> ModelConfig:
    return ModelConfig(**{"vocab_size": 97, "d_model": 32, "n_layers": 3, "n_heads": 4, "max_seq_len": 64, **kw})


@pytest.fixture
def idx():
    return torch.randint(0, 97, (2, 17), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("kv_heads", [4, 2, 1], ids=["mha", "gqa", "mqa"])
def test_pre_ln_equals_hf_llama(kv_heads, idx):
    torch.manual_seed(kv_heads)
    model = Transformer(tiny(n_kv_heads=kv_heads)).eval()
    for p in model.parameters():  # perturb norm gains too, so their mapping is checked
        p.data.add_(0.05 * torch.randn_like(p))
    hf = to_hf_llama(model)
    targets = torch.roll(idx, -1, dims=1)
    with torch.no_grad():
        ours = model(idx, targets)
        theirs = hf(idx, labels=idx)
    torch.testing.assert_close(ours.logits, theirs.logits, atol=1e-5, rtol=1e-5)
    back = from_hf_llama(hf).eval()
    with torch.no_grad():
        torch.testing.assert_close(back(idx).logits, ours.logits)


def test_named_states_are_consistent(idx):
    model = Transformer(tiny()).eval()
    with torch.no_grad():
        out = model(idx, keep=["resid_pre", "attn_out", "resid_mid", "mlp_out", "resid_post", "final_norm"])
    s = out.states
    torch.testing.assert_close(s["resid_pre.0"], model.embed_tokens(idx))
    for i in range(3):
        torch.testing.assert_close(s[f"resid_mid.{i}"], s[f"resid_pre.{i}"] + s[f"attn_out.{i}"])
        torch.testing.assert_close(s[f"resid_post.{i}"], s[f"resid_mid.{i}"] + s[f"mlp_out.{i}"])
    torch.testing.assert_close(out.logits, model.lm_head(s["final_norm"]))
    assert model(idx).states == {}


def test_layer_order_skip_repeat_replace(idx):
    model = Transformer(tiny()).eval()
    with torch.no_grad():
        full = model(idx).logits
        assert torch.equal(model(idx, order=[0, 1, 2]).logits, full)
        skipped = model(idx, order=[0, 2], keep=["resid_post"])
        manual = model.blocks[2](model.blocks[0](model.embed(idx), model.rotary(17))[0], model.rotary(17))[0]
        torch.testing.assert_close(skipped.states["resid_post.1"], manual)
        assert not torch.allclose(skipped.logits, full)
        identity = model(idx, order=[0, nn.Identity(), 2]).logits
        torch.testing.assert_close(identity, skipped.logits)
        assert model(idx, order=[0, 1, 1, 2], keep=["resid_post"]).states.keys() >= {"resid_post.3"}


def test_layer_order_accepts_any_integer_index(idx):
    model = Transformer(tiny()).eval()
    with torch.no_grad():
        full = model(idx).logits
        assert torch.equal(model(idx, order=np.arange(3)).logits, full)  # numpy.int64 entries
        assert torch.equal(model(idx, order=[np.int32(0), torch.tensor(1), 2]).logits, full)


def test_lns_scales_both_pre_norm_outputs_by_inverse_sqrt_depth():
    model = Transformer(tiny(norm="lns", n_layers=4))
    for layer, block in enumerate(model.blocks, start=1):
        for sub in (block.attn, block.mlp):
            assert isinstance(sub.norm_scale, float)
            assert sub.norm_scale == pytest.approx(1 / math.sqrt(layer))
    assert not hasattr(model.final_norm, "norm_scale")
    x = torch.randn(1, 5, 32)
    sub = model.blocks[3].attn
    torch.testing.assert_close(sub.normed_input(x), sub.norm(x) / 2)


def test_lns_survives_meta_init_and_state_dict_round_trip(idx):
    with torch.device("meta"):
        meta = Transformer(tiny(norm="lns"))
    assert meta.blocks[2].mlp.norm_scale == pytest.approx(1 / math.sqrt(3))
    a, b = Transformer(tiny(norm="lns")), Transformer(tiny(norm="lns"))
    b.load_state_dict(a.state_dict())
    torch.testing.assert_close(a(idx).logits, b(idx).logits)


@pytest.mark.parametrize("norm", ["pre_ln", "lns", "post_ln", "sandwich_ln", "mix_ln", "deepnorm"])
@pytest.mark.parametrize("init", ["normal", "scaled", "depth_scaled", "olmo"])
def test_every_variant_trains_a_step(norm, init, idx):
    model = Transformer(tiny(norm=norm, init=init, n_layers=4))
    loss = model(idx, torch.roll(idx, -1, 1)).loss
    loss.backward()
    assert math.isfinite(loss.item())
    assert all(p.grad is not None for p in model.parameters())


def test_scaled_init_shrinks_output_projections():
    L = 8
    normal = Transformer(tiny(n_layers=L, d_model=256, n_heads=4))
    scaled = Transformer(tiny(n_layers=L, d_model=256, n_heads=4, init="scaled"))
    ratio = scaled.blocks[0].mlp.branch.down_proj.weight.std() / normal.blocks[0].mlp.branch.down_proj.weight.std()
    assert ratio.item() == pytest.approx(1 / math.sqrt(2 * L), rel=0.05)
    q = scaled.blocks[0].attn.branch.q_proj.weight.std().item()
    assert q == pytest.approx(0.02, rel=0.05)


def test_post_ln_has_no_final_norm_and_mix_ln_mixes():
    assert isinstance(Transformer(tiny(norm="post_ln")).final_norm, nn.Identity)
    mix = Transformer(tiny(norm="mix_ln", n_layers=8, mix_ln_fraction=0.25))
    assert [b.attn.post_norm for b in mix.blocks] == [True, True] + [False] * 6


@pytest.mark.parametrize("n_layers, post", [(4, 1), (6, 1), (7, 1), (8, 2), (11, 2), (12, 3)])
def test_mix_ln_post_ln_blocks_are_floor_of_fraction_times_depth(n_layers, post):
    """floor(0.25 L) (Li et al.): Python's round() would give 2 at 6 and 7 layers (halves to even)."""
    mix = Transformer(tiny(norm="mix_ln", n_layers=n_layers, mix_ln_fraction=0.25))
    assert [b.attn.post_norm for b in mix.blocks] == [True] * post + [False] * (n_layers - post)


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"norm": "layer_norm"}, "allowed: pre_ln, lns"),
        ({"n_layers": -1}, "model.n_layers"),
        ({"n_kv_heads": 8}, "model.n_kv_heads"),
        ({"n_kv_heads": 3}, "model.n_kv_heads"),
        ({"n_heads": 5}, "model.n_heads"),
    ],
)
def test_bad_model_settings_fail_before_compute(bad, message):
    from cod.config import apply_overrides

    with pytest.raises(ConfigError, match=message):
        cfg = apply_overrides(tiny(), {f"{k}": v for k, v in bad.items()})
        Transformer(cfg)


def test_sequence_longer_than_max_is_refused():
    model = Transformer(tiny(max_seq_len=8))
    with pytest.raises(ConfigError, match="max_seq_len"):
        model(torch.zeros(1, 9, dtype=torch.long))
