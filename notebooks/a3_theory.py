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
# # Paper A, sections 3-4.1 and Appendix A: every lemma and theorem, checked numerically
#
# *The Curse of Depth in Large Language Models* (Sun et al.) explains the curse of depth with a
# variance argument: under Pre-LN the variance of the residual stream grows with depth (Lemma 3.2),
# so each block's Jacobian approaches the identity (eq. 5) and the product of Jacobians stays bounded
# (Theorem 3.3); LayerNorm Scaling (LNS, the pre-norm output of block l times 1/sqrt(l)) slows the
# growth to a polynomial (Lemma 4.1), keeps the product growing (Theorem 4.2) and bounds the first
# layer's gradient (Theorem 4.3). Appendix A proves these from Assumption 3.1 (Gaussian, zero-mean,
# independent inputs and weights), uniform attention (App. A.1.1, Lemma A.1) and a ReLU FFN (A.1.2).
#
# For each statement this notebook simulates the object the statement is about, under the
# statement's own assumptions, over many independent draws, and compares the measured quantity with
# the bound or the law (exponents fitted with bootstrap 95% intervals over draws). Then it steps off
# the assumptions: softmax attention, and the package's own Pre-LN / LNS language model at a tiny size
# (`cod.model.Transformer`: RMSNorm with gain, causal softmax attention with rotary positions, SwiGLU,
# LLaMA's 0.02 initialisation) at initialisation and after a little training on a synthetic Markov
# source. All code lives in `cod.theory`; every verdict is computed from the numbers by the rules in
# `cod.theory.claims` and written to `claims.json`.

# %% tags=["parameters"]
profile = "default"  # "smoke" (seconds, for tests) | "default" (the committed run) | "paper" (larger samples)
figures_dir = None  # default: figures/<profile>/a3_theory
seed = 0
torch_threads = 1  # one thread per process is fastest on the shared 2-core CPU
dpi = 120

# %%
figures_dir = figures_dir or f"figures/{profile}/a3_theory"

# %%
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from cod.theory import attention, bounds, claims, fits, jacobians, profiles, real_stack, residual_variance
from cod.theory.stack import StackConfig, simulate

torch.set_num_threads(torch_threads)
P = profiles.A3[profile]
out = Path(figures_dir)
out.mkdir(parents=True, exist_ok=True)
t_start = time.time()
ledger = claims.Ledger("A", seed, profile)
add = ledger.add
results = {"profile": profile, "seed": seed, "settings": P}


def save(fig, name):
    fig.tight_layout()
    fig.savefig(out / name, dpi=dpi)
    plt.show()
    plt.close(fig)


# %% [markdown]
# ## 1. Lemmas 3.2 and 4.1: variance against depth in random Pre-LN and LNS stacks
#
# The stack of eqs. 2-3 under Assumption 3.1: i.i.d. Gaussian input tokens, every weight matrix
# i.i.d. N(0, 1/d), RMS normalisation, the uniform attention of App. A.1.1 and the ReLU FFN of eq. 28;
# LNS multiplies both normalised inputs of block l by 1/sqrt(l) (eq. 51). `var_samples` independent
# stacks are drawn; sigma^2_{x_l} is the per-token variance across features (paper B eq. 4) averaged
# over tokens. We fit the growth from the input, sigma^2_l - sigma^2_1 ~ l^beta, and compare the best
# power, exponential and logarithmic laws. Alongside, a rigorous bound (`residual_variance.rms_bound`):
# every branch sees an input of fixed norm, so it adds at most c_l (||W_V W_O|| + ||W_1|| ||W_2||) to
# the rms of a token; sigma_{x_L} therefore grows at most linearly (Pre-LN) or like sqrt(L) (LNS).

# %%
base = StackConfig(d_model=P["var_d"], d_ff=4 * P["var_d"], n_heads=4, n_tokens=P["var_tokens"], n_layers=P["var_layers"])
runs = {norm: simulate(base.with_(norm=norm), P["var_samples"], seed) for norm in ("pre_ln", "lns")}
runs_causal = {norm: simulate(base.with_(norm=norm, attention="causal"), P["var_samples"], seed) for norm in ("pre_ln", "lns")}
rbound = {norm: residual_variance.rms_bound(base.with_(norm=norm), P["var_samples"], seed) ** 2 for norm in runs}
growth = {}
for norm, st in {**{k: v for k, v in runs.items()}, **{k + "_causal": v for k, v in runs_causal.items()}}.items():
    beta = residual_variance.growth_exponent(st, n_boot=P["n_boot"], seed=seed)
    rms = residual_variance.growth_models(st)
    growth[norm] = dict(beta=beta, rms=rms, var_last=float(st.var.mean(0)[-1]), var_first=float(st.var.mean(0)[0]))
    print(f"{norm:14s} beta = {beta}   RMS log-error of best fit: " + ", ".join(f"{k} {v:.3f}" for k, v in rms.items()))
for norm in runs:
    viol = int((runs[norm].var > rbound[norm]).sum())
    print(f"{norm}: rigorous bound / measured at l = L: {np.median(rbound[norm][:, -1] / runs[norm].var[:, -1]):.0f}x, violations {viol}")
results["variance_growth"] = growth
results["rigorous_bound_ratio_at_L"] = {n: float(np.median(rbound[n][:, -1] / runs[n].var[:, -1])) for n in runs}

# %%
fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
layer = np.arange(P["var_layers"] + 1)
for norm, color in (("pre_ln", "C0"), ("lns", "C1")):
    v = runs[norm].var
    m, lo, hi = v.mean(0), *np.percentile(v, [2.5, 97.5], 0)
    fit = fits.power_law(layer[1:], (m - m[0])[1:])
    expo = fits.exponential_law(layer[1:], m[1:])
    for ax in axes:
        ax.plot(layer, m, color=color, label=f"{norm} (mean of {v.shape[0]} stacks, 95% band)")
        ax.fill_between(layer, lo, hi, color=color, alpha=0.2)
        ax.plot(layer[1:], m[0] + np.exp(fit.coef[1]) * layer[1:] ** fit.coef[0], "--", color=color,
                label=f"power fit: sigma^2_1 + a l^{growth[norm]['beta'].value:.2f}")
    for ax in axes[1:]:
        ax.plot(layer[1:], np.exp(expo.coef[1] + expo.coef[0] * layer[1:]), "-.", color=color, alpha=0.7, label=f"best exponential ({norm})")
        ax.plot(layer, rbound[norm].mean(0), ":", color=color, label=f"rigorous bound ({norm})")
axes[0].set(xlabel="block l", ylabel="sigma^2 of x_l", title="linear axes")
axes[1].set(xlabel="block l", ylabel="sigma^2 of x_l", title="log y (an exponential is a line)", yscale="log")
axes[2].set(xlabel="block l", ylabel="sigma^2 of x_l", title="log-log (a power law is a line)", xscale="log", yscale="log", xlim=(1, None))
axes[0].legend(fontsize=7)
axes[2].legend(fontsize=6)
save(fig, "variance_vs_depth.png")

