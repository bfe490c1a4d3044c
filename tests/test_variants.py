"""Norm and scaling variants against a forward written here from each paper's definition.

The reference below reads the model's weights by name and recomputes the logits with its own
RMSNorm, rotary embedding, attention and SwiGLU, so a mistake in `cod.model`'s composition of a
variant (a factor in the wrong place, a missing norm, a wrong omega) shows up as a mismatch.
"""

import math

import pytest
import torch

from cod.config import ModelConfig
from cod.model import Transformer

L, D, H, V, T = 4, 16, 2, 50, 7  # 4 layers: Mix-LN has one Post-LN block


def config(**kw) -> ModelConfig:
    return ModelConfig(vocab_size=V, d_model=D, n_layers=L, n_heads=H, max_seq_len=16, **kw)


def randomise_gains(model: Transformer) -> None:
    """Norm gains, Admin's omegas and branch gains away from their initial constants."""
    gen = torch.Generator().manual_seed(1)
    for name, p in model.named_parameters():
        if p.dim() == 1 or name.endswith("residual_weight"):
            p.data = 0.5 + torch.rand(p.shape, generator=gen, dtype=p.dtype)


# ---------------------------------------------------------------- the reference, from definitions
def rms(x, weight, eps=1e-5, groups=1):
    g = x.reshape(*x.shape[:-1], groups, -1)
    g = g / torch.sqrt((g * g).mean(-1, keepdim=True) + eps)
    return g.reshape(x.shape) * weight


def rotate(x, theta=10000.0):
    """Rotary embedding of (B, H, T, hd): channel i pairs with i + hd/2 (LLaMA's layout)."""
    hd, half = x.shape[-1], x.shape[-1] // 2
    pos = torch.arange(x.shape[-2], dtype=torch.float64)[:, None]
    freq = theta ** (-torch.arange(half, dtype=torch.float64) * 2 / hd)
    cos, sin = torch.cos(pos * freq).to(x.dtype), torch.sin(pos * freq).to(x.dtype)
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


def attention(x, w, prefix):
    B, T_, _ = x.shape
    heads = lambda y: y.reshape(B, T_, H, D // H).transpose(1, 2)  # noqa: E731
    q = rotate(heads(x @ w[prefix + "q_proj.weight"].T))
    k = rotate(heads(x @ w[prefix + "k_proj.weight"].T))
    v = heads(x @ w[prefix + "v_proj.weight"].T)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D // H)
    scores = scores.masked_fill(torch.triu(torch.ones(T_, T_, dtype=torch.bool), 1), float("-inf"))
    y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T_, D)
    return y @ w[prefix + "o_proj.weight"].T


def swiglu(x, w, prefix):
    gate, up = x @ w[prefix + "gate_proj.weight"].T, x @ w[prefix + "up_proj.weight"].T
    return (gate * torch.sigmoid(gate) * up) @ w[prefix + "down_proj.weight"].T


def reference_logits(model: Transformer, idx: torch.Tensor) -> torch.Tensor:
    cfg, w = model.cfg, dict(model.named_parameters())
    norm, position = str(cfg.norm), str(cfg.lns_position)
    groups = cfg.norm_groups if norm == "group_ln" else 1
    x = w["embed_tokens.weight"][idx]
    for i in range(cfg.n_layers):
        layer = i + 1
        for kind, branch in (("attn", attention), ("mlp", swiglu)):
            p = f"blocks.{i}.{kind}."
            gain = w.get(p + "gain.gain", 1.0)  # LayerScale's diag(lambda), SkipInit's scalar
            f = lambda h: branch(h, w, p + "branch.") * gain  # noqa: E731,B023
            mixed_post = norm == "mix_ln" and layer <= cfg.n_layers // 4  # Li et al.: first floor(L/4) Post-LN
            if norm == "deepnorm":  # Wang et al. 2022: LN(alpha x + f(x)), alpha = (2L)^(1/4)
                x = rms((2 * cfg.n_layers) ** 0.25 * x + f(x), w[p + "norm.weight"])
            elif norm == "deepnorm_release":  # paper A's released 'deeppost': alpha is the literal 2.8284271247461903
                x = rms(2.8284271247461903 * x + f(x), w[p + "norm.weight"])
            elif norm == "admin":  # Liu et al. 2020: LN(x * omega + f(x))
                x = rms(x * w[p + "residual_weight"] + f(x), w[p + "norm.weight"])
            elif norm == "post_ln" or mixed_post:
                x = rms(x + f(x), w[p + "norm.weight"])
            elif norm == "sandwich_ln":  # Ding et al. 2021: x + LN(f(LN(x)))
                x = x + rms(f(rms(x, w[p + "norm.weight"])), w[p + "out_norm.weight"])
            elif norm == "lns":  # paper A Table 8: where 1/sqrt(l) multiplies
                s = 1 / math.sqrt(layer)
                here = position not in ("attn_only", "mlp_only") or position == f"{kind}_only"
                at = lambda where: s if here and where else 1.0  # noqa: E731
                after_norm = position in ("after_norm", "attn_only", "mlp_only")
                h = rms(x * at(position == "before_norm"), w[p + "norm.weight"]) * at(after_norm)
                x = (x + f(h) * at(position == "after_branch")) * at(position == "after_residual")
            else:  # pre_ln, group_ln, the Pre-LN blocks of mix_ln
                x = x + f(rms(x, w[p + "norm.weight"], groups=groups))
    if "final_norm.weight" in w:
        x = rms(x, w["final_norm.weight"], groups=groups)
    return x @ w["lm_head.weight"].T


