# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Paper B, section 3.1 and Appendix B: Lemma 1 and Theorems 1-6, checked numerically
#
# *When Does Sparsity Mitigate the Curse of Depth in LLMs* (Muhtar et al.) argues that sparsity,
# implicit (weight decay, long context) or explicit (grouped-query attention, mixture of experts),
# damps the growth of the residual-stream variance. Its theory: Lemma 1 (paper A's Theorem 3.3
# restated), Theorem 1 (feature masks in a residual recursion), Theorem 2 (the same in a Transformer
# block), Theorem 3 (decoupled weight decay), Theorem 4 (attention averages over n keys),
# Theorem 5 (GQA / MQA) and Theorem 6 (top-k MoE).
#
# The text we have lost most mathematical symbols, so each statement below is **reconstructed**
# from its proof and the surrounding prose, and written out before it is tested. Each check
# simulates the statement's own setting over many independent draws, compares the measured
# quantity with the bound or the law (exponents fitted with bootstrap 95% intervals), then steps off
# the assumptions where that teaches something. All code is in `cod.theory`.

# %% [markdown]
# ## How the verdicts are decided
#
# Every claim is recorded in a `cod.claims.verdicts.Claims` ledger (`cod/claims/verdicts.py`) and written to
# `claims.json`, with **holds / holds loosely / fails** from a rule of `cod/theory/checks.py`, whose
# docstring states each tolerance. "Holds loosely" always means *within the stated tolerance of what
# the statement claims*, never merely "goes the right way":
#
# - a claimed exponent (1/n, 1/k, 1/G, rho^1): holds when the claimed value lies in the bootstrap 95%
#   interval over draws, loosely when the estimate is within **0.1** of it, fails otherwise; a
#   statement about several settings (e.g. "the 1/n survives softmax and correlated values") gets the
#   verdict of its weakest setting;
# - a claimed value (a fixed point, sigma^2 times the energy retention): holds when it lies in the 95%
#   interval, loosely when within **5%** of the estimate, fails otherwise;
# - an upper bound: fails when any 95% interval (or any sample) lies above it, loosely when it holds
#   but overshoots the median estimate by more than **10x**, holds otherwise;
# - a claimed monotone dependence: holds when consecutive 95% intervals are ordered and disjoint,
#   loosely when the estimates are ordered but some intervals overlap, fails otherwise;
# - a claimed reduction: holds when the ratio is below **0.9**, fails otherwise;
# - "bounded": the log of the product changes by less than **0.01** over its last 100 factors.

# %% tags=["parameters"]
profile = "default"  # smoke | default | headline | paper; params.yaml's notebooks.b2_theory.profiles sets the counts below
figures_dir = None  # default: figures/<profile>/b2_theory
seed = 0
torch_threads = 1  # one thread per process is fastest on the shared 2-core CPU
sigma = 1.0  # Theorem 1: E||W z||^2 = sigma^2 ||z||^2
wd_lr = 0.01  # Theorem 3: learning rate eta
wd_noise_var = 1.0  # Theorem 3: gradient-noise variance per entry
n_heads = 16  # Theorem 5: query heads H (paper B: 16)
n_boot = 300  # bootstrap resamples of every fitted quantity
lemma1_layers = 48  # Lemma 1: blocks per random stack
lemma1_samples = 8  # stacks drawn
mask_d = 64  # Theorem 1: width of the masked residual recursion
mask_layers = 16  # its layers
mask_draws = 256  # its draws per density
rhos = [0.02, 0.05, 0.1, 0.2, 0.5, 1.0]  # mask densities rho
tb_draws = 128  # Theorem 2: draws of one Transformer block per density
tb_tokens = 16  # its tokens
wd_draws = 4000  # Theorem 3: weight rows updated under noise
wd_steps = [0, 10, 30, 100, 300, 1000, 3000]  # steps t at which they are measured
wd_lams = [0.01, 0.03, 0.1, 0.3, 1.0, 3.0]  # weight decays lambda
sgd_steps = 3000  # SGD on a linear-regression layer: steps
sgd_draws = 400  # its draws
attn_draws = 2000  # Theorem 4: draws of one head's output per key count
attn_ns = [4, 8, 16, 32, 64, 128, 256, 512, 1024]  # key counts n
gqa_draws = 2000  # Theorem 5: draws per group count
gqa_keys = 256  # keys n
moe_draws = 600  # Theorem 6: draws per expert count
moe_ks = [1, 2, 4, 8, 16, 32]  # active experts k

# %%
from cod import kernel

figures_dir = kernel.start("b2_theory", profile, figures_dir)  # unset: a folder of its own

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from IPython.display import Markdown, display

from cod import plots
from cod.theory import (
    attention_variance,
    bounds,
    checks,
    fits,
    jacobians,
    moe,
    residual_variance,
    sparsity,
    weight_decay,
)
from cod.theory.stack import StackConfig, simulate
from cod.claims.verdicts import Claims, Verdict

torch.set_num_threads(torch_threads)
ledger = Claims("B", profile, seeds=[seed])
results = checks.Results(figures_dir, profile, seed, settings=dict(  # the counts, recorded with the results
    n_boot=n_boot, mask_d=mask_d, mask_layers=mask_layers, mask_draws=mask_draws, rhos=rhos, tb_draws=tb_draws,
    tb_tokens=tb_tokens, wd_draws=wd_draws, wd_steps=wd_steps, wd_lams=wd_lams, sgd_steps=sgd_steps,
    sgd_draws=sgd_draws, attn_draws=attn_draws, attn_ns=attn_ns, gqa_draws=gqa_draws, gqa_keys=gqa_keys,
    moe_draws=moe_draws, moe_ks=moe_ks, lemma1_layers=lemma1_layers, lemma1_samples=lemma1_samples,
))
out = results.out


def show(fig, name):
    plots.show(fig, out, name)
    plt.close(fig)


# %% [markdown]
# ## Lemma 1 (section 2; paper A's Theorem 3.3)
#
# **Reconstructed statement.** For a Pre-LN Transformer with L layers whose inputs, intermediate
# states and weights are independent zero-mean Gaussians, if sigma^2_{x_l} grows exponentially then
# ||dy_L/dx_1||_2 <= prod_{l<L} (1 + A/sigma_{x_l} + B/sigma^2_{x_l}) <= M, a constant: deep blocks
# approach identity maps. Paper A's notebook (a3_theory) checks the bound itself; here we check the
# lemma's two ingredients on random Pre-LN stacks: (i) does the variance grow exponentially, (ii) does
# the Jacobian product stay bounded while per-block Jacobians approach the identity.