# %% [markdown]
# **What the figure shows** (committed run: 48 stacks, d = 64, 16 tokens, 96 blocks). Pre-LN variance
# grows linearly in depth: sigma^2_l - sigma^2_1 ~ l^1.07 [1.06, 1.09] (causal softmax attention:
# l^1.06), and the best exponential fits 25x worse in log space (RMS log-error 0.45 vs 0.017); on the
# log-y panel the curve bends down, on the log-log panel it is straight. Nothing exponential happens.
# The reason is visible in the recursion: the branch output has a fixed variance (its input is
# normalised) and is uncorrelated with the residual (|rho| < 0.05, section 9), so
# sigma^2_{l+1} = sigma^2_l + const. Lemma 3.2's two bounds, Theta(L) <= sigma^2 <= Theta(exp L), hold,
# but only the lower one is approached; the rigorous bound (dotted) shows that no Pre-LN stack with
# bounded weights can grow faster than L^2, whatever the correlations. It holds on every draw and is
# itself loose (about 4000x at l = 96), but it is polynomial.
#
# Under LNS the increments shrink like 1/l (the branch sees an input scaled by 1/sqrt(l)), and the
# growth decelerates: l^0.34 [0.32, 0.35] over 96 blocks, with the power and logarithmic laws both far
# better than the exponential. **Lemma 4.1's lower bound Theta(L) fails** for the very stack it is
# about; its upper bound Theta(L^(2-eps)) holds but is far from tight (the rigorous bound is O(L) for
# LNS with any bounded weights, so the L^(2-eps) regime cannot occur either).

# %%
beta_pre, beta_lns = growth["pre_ln"]["beta"], growth["lns"]["beta"]
add("A-lem32-bounds", "Lemma 3.2",
    "Under Pre-LN the variance grows at least linearly and at most exponentially with depth: Theta(L) <= sigma^2_{x_L} <= Theta(exp L) (eq. 7).",
    "Theta(L) <= sigma^2 <= Theta(exp(L))",
    f"random Pre-LN stack (uniform attn, ReLU, L={P['var_layers']}): sigma^2_l - sigma^2_1 ~ l^beta, beta = {beta_pre}; "
    f"RMS log-error power {growth['pre_ln']['rms']['power']:.3f} vs exponential {growth['pre_ln']['rms']['exponential']:.3f}; "
    f"causal softmax beta = {growth['pre_ln_causal']['beta']}; a rigorous O(L^2) bound is violated on {int((runs['pre_ln'].var > rbound['pre_ln']).sum())} of "
    f"{runs['pre_ln'].var.size} (draw, layer) pairs, so exp(L) is never approached",
    claims.weakest(claims.at_least_verdict(beta_pre, 1.0),
                   "holds loosely" if growth["pre_ln"]["rms"]["exponential"] > 2 * growth["pre_ln"]["rms"]["power"] else "holds"))
add("A-abstract-exponential", "Abstract, Sec. 1, App. B",
    "Pre-LN output variance grows exponentially with depth.",
    "exponential growth in depth",
    f"best-fit RMS log-error at init: exponential {growth['pre_ln']['rms']['exponential']:.3f} vs power {growth['pre_ln']['rms']['power']:.3f} "
    f"(beta = {beta_pre}); the exponential law is rejected",
    claims.law_preference_verdict(growth["pre_ln"]["rms"], "exponential"))
add("A-lem41-bounds", "Lemma 4.1",
    "Under LNS the variance growth is polynomial: Theta(L) <= sigma^2_{x_L} <= Theta(L^(2-eps)), 1/2 <= eps < 1 (eq. 14).",
    "between Theta(L) and Theta(L^(2-eps))",
    f"random LNS stack: beta = {beta_lns} (lower bound needs beta >= 1); best law: "
    f"{min(growth['lns']['rms'], key=growth['lns']['rms'].get)} (RMS log-error " + ", ".join(f"{k} {v:.3f}" for k, v in growth['lns']['rms'].items()) + ")",
    claims.at_least_verdict(beta_lns, 1.0))

# %% [markdown]
# ## 2. The per-layer law of Lemmas 3.2 and 4.1
#
# The lemmas' core is a per-layer statement: sigma^2_{l+1} / sigma^2_l - 1 = Theta(1/sigma_l) (Pre-LN,
# eq. 30-31) and Theta(1/(sqrt(l) sigma_l)) (LNS, eq. 54). We fit g_l - 1 ~ sigma_l^b l^c on all
# blocks of stacks whose input scale is varied over `input_stds`, so that sigma_l and l are not
# collinear. The lemmas say (b, c) = (-1, 0) and (-1, -1/2). An independent, normalised branch of
# fixed variance gives g - 1 = const / sigma^2, i.e. b = -2 (and c = -1 under LNS, whose branch
# variance falls like 1/l).

# %%
local = {}
for norm in ("pre_ln", "lns"):
    sweep = [simulate(base.with_(norm=norm, input_std=s, n_layers=min(P["var_layers"], 48)), P["var_samples"], seed)
             for s in P["input_stds"]]
    local[norm] = residual_variance.local_law(sweep, n_boot=P["n_boot"], seed=seed)
    print(f"{norm}: b = {local[norm][0]},  c = {local[norm][1]}")
results["local_law"] = {k: {"b": v[0], "c": v[1]} for k, v in local.items()}
add("A-lem32-law", "Lemma 3.2 (eqs. 6, 30-31)",
    "Per block, sigma^2_{x_{l+1}} = sigma^2_{x_l} Theta(1 + 1/sigma_{x_l}): the relative variance gain falls like 1/sigma.",
    "g_l - 1 ~ sigma_l^-1",
    f"g_l - 1 ~ sigma_l^b l^c with b = {local['pre_ln'][0]}, c = {local['pre_ln'][1]} (input std {P['input_stds']})",
    claims.exponent_verdict(local["pre_ln"][0], -1.0, tol=0.15))
add("A-lem41-law", "Lemma 4.1 (eqs. 13, 54)",
    "Per block under LNS, sigma^2_{x_{l+1}} = sigma^2_{x_l} Theta(1 + 1/(sqrt(l) sigma_{x_l})).",
    "g_l - 1 ~ sigma_l^-1 l^-1/2",
    f"b = {local['lns'][0]}, c = {local['lns'][1]}",
    claims.weakest(claims.exponent_verdict(local["lns"][0], -1.0, tol=0.15), claims.exponent_verdict(local["lns"][1], -0.5, tol=0.15)))

# %% [markdown]
# **Result.** The per-layer gain falls like sigma^-2.15 [-2.21, -2.12] under Pre-LN and like
# sigma^-2.15 l^-0.94 under LNS: the exponents of an independent branch of fixed variance (b = -2,
# and c = -1 for LNS), not the lemmas' sigma^-1 (and l^-1/2). The lemmas' own proof explains the gap:
# eqs. 21-23 keep the cross term rho sigma_x sigma_branch, which is what makes the gain Theta(1/sigma);
# Assumption 3.1 (independence) sets rho = 0, and then the gain is Theta(1/sigma^2). The lemmas'
# formulas (6) and (13) are therefore not the consequence of their own assumption, and the
# difference is not cosmetic: it is the difference between Theta(L^2) and Theta(L) for Pre-LN and
# between Theta(L) and Theta(log L) for LNS (next section).

# %% [markdown]
# ## 3. The lemmas' recursions and proof steps, evaluated exactly (App. A.1, A.3)
#
# Taken literally, recursion (6) with unit constant, sigma^2_{l+1} = sigma^2_l (1 + 1/sigma_l), means
# sigma_{l+1} ~ sigma_l + 1/2: it gives Theta(L^2), never exp(L); recursion (13) for LNS gives Theta(L).
# With an independent branch (what section 2 measures) they give Theta(L) and Theta(log L). The
# proofs' lower-bound step, exp(sum_{k<L} (1/k - 1/(2k))) with sigma^2_k = k, is claimed to be
# Theta(exp(sqrt L)) (eq. 34) and Theta(L) (eq. 57); we evaluate it exactly.

