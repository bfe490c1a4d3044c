"""Mixture of experts (model.ffn=moe): gates, exact dispatch, auxiliary losses, training, layer metrics."""

import json
import math

import pytest
import torch

from conftest import tiny_run
from cod.config import ConfigError, ModelConfig, run_config
from cod.metrics.causal import causal_scores
from cod.metrics.effectiveness import analyse_layers
from cod.metrics.stream import residual_stream
from cod.model import MoE, SwiGLU, Transformer
from cod.train.run import main
from cod.train.trainer import Trainer

VOCAB = 61


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors: a second intra-op thread only adds contention on a shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny(**kw) -> ModelConfig:
    return ModelConfig(**{"vocab_size": VOCAB, "d_model": 16, "n_layers": 3, "n_heads": 2, "max_seq_len": 32,
                          "ffn": "moe", "moe_experts": 4, "moe_top_k": 2, "d_ff": 24, **kw})


def tokens(batch: int = 3, seq: int = 10, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(0, VOCAB, (batch, seq + 1), generator=torch.Generator().manual_seed(seed))
    return ids[:, :-1], ids[:, 1:]


def test_moe_settings_are_validated():
    with pytest.raises(ConfigError, match=r"model.moe_top_k=5 .* allowed: 1..4"):
        tiny(moe_top_k=5).validate()
    with pytest.raises(ConfigError, match=r"model.moe_top_k=0"):
        tiny(moe_top_k=0).validate()
    with pytest.raises(ConfigError, match="model.moe_experts=0 must be positive"):
        tiny(moe_experts=0, moe_top_k=1).validate()
    with pytest.raises(ConfigError, match="model.moe_z_coef=-1.0 must be >= 0"):
        tiny(moe_z_coef=-1.0).validate()
    with pytest.raises(ConfigError, match="allowed: swiglu, moe"):
        ModelConfig(ffn="experts")
    assert tiny().expert_width == 24 and tiny(moe_d_ff=8).expert_width == 8
    ModelConfig(moe_top_k=99).validate()  # MoE settings are ignored by dense models


def test_one_expert_top_one_is_the_dense_swiglu_exactly():
    torch.manual_seed(0)
    cfg = tiny(moe_experts=1, moe_top_k=1)
    moe, dense = MoE(cfg), SwiGLU(cfg)
    dense.load_state_dict(moe.experts[0].state_dict())
    x = torch.randn(3, 7, cfg.d_model)
    assert torch.equal(moe(x), dense(x))
    # and a whole model: the dense model with the expert's weights
    model = Transformer(cfg).eval()
    dense_model = Transformer(tiny(ffn="swiglu")).eval()
    weights = {k.replace(".experts.0.", "."): v for k, v in model.state_dict().items() if "router" not in k}
    dense_model.load_state_dict(weights)
    idx, _ = tokens()
    assert torch.equal(model(idx).logits, dense_model(idx).logits)


@pytest.mark.parametrize("renormalize", [False, True])
def test_gates_are_the_top_k_softmax_probabilities(renormalize):
    torch.manual_seed(1)
    moe = MoE(tiny(moe_renormalize=renormalize))
    x = torch.randn(20, 16)
    logits, probs, gates, chosen = moe.route(x)
    full = torch.softmax(x @ moe.router.weight.T, dim=-1)  # over all 4 experts
    torch.testing.assert_close(probs, full)
    assert chosen.shape == (20, 2) and (chosen[:, 0] != chosen[:, 1]).all()
    assert torch.equal(chosen[:, 0], full.argmax(-1))
    picked = full.gather(1, chosen)
    assert (picked.min(-1).values >= full.sort(-1).values[:, -2] - 1e-7).all()  # the two largest
    if renormalize:
        torch.testing.assert_close(gates.sum(-1), torch.ones(20))
        torch.testing.assert_close(gates, picked / picked.sum(-1, keepdim=True))
    else:  # OLMoE: the probabilities themselves, summing to less than 1
        torch.testing.assert_close(gates, picked)
        assert (gates.sum(-1) < 1).all() and (gates.sum(-1) >= 0.5).all()


def test_balance_and_z_loss_match_a_hand_computed_case():
    cfg = tiny(d_model=4, n_heads=2, moe_experts=3, moe_top_k=1)
    moe = MoE(cfg)
    with torch.no_grad():  # logits = the first three input coordinates
        moe.router.weight.copy_(torch.eye(3, 4))
    ln = math.log
    x = torch.tensor([[ln(2), 0, 0, 0.3],  # probs 1/2, 1/4, 1/4 -> expert 0
                      [0, ln(3), 0, -1.0],  # probs 1/5, 3/5, 1/5 -> expert 1
                      [0, ln(6), 0, 2.0]])  # probs 1/8, 6/8, 1/8 -> expert 1
    moe.records = []
    moe(x)
    (routing,) = moe.records
    # f = (1/3, 2/3, 0); P_i = mean probability of expert i
    p0, p1 = (1 / 2 + 1 / 5 + 1 / 8) / 3, (1 / 4 + 3 / 5 + 6 / 8) / 3
    balance = 3 * (1 / 3 * p0 + 2 / 3 * p1)  # = 1.341666...
    z = (ln(4) ** 2 + ln(5) ** 2 + ln(8) ** 2) / 3  # logsumexp: ln(2+1+1), ln(1+3+1), ln(1+6+1)
    assert routing.balance_loss.item() == pytest.approx(balance, rel=1e-6)
    assert balance == pytest.approx(1.3416667, rel=1e-6)
    assert routing.z_loss.item() == pytest.approx(z, rel=1e-6)
    assert routing.counts.tolist() == [1, 2, 0]
    torch.testing.assert_close(routing.load, torch.tensor([1 / 3, 2 / 3, 0]))


def test_model_aux_loss_is_the_weighted_mean_over_layers():
    torch.manual_seed(2)
    model = Transformer(tiny(moe_balance_coef=0.5, moe_z_coef=0.25))
    idx, targets = tokens()
    out = model(idx, targets)
    records = []
    for block in model.blocks:  # each block's routing, collected by hand through run_blocks
        block.mlp.branch.records = records
    model.run_blocks(model.embed(idx))
    for block in model.blocks:
        block.mlp.branch.records = None
    assert len(records) == 3
    balance = sum(r.balance_loss for r in records) / 3
    z = sum(r.z_loss for r in records) / 3
    torch.testing.assert_close(out.aux_loss, 0.5 * balance + 0.25 * z)
    assert out.routing["load"].shape == (3, 4)
    torch.testing.assert_close(out.routing["load"].sum(-1), torch.ones(3))
    assert (out.routing["counts"].sum(-1) == idx.numel() * 2).all()
    assert all(m.records is None for m in model.modules() if isinstance(m, MoE))
    dense = Transformer(tiny(ffn="swiglu"))(idx, targets)
    assert dense.aux_loss is None and dense.routing == {}


@pytest.mark.parametrize("shared,renormalize", [(False, False), (True, True)])
def test_dispatch_equals_a_per_token_loop(shared, renormalize):
    torch.manual_seed(3)
    moe = MoE(tiny(moe_shared_expert=shared, moe_renormalize=renormalize, moe_top_k=3)).double()
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    got = moe(x)
    flat, rows = x.reshape(-1, 16), []
    for token in flat:
        probs = torch.softmax(moe.router(token), -1)
        gates, chosen = probs.topk(3)
        if renormalize:
            gates = gates / gates.sum()
        y = sum(g * moe.experts[int(e)](token[None])[0] for g, e in zip(gates, chosen))
        rows.append(y + moe.shared_expert(token[None])[0] if shared else y)
    torch.testing.assert_close(got, torch.stack(rows).view_as(x), rtol=1e-12, atol=1e-12)
    got.sum().backward()  # every expert gets a gradient, if only zeros
    assert all(p.grad is not None for p in moe.parameters())


def test_moe_trains_with_aux_losses_in_the_history(tiny_tokens, tmp_path):
    out = tmp_path / "moe"
    main(["--out", str(out), *tiny_run(tiny_tokens, "model.ffn=moe", "model.moe_experts=4", "model.moe_top_k=2",
                                       "model.moe_shared_expert=true", "train.steps=8", "train.ckpt_every=0")])
    final = json.loads((out / "final.json").read_text())
    rows = [json.loads(r) for r in (out / "history.jsonl").read_text().splitlines()]
    logged = [r for r in rows if "loss" in r]
    assert final["status"] == "completed" and [r["step"] for r in logged] == [4, 8]
    for r in logged:
        assert 0.5 < r["moe_balance_loss"] < 4  # n sum_i f_i P_i: 1 at balance, at most n = 4
        assert r["moe_z_loss"] > 0
        assert len(r["moe_load"]) == 3 and all(len(layer) == 4 for layer in r["moe_load"])
        assert all(sum(layer) == pytest.approx(1.0) for layer in r["moe_load"])
    assert logged[-1]["loss"] < logged[0]["loss"]
    assert "moe_load" not in rows[0]  # the variance rows are unchanged


def test_aux_losses_reach_the_gradients_and_recompute_agrees(tiny_tokens, tmp_path):
    def router_after_one_step(*extra):
        cfg = run_config(tiny_run(tiny_tokens, "model.ffn=moe", "model.moe_experts=4", "train.stats_every=0",
                                  *extra))
        t = Trainer(cfg, tmp_path / "r", quiet=True)
        t.train_step()
        assert set(t.routing_row()) == {"moe_balance_loss", "moe_z_loss", "moe_load"}
        return t.model.blocks[0].mlp.branch.router.weight.detach().clone()

    plain = router_after_one_step()
    assert torch.equal(router_after_one_step("train.recompute=true"), plain)
    assert not torch.equal(router_after_one_step("model.moe_z_coef=10.0"), plain)
    dense = Trainer(run_config(tiny_run(tiny_tokens, "train.stats_every=0")), tmp_path / "d", quiet=True)
    dense.train_step()
    assert dense.routing_row() == {}


def test_named_states_and_layer_metrics_run_on_moe():
    torch.manual_seed(4)
    model = Transformer(tiny(n_layers=3, moe_shared_expert=True, init_std=0.2)).eval()
    idx, targets = tokens(batch=4, seq=8)
    with torch.no_grad():
        s = model(idx, keep=["resid_pre", "attn_out", "resid_mid", "mlp_out", "resid_post", "final_norm"]).states
    for i in range(3):
        torch.testing.assert_close(s[f"resid_mid.{i}"], s[f"resid_pre.{i}"] + s[f"attn_out.{i}"])
        torch.testing.assert_close(s[f"resid_post.{i}"], s[f"resid_mid.{i}"] + s[f"mlp_out.{i}"])
    with torch.no_grad():
        assert torch.equal(model(idx, order=[0, 1, 2]).logits, model(idx).logits)
        causal = causal_scores(model, residual_stream(model, idx, targets))
    assert causal.matrix.shape == (3, 3)
    result = analyse_layers(model, idx, targets, tokens(batch=4, seq=8, seed=3)[0], idx[:2])
    assert result.variance.shape == (3,) and result.jacobians.mean.shape == (3, 16, 16)
    assert result.permutation.global_score == result.permutation.global_score  # not NaN
    assert all(m.records is None for m in model.modules() if isinstance(m, MoE))