# %%
lcfg = StackConfig(d_model=32, d_ff=128, n_heads=4, n_tokens=4, n_layers=lemma1_layers)
jr = jacobians.run_jacobians(lcfg, lemma1_samples, seed)
st = simulate(lcfg.with_(n_tokens=16), 4 * lemma1_samples, seed)
depth = np.arange(1, lcfg.n_layers + 1)
late = depth >= max(2, depth[-1] // 4)
prod_exp = fits.bootstrap(
    jr.prod_norm[:, late], lambda p: fits.power_law(depth[late], p.mean(0)).coef[:1], n_boot, seed
)[0]
dev_exp = fits.bootstrap(
    jr.dev_diag[:, late], lambda p: fits.power_law(depth[late], p.mean(0)).coef[:1], n_boot, seed
)[0]
rms = residual_variance.growth_models(st)
ln_limit = bounds.log_product(1.0, 1.0, np.exp(np.arange(1, 201) / 2))
ln_change = float(ln_limit[-1] - ln_limit[-101])
print(
    f"variance growth: beta = {residual_variance.growth_exponent(st, n_boot=n_boot, seed=seed)}, "
    f"RMS log-error {rms}"
)
print(
    f"||dy_L/dx_1|| ~ L^{prod_exp};  ||Jbar_l - I||_F/d ~ l^{dev_exp};  "
    f"with sigma^2 = e^l the product converges (ln P = {ln_limit[-1]:.3f})"
)
results["lemma1"] = dict(
    product_exponent=prod_exp,
    identity_exponent=dev_exp,
    growth_rms=rms,
    prod_norm=jr.prod_norm.mean(0),
    dev_diag=jr.dev_diag.mean(0),
)
ledger.add("B-lemma1", "Lemma 1 (Sec. 2)",
           "With exponentially growing variance, a Pre-LN stack's Jacobian norm stays bounded by a constant M and "
           "deep blocks approach identity maps.",
           "||dy_L/dx_1|| <= M when sigma^2 grows exponentially",
           Verdict(checks.bounded_verdict(ln_change, claimed_bounded=True),
                   "as mathematics: with sigma^2_l = e^l and A = B = 1 the product bound converges (ln P changes by "
                   f"{ln_change:.1e} over its last 100 factors); but the premise does not occur: random Pre-LN stacks "
                   f"grow as a power law (RMS log-error power {rms['power']:.3f} vs exponential "
                   f"{rms['exponential']:.3f}), and there ||dy_L/dx_1|| ~ L^{prod_exp} keeps growing while ||Jbar_l - "
                   f"I||_F/d ~ l^{dev_exp} falls; a3_theory finds the closed-form M of paper A's eq. 49 below the "
                   "true limit"))

# %%
display(Markdown(f"""
**Result** ({lemma1_samples} draws, d = {lcfg.d_model}, {lcfg.n_tokens} tokens, {lcfg.n_layers} blocks; the
variance profile
on {4 * lemma1_samples} draws of 16 tokens). With sigma^2_l = e^l the product bound converges (ln P changes by
{ln_change:.1e} over its last 100 factors). A random Pre-LN stack grows as a power law instead: the exponential law fits
{rms['exponential'] / rms['power']:.0f}x worse in log variance. There the Jacobian product keeps growing (~
L^{prod_exp})
while the per-block distance from the identity falls (||Jbar_l - I||_F / d ~ l^{dev_exp.value:.2f}).
"""))

# %% [markdown]
# The lemma's implication is sound as mathematics, but its premise does not occur: paper A's notebook shows
# that no Pre-LN stack with bounded weights can grow faster than L^2. In the regime that does occur the
# product does not saturate; the identity-approach half of the lemma holds for a different reason than
# stated (1/sigma_l with polynomially growing variance, not exponential growth).

# %% [markdown]
# ## Theorem 1: feature masks in a residual recursion (B eq. 11-13, App. B.1)
#
# **Reconstructed statement.** Let x_{l+1} = x_l + W_l M_l x_l, with M_l a diagonal 0-1 mask and W_l
# a random linear map independent of (x_l, M_l) with E||W_l z||^2 <= sigma_l^2 ||z||^2, and the mask
# satisfying the density bound E||M_l z||^2 <= rho_l ||z||^2 (eq. 12). Then
# E||x_{l+1}||^2 <= (1 + sigma_l sqrt(rho_l))^2 E||x_l||^2 (eq. 31), and if sigma_l <= sigma, rho_l <= rho,
# E||x_L||^2 <= (1 + sigma sqrt(rho))^(2L) E||x_0||^2 (eq. 13, 33): sparser masks give a smaller gain.
#
# The proof bounds the cross term 2 E<x, W M x> by Cauchy-Schwarz (eq. 29); for zero-mean W it is 0,
# so the exact gain is 1 + sigma^2 rho. We draw W with i.i.d. N(0, sigma^2/d) entries and Bernoulli(rho)
# masks; then step off to magnitude masks (keep the ceil(rho d) largest |x_i|, as ReLU or top-k
# activation sparsity would), whose energy retention exceeds their density.

# %%
rhos = np.array(rhos)
L1, d1 = mask_layers, mask_d
t1 = {}
for kind in ("bernoulli", "magnitude"):
    draws, keeps = [], []
    for rho in rhos:
        nrm, keep = sparsity.residual_recursion(d1, L1, float(rho), sigma, mask_draws, kind, seed)
        draws.append(nrm)
        keeps.append(keep.mean())
    draws = np.stack(draws, 1)  # (D, R, L+1)
    gain = fits.bootstrap(draws, lambda d: (d[..., -1].mean(0) / d[..., 0].mean(0)) ** (1 / L1), n_boot, seed)
    t1[kind] = dict(
        gain=gain,
        energy=np.array(keeps),
        exponent=fits.bootstrap(
            draws,
            lambda d: fits.power_law(rhos, (d[..., -1].mean(0) / d[..., 0].mean(0)) ** (1 / L1) - 1).coef[:1],
            n_boot,
            seed,
        )[0],
    )
exact = 1 + sigma**2 * rhos
bound1 = sparsity.theorem1_bound(rhos, sigma, 1)
print("rho:", rhos)
print("measured per-layer gain (Bernoulli):", np.round([g.value for g in t1["bernoulli"]["gain"]], 4))
print("exact 1 + sigma^2 rho:              ", np.round(exact, 4))
print("Theorem 1 factor (1 + sigma sqrt rho)^2:", np.round(bound1, 4))
print(
    "magnitude masks: gain",
    np.round([g.value for g in t1["magnitude"]["gain"]], 4),
    " energy retention",
    np.round(t1["magnitude"]["energy"], 3),
)
print(f"gain - 1 ~ rho^b: Bernoulli b = {t1['bernoulli']['exponent']}, magnitude b = {t1['magnitude']['exponent']}")
results["theorem1"] = dict(
    rhos=rhos, exact=exact, bound=bound1, **{k: {kk: vv for kk, vv in v.items()} for k, v in t1.items()}
)

# %%
gains_b = t1["bernoulli"]["gain"]
gb = np.array([g.value for g in gains_b])
gm = np.array([g.value for g in t1["magnitude"]["gain"]])
ledger.add(
    "B-thm1-bound",
    "Theorem 1 (eq. 13, App. B.1)",
    "E||x_L||^2 <= (1 + sigma sqrt(rho))^(2L) E||x_0||^2 for the masked residual recursion.",
    "(1 + sigma sqrt rho)^(2L)",
    Verdict(
        checks.bound_verdict_ci([fits.Estimate(g.value**L1, g.lo**L1, g.hi**L1) for g in gains_b], bound1**L1),
        f"exceeded at {sum(g.lo**L1 > b**L1 for g, b in zip(gains_b, bound1))} of {len(rhos)} rho; "
        f"slack over L={L1}: {bound1[0] ** L1 / gains_b[0].value ** L1:.3g}x at rho={rhos[0]:g}, "
        f"{bound1[-1] ** L1 / gains_b[-1].value ** L1:.3g}x at rho={rhos[-1]:g}, loose beyond 10x (the "
        "exact per-layer gain is 1 + sigma^2 rho: the Cauchy-Schwarz cross term is 0 for zero-mean W)",
    ),
)
ledger.add("B-thm1-density", "Theorem 1 / Sec. 3.1",
           "Sparser masks (smaller rho) give a smaller per-layer variance gain.",
           "gain factor (1 + sigma sqrt rho)^2, increasing in rho",
           Verdict(checks.increasing_verdict(gains_b),
                   f"measured gain - 1 ~ rho^{t1['bernoulli']['exponent']} (exactly sigma^2 rho), increasing in rho "
                   "with disjoint 95% intervals; the theorem's factor scales as sqrt(rho) for small rho"))
energy_pred = sigma**2 * t1["magnitude"]["energy"]
energy_fit = [
    checks.value_verdict(fits.Estimate(g.value - 1, g.lo - 1, g.hi - 1), p)
    for g, p in zip(t1["magnitude"]["gain"], energy_pred)
]
rel_err = np.abs((gm - 1) / energy_pred - 1)
ledger.add("B-thm1-energy", "Theorem 1 remark (App. B.1), beyond the assumptions",
           "What controls the gain is the mask's second-moment energy retention, not its density; a mask correlated "
           "with x retains more.",
           "depends on sparsity only through the energy retention rho",
           Verdict(checks.weakest(*energy_fit),
                   f"magnitude masks at density {rhos[0]:g} keep {t1['magnitude']['energy'][0]:.2f} of the energy and "
                   f"gain {gm[0] - 1:.3f} per layer vs {gb[0] - 1:.3f} for Bernoulli masks; sigma^2 x energy "
                   f"retention predicts the magnitude-mask gain - 1 within {100 * rel_err.max():.1f}% (inside the 95% "
                   f"interval at {energy_fit.count('holds')} of {len(rhos)} densities; tolerance 5%)"))

# %% [markdown]
# ## Theorem 2: a masked Transformer block without LayerNorm (B App. B.2-B.3)
#
# **Reconstructed statement.** X'_l = X_l + MSA(X_l M_l), X_{l+1} = X'_l + FFN(X'_l M_l), one diagonal
# 0-1 feature mask shared by both sublayers (Assumption 1: E||Z M||_F^2 <= rho E||Z||_F^2), attention with
# second-moment gain gamma_A = ||W_O||^2 sum_h ||A_h||^2 ||W_V^h||^2 (Assumption 2, eqs. 41-43, 48-51) and
# an FFN with gain gamma_F (Assumption 3, e.g. ||W_1||^2 ||W_2||^2 for ReLU). Then
# E||X_{l+1}||_F^2 <= (1 + sqrt(rho gamma_A))^2 (1 + sqrt(rho gamma_F))^2 E||X_l||_F^2 (eq. 45), and the
# L-fold product bounds the whole stack (eq. 46). One block with N(0, 1/fan_in) weights, softmax
# attention, ReLU FFN; gamma's are the largest values over the draws, so that they are valid constants.

# %%
t2 = [sparsity.transformer_block(64, tb_tokens, 4, 256, float(r), tb_draws, seed) for r in rhos]
t2_gain = [
    fits.bootstrap(
        np.stack([r["sq_norms_out"], r["sq_norms"]], 1), lambda d: [d[:, 0].mean() / d[:, 1].mean()], n_boot, seed
    )[0]
    for r in t2
]
t2_bound = np.array([r["bound"] for r in t2])
for r, g in zip(t2, t2_gain):
    print(
        f"rho {r['rho']:<5g} gain {g}  (attn {r['gain_attn']:.3f}, FFN {r['gain_ffn']:.3f})  "
        f"gamma_A {r['gamma_attn']:.1f} gamma_F {r['gamma_ffn']:.1f}  bound {r['bound']:.1f}"
    )
results["theorem2"] = [
    {k: v for k, v in r.items() if not k.startswith("sq_")} | {"gain_ci": g} for r, g in zip(t2, t2_gain)
]
t2_exp = fits.power_law(rhos, np.array([g.value for g in t2_gain]) - 1).estimate(0)
ledger.add("B-thm2", "Theorem 2 (eqs. 45-46, App. B.3)",
           "For a masked MSA + FFN block without LayerNorm, E||X_{l+1}||^2 <= (1 + sqrt(rho gamma_A))^2 (1 + sqrt(rho "
           "gamma_F))^2 E||X_l||^2.",
           "gain <= (1 + sqrt(rho gamma_A))^2 (1 + sqrt(rho gamma_F))^2",
           Verdict(checks.bound_verdict_ci(t2_gain, t2_bound),
                   f"measured gain {t2_gain[0].value:.3f} (rho={rhos[0]:g}) to {t2_gain[-1].value:.3f} (rho=1) "
                   f"against bounds {t2_bound[0]:.1f} to {t2_bound[-1]:.0f} (loose beyond 10x); gain - 1 ~ "
                   f"rho^{t2_exp} while the bound's dependence is sqrt(rho)"))

# %%
def ci_bars(ax, x, estimates, shift=0.0, **kwargs):
    """Estimates (minus `shift`) with their 95% intervals as error bars."""
    v = np.array([e.value for e in estimates]) - shift
    err = np.array([[e.value - e.lo, e.hi - e.value] for e in estimates]).T
    ax.errorbar(x, v, yerr=err, capsize=2, **kwargs)


fig, ax = plt.subplots(1, 3, figsize=(15, 4.8))
ci_bars(ax[0], rhos, gains_b, 1.0, fmt="o-", label="Bernoulli masks (measured, 95% CI)")
ax[0].plot(rhos, exact - 1, "k--", label=r"exact: $\sigma^2\rho$ (slope 1)")
ax[0].plot(rhos, bound1 - 1, "r:", label=r"Theorem 1: $(1 + \sigma\sqrt{\rho})^2 - 1$")
ci_bars(ax[0], rhos, t1["magnitude"]["gain"], 1.0, fmt="s-", label="magnitude masks, same density (measured)")
ax[0].plot(rhos, sigma**2 * t1["magnitude"]["energy"], "g-.", label=r"$\sigma^2 \times$ energy retention")
ax[0].set(xscale="log", yscale="log", xlabel=r"mask density $\rho$", ylabel="per-layer variance gain $-$ 1",
          title=rf"Theorem 1 ($d$={d1}, $L$={L1}, $\sigma$={sigma:g})")
ax[0].legend()
ax[1].plot(rhos, gb ** L1, "o-", label=rf"measured $E\|x_L\|^2 / E\|x_0\|^2$, $L$={L1}")
ax[1].plot(rhos, bound1**L1, "r:", label="Theorem 1 bound (eq. 13)")
ax[1].plot(rhos, gm ** L1, "s-", label="magnitude masks")
ax[1].set(xscale="log", yscale="log", xlabel=r"mask density $\rho$", ylabel=f"variance gain over {L1} layers",
          title="Theorem 1: the whole recursion")
ax[1].legend()
t2g = np.array([g.value for g in t2_gain])
ci_bars(ax[2], rhos, t2_gain, 1.0, fmt="o-", label="measured block gain $-$ 1 (95% CI)")
ax[2].plot(rhos, t2_bound - 1, "r:", label="Theorem 2 bound $-$ 1")
ax[2].plot(rhos, (t2g[-1] - 1) * rhos, "k--", label="slope 1")
ax[2].set(xscale="log", yscale="log", xlabel=r"mask density $\rho$", ylabel=r"$E\|X_{out}\|^2 / E\|X_{in}\|^2 - 1$",
          title="Theorem 2: one masked MSA + FFN block")
ax[2].legend()
show(fig, "variance_gain_vs_mask_density")

# %%
display(Markdown(f"""
**Result.** With Bernoulli masks the measured per-layer gain is {gb[0]:.4f} vs 1 + sigma^2 rho = {exact[0]:.4f} at
rho = {rhos[0]:g} and {gb[-1]:.3f} vs {exact[-1]:.3f} at rho = {rhos[-1]:g} (gain - 1 ~
rho^{t1['bernoulli']['exponent'].value:.2f});
over {L1} layers Theorem 1's bound overshoots by {bound1[0] ** L1 / gb[0] ** L1:.0f}x (rho = {rhos[0]:g}) to
{bound1[-1] ** L1 / gb[-1] ** L1:.1e}x (rho = {rhos[-1]:g}). A magnitude mask of density {rhos[0]:g} keeps
{t1['magnitude']['energy'][0]:.2f} of the energy, and sigma^2 times the energy retention predicts its gain within
{100 * rel_err.max():.1f}%. Theorem 2's block: gain - 1 ~ rho^{t2_exp.value:.2f} against a bound
{t2_bound[0] / t2g[0]:.0f}x (rho = {rhos[0]:g}) to {t2_bound[-1] / t2g[-1]:.0f}x (rho = {rhos[-1]:g}) above it.
"""))

# %% [markdown]
# The variance-reduction direction of Theorem 1 holds and its bound holds, loosely: the Cauchy-Schwarz step
# replaces a cross term that is exactly zero by 2 sigma sqrt(rho), so its small-rho dependence is sqrt(rho)
# where the truth is rho. Stepping off: a mask that depends on x (keep the largest coordinates) retains far
# more energy than its density, and the gain follows the energy it keeps: "sparsity" helps only through the
# energy the mask removes, so activation sparsity of the ReLU / top-k kind reduces variance much less than its
# density suggests. Theorem 2's block (attention + FFN, no LayerNorm) behaves the same way.

# %% [markdown]
# ## Theorem 3: decoupled weight decay contracts the variance (B App. B.4)
#
# **Reconstructed statement.** Let W_{t+1} = (1 - eta lam) W_t - eta g_t with 0 < eta lam < 1, gradient
# noise g_t independent of W_t, E g_t = 0 and Var(g_t) <= s_g^2 per entry. With a = (1 - eta lam)^2,
# Var(W_t) <= a^t Var(W_0) + eta s_g^2 (1 - a^t) / (lam (2 - eta lam)) (eqs. 64-66), and for a linear
# output y = W_t x with x independent of W_t, E x = 0, covariance Sigma_x,
# Var(y) <= a^t (Var(W_0) tr Sigma_x + mu_0^T Sigma_x mu_0) + eta s_g^2 tr Sigma_x / (lam (2 - eta lam))
# (eqs. 59, 74). Both terms fall as lam grows (eta lam < 1). The variance recursion's fixed point is
# v* = eta s_g^2 / (lam (2 - eta lam)).
#
# We run the update on `wd_draws` independent weight rows (d_in = 8, W_0 ~ N(0, 1), s_g^2 = 1) for a
# ladder of lam. Then we step off: SGD on a linear-regression layer, whose gradient (W x - y) x depends
# on W and carries a learning signal (non-zero mean).

# %%
lams, steps = np.array(wd_lams), np.array(wd_steps)
d_in = 8
wd = weight_decay.simulate_noise_updates(lams, steps, wd_lr, 1.0, 0.0, wd_noise_var, d_in, wd_draws, seed)
exact_w = np.array([weight_decay.parameter_variance(steps, wd_lr, lam, 1.0, wd_noise_var) for lam in lams])
bound_y = np.array(
    [weight_decay.output_variance_bound(steps, wd_lr, lam, 1.0, 0.0, wd_noise_var, d_in) for lam in lams]
)
bonferroni = 1 - 0.05 / (
    len(lams) * len(steps)
)  # one interval per (lam, t): corrected so that 5% is the family-wise error
y_est = [
    [
        fits.bootstrap(wd["y"][i, j][:, None], lambda d: [d.var()], n_boot, seed, bonferroni)[0]
        for j in range(len(steps))
    ]
    for i in range(len(lams))
]
long_lam = lams[-1]
v_star = weight_decay.variance_fixed_point(wd_lr, long_lam, wd_noise_var)
n_stat = int(np.argmax(steps * wd_lr * long_lam > 10)) if np.any(steps * wd_lr * long_lam > 10) else len(steps) - 1
fp_est = fits.bootstrap(wd["y"][-1, n_stat][:, None], lambda d: [d.var() / d_in], n_boot, seed)[0]
fp_exact = float(exact_w[-1, n_stat])  # = v* once (1 - eta lam)^(2t) is negligible
print("relative error of Var(W_t) against the closed form:", np.round(np.abs(wd["weight_var"] / exact_w - 1).max(), 4))
print(
    f"lam={long_lam}, t={steps[n_stat]}: measured Var(W) from Var(y)/d_in = {fp_est}, closed form {fp_exact:.5f}, "
    f"fixed point v* = {v_star:.5f}"
)
sgd = weight_decay.sgd_regression(lams, sgd_steps, wd_lr, 16, sgd_draws, seed=seed)
for lam, ov, b, r in zip(sgd["lams"], sgd["output_var"], sgd["bound"], sgd["ridge_output_var"]):
    print(
        f"SGD regression, lam {lam:<5g}: output variance {ov:.4f}, Theorem 3 bound {b:.4f}, "
        f"ridge solution ||w*/(1+lam)||^2 = {r:.4f}"
    )
results["theorem3"] = dict(
    lams=lams,
    steps=steps,
    weight_var=wd["weight_var"],
    exact_weight_var=exact_w,
    output_var=wd["output_var"],
    output_bound=bound_y,
    fixed_point=v_star,
    fixed_point_measured=fp_est,
    sgd=sgd,
)

# %%
fig, ax = plt.subplots(1, 3, figsize=(15, 4.4))
for i, lam in enumerate(lams):
    ax[0].plot(np.maximum(steps, 1), wd["weight_var"][i], "o", color=f"C{i}")
    tt = np.unique(np.concatenate([np.geomspace(1, steps.max(), 200), steps]))
    ax[0].plot(
        tt,
        weight_decay.parameter_variance(tt, wd_lr, lam, 1.0, wd_noise_var),
        "-",
        color=f"C{i}",
        label=rf"$\lambda$={lam:g}",
    )
ax[0].set(xscale="log", yscale="log", xlabel="step $t$ (0 shown at 1)", ylabel=r"Var($W_t$)",
          title="contraction: measured (dots), closed form (lines)")
ax[0].legend()
final = -1
ci_bars(ax[1], lams, [row[final] for row in y_est], fmt="o-", label=f"measured Var($y$) at $t$={steps[final]} (95% CI)")
ax[1].plot(lams, bound_y[:, final], "r--", label="Theorem 3 bound")
ax[1].plot(lams, [weight_decay.variance_fixed_point(wd_lr, lam, wd_noise_var) * d_in for lam in lams], "k:",
           label=r"stationary $d_{in}\,v^*$")
ax[1].set(
    xscale="log",
    yscale="log",
    xlabel=r"weight decay $\lambda$",
    ylabel="output variance",
    title=rf"Theorem 3 ($\eta$={wd_lr})",
)
ax[1].legend()
ax[2].plot(sgd["lams"], sgd["output_var"], "o-", label="SGD on linear regression (measured)")
ax[2].plot(sgd["lams"], sgd["bound"], "r--", label="Theorem 3 bound, measured gradient variance")
ax[2].plot(sgd["lams"], sgd["ridge_output_var"], "k:", label=r"ridge solution $\|w^*/(1+\lambda)\|^2$")
ax[2].set(
    xscale="log",
    yscale="log",
    xlabel=r"weight decay $\lambda$",
    ylabel=r"$E\,(W x)^2$",
    title="beyond the assumptions: a learning signal",
)
ax[2].legend()
show(fig, "weight_decay_contraction")

# %%
flat_est = [e for row in y_est for e in row]
max_dev = float(np.abs(wd["weight_var"] / exact_w - 1).max())
ledger.add("B-thm3-fixed-point", "Theorem 3 (eqs. 64-66)",
           "Under decoupled weight decay with independent gradient noise the parameter variance contracts to the "
           "fixed point eta s_g^2 / (lam (2 - eta lam)).",
           "Var(W_t) = a^t Var(W_0) + eta^2 s_g^2 (1 - a^t)/(1 - a)",
           Verdict(checks.value_verdict(fp_est, fp_exact),
                   f"largest relative deviation of the measured Var(W_t) from the closed form {max_dev:.3f} "
                   f"({wd_draws} draws x {d_in} entries); at lam={long_lam:g}, t={steps[n_stat]}: Var(W) = "
                   f"{fp_est} vs closed form {fp_exact:.5f} (v* = {v_star:.5f})"))
ledger.add("B-thm3-bound", "Theorem 3 (eqs. 59, 74)",
           "The output variance of a linear layer is bounded by a^t (initial part) + eta s_g^2 tr Sigma_x / (lam (2 "
           "- eta lam)), and the bound falls as lam grows.",
           "Var(y) <= a^t(...) + eta s_g^2 tr Sigma_x / (lam (2 - eta lam)); decreasing in lam",
           Verdict(checks.weakest(checks.bound_verdict_ci(flat_est, bound_y.ravel()),
                                  checks.increasing_verdict([row[-1] for row in y_est][::-1])),
                   f"no 95% interval lies above its bound ({len(flat_est)} (lam, t) pairs; met with equality up to "
                   f"sampling error); at t={steps[-1]} Var(y) = {wd['output_var'][0, -1]:.3f} (lam={lams[0]:g}) down "
                   f"to {wd['output_var'][-1, -1]:.4f} (lam={lams[-1]:g})"))
viol = sgd["output_var"] > sgd["bound"]
mid = len(lams) // 2
ledger.add("B-thm3-sgd", "Theorem 3, beyond the assumptions",
           "Weight decay bounds a layer's output variance as in Theorem 3 when the gradient is a real "
           "(state-dependent, signal-carrying) gradient.",
           "Theorem 3's bound, decreasing in lam",
           Verdict(checks.bound_verdict(sgd["output_var"], sgd["bound"]),
                   f"SGD on linear regression: output variance falls with lam ({sgd['output_var'][0]:.3f} -> "
                   f"{sgd['output_var'][-1]:.3f}) but tracks the ridge solution (e.g. {sgd['output_var'][mid]:.3f} vs "
                   f"ridge {sgd['ridge_output_var'][mid]:.3f} at lam={sgd['lams'][mid]:g}), not the noise-only bound, "
                   f"which is exceeded at lam = {', '.join(f'{x:g}' for x in sgd['lams'][viol]) or 'none'}"))

# %%
display(Markdown(f"""
**Result.** The measured Var(W_t) is within {100 * max_dev:.1f}% of the closed form at every (lam, t); the fixed point
is recovered ({fp_est} vs {fp_exact:.5f} at lam = {long_lam:g}); the output variance falls with lam
({wd['output_var'][0, -1]:.2g} at lam = {lams[0]:g} to {wd['output_var'][-1, -1]:.2g} at lam = {lams[-1]:g} after
{steps[-1]} steps).
With SGD on linear regression the output variance tracks the ridge solution ({sgd['output_var'][mid]:.3f} vs ridge
{sgd['ridge_output_var'][mid]:.3f} at lam = {sgd['lams'][mid]:g}) and exceeds Theorem 3's bound at
{int(viol.sum())} of {len(viol)} values of lam.
"""))

# %% [markdown]
# Under the theorem's assumptions the variance recursion is exact and the output-variance bound is met with
# equality once the initialisation has decayed. Stepping off to a real gradient (one that depends on W and
# has a mean), the output variance still falls with lam, but it follows the ridge shrinkage, not Theorem 3's
# bound: the theorem controls only the noise-driven part of the weights, not the part the data put there.
# Under the theorem's model weight decay shrinks a Gaussian weight distribution without changing its shape,
# so the "weight sparsity" it induces is only the shrinkage of scale seen through a fixed threshold.

# %% [markdown]
# ## Theorems 4 and 5: attention averages over keys (B App. B.5-B.6)
#
# **Theorem 4, reconstructed.** If the attention output is the uniform average o = (1/n) sum_i v_i of
# zero-mean, mutually independent scalars with Var(v_i) <= sigma^2, then Var(o) <= sigma^2 / n
# (= sigma^2/n when all variances equal sigma^2).
#
# **Theorem 5, reconstructed.** Under (i) uniform attention weights, (ii) zero-mean, mutually
# independent value rows of variance sigma^2 and (iii) per-coordinate variance: standard attention
# gives sigma^2/n (eq. 78); for GQA with G query heads per key-value head the output variance is
# sigma^2/(nG) (eq. 79; from the proof: the G head outputs of a group are averaged and treated as
# independent); for MQA each head output has variance sigma^2/n (eq. 80) and the G = H averaging again
# gives sigma^2/(nH). Section 3.2.2 states the result as "variance scales as sigma^2/(nG) for both GQA
# and MQA". (Eq. 84-86's alternative reading, each query attending only to n/G keys of its group,
# would give G sigma^2/n, a variance that grows with G.)
#
# We simulate one output coordinate with uniform weights and then with softmax weights of i.i.d.
# N(0, s^2) logits (how far does 1/n survive non-uniform attention?), and with values correlated
# across keys (real residual streams share a common component). For Theorem 5, H = `n_heads` query
# heads share H/G value rows; we read out one head, the mean of the H heads (the proof's averaging)
# and a random output projection W_O (what the layer computes).

# %%
ns = np.array(attn_ns)
t4 = {}
for s in (0.0, 1.0, 2.0, 3.0):
    dr = attention_variance.head_output_draws(ns, attn_draws, logit_scale=s, seed=seed)
    t4[f"softmax s={s:g}" if s else "uniform"] = dict(
        var=dr.var(0), exponent=fits.variance_exponent(ns, dr, n_boot, seed)
    )
for c in (0.05, 0.2):
    dr = attention_variance.head_output_draws(ns, attn_draws, corr=c, seed=seed)
    t4[f"corr {c:g}"] = dict(var=dr.var(0), exponent=fits.variance_exponent(ns, dr, n_boot, seed))
for k, v in t4.items():
    print(
        f"{k:14s} Var ~ n^{v['exponent']};  "
        f"n Var at n={ns[0]}, {ns[-1]}: {v['var'][0] * ns[0]:.2f}, {v['var'][-1] * ns[-1]:.2f}"
    )
Gs = [g for g in (1, 2, 4, 8, 16, 32, 64) if g <= n_heads and n_heads % g == 0]
t5 = {}
for ro in ("head", "mean", "wo"):
    for s in (0.0, 1.0, 3.0):
        dr = attention_variance.gqa_output_draws(
            gqa_keys, n_heads, Gs, gqa_draws, logit_scale=s, readout=ro, seed=seed
        )
        t5[f"{ro}, s={s:g}"] = dict(var=dr.var(0), exponent=fits.variance_exponent(Gs, dr, n_boot, seed))
for k, v in t5.items():
    print(
        f"GQA readout {k:10s}: Var ~ G^{v['exponent']}   (n Var: {np.round(v['var'] * gqa_keys, 3)} for G = {Gs})"
    )
results["theorem4"] = t4
results["theorem5"] = dict(G=Gs, n_keys=gqa_keys, H=n_heads, readouts=t5)

# %% [markdown]
# ## Theorem 6: top-k mixture of experts averages its experts (B App. B.7)
#
# **Reconstructed statement.** A top-k MoE layer with uniform gating y(x) = (1/k) sum_{i in S(x)} E_i(x),
# routing set S locally constant around x. If the selected experts' outputs are mutually independent
# with a common mean and variance s^2, Var(y) = s^2/k (eq. 92); if their Jacobians J_i are independent
# with common mean and variance, Var(J) = Var(J_i)/k entrywise (eq. 93). (Eqs. 105-110, a bound on the
# gradient norm and an MoE-specific "scaling factor", lost their symbols and cannot be reconstructed.)
#
# Experts are ReLU FFNs with N(0, 1/fan_in) weights drawn afresh per draw (independent experts); we
# then share a common weight component between experts (correlation 0.2: upcycled or
# under-specialised experts) and replace uniform gating by a softmax over router logits.

# %%
ks = np.array(moe_ks)
t6 = {}
for label, kw in (
    ("independent, uniform gates", {}),
    ("correlated 0.2", dict(corr=0.2)),
    ("softmax gates (s=1)", dict(gate_scale=1.0)),
):
    y2, j2 = moe.moe_draws(list(ks), 16, 32, moe_draws, seed=seed, **kw)
    t6[label] = dict(var_out=y2.mean(0), var_jac=j2.mean(0), exp_out=fits.mean_exponent(ks, y2, n_boot, seed),
                     exp_jac=fits.mean_exponent(ks, j2, n_boot, seed))
    print(f"{label:28s} Var(y) ~ k^{t6[label]['exp_out']},  Var(J) ~ k^{t6[label]['exp_jac']}")
results["theorem6"] = dict(ks=ks, runs=t6)

# %%
fig, ax = plt.subplots(1, 3, figsize=(15, 6))
for k, v in t4.items():
    ax[0].loglog(ns, v["var"], "o-", ms=3, label=f"{k}: slope {v['exponent'].value:.2f}")
ax[0].loglog(ns, 1.0 / ns, "k--", lw=2, label=r"Theorem 4: $\sigma^2/n$ (slope $-1$)")
ax[0].set(xlabel="number of keys $n$", ylabel="Var of one output coordinate", title="Theorem 4: variance against $n$")
for k, v in t5.items():
    ax[1].loglog(Gs, v["var"], "o-", ms=3, label=f"{k}: slope {v['exponent'].value:.2f}")
ax[1].loglog(Gs, 1.0 / (gqa_keys * np.array(Gs)), "k--", lw=2, label=r"Theorem 5: $\sigma^2/(nG)$ (slope $-1$)")
ax[1].set(xlabel="query heads per KV head $G$ (1 = MHA, $H$ = MQA)", ylabel="output variance",
          title=f"Theorem 5: variance against $G$ ($n$={gqa_keys}, $H$={n_heads})")
for k, v in t6.items():
    ax[2].loglog(ks, v["var_out"], "o-", ms=3, label=f"Var($y$), {k}: slope {v['exp_out'].value:.2f}")
    ax[2].loglog(ks, v["var_jac"], "s:", ms=3, label=f"Var($J$), {k}: slope {v['exp_jac'].value:.2f}")
ax[2].loglog(
    ks, t6["independent, uniform gates"]["var_out"][0] / ks, "k--", lw=2, label="Theorem 6: $1/k$ (slope $-1$)"
)
ax[2].set(xlabel="active experts $k$", ylabel="variance", title="Theorem 6: variance against $k$")
for a in ax:
    a.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
show(fig, "output_variance_vs_n_G_k")

# %%
u = t4["uniform"]["exponent"]
ledger.add("B-thm4", "Theorem 4 (App. B.5)",
           "The uniform average of n zero-mean independent values of variance sigma^2 has variance sigma^2/n.",
           "Var = sigma^2 / n",
           Verdict(checks.exponent_verdict(u, -1.0),
                   f"Var ~ n^{u} over n = {ns[0]}..{ns[-1]}; n Var = {t4['uniform']['var'][-1] * ns[-1]:.3f} at "
                   f"n={ns[-1]} (sigma^2 = 1)"))
off4 = {k: v["exponent"] for k, v in t4.items() if k != "uniform"}
ledger.add(
    "B-thm4-softmax",
    "Theorem 4, beyond the assumptions",
    "The 1/n decay survives non-uniform (softmax) attention and values that are correlated across keys.",
    "Var ~ 1/n (uniform attention)",
    Verdict(
        checks.weakest(*(checks.exponent_verdict(e, -1.0) for e in off4.values())),
        "Var ~ n^b with b = "
        + ", ".join(f"{e} ({k})" for k, e in off4.items())
        + f" (within 0.1 of -1: {', '.join(k for k, e in off4.items() if abs(e.value + 1) <= 0.1) or 'none'}); "
        + "softmax: "
        "Var = sigma^2 E sum p^2 ~ e^(s^2)/n only once n >> e^(s^2); correlated values: floor at corr x "
        "sigma^2",
    ),
)
s_hi = "softmax s=3"
sparse_ratio = float(t4[s_hi]["var"][-1] / t4["uniform"]["var"][-1])
ledger.add("B-sec32-attention-sparsity", "Sec. 3.2.1 with Theorem 4",
           "Longer contexts make attention sparser, and this sparsity lowers the attention-output variance.",
           "attention sparsity reduces variance",
           Verdict(checks.reduction_verdict(sparse_ratio),
                   f"at fixed n={ns[-1]}, peaked (sparse) softmax attention (logit std 3) has {sparse_ratio:.0f}x the "
                   "variance of uniform attention: under Theorem 4's own formula Var = sigma^2 sum p_i^2, "
                   "concentrating attention raises the variance; only the number of attended keys lowers it"))
ledger.add("B-thm5-per-head", "Theorem 5 (eqs. 78, 80)",
           "Under uniform attention each head's output (MHA or MQA alike) has per-coordinate variance sigma^2/n.",
           "sigma^2 / n per head",
           Verdict(checks.weakest(checks.exponent_verdict(t4["uniform"]["exponent"], -1.0),
                                  checks.exponent_verdict(t5["head, s=0"]["exponent"], 0.0)),
                   f"per-head variance ~ n^{t4['uniform']['exponent']} (a head with shared or own values is the same "
                   f"average) and independent of G: ~ G^{t5['head, s=0']['exponent']}"))
ledger.add("B-thm5-G", "Theorem 5 (eq. 79), Sec. 3.2.2",
           "Sharing keys/values across G query heads (GQA, MQA) reduces the attention output variance to sigma^2/(nG).",
           "Var ~ 1/(nG): G^-1",
           Verdict(checks.weakest(*(checks.exponent_verdict(v["exponent"], -1.0) for v in t5.values())),
                   f"Var ~ G^b with b = {t5['mean, s=0']['exponent']} (mean of heads, uniform), "
                   f"{t5['mean, s=1']['exponent']} (softmax s=1), {t5['wo, s=0']['exponent']} (random W_O), "
                   f"{t5['head, s=0']['exponent']} (one head): heads that share values under uniform attention are "
                   "identical, so the averaging that would divide by G divides by the number of KV heads H/G instead"))
ind = t6["independent, uniform gates"]
ledger.add(
    "B-thm6-output",
    "Theorem 6 (eq. 92)",
    "With uniform top-k gating over independent experts the MoE output variance is the expert variance divided by k.",
    "Var(y) ~ 1/k",
    Verdict(checks.exponent_verdict(ind["exp_out"], -1.0), f"Var(y) ~ k^{ind['exp_out']} (k = {ks[0]}..{ks[-1]})"),
)
ledger.add("B-thm6-jacobian", "Theorem 6 (eq. 93)",
           "With uniform top-k gating over independent experts the Jacobian variance is divided by k.",
           "Var(J) ~ 1/k",
           Verdict(checks.exponent_verdict(ind["exp_jac"], -1.0), f"Var(J) ~ k^{ind['exp_jac']}"))
off6 = [v[e] for k, v in t6.items() if k != "independent, uniform gates" for e in ("exp_out", "exp_jac")]
ledger.add("B-thm6-correlated", "Theorem 6, beyond the assumptions",
           "The 1/k reduction survives correlated experts and non-uniform (softmax) gates.",
           "Var ~ 1/k",
           Verdict(checks.weakest(*(checks.exponent_verdict(e, -1.0) for e in off6)),
                   f"correlated experts (0.2): Var(y) ~ k^{t6['correlated 0.2']['exp_out']}, Var(J) ~ "
                   f"k^{t6['correlated 0.2']['exp_jac']} (a floor at the shared part); softmax gates: Var(y) ~ "
                   f"k^{t6['softmax gates (s=1)']['exp_out']}, Var(J) ~ k^{t6['softmax gates (s=1)']['exp_jac']} (Var "
                   "= s^2 sum g_i^2 >= s^2/k); tolerance 0.1 on the exponent"))

# %%
t5_mqa = t5["mean, s=0"]["var"][-1] / t5["mean, s=0"]["var"][0]
display(Markdown(f"""
**Result.** Theorem 4: Var ~ n^{u} and n Var = {t4['uniform']['var'][-1] * ns[-1]:.2f} at n = {ns[-1]}. With softmax
weights
of logit std 1, 2, 3 the fitted slope over n = {ns[0]}..{ns[-1]} is
{', '.join(f"{t4[f'softmax s={x}']['exponent'].value:.2f}" for x in (1, 2, 3))};
with value rows sharing a common component (correlation 0.05, 0.2) it is {t4['corr 0.05']['exponent'].value:.2f},
{t4['corr 0.2']['exponent'].value:.2f}. Peaked attention (logit std 3) has {sparse_ratio:.0f}x the variance of
uniform attention at
n = {ns[-1]}. Theorem 5: one head's variance does not depend on G (G^{t5['head, s=0']['exponent'].value:.2f}); the
mean of the H heads
grows like G^{t5['mean, s=0']['exponent'].value:.2f} under uniform attention (MQA {t5_mqa:.0f}x above MHA at H =
{n_heads}),
G^{t5['mean, s=1']['exponent'].value:.2f} at logit std 1 and G^{t5['mean, s=3']['exponent'].value:.2f} at std 3, and
through a random
output projection like G^{t5['wo, s=0']['exponent'].value:.2f}. Theorem 6: Var(y) ~ k^{ind['exp_out'].value:.2f},
Var(J) ~
k^{ind['exp_jac'].value:.2f} for independent experts with uniform gates;
k^{t6['correlated 0.2']['exp_out'].value:.2f} (output)
with correlated experts and k^{t6['softmax gates (s=1)']['exp_out'].value:.2f} with softmax gates.
"""))

# %% [markdown]
# Theorem 4 holds exactly under its assumptions. How far the 1/n survives: with softmax weights
# Var = sigma^2 E sum p_i^2 ~ e^(s^2)/n only once n >> e^(s^2), and correlated values give a floor, so the
# statement that the decay survives both fails at the stated tolerance. Peaked attention, the "attention
# sparsity" paper B says long contexts induce, *raises* the variance at fixed n: by the theorem's own
# formula, variance falls with the number of keys effectively averaged, so sparser attention damps less.
#
# Theorem 5's per-head statement holds (sigma^2/n whatever G). Its headline sigma^2/(nG) fails under every
# read-out: heads that share their value rows produce identical outputs under uniform attention, so
# averaging the H heads divides the variance by the number of KV heads H/G, not by G; softmax attention
# decorrelates heads only partly, and through a random output projection the expected variance does not
# depend on G at all. Under these assumptions KV sharing never lowers the variance; paper B's measured
# halving for MQA (Table 4) must come from training, not from this mechanism.
#
# Theorem 6 holds exactly for independent experts with uniform gates; with correlated experts the decay
# flattens towards a floor, and softmax gates give Var = s^2 sum g_i^2 >= s^2/k, so the 1/k does not
# survive either departure.

# %% [markdown]
# ## Where the theory of paper B is loose or wrong (summary of the numbers above)
#
# - **Lemma 1**'s premise, exponential variance growth, does not occur in Pre-LN stacks (linear at init,
#   at most quadratic for any bounded weights), and where it does not occur the Jacobian product grows;
#   the implication itself holds as mathematics.
# - **Theorems 1 and 2** hold but loosely: the Cauchy-Schwarz step costs a factor that grows like
#   (1 + 2 sigma sqrt(rho))^L; the exact gain is 1 + sigma^2 rho. What controls variance is the energy
#   a mask removes, not its density; magnitude-based (activation) sparsity removes little energy.
# - **Theorem 3** is exact under its assumptions but stops holding once the gradient carries signal:
#   the output variance then follows the ridge shrinkage 1/(1 + lam)^2, above the bound.
# - **Theorem 4** is exact; softmax attention keeps the 1/n only for n >> e^(s^2), correlated values
#   give a floor, and peaked ("sparse") attention increases the variance, against section 3.2.1.
# - **Theorem 5**'s sigma^2/(nG) is false under its own assumptions (identical heads under uniform
#   attention); the variance of the averaged heads grows with G.
# - **Theorem 6** is exact for independent experts with uniform gates; correlation and softmax gates
#   break the 1/k. Eqs. 105-110 (an MoE "scaling factor") lost their symbols and are not checked.

# %% [markdown]
# ## Verdicts
#
# Each row: the reconstructed statement, what the paper states, what we measured, and the verdict by the
# rules stated at the top (`cod/theory/checks.py`).

# %%
print(f"runtime {results.save():.0f} s, profile {profile}")
ledger.save(out)

# %% [markdown]
# ## What the figures show
# Generated from the claims this notebook judged (its claims.json): no number below is typed.

# %%
from cod.claims import scoreboard

display(Markdown(scoreboard.closing_of(figures_dir)))