# %%
n_rec = 10_000
rec_fit = {}
for lns in (False, True):
    for form in ("paper", "independent"):
        s2 = residual_variance.iterate_recursion(n_rec, lns=lns, form=form)
        layers = np.arange(1, n_rec + 1)
        rec_fit[f"{'lns' if lns else 'pre_ln'}_{form}"] = fits.power_law(layers[n_rec // 10:], s2[n_rec // 10:] - s2[0]).estimate(0)
Ls = np.array([10, 100, 1000, 10_000, 100_000])
lower = residual_variance.proof_lower_bound(Ls)
lower_fit = fits.power_law(Ls, lower).estimate(0)
for k, v in rec_fit.items():
    print(f"recursion {k:20s}: sigma^2_L - sigma^2_1 ~ L^{v.value:.3f} (last 90% of {n_rec} layers)")
print("eqs. 34/57 lower bound at L =", Ls, ":", np.round(lower, 2), " -> L^", lower_fit)
results["recursions"] = rec_fit
results["proof_lower_bound"] = dict(L=Ls, value=lower, exponent=lower_fit)
add("A-appA1-eq34", "App. A.1 eq. 34, App. A.3 eq. 57",
    "The proofs' lower bound exp(sum_{k<L}(1/k - 1/(2k))) (with sigma^2_k = k) is Theta(exp(sqrt L)) (eq. 34), resp. Theta(L) (eq. 57).",
    "Theta(exp(sqrt(L))) and Theta(L)",
    f"exact evaluation for L = 10..1e5: ~ L^{lower_fit.value:.3f}, i.e. Theta(sqrt L); recursion (6) taken literally gives "
    f"L^{rec_fit['pre_ln_paper'].value:.2f}, (13) gives L^{rec_fit['lns_paper'].value:.2f}",
    claims.exponent_verdict(lower_fit, 1.0, tol=0.05))

# %% [markdown]
# **Result.** Iterated literally, recursion (6) grows like L^2.00 and (13) like L^1.00: the only
# growth rates consistent with the lemmas' own formulas are quadratic (Pre-LN) and linear (LNS),
# inside the stated intervals but never near exp(L). With independent branches (what Assumption
# 3.1 implies and section 2 measures) the rates are L^1 and log L (L^0.11 over the last 90% of 10^4
# layers). The proofs' lower-bound step exp(sum_{k<L} 1/(2k)) is Theta(sqrt L) (fitted exponent
# 0.502), not Theta(exp(sqrt L)) as eq. 34 states nor Theta(L) as eq. 57 states: the proof of the
# Theta(L) lower bound does not go through even with its own choice sigma^2_k = k.

# %% [markdown]
# ## 4. Block Jacobians approach the identity as the input variance grows (eq. 5)
#
# Eq. 5: d PreLN(x)/dx = I + (df/dN)(dN/dx), and ||dN/dx|| = 1/rms(x). One Pre-LN block (causal
# softmax attention, SwiGLU, the real-model ingredients) is fed N(0, s^2) tokens for s over three
# decades; ||J - I||_2 of the whole block (on the full sequence, exact forward-mode Jacobian) is
# fitted against s on the upper half of the range. The law is ||J - I|| ~ s^-1, i.e. (variance)^-1/2.

# %%
id_cfg = StackConfig(d_model=P["jac_d"], d_ff=4 * P["jac_d"], n_heads=4, n_tokens=max(P["jac_tokens"], 4),
                     attention="causal", ffn="swiglu")
stds = np.array(P["id_stds"])
dev = jacobians.identity_approach(id_cfg, stds, P["id_samples"], seed)
upper = slice(len(stds) // 2, None)
id_slope = fits.bootstrap(dev[:, upper], lambda d: fits.power_law(stds[upper], d.mean(0)).coef[:1], P["n_boot"], seed)[0]
print("||J - I||_2 mean over draws:", np.round(dev.mean(0), 4), "  slope vs input std:", id_slope)
results["identity_approach"] = dict(stds=stds, dev=dev.mean(0), slope=id_slope)
fig, ax = plt.subplots(figsize=(5.5, 4))
ax.loglog(stds, dev.mean(0), "o-", label="||J - I||_2 of one block (mean)")
ax.fill_between(stds, dev.min(0), dev.max(0), alpha=0.2)
ax.loglog(stds, dev.mean(0)[-1] * (stds / stds[-1]) ** -1.0, "k--", label="slope -1 (eq. 5)")
ax.set(xlabel="input std s (variance s^2)", ylabel="||J - I||_2", title=f"fitted slope {id_slope}")
ax.legend()
save(fig, "block_jacobian_vs_input_variance.png")
add("A-eq5-identity", "Sec. 3, eq. 5",
    "As the input variance grows, a Pre-LN block's Jacobian approaches the identity.",
    "||J - I|| -> 0, through dLN/dx ~ 1/sigma",
    f"||J - I||_2 ~ s^b with b = {id_slope} over s in [{stds[upper][0]:g}, {stds[-1]:g}] (causal softmax, SwiGLU)",
    claims.exponent_verdict(id_slope, -1.0))

# %% [markdown]
# **Result.** ||J - I||_2 falls exactly like s^-1.00 [-1.00, -1.00] once the input dominates the branch
# outputs (s >= 10): a Pre-LN sublayer's branch sees only x / rms(x), so its contribution to the
# Jacobian scales as 1/sigma. This is the one mechanism of the paper that holds without caveat. At
# small s the block is not scale-invariant (the FFN sees x + Attn(...)), and the slope flattens.

# %% [markdown]
# ## 5. Theorems 3.3 and 4.2: the Jacobian product and its bound against depth
#
# The exact Jacobian d x_{L+1} / d x_1 of the whole sequence (n tokens x d features) is propagated
# through `jac_layers` random blocks (uniform attention, ReLU FFN, sigma_W = 1/sqrt(d)), and its
# spectral norm compared with: the paper's bound eq. 9 (Pre-LN) / eq. 15 (LNS) with A, B of eqs.
# 47-48 evaluated at the measured sigma_{x_l}; the per-sublayer product of eq. 36 / 61 as printed;
# and the product of rigorous per-sublayer bounds 1 + c_l ||W_V W_O|| / min rms(x) and
# 1 + c_l ||W_1|| ||W_2|| / min rms(x') that follow from ||dN/dx|| = 1/rms(x).

# %%
jcfg = StackConfig(d_model=P["jac_d"], d_ff=4 * P["jac_d"], n_heads=4, n_tokens=P["jac_tokens"], n_layers=P["jac_layers"])
jac = {norm: jacobians.run_jacobians(jcfg.with_(norm=norm), P["jac_samples"], seed) for norm in ("pre_ln", "lns")}
A, B = bounds.takase_constants(jcfg.sigma_w, jcfg.d_model, jcfg.d_ff, jcfg.n_heads, jcfg.n_tokens)
print(f"A = {A:.1f}, B = {B:.1f} (eqs. 47-48 at d={jcfg.d_model}, d_ff={jcfg.d_ff}, h={jcfg.n_heads}, s={jcfg.n_tokens}, sigma={jcfg.sigma_w:.3f})")
jres = {}
for norm, r in jac.items():
    lns = norm == "lns"
    log_meas = np.log10(r.prod_norm)
    log_eq9 = bounds.log10_product_bound(r.rms_x, A, B, lns=lns)
    attn_f, ffn_f = bounds.lemma_a2_factors(r.rms_x, r.rms_mid, jcfg.sigma_w, jcfg.d_model, jcfg.d_ff, jcfg.n_heads, jcfg.n_tokens, lns=lns)
    log_eq36 = np.cumsum(np.log10(attn_f * ffn_f), 1)
    log_rig = np.cumsum(np.log10(r.rigorous_attn * r.rigorous_ffn), 1)
    depth = np.arange(1, r.prod_norm.shape[1] + 1)
    half = depth >= depth[-1] // 4
    gamma = fits.bootstrap(r.prod_norm[:, half], lambda p: fits.power_law(depth[half], p.mean(0)).coef[:1], P["n_boot"], seed)[0]
    jres[norm] = dict(prod_norm=r.prod_norm.mean(0), growth_exponent=gamma, log10_eq9=log_eq9.mean(0), log10_eq36=log_eq36.mean(0),
                      log10_rigorous=log_rig.mean(0), ffn_factor_violations=float((r.norm_ffn > ffn_f).mean()),
                      attn_factor_violations=float((r.norm_attn > attn_f).mean()),
                      rigorous_violations=float(((r.norm_attn > r.rigorous_attn) | (r.norm_ffn > r.rigorous_ffn)).mean()),
                      product_violations=float((log_meas > log_eq9).mean()),
                      dev_diag=r.dev_diag.mean(0), dev_block=r.dev_block.mean(0))
    print(f"{norm}: ||dy_L/dx_1|| at L=1,{depth[-1]}: {r.prod_norm.mean(0)[0]:.2f}, {r.prod_norm.mean(0)[-1]:.2f}; growth ~ L^{gamma};"
          f" log10 bounds at L: eq.9 {log_eq9.mean(0)[-1]:.0f}, eq.36 {log_eq36.mean(0)[-1]:.0f}, rigorous {log_rig.mean(0)[-1]:.1f};"
          f" printed FFN factor violated on {100 * jres[norm]['ffn_factor_violations']:.0f}% of (draw, block)")
results["jacobian_product"] = jres

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4))
for ax, norm in zip(axes[:2], ("pre_ln", "lns")):
    d = np.arange(1, len(jres[norm]["prod_norm"]) + 1)
    ax.plot(d, np.log10(jres[norm]["prod_norm"]), "k-", lw=2, label="measured ||dy_L/dx_1||_2")
    ax.plot(d, jres[norm]["log10_rigorous"], "g--", label="product of rigorous per-sublayer bounds")
    ax.plot(d, jres[norm]["log10_eq36"], "b:", label="eq. 36/61 as printed")
    ax.plot(d, jres[norm]["log10_eq9"], "r-.", label="eq. 9/15 with A, B of eqs. 47-48")
    ax.set(xlabel="depth L", ylabel="log10 of the norm (log-scaled axis)", title=f"{norm}: Jacobian product and bounds", yscale="log")
    ax.legend(fontsize=7)
for norm in ("pre_ln", "lns"):
    d = np.arange(1, len(jres[norm]["prod_norm"]) + 1)
    axes[2].loglog(d, jres[norm]["prod_norm"], label=f"{norm}: ~L^{jres[norm]['growth_exponent'].value:.2f}")
axes[2].set(xlabel="depth L", ylabel="||dy_L/dx_1||_2", title="measured product, log-log")
axes[2].legend()
save(fig, "jacobian_product_vs_depth.png")

# %% [markdown]
# **What the figure shows** (12 draws, d = 32, 4 tokens, 64 blocks; A = 3312, B = 102 from eqs. 47-48).
# All bounds hold on every draw except the FFN factor of eq. 36/41 as printed,
# 1 + sigma^2 / (sigma_x' (sqrt d + sqrt d_FFN)^2): the proof divides by (sqrt d + sqrt d_FFN)^2 where
# eq. 40 multiplies by it, and the printed factor (about 1 + 1e-4 here) is below the measured norm of
# the FFN sublayer's Jacobian on every (draw, block). The correct factor, 1 + c_l ||W_1|| ||W_2|| / rms(x'),
# holds everywhere. The eq. 9 / eq. 15 bounds hold but are vacuous: with A in the thousands they
# exceed the measured norm by 10^166 (Pre-LN) and 10^105 (LNS) at L = 64.
#
# The measured product is not bounded under Pre-LN: it grows like L^0.55 [0.47, 0.62] (5.4 at L = 1,
# 77 at L = 64). Under LNS it grows *slower*, like L^0.18 [0.14, 0.21] (16 at L = 64), and LNS's deep
# blocks are closer to the identity (||Jbar - I||_F / d = 0.008 vs 0.017 at block 64): by eq. 5 the
# deviation of block l is c_l / sigma_l, and LNS shrinks both factors' product. The paper's reading
# (Pre-LN saturates, LNS keeps growing, so LNS has fewer identity-like layers) is the opposite of what
# its own mechanism produces at initialisation.

# %%
for norm, item, eq in (("pre_ln", "Theorem 3.3", "eq. 9"), ("lns", "Theorem 4.2", "eq. 15")):
    r = jres[norm]
    slack = r["log10_eq9"][-1] - np.log10(r["prod_norm"][-1])
    add(f"A-thm{item.split()[1].replace('.', '')}-bound", f"{item} ({eq})",
        f"||dy_L/dx_1||_2 <= prod_l (1 + A/({'l ' if norm == 'lns' else ''}sigma_l) + B/({'l^2 ' if norm == 'lns' else ''}sigma_l^2)) with A, B of eqs. 47-48.",
        f"{eq} holds",
        f"holds on {100 * (1 - r['product_violations']):.0f}% of (draw, depth); at L={P['jac_layers']} the bound exceeds the measured norm "
        f"{r['prod_norm'][-1]:.1f} by 10^{slack:.0f} (A = {A:.0f}, B = {B:.0f})",
        claims.bound_verdict(10 ** np.clip(np.log10(r["prod_norm"]), None, 300), 10 ** np.clip(r["log10_eq9"], None, 300)))
add("A-lemA2-ffn-factor", "Lemma A.2 (eqs. 36, 41)",
    "The FFN sublayer Jacobian satisfies ||dy_l/dx'_l||_2 <= 1 + sigma^2 / (sigma_x' (sqrt d + sqrt d_FFN)^2).",
    "eq. 41 bound holds",
    f"violated on {100 * jres['pre_ln']['ffn_factor_violations']:.0f}% (Pre-LN) and {100 * jres['lns']['ffn_factor_violations']:.0f}% (LNS) of (draw, block); "
    f"the rigorous 1 + ||W_1|| ||W_2|| / rms(x') holds on {100 * (1 - jres['pre_ln']['rigorous_violations']):.0f}%",
    "fails" if max(jres["pre_ln"]["ffn_factor_violations"], jres["lns"]["ffn_factor_violations"]) > 0 else "holds")
add("A-lns-vs-preln-product", "Sec. 4.1 after Theorem 4.2",
    "With LNS the gradient norm ||dy_L/dx_1|| keeps growing with depth, whereas Pre-LN's is bounded by a constant (fewer identity-like layers).",
    "Pre-LN: <= M (saturates); LNS: grows (omega(1))",
    f"measured growth exponents at init: Pre-LN L^{jres['pre_ln']['growth_exponent']}, LNS L^{jres['lns']['growth_exponent']}; "
    f"deep-block ||Jbar - I||_F/d at L={P['jac_layers']}: Pre-LN {jres['pre_ln']['dev_diag'][-1]:.4f}, LNS {jres['lns']['dev_diag'][-1]:.4f}",
    "fails" if jres["lns"]["growth_exponent"].value < jres["pre_ln"]["growth_exponent"].value else "holds")

# %% [markdown]
# ## 6. The two regimes of Theorems 3.3 and 4.2, and the constant M of eq. 49
#
# Theorem 3.3: if sigma^2_l ~ e^l the product of eq. 9 converges to a constant M (eq. 49); if
# sigma^2_l ~ l it is Theta(L) (eq. 11/50). Theorem 4.2: under LNS with sigma^2_l ~ l^(2-eps) the
# product (eq. 15) is omega(1), i.e. keeps growing. We evaluate the products exactly (log space) for
# A = 1, B = 1 and for the A, B of section 5, and compare eq. 49's M with the true limit.

# %%
Lmax = 100_000
ll = np.arange(1, Lmax + 1)
regimes = {}
for a_, b_ in ((1.0, 1.0), (A, B)):
    key = f"A={a_:.3g},B={b_:.3g}"
    exp_growth = bounds.log_product(a_, b_, np.exp(ll[:200] / 2))  # sigma_l = e^(l/2)
    lin = bounds.log_product(a_, b_, np.sqrt(ll))  # sigma^2_l = l, Pre-LN
    lns_poly = bounds.log_product(a_, b_, ll ** 0.75, layer_power=1.0)  # sigma^2_l = l^1.5 (eps = 1/2), LNS
    local_exp = np.gradient(lin, np.log(ll))  # d ln P / d ln L
    regimes[key] = dict(exp_limit_log=exp_growth[-1], exp_change_last_100=exp_growth[-1] - exp_growth[99],
                        paper_M_log=np.log(bounds.paper_m(a_, b_)) if a_ < 50 else float("-inf"),
                        linear_local_exponent_at=dict(L1e2=local_exp[99], L1e4=local_exp[9_999], L1e5=local_exp[-1]),
                        lns_log_at=dict(L1e3=lns_poly[999], L1e5=lns_poly[-1]))
    print(f"{key}: sigma^2=e^l: ln P converges to {exp_growth[-1]:.3f} (eq. 49: ln M = {regimes[key]['paper_M_log']:.3f});"
          f" sigma^2=l: local exponent d lnP/d lnL = {local_exp[99]:.2f} (L=1e2), {local_exp[9_999]:.2f} (1e4), {local_exp[-1]:.2f} (1e5);"
          f" LNS sigma^2=l^1.5: ln P = {lns_poly[999]:.4f} (L=1e3), {lns_poly[-1]:.4f} (1e5)")
ma = np.linspace(0.1, 10, 200)
m_true = np.array([bounds.log_product(x, 1.0, np.exp(np.arange(1, 200)))[-1] for x in ma])  # the paper's own sigma_k = e^k
m_paper = np.array([np.log(bounds.paper_m(x, 1.0)) for x in ma])
a_cross = float(ma[np.argmax(m_paper < m_true)]) if np.any(m_paper < m_true) else float("nan")
print(f"eq. 49's M falls below the product's true limit for A >= {a_cross:.2f} (B = 1)")
results["bound_regimes"] = regimes
results["paper_M_invalid_from_A"] = a_cross
fig, ax = plt.subplots(figsize=(5.5, 4))
ax.plot(ma, m_true, label="ln of the true limit of prod (1 + A/e^k + B/e^2k)")
ax.plot(ma, m_paper, "--", label="ln M of eq. 49")
ax.set(xlabel="A (B = 1)", ylabel="ln (limit)", title="eq. 49 against the product it approximates")
ax.legend(fontsize=8)
save(fig, "paper_M_vs_true_limit.png")
key = f"A={A:.3g},B={B:.3g}"
add("A-thm33-exp-regime", "Theorem 3.3 (eq. 10, 49)",
    "If sigma^2_l grows exponentially, the bound converges to a constant M given by eq. 49.",
    "bounded by M of eq. 49",
    f"the product converges (ln P changes by {regimes['A=1,B=1']['exp_change_last_100']:.1e} over its last 100 factors); "
    f"eq. 49's second-order M is below the true limit, hence not a bound, for A >= {a_cross:.2f} (B = 1), and A = {A:.0f} at these widths; "
    f"exponential variance growth itself is impossible for bounded weights (section 1)",
    "holds loosely" if np.isfinite(a_cross) else "holds")
add("A-thm33-linear-regime", "Theorem 3.3 (eq. 11, 50)",
    "If sigma^2_l grows linearly, the bound grows linearly in depth: Theta(L).",
    "Theta(L)",
    f"with sigma^2_l = l and A = B = 1 the local exponent d ln P / d ln L is {regimes['A=1,B=1']['linear_local_exponent_at']['L1e2']:.1f} at L=1e2 "
    f"and {regimes['A=1,B=1']['linear_local_exponent_at']['L1e5']:.0f} at L=1e5: the bound grows like exp(2A sqrt L), not Theta(L)",
    "fails" if regimes["A=1,B=1"]["linear_local_exponent_at"]["L1e5"] > 2 else "holds")
add("A-thm42-regime", "Theorem 4.2 (eqs. 16, 64-65)",
    "Under LNS with sigma^2_l ~ l^(2-eps) the bound is omega(1): it keeps growing with depth.",
    "omega(1)",
    f"with sigma^2_l = l^1.5 (eps = 1/2), A = B = 1: ln P = {regimes['A=1,B=1']['lns_log_at']['L1e3']:.4f} at L=1e3 and "
    f"{regimes['A=1,B=1']['lns_log_at']['L1e5']:.4f} at L=1e5: the product converges (its terms ~ l^-(2-eps/2) are summable; eq. 64 itself tends to a constant)",
    "fails" if regimes["A=1,B=1"]["lns_log_at"]["L1e5"] - regimes["A=1,B=1"]["lns_log_at"]["L1e3"] < 0.01 else "holds")

# %% [markdown]
# **Result.** With exponential variance the product does converge (Theorem 3.3's first case holds as
# mathematics), but eq. 49's closed form for the limit, a second-order truncation of an alternating
# series, is *below* the true limit for every A we tried (ln M = 0.60 vs 1.69 at A = B = 1), so M is
# not an upper bound; at the A of real widths it underflows to 0. With linear variance the product is
# not Theta(L): its local exponent d ln P / d ln L is 10 at L = 100 and 317 at L = 10^5, i.e. it grows
# like exp(2A sqrt L) (the proof of eq. 50 uses sigma_k = k where sigma^2_k = k means sigma_k = sqrt k,
# and even then prod (1 + A/k) is Theta(L^A), not Theta(L)). Under LNS with sigma^2 ~ l^(2-eps) the
# product converges (2.099 at L = 10^3, 2.106 at 10^5): the bound is O(1), not omega(1); eq. 64 itself
# tends to exp(A/(1 - eps/2)). The theorem's exponential premise cannot occur for bounded weights
# (section 1), and in the regimes that can occur its conclusions are the reverse of the measurements.

# %% [markdown]
# ## 7. Theorem 4.3: the gradient with respect to the first layer's query weights
#
# ||d x_{L+1} / d W_Q^(1)||_2 (operator norm, power iteration on J^T J) in random stacks with
# softmax attention (under the uniform attention of App. A.1.1 the output does not depend on W_Q at
# all, so the theorem is vacuous there), against the bound of eq. 81 evaluated at the measured
# variances.

# %%
qcfg = StackConfig(d_model=P["jac_d"], d_ff=4 * P["jac_d"], n_heads=4, n_tokens=8, attention="softmax")
depths = P["qg_depths"]
qg = {norm: jacobians.query_gradient_norm(qcfg.with_(norm=norm), depths, P["qg_samples"], seed, P["qg_iter"]) for norm in ("pre_ln", "lns")}
q_uniform = jacobians.query_gradient_norm(qcfg.with_(attention="uniform"), depths[:1], P["qg_samples"], seed, 2)[0]
qres = {}
for norm, (gnorm, rms_x, rms_mid) in qg.items():
    sig = rms_x.mean(0)
    attn_f, ffn_f = bounds.lemma_a2_factors(sig, rms_mid.mean(0), qcfg.sigma_w, qcfg.d_model, qcfg.d_ff, qcfg.n_heads, qcfg.n_tokens, lns=norm == "lns")
    log_prod = np.concatenate([[0.0], np.cumsum(np.log10(attn_f * ffn_f))])
    pref = bounds.thm43_prefactor(float(sig[0]), qcfg.sigma_w, qcfg.d_model, qcfg.n_heads, qcfg.n_tokens)
    log_bound = np.array([log_prod[dd - 1] + np.log10(pref) for dd in depths])
    gexp = fits.bootstrap(gnorm, lambda g: fits.power_law(depths, g.mean(0)).coef[:1], P["n_boot"], seed)[0] if len(depths) > 2 else None
    qres[norm] = dict(depths=depths, grad_norm=gnorm.mean(0), log10_bound=log_bound, growth_exponent=gexp,
                      violations=float((np.log10(gnorm) > log_bound).mean()))
    print(f"{norm}: ||dy/dW_Q1|| = {np.round(gnorm.mean(0), 2)} at depths {depths}; growth ~ L^{gexp}; log10 eq.81 bound {np.round(log_bound, 0)}")
print("uniform attention: ||dy/dW_Q1|| =", float(q_uniform.max()))
results["query_gradient"] = qres
fig, ax = plt.subplots(figsize=(5.5, 4))
for norm in qres:
    ax.loglog(depths, qres[norm]["grad_norm"], "o-", label=f"{norm}, measured")
ax.set(xlabel="depth L", ylabel="||dy_L / dW_Q^(1)||_2", title="first-layer query gradient (softmax attention)")
ax.legend()
save(fig, "query_gradient_vs_depth.png")
add("A-thm43", "Theorem 4.3 (eqs. 18, 81)",
    "The gradient norm with respect to the first layer's query weights is bounded by a product over layers (eq. 81), which LNS keeps from exploding.",
    "eq. 81 bound; LNS tames the growth",
    f"bound holds on {100 * (1 - max(q['violations'] for q in qres.values())):.0f}% of draws, exceeding the measured norm by ~10^"
    f"{np.median(qres['pre_ln']['log10_bound'] - np.log10(qres['pre_ln']['grad_norm'])):.0f}; growth with depth: Pre-LN L^{qres['pre_ln']['growth_exponent']}, "
    f"LNS L^{qres['lns']['growth_exponent']}; exactly 0 under uniform attention",
    claims.bound_verdict(np.concatenate([qres[n]["grad_norm"] for n in qres]), 10 ** np.clip(np.concatenate([qres[n]["log10_bound"] for n in qres]), None, 300)))

# %% [markdown]
# **Result.** The eq. 81 bound holds on every draw, about 10 orders of magnitude above the measured
# norms (20 at L = 1 for both; 100 (Pre-LN) vs 35 (LNS) at L = 32). The first-layer query gradient grows
# with depth like L^0.46 under Pre-LN and L^0.16 under LNS, so LNS does tame its growth, as the
# theorem's discussion says. Under the uniform attention the appendix assumes, the gradient is
# exactly 0 (the output does not depend on W_Q), so the theorem needs an assumption the rest of the
# analysis excludes.

# %% [markdown]
# ## 8. Appendix A.1: the attention and FFN variances, and Lemma A.1
#
# Eq. 27 states Var(Attn) = (1/n) sum_i d_head Var(V_i) = d_head sigma_V^2 = sigma_W^2 d: independent
# of the number of tokens n and quadratic in sigma_W. Eq. 29 states sigma^2_FFN ~ sigma_W^4. We
# measure both branch variances of the first block of the random stack while scanning n and
# sigma_W. Lemma A.1 (softmax of N i.i.d. logits concentrates on the uniform vector) is checked
# directly: E sum_i (p_i - 1/N)^2 against N, for logit std 1.

# %%
ns = [2, 4, 8, 16, 32, 64]
sws = np.array([0.05, 0.1, 0.2, 0.4])
cfg1 = base.with_(n_layers=1, d_model=P["var_d"])
by_n = [simulate(cfg1.with_(n_tokens=n), max(P["var_samples"], 8), seed) for n in ns]
by_s = [simulate(cfg1.with_(weight_std=s), max(P["var_samples"], 8), seed) for s in sws]
e_attn_n = fits.bootstrap(np.stack([r.var_attn[:, 0] for r in by_n], 1), lambda d: fits.power_law(ns, d.mean(0)).coef[:1], P["n_boot"], seed)[0]
e_attn_s = fits.bootstrap(np.stack([r.var_attn[:, 0] for r in by_s], 1), lambda d: fits.power_law(sws, d.mean(0)).coef[:1], P["n_boot"], seed)[0]
e_ffn_s = fits.bootstrap(np.stack([r.var_ffn[:, 0] for r in by_s], 1), lambda d: fits.power_law(sws, d.mean(0)).coef[:1], P["n_boot"], seed)[0]
ffn_const = float(np.mean([r.var_ffn[:, 0].mean() / s**4 for r, s in zip(by_s, sws)]))
lam_ns = [4, 16, 64, 256, 1024, 4096]
dist, conc = attention.softmax_concentration(lam_ns, max(20 * P["var_samples"], 100), 1.0, seed)
e_lema1 = fits.mean_exponent(lam_ns, dist, P["n_boot"], seed)
print(f"Var(Attn) ~ n^{e_attn_n} (eq. 27: n^0),  ~ sigma_W^{e_attn_s} (eq. 27: sigma_W^2);  Var(FFN) ~ sigma_W^{e_ffn_s} (eq. 29: 4), "
      f"constant {ffn_const:.0f} vs d d_ff / 2 = {cfg1.d_model * cfg1.d_ff / 2:.0f}")
print(f"Lemma A.1: E sum (p - 1/N)^2 ~ N^{e_lema1};  N E sum p^2 = {np.round(conc.mean(0) * lam_ns, 3)} (-> e = {np.e:.3f}, not 1)")
results["appendix_a1"] = dict(attn_n_exponent=e_attn_n, attn_sigma_exponent=e_attn_s, ffn_sigma_exponent=e_ffn_s, ffn_constant=ffn_const,
                              lemma_a1_exponent=e_lema1, lemma_a1_n_sum_p2=conc.mean(0) * np.array(lam_ns))
add("A-eq27-attn-variance", "App. A.1.1 (eq. 27)",
    "Under uniform attention the attention output variance is d_head sigma_V^2 = sigma_W^2 d, independent of the number of tokens n.",
    "Var ~ n^0 sigma_W^2",
    f"measured Var(Attn) ~ n^{e_attn_n} and ~ sigma_W^{e_attn_s} (the average of n independent rows divides by n; W_V and W_O both enter)",
    claims.weakest(claims.exponent_verdict(e_attn_n, 0.0), claims.exponent_verdict(e_attn_s, 2.0)))
add("A-eq29-ffn-variance", "App. A.1.2 (eq. 29)",
    "The FFN output variance scales as sigma_W^4.",
    "sigma_FFN^2 ~ sigma_W^4",
    f"measured exponent {e_ffn_s}; prefactor {ffn_const:.0f} = d d_ff / 2 (omitted by eq. 29, d^2 in eq. 31)",
    claims.exponent_verdict(e_ffn_s, 4.0))
add("A-lemA1", "Lemma A.1 (eq. 26)",
    "The softmax of N i.i.d. logits concentrates on the uniform distribution: E sum_i (p_i - 1/N)^2 -> 0.",
    "-> 0 as N -> infinity",
    f"E sum (p - 1/N)^2 ~ N^{e_lema1} -> 0 (logit std 1); but N E sum p^2 -> {conc.mean(0)[-1] * lam_ns[-1]:.2f} = e^(s^2), "
    "so the attention variance sigma^2 sum p^2 stays e^(s^2) times the uniform value",
    "holds" if e_lema1.hi < 0 else "fails")

# %% [markdown]
# **Result.** Eq. 27 fails twice: the uniform average of n independent value rows has variance
# proportional to 1/n (fitted n^-1.02), because the derivation sums (1/n) Var(V_i) instead of
# (1/n^2) Var(V_i); and the variance is quartic in sigma_W (W_V and W_O both enter), not quadratic.
# Paper B's Theorem 4 (same co-author) has the correct 1/n. Eq. 29's sigma_W^4 holds, with the
# prefactor d d_FFN / 2 it omits (measured 7711 vs 8192). Lemma A.1 holds as stated (the distance to
# uniform decays, here like N^-0.86), but it does not license "softmax ~ uniform" for variances:
# N E sum p_i^2 tends to e^(s^2) (2.71 for logit std 1), so the attention variance is e^(s^2) times the
# uniform one at any N. Paper B's notebook (b2_theory) measures how this bends Theorem 4's 1/n.

# %% [markdown]
# ## 9. Stepping off the assumptions: a tiny real Pre-LN / LNS model, at init and after training
#
# `real_stack.tiny_lm` builds the package's `cod.model.Transformer`: token embeddings, `lm_layers`
# blocks of RMSNorm (learnable gain) -> causal softmax attention with rotary positions and RMSNorm ->
# SwiGLU, LLaMA's N(0, 0.02^2) initialisation; LNS scales both normalised inputs by 1/sqrt(l). Trained
# with Adam (lr 1e-3, no weight decay) for `lm_steps` steps on a first-order Markov source over 64
# symbols (its entropy rate is the best achievable loss). Measured from the model's named states on
# held-out sequences at step 0 and at the end: the variance profile (B eq. 4) of h_0 (the embeddings)
# to h_L (before the final norm), the correlation of each branch output with the residual it is added
# to (Assumption 3.1 says 0), the excess kurtosis of the coordinates (Gaussian: 0), and exact block
# Jacobians on `lm_jac_tokens` tokens.

# %%
src = real_stack.MarkovSource(64, alpha=0.1, seed=seed)
eval_idx = src.sample(32, P["lm_seq"], np.random.default_rng(seed + 99))
lm = {}
for norm in ("pre_ln", "lns"):
    torch.manual_seed(seed)
    model = real_stack.tiny_lm(norm, d_model=P["lm_d"], n_layers=P["lm_layers"], max_seq_len=P["lm_seq"])
    jac0 = real_stack.block_jacobians(model, eval_idx[0, : P["lm_jac_tokens"]])
    losses, prof = real_stack.train(model, src, P["lm_steps"], P["lm_batch"], P["lm_seq"], 1e-3, seed, eval_idx, (0, P["lm_steps"]))
    jac1 = real_stack.block_jacobians(model, eval_idx[0, : P["lm_jac_tokens"]])
    lm[norm] = dict(losses=losses, init=prof[0], trained=prof[P["lm_steps"]], jac_init=jac0, jac_trained=jac1)
    print(f"{norm}: loss {losses[0]:.3f} -> {np.mean(losses[-10:]):.3f} (entropy rate {src.entropy():.3f})")
lm_fit = {}
for norm in lm:
    for stage in ("init", "trained"):
        v = lm[norm][stage]["var"]
        layers = np.arange(1, len(v))
        inc = v[1:] - v[0]
        lm_fit[f"{norm}_{stage}"] = dict(beta=fits.power_law(layers, inc).estimate(0), rms=fits.growth_models(layers, inc),
                                        rho_attn_max=float(np.abs(lm[norm][stage]["rho_attn"]).max()),
                                        rho_ffn_mean=float(lm[norm][stage]["rho_ffn"].mean()),
                                        kurtosis_max=float(np.abs(lm[norm][stage]["kurtosis"][1:]).max()))
        f = lm_fit[f"{norm}_{stage}"]
        print(f"{norm:6s} {stage:7s}: var {v[0]:.2e} -> {v[-1]:.2e}; beta {f['beta']}; RMS power {f['rms']['power']:.3f} "
              f"exp {f['rms']['exponential']:.3f} log {f['rms']['log']:.3f}; |rho_attn| <= {f['rho_attn_max']:.2f}, "
              f"mean rho_ffn {f['rho_ffn_mean']:.2f}, |kurtosis| <= {f['kurtosis_max']:.2f}")
results["tiny_lm"] = {**{k: v for k, v in lm_fit.items()},
                      "profiles": {n: {s: lm[n][s] for s in ("init", "trained")} for n in lm},
                      "jacobians": {n: {"init": lm[n]["jac_init"], "trained": lm[n]["jac_trained"]} for n in lm},
                      "final_loss": {n: float(np.mean(lm[n]["losses"][-10:])) for n in lm}, "entropy_rate": src.entropy()}

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4))
for norm, color in (("pre_ln", "C0"), ("lns", "C1")):
    for stage, ls in (("init", ":"), ("trained", "-")):
        v = lm[norm][stage]["var"]
        axes[0].semilogy(np.arange(len(v)), v, ls, color=color, label=f"{norm} {stage}")
        axes[1].loglog(np.arange(1, len(v)), v[1:] - v[0], ls, color=color, label=f"{norm} {stage}: beta {lm_fit[f'{norm}_{stage}']['beta'].value:.2f}")
        axes[2].semilogy(np.arange(1, len(v)), lm[norm][f"jac_{stage}"]["dev_diag"], ls, color=color, label=f"{norm} {stage}")
