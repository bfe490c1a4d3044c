"""Tests of cod.theory: closed forms recovered within sampling error, wrong exponents rejected by the
confidence intervals, bound formulas checked on analytic cases."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from cod.theory import (attention_variance, bounds, checks, fits, jacobians, moe, real_stack, residual_variance, sparsity,
                        weight_decay)
from cod.theory.stack import LayerWeights, StackConfig, attn_sublayer, ffn_sublayer, layer_weights, simulate

torch.set_num_threads(1)


# --- fits ---------------------------------------------------------------------------------------

def test_power_law_recovers_exponent_and_rejects_wrong_one():
    rng = np.random.default_rng(0)
    x = np.geomspace(1, 1000, 30)
    y = 3.0 * x**-0.7 * np.exp(0.05 * rng.standard_normal(x.size))
    est = fits.power_law(x, y).estimate(0)
    assert est.contains(-0.7)
    assert not est.contains(-1.0) and not est.contains(-0.5)


def test_exponential_law_rate():
    x = np.arange(1, 20.0)
    assert fits.exponential_law(x, 2 * np.exp(0.3 * x)).estimate(0).contains(0.3)
    rms = fits.growth_models(x, 2 * np.exp(0.3 * x))
    assert min(rms, key=rms.get) == "exponential"


def test_uniform_average_variance_is_sigma2_over_n():
    """Closed form: the mean of n independent N(0, sigma^2) values has variance sigma^2 / n."""
    ns = [1, 4, 16, 64, 256]
    sigma, draws = 2.0, 4000
    d = attention_variance.head_output_draws(ns, draws, sigma=sigma, seed=1)
    rel = d.var(0) * np.array(ns) / sigma**2 - 1
    assert np.all(np.abs(rel) < 4 * math.sqrt(2 / draws))  # 4 standard errors of a variance estimate
    est = fits.variance_exponent(ns, d, n_boot=200, seed=0)
    assert est.contains(-1.0)
    assert not est.contains(0.0)  # paper A eq. 27: no n-dependence
    assert not est.contains(-0.5)


def test_bootstrap_interval_covers_mean():
    rng = np.random.default_rng(3)
    draws = rng.normal(5.0, 1.0, size=(500, 1))
    est = fits.bootstrap(draws, lambda d: [d.mean()], n_boot=300, seed=0)[0]
    assert est.lo < 5.0 < est.hi and est.hi - est.lo < 0.3


# --- verdict rules ------------------------------------------------------------------------------

def test_verdict_rules():
    e = fits.Estimate(-1.02, -1.05, -0.99)
    assert checks.exponent_verdict(e, -1.0) == "holds"
    assert checks.exponent_verdict(e, -1.1) == "holds loosely"
    assert checks.exponent_verdict(e, -2.0) == "fails"
    assert checks.bound_verdict([1, 2], [1.5, 2.5]) == "holds"
    assert checks.bound_verdict([1, 2], [100, 200]) == "holds loosely"
    assert checks.bound_verdict([1, 3], [2, 2]) == "fails"
    assert checks.at_least_verdict(fits.Estimate(0.3, 0.28, 0.32), 1.0) == "fails"
    assert checks.law_preference_verdict({"power": 0.02, "exponential": 0.4}, "exponential") == "fails"
    assert checks.weakest("holds", "fails", "holds loosely") == "fails"
    # "holds loosely" is within a stated tolerance of the claim, never merely the right direction
    assert checks.exponent_verdict(fits.Estimate(-0.5, -0.6, -0.4), -1.0) == "fails"
    assert checks.exponent_verdict(checks.exact(317.0), 1.0) == "fails"
    assert checks.value_verdict(fits.Estimate(1.03, 1.02, 1.04), 1.0) == "holds loosely"
    assert checks.bound_verdict([1.69], [0.60]) == "fails"  # a bound below what it bounds fails
    assert checks.upper_law_verdict({"power": 0.02, "exponential": 0.4, "log": 0.1}, "exponential") == "holds loosely"
    assert checks.upper_law_verdict({"power": 0.4, "exponential": 0.02}, "power") == "fails"
    assert checks.gaussian_independent_verdict([(0.04, 0.15), (0.58, 0.43)]) == "fails"
    assert checks.gaussian_independent_verdict([(0.04, 0.15), (0.15, 0.43)]) == "holds loosely"
    assert checks.bounded_verdict(0.007, claimed_bounded=False) == "fails"
    assert checks.increasing_verdict([fits.Estimate(1, 0.9, 1.1), fits.Estimate(2, 1.9, 2.1)]) == "holds"
    assert checks.increasing_verdict([fits.Estimate(1, 0.9, 1.1), fits.Estimate(1.05, 0.95, 1.15)]) == "holds loosely"
    assert checks.reduction_verdict(141.0) == "fails"
    assert checks.below_verdict(fits.Estimate(-0.86, -0.87, -0.85)) == "holds"


# --- paper A: bound formulas on analytic cases ---------------------------------------------------

def test_takase_constants_analytic_case():
    # d = d_ff = h = s = 1: k = 2 * 1 * 1 * (1 + 2 + 1) = 8, A = s^2/4 + 8 s^2 (1 + 1 + 1), B = 8 s^4
    a, b = bounds.takase_constants(1.0, 1, 1, 1, 1)
    assert a == pytest.approx(0.25 + 24.0) and b == pytest.approx(8.0)
    a2, b2 = bounds.takase_constants(0.5, 1, 1, 1, 1)
    assert a2 == pytest.approx(0.25 * a) and b2 == pytest.approx(b / 16)


def test_product_bound_analytic_cases():
    assert np.allclose(bounds.log10_product_bound(np.ones(4), 0.0, 0.0), 0.0)
    assert np.allclose(bounds.log10_product_bound(np.ones(3), 1.0, 0.0), np.log10([2, 4, 8]))
    # LNS divides the l-th term by l: factors 1 + 1/l -> product (L + 1)
    assert np.allclose(10 ** bounds.log10_product_bound(np.ones(5), 1.0, 0.0, lns=True), np.arange(2, 7))


def test_product_regimes_of_theorems_33_and_42():
    ll = np.arange(1, 100_001)
    # sigma^2 = e^l: converges (Theorem 3.3, eq. 10)
    lp = bounds.log_product(1.0, 1.0, np.exp(ll[:300] / 2))
    assert lp[-1] - lp[99] < 1e-12
    # sigma^2 = l: local exponent d lnP / d lnL keeps growing, so not Theta(L) (eq. 11)
    lin = bounds.log_product(1.0, 1.0, np.sqrt(ll))
    assert (lin[-1] - lin[9_999]) / math.log(10) > 10
    # LNS with sigma^2 = l^1.5: the product converges, it is not omega(1) (eq. 16)
    lns = bounds.log_product(1.0, 1.0, ll**0.75, layer_power=1.0)
    assert lns[-1] - lns[999] < 0.01


def test_paper_m_is_below_the_limit_it_approximates():
    assert bounds.paper_m(0.0, 0.0) == pytest.approx(1.0)
    true_log = bounds.log_product(1.0, 1.0, np.exp(np.arange(1, 200)))[-1]
    assert math.log(bounds.paper_m(1.0, 1.0)) < true_log  # eq. 49 is not an upper bound


def test_proof_steps_of_lemmas():
    ls = np.array([10, 100, 1000, 10_000])
    est = fits.power_law(ls, residual_variance.proof_lower_bound(ls)).estimate(0)
    assert est.contains(0.5) or abs(est.value - 0.5) < 0.01
    assert not est.contains(1.0)
    n = 5000
    layers = np.arange(1, n + 1)
    paper = residual_variance.iterate_recursion(n, form="paper")
    indep = residual_variance.iterate_recursion(n, form="independent")
    assert fits.power_law(layers[500:], paper[500:] - 1).coef[0] == pytest.approx(2.0, abs=0.02)
    assert fits.power_law(layers[500:], indep[500:] - 1).coef[0] == pytest.approx(1.0, abs=0.01)


# --- paper A: random stacks --------------------------------------------------------------------

def test_stack_variance_growth_and_rigorous_bound():
    cfg = StackConfig(d_model=32, d_ff=128, n_tokens=8, n_layers=24)
    pre = simulate(cfg, 16, 0)
    lns = simulate(cfg.with_(norm="lns"), 16, 0)
    beta_pre = residual_variance.growth_exponent(pre, n_boot=100)
    beta_lns = residual_variance.growth_exponent(lns, n_boot=100)
    assert 0.9 < beta_pre.value < 1.3
    assert beta_lns.hi < 0.8  # LNS grows sub-linearly (Lemma 4.1's Theta(L) lower bound fails)
    for c, st in ((cfg, pre), (cfg.with_(norm="lns"), lns)):
        assert np.all(st.var <= residual_variance.rms_bound(c, 16, 0) ** 2)
    assert np.abs(pre.rho_ffn.mean(0)).max() < 0.1  # branch outputs uncorrelated at init (Assumption 3.1)


@pytest.mark.parametrize("attn", ["uniform", "softmax", "causal"])
@pytest.mark.parametrize("ffn", ["relu", "swiglu"])
def test_forward_mode_jacobians_match_autograd(attn, ffn):
    torch.set_default_dtype(torch.float64)
    try:
        cfg = StackConfig(d_model=8, d_ff=16, n_heads=2, n_tokens=3, attention=attn, ffn=ffn, norm="lns")
        w = LayerWeights(*[t.double() for t in layer_weights(cfg, 3, 2, 0)])
        x = torch.randn(2, 3, 8)
        xm, ja = jacobians._jacobian(jacobians._attention_jvp, x, w, cfg, 3)
        _, jf = jacobians._jacobian(jacobians._ffn_jvp, xm, w, cfg, 3)
        def one(i):
            return LayerWeights(*[t[i : i + 1] for t in w])

        ref_a = torch.stack(
            [
                torch.autograd.functional.jacobian(lambda z: attn_sublayer(z[None], one(i), cfg, 3)[0], x[i]).reshape(
                    24, 24
                )
                for i in range(2)
            ]
        )
        ref_f = torch.stack(
            [
                torch.autograd.functional.jacobian(lambda z: ffn_sublayer(z[None], one(i), cfg, 3)[0], xm[i]).reshape(
                    24, 24
                )
                for i in range(2)
            ]
        )
        assert torch.allclose(ja, ref_a, atol=1e-10) and torch.allclose(jf, ref_f, atol=1e-10)
    finally:
        torch.set_default_dtype(torch.float32)


def test_block_jacobian_approaches_identity_as_inverse_std():
    cfg = StackConfig(d_model=16, d_ff=64, n_tokens=4, attention="causal", ffn="swiglu")
    stds = np.array([10.0, 30.0, 100.0, 300.0])
    dev = jacobians.identity_approach(cfg, stds, 4, 0)
    est = fits.bootstrap(dev, lambda d: fits.power_law(stds, d.mean(0)).coef[:1], 100, 0)[0]
    assert est.contains(-1.0) or abs(est.value + 1) < 0.02
    assert not est.contains(-0.5)


def test_jacobian_run_rigorous_bounds_hold():
    r = jacobians.run_jacobians(StackConfig(d_model=16, d_ff=64, n_tokens=2, n_layers=6), 3, 0)
    assert np.all(r.norm_attn <= r.rigorous_attn + 1e-9) and np.all(r.norm_ffn <= r.rigorous_ffn + 1e-9)
    assert np.all(np.diff(r.dev_block, axis=1).mean() < 0)  # blocks approach identity with depth


def test_query_gradient_is_zero_for_uniform_attention():
    g, rms_x, _ = jacobians.query_gradient_norm(StackConfig(d_model=16, d_ff=32, n_tokens=4), [1, 2], 2, 0, 3)
    assert np.all(g == 0) and rms_x.shape == (2, 2)
    g2, _, _ = jacobians.query_gradient_norm(
        StackConfig(d_model=16, d_ff=32, n_tokens=4, attention="softmax"), [1], 2, 0, 5
    )
    assert np.all(g2 > 0)


# --- paper B -------------------------------------------------------------------------------------

def test_theorem1_exact_gain_and_bound():
    rho, sigma, layers, draws = 0.25, 1.0, 6, 512
    nrm, keep = sparsity.residual_recursion(32, layers, rho, sigma, draws, "bernoulli", seed=0)
    gain = nrm[:, -1].mean() / nrm[:, 0].mean()
    assert gain == pytest.approx((1 + sigma**2 * rho) ** layers, rel=0.15)
    assert gain < sparsity.theorem1_bound(rho, sigma, layers)
    _, keep_mag = sparsity.residual_recursion(32, 2, rho, sigma, 64, "magnitude", seed=0)
    assert keep.mean() == pytest.approx(rho, abs=0.03) and keep_mag.mean() > 1.5 * rho


def test_theorem2_bound_holds():
    r = sparsity.transformer_block(32, 8, 4, 64, 0.3, 32, seed=0)
    assert 1.0 < r["gain"] < r["bound"]


def test_weight_decay_fixed_point_and_closed_form():
    assert weight_decay.variance_fixed_point(0.1, 1.0, 1.0) == pytest.approx(0.1 / 1.9)
    v, lr, lam = 2.0, 0.05, 0.5
    for t in range(1, 6):  # the closed form solves v <- a v + eta^2 s^2
        v = (1 - lr * lam) ** 2 * v + lr**2 * 1.0
        assert weight_decay.parameter_variance(t, lr, lam, 2.0, 1.0) == pytest.approx(v)
    sim = weight_decay.simulate_noise_updates([2.0], [0, 2000], 0.05, 1.0, 0.0, 1.0, 4, 5000, seed=0)
    vstar = weight_decay.variance_fixed_point(0.05, 2.0, 1.0)
    assert sim["weight_var"][0, 1] == pytest.approx(vstar, rel=4 * math.sqrt(2 / 5000))
    assert sim["weight_var"][0, 0] == pytest.approx(1.0, rel=0.05)
    bound = weight_decay.output_variance_bound(2000, 0.05, 2.0, 1.0, 0.0, 1.0, 4)
    assert sim["output_var"][0, 1] < bound * (1 + 5 * math.sqrt(2 / 5000))


def test_sgd_regression_tracks_ridge_not_noise_bound():
    r = weight_decay.sgd_regression([0.1, 1.0], 1500, 0.02, 8, 200, seed=0)
    assert np.all(np.diff(r["output_var"]) < 0)
    assert np.allclose(r["output_var"], r["ridge_output_var"], rtol=0.3)
    assert np.all(r["output_var"] > r["bound"])


def test_softmax_concentration_limit():
    _, conc = attention_variance.softmax_concentration([4096], 400, 1.0, seed=0)
    assert conc.mean() * 4096 == pytest.approx(math.e, rel=0.05)  # N E sum p^2 -> e^(s^2)


def test_gqa_variance_does_not_fall_with_group_size():
    gs = [1, 2, 4, 8]
    mean = attention_variance.gqa_output_draws(64, 8, gs, 3000, readout="mean", seed=0)
    est = fits.variance_exponent(gs, mean, n_boot=200, seed=0)
    assert est.contains(1.0) and not est.contains(-1.0)  # paper B eq. 79 claims G^-1
    head = attention_variance.gqa_output_draws(64, 8, gs, 3000, readout="head", seed=1)
    assert fits.variance_exponent(gs, head, n_boot=200, seed=0).contains(0.0)
    with pytest.raises(ValueError):
        attention_variance.gqa_output_draws(64, 8, [3], 10)


def test_moe_variance_falls_as_one_over_k():
    ks = [1, 2, 4, 8]
    y, j = moe.moe_draws(ks, 8, 16, 1500, seed=0)
    ey, ej = fits.mean_exponent(ks, y, 200, 0), fits.mean_exponent(ks, j, 200, 0)
    assert ey.contains(-1.0) and ej.contains(-1.0)
    assert not ey.contains(-0.5)
    yc, _ = moe.moe_draws(ks, 8, 16, 1500, corr=0.3, seed=0)
    assert fits.mean_exponent(ks, yc, 200, 0).hi < -0.2 and fits.mean_exponent(ks, yc, 200, 0).lo > -0.9


# --- the tiny real model -------------------------------------------------------------------------

def test_tiny_lm_runs_and_trains():
    src = real_stack.MarkovSource(16, alpha=0.2, seed=0)
    assert 0 < src.entropy() < math.log(16)
    torch.manual_seed(0)
    model = real_stack.tiny_lm("lns", vocab=16, d_model=16, n_layers=3, n_heads=2, max_seq_len=8)
    assert [b.mlp.norm_scale for b in model.blocks] == pytest.approx([1.0, 1 / math.sqrt(2), 1 / math.sqrt(3)])
    idx = src.sample(4, 8, np.random.default_rng(0))
    with torch.no_grad():  # h_0..h_L by running the blocks by hand, h_L before the final norm
        hs = [model.embed(idx)]
        for blk in model.blocks:
            hs.append(blk(hs[-1], model.rotary(8))[0])
    prof = real_stack.layer_profile(model, idx)
    assert prof["var"] == pytest.approx([float(h.var(-1, unbiased=False).mean()) for h in hs], rel=1e-5)
    assert prof["rho_attn"].shape == prof["rho_ffn"].shape == (3,) and prof["kurtosis"].shape == (4,)
    losses, profs = real_stack.train(model, src, 3, 4, 8, 1e-3, 0, idx, (0, 3))
    assert len(losses) == 3 and set(profs) == {0, 3} and profs[3]["var"].shape == (4,)
    jac = real_stack.block_jacobians(model, idx[0, :4])
    assert jac["dev"].shape == (3,) and np.all(jac["prod_norm"] > 0)
    x0 = model.embed(idx[:1, :4])[0].detach()
    ref = torch.autograd.functional.jacobian(lambda z: model.blocks[0](z[None], model.rotary(4))[0][0], x0).reshape(
        64, 64
    )
    assert jac["dev"][0] == pytest.approx(float(torch.linalg.matrix_norm(ref - torch.eye(64), ord=2)), rel=1e-4)


def test_a_theory_notebooks_results_are_written_with_their_settings_and_run_time(tmp_path):
    results = checks.Results(tmp_path / "figs", "smoke", 3, settings={"n_boot": 10})
    assert results.out.is_dir()
    results["gain"] = np.float64(1.5)
    seconds = results.save()
    written = json.loads((tmp_path / "figs" / "results.json").read_text())
    assert written == {"profile": "smoke", "seed": 3, "settings": {"n_boot": 10}, "gain": 1.5, "runtime_s": seconds}
    assert seconds >= 0