VARIANTS = [
    {"norm": "pre_ln"},
    {"norm": "post_ln"},
    {"norm": "deepnorm"},
    {"norm": "deepnorm_release"},
    {"norm": "mix_ln"},
    {"norm": "pre_ln", "branch_gain": "layerscale"},
    {"norm": "pre_ln", "branch_gain": "skipinit"},
    {"norm": "sandwich_ln"},
    {"norm": "admin"},
    {"norm": "group_ln", "norm_groups": 4},
    {"norm": "group_ln", "norm_groups": 1},
    *({"norm": "lns", "lns_position": pos} for pos in
      ("after_norm", "before_norm", "after_branch", "after_residual", "attn_only", "mlp_only")),
    {"norm": "lns", "init": "scaled"},
]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(map(str, v.values())))
def test_variant_matches_reference_forward(variant):
    torch.manual_seed(0)
    model = Transformer(config(**variant)).double()
    randomise_gains(model)
    idx = torch.randint(V, (2, T))
    with torch.no_grad():
        torch.testing.assert_close(model(idx).logits, reference_logits(model, idx), rtol=1e-6, atol=1e-8)  # rotary tables are float32


def test_group_ln_normalises_each_group_on_its_own():
    norm = Transformer(config(norm="group_ln", norm_groups=4)).blocks[0].attn.norm
    x = torch.randn(3, D)
    scaled = x.clone()
    scaled[:, : D // 4] *= 7.0  # one group louder: Group-LN output unchanged, RMSNorm's would change
    torch.testing.assert_close(norm(scaled), norm(x), atol=1e-4, rtol=1e-4)  # up to eps
    group_rms = norm(x).reshape(3, 4, -1).pow(2).mean(-1)
    torch.testing.assert_close(group_rms, torch.ones(3, 4), atol=1e-4, rtol=0)


def test_admin_omegas_follow_the_profiled_variances():
    """omega_i = sqrt((Var[x_0] + sum_{j<i} Var[f_j]) / Var[x_{i-1}]), profiled at omega = 1."""
    torch.manual_seed(0)
    model = Transformer(config(norm="admin")).double()
    idx = torch.randint(V, (4, T))
    omegas = model.profile_admin(idx)

    w = {k: v.detach() for k, v in model.named_parameters()}
    x = w["embed_tokens.weight"][idx]
    total, expected = x.var(), []
    for i in range(L):
        for kind, branch in (("attn", attention), ("mlp", swiglu)):
            p = f"blocks.{i}.{kind}."
            out = branch(x, w, p + "branch.")
            expected.append(math.sqrt(total / x.var()))
            total = total + out.var()
            x = rms(x + out, w[p + "norm.weight"])  # the profiling pass runs at omega = 1
    assert omegas == pytest.approx(expected, rel=1e-9)
    assert omegas[0] == pytest.approx(1.0)
    for i, block in enumerate(model.blocks):
        assert torch.all(block.attn.residual_weight == omegas[2 * i])
        assert torch.all(block.mlp.residual_weight == omegas[2 * i + 1])


def test_admin_omegas_are_learnable_and_survive_a_checkpoint():
    model = Transformer(config(norm="admin"))
    names = [n for n, _ in model.named_parameters() if n.endswith("residual_weight")]
    assert len(names) == 2 * L
    clone = Transformer(config(norm="admin", init_std=0.5))  # different init, so different omegas
    clone.load_state_dict(model.state_dict())
    assert torch.equal(clone.blocks[1].mlp.residual_weight, model.blocks[1].mlp.residual_weight)


def test_deepnorm_and_skipinit_initial_values():
    """DeepNorm's beta = (8L)^(-1/4) on the value, output and FFN matrices, not on queries and keys;
    SkipInit's scalar starts at 1/sqrt(L); LayerScale's channels at layerscale_init."""
    torch.manual_seed(0)
    plain = Transformer(config(init_std=0.02))
    torch.manual_seed(0)
    deep = Transformer(config(init_std=0.02, norm="deepnorm"))
    beta = (8 * L) ** -0.25
    for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
        ratio = getattr(deep.blocks[1].attn.branch, name).weight / getattr(plain.blocks[1].attn.branch, name).weight
        torch.testing.assert_close(ratio, torch.full_like(ratio, beta if name in ("v_proj", "o_proj") else 1.0))
    for name in ("gate_proj", "up_proj", "down_proj"):
        ratio = getattr(deep.blocks[1].mlp.branch, name).weight / getattr(plain.blocks[1].mlp.branch, name).weight
        torch.testing.assert_close(ratio, torch.full_like(ratio, beta))
    skip = Transformer(config(branch_gain="skipinit")).blocks[2].mlp.gain.gain
    assert skip.shape == (1,) and skip.item() == pytest.approx(L ** -0.5)
    scale = Transformer(config(branch_gain="layerscale", layerscale_init=1e-3)).blocks[0].attn.gain.gain
    assert scale.shape == (D,) and torch.all(scale == 1e-3)


def test_released_deepnorm_initialisation_is_xavier_with_the_inverse_gain():
    """Paper A's released DeepNorm: xavier-normal, std = gain sqrt(2 / (fan_in + fan_out)), with gain
    (8L)^(+1/4) on the value, output and FFN matrices and 1 on queries and keys (DeepNet's is (8L)^(-1/4))."""
    n_layers, width = 12, 96
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=V, d_model=width, n_layers=n_layers, n_heads=4, max_seq_len=16,
                                    norm="deepnorm_release"))
    for block in model.blocks:
        for sub in (block.attn, block.mlp):
            assert sub.residual_weight == pytest.approx(math.sqrt(8.0))  # (2 x 32)^(1/4), whatever L
            for name, linear in sub.branch.named_modules():
                if not isinstance(linear, torch.nn.Linear) or "router" in name:
                    continue
                fan_out, fan_in = linear.weight.shape
                gain = 1.0 if name in ("q_proj", "k_proj") else (8 * n_layers) ** 0.25
                expected = gain * math.sqrt(2.0 / (fan_in + fan_out))
                assert linear.weight.std().item() == pytest.approx(expected, rel=0.06), name


def test_embedding_init_std_apart_from_the_other_matrices():
    """model.embed_init_std sets the token embedding's std alone; unset, every draw is as before."""
    torch.manual_seed(0)
    before = Transformer(config(init_std=0.02))
    torch.manual_seed(0)
    unset = Transformer(config(init_std=0.02, embed_init_std=None))
    for (name, a), (_, b) in zip(before.state_dict().items(), unset.state_dict().items()):
        assert torch.equal(a, b), name
    big = Transformer(ModelConfig(vocab_size=4096, d_model=64, n_layers=2, n_heads=4, embed_init_std=(2 / 5) ** 0.5))
    assert big.embed_tokens.weight.std().item() == pytest.approx(0.632, rel=0.02)
    assert big.lm_head.weight.std().item() == pytest.approx(0.02, rel=0.02)
    assert big.blocks[0].attn.branch.q_proj.weight.std().item() == pytest.approx(0.02, rel=0.05)
    with pytest.raises(ValueError, match="model.embed_init_std"):
        ModelConfig(embed_init_std=-1.0).validate()