axes[0].set(xlabel="layer l (0 = embeddings)", ylabel="variance of h_l", title="tiny LM: variance vs depth (log y)")
axes[1].set(xlabel="layer l", ylabel="sigma^2_l - sigma^2_0", title="growth from the embeddings (log-log)")
axes[2].set(xlabel="block l", ylabel="||Jbar_l - I||_F / d", title="block Jacobian distance from identity")
for ax in axes:
    ax.legend(fontsize=7)
save(fig, "tiny_lm_variance_and_jacobians.png")

# %% [markdown]
# **What the tiny model shows** (16 blocks, d = 64, 150 Adam steps; loss 4.17 -> 2.73 (Pre-LN) and 2.67
# (LNS), entropy rate 2.35). At initialisation the real Pre-LN stack is close to the idealised one: the
# FFN output is uncorrelated with the residual (mean rho_FFN 0.00) and the attention output nearly so
# (|rho_attn| <= 0.11 on this single draw), coordinates are close to Gaussian (|excess kurtosis|
# <= 0.14), and the variance grows polynomially (beta = 1.58: the tiny 0.02 init lets the component
# shared by the tokens of a sequence build up). Training breaks Assumption 3.1's independence: the FFN branch
# output becomes strongly correlated with the residual it is added to (mean rho_FFN 0.58 under Pre-LN,
# 0.60 under LNS). The trained Pre-LN variance grows 150x over 16 blocks, as a power law (beta = 0.82
# [0.78, 0.85], sub-linear, so below Lemma 3.2's Theta(L) lower bound; the exponential fits 5.6x
# worse), and LNS keeps it 8x lower with slower growth (beta = 0.39). Deep blocks of the LNS model are
# *closer* to the identity than Pre-LN's, at init and after training (||Jbar - I||_F/d over the deeper
# half after training: 0.0026 vs 0.0039), which is what eq. 5 predicts from the extra 1/sqrt(l),
# contrary to the paper's reading that LNS makes deep layers less identity-like. Whether LNS's benefit
# appears as less identity-like deep blocks after long training is for a4 / a10 to measure; this
# notebook checks the theory only.

# %%
pre_i, pre_t = lm_fit["pre_ln_init"], lm_fit["pre_ln_trained"]
lns_t = lm_fit["lns_trained"]
idl = runs["pre_ln"]
add("A-asm31", "Assumption 3.1",
    "Inputs, intermediate states and weights are zero-mean Gaussian and independent at every layer (branch outputs uncorrelated with the residual).",
    "Gaussian, zero-mean, independent",
    f"random stack: max |rho| {max(np.abs(idl.rho_attn.mean(0)).max(), np.abs(idl.rho_ffn.mean(0)).max()):.3f}, |excess kurtosis| <= {np.abs(idl.kurtosis.mean(0)).max():.2f}; "
    f"tiny LM at init: |rho_attn| <= {pre_i['rho_attn_max']:.2f}, mean rho_FFN {pre_i['rho_ffn_mean']:.2f}, |kurtosis| <= {pre_i['kurtosis_max']:.2f}; "
    f"after {P['lm_steps']} steps: mean rho_FFN {pre_t['rho_ffn_mean']:.2f}, |kurtosis| <= {pre_t['kurtosis_max']:.2f}",
    claims.gaussian_independent_verdict([
        (max(np.abs(idl.rho_attn.mean(0)).max(), np.abs(idl.rho_ffn.mean(0)).max()), float(np.abs(idl.kurtosis.mean(0)).max())),
        (max(pre_t["rho_attn_max"], abs(pre_t["rho_ffn_mean"])), pre_t["kurtosis_max"])]))
add("A-appB-trained-exponential", "App. B (Fig. 9), beyond the assumptions",
    "In a trained Pre-LN model the variance grows exponentially with depth.",
    "exponential growth across layers at every training stage",
    f"tiny LM after {P['lm_steps']} steps: sigma^2_l - sigma^2_0 ~ l^beta, beta = {pre_t['beta']} (Lemma 3.2's Theta(L) lower bound: "
    f"{claims.at_least_verdict(pre_t['beta'], 1.0)}), "
    f"RMS log-error power {pre_t['rms']['power']:.3f} vs exponential {pre_t['rms']['exponential']:.3f}; LNS: beta = {lns_t['beta']}",
    claims.law_preference_verdict(pre_t["rms"], "exponential"))
dd_pre, dd_lns = lm["pre_ln"]["jac_trained"]["dev_diag"], lm["lns"]["jac_trained"]["dev_diag"]
half = slice(len(dd_pre) // 2, None)
add("A-lns-deep-identity", "Sec. 4.1 (after Theorem 4.2), Sec. 5.5",
    "LNS makes deep layers less identity-like than Pre-LN.",
    "fewer deep layers act as identity maps under LNS",
    f"mean ||Jbar - I||_F/d over the deeper half of the blocks: random stacks at init Pre-LN {jres['pre_ln']['dev_diag'][len(jres['pre_ln']['dev_diag']) // 2:].mean():.4f} "
    f"vs LNS {jres['lns']['dev_diag'][len(jres['lns']['dev_diag']) // 2:].mean():.4f}; tiny LM after training Pre-LN {dd_pre[half].mean():.4f} vs LNS {dd_lns[half].mean():.4f}",
    "fails" if dd_lns[half].mean() < dd_pre[half].mean() else "holds")

# %% [markdown]
# ## Where the theory of paper A is loose or wrong (summary of the numbers above)
#
# - **Exponential growth does not happen.** In random stacks the Pre-LN variance grows linearly; in the
#   real model it grows as a power law, at init and after a little training. For bounded weights no
#   Pre-LN stack can grow faster than L^2 (rigorous bound, section 1), so the Theta(exp L) bound of
#   Lemma 3.2 and the exponential case of Theorem 3.3 (and of paper B's Lemma 1) are vacuous.
# - **The per-layer laws contradict their own assumption.** Under Assumption 3.1's independence the
#   relative gain is Theta(1/sigma^2), not Theta(1/sigma) (eq. 6) or Theta(1/(sqrt(l) sigma)) (eq. 13).
#   Consequently LNS variance grows like log L, and Lemma 4.1's Theta(L) lower bound fails.
# - **Proof arithmetic.** exp(sum 1/(2k)) is Theta(sqrt L) (eqs. 34, 57 say exp(sqrt L) and L); eq. 49's
#   M is below the limit it approximates; eq. 50's Theta(L) is exp(2A sqrt L); eq. 64-65's omega(1) is a
#   convergent product; eq. 41 divides where eq. 40 multiplies (the printed FFN factor is violated on
#   every sample); eq. 27 drops a 1/n.
# - **Vacuous constants.** A of eq. 47 is in the thousands at d = 32, making eqs. 9, 15 and 81 true by
#   10^10 to 10^166.
# - **Direction of the LNS story.** At init and after short training, LNS blocks are closer to the
#   identity and the Jacobian product grows slower than under Pre-LN, the reverse of section 4.1's
#   reading of Theorem 4.2. What survives: deep Pre-LN blocks do approach the identity as 1/sigma
#   (eq. 5), LNS does keep variance (and first-layer gradient growth) much lower, and Theorem 4.3's
#   bound holds.

# %% [markdown]
# ## Verdicts
#
# Each row: the statement, what the paper states, what we measured, and the verdict computed by the
# rules of `cod.theory.claims` (exponent within its 95% interval; bound never exceeded, "loosely"
# when it overshoots by more than 10x; a named growth law against the alternatives).

# %%
results["runtime_s"] = time.time() - t_start
claims.write_json(out / "claims.json", ledger.claims)
claims.write_json(out / "results.json", results)
for c in ledger.claims:
    print(f"{c['verdict']:14s} {c['item']:45s} {c['ours'][:150]}")
print(f"\nruntime {results['runtime_s']:.0f} s, profile {profile}")
