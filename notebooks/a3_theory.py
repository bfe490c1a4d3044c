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
# source. The two claims about *trained* models (LNS makes deep layers less identity-like) are judged
# on the committed analyses of the trained a_130m / a_250m miniatures. All code lives in `cod.theory`.

# %% [markdown]
# ## How the verdicts are decided
#
# Every claim is recorded in a `cod.claims.verdicts.Claims` ledger and written to `claims.json`. A
# mathematical statement gets **holds / holds loosely / fails** from a rule of `cod/theory/checks.py`
# (its docstring states each tolerance); "holds loosely" always means *within the stated tolerance of
# what the statement claims*, never merely "goes the right way":
#
# - a claimed exponent or law: holds when the claimed value lies in the bootstrap 95% interval,
#   loosely when the estimate is within **0.1** (absolute; **0.15** for the per-layer laws of section 2,
#   fitted on two regressors) of it, fails otherwise; exact evaluations have a zero-width interval;
# - a lower bound on an exponent: holds when the interval is at or above claimed - 0.1, fails when it
#   is wholly below, loosely when it straddles it;
# - an upper bound: fails when any sample exceeds it (a "bound" below what it bounds fails), loosely
#   when it holds but overshoots the median sample by more than **10x**, holds otherwise; an upper
#   bound stated as a growth law (O(exp L)) holds loosely when the data follow a slower law whose fit
#   is more than **2x** better in RMS log-error (all laws fitted in the same log space);
# - a named growth law against the alternatives: fails when another law fits more than **2x** better
#   in RMS log-error, loosely within 2x, holds when it fits best;
# - "bounded" against "keeps growing": bounded when the log of the product changes by less than
#   **0.01** over the stated stretch of depth;
# - Assumption 3.1: holds when every setting has |branch-residual correlation| <= **0.1** and
#   |excess kurtosis| <= **0.5**, loosely when every setting is within twice that, fails otherwise;
# - "-> 0": holds when the fitted exponent's interval lies below 0.
#
# The empirical claims about trained models follow the package's one rule (`cod/claims/verdicts.py`, printed
# below), or are **beyond reach** when the miniature cannot reach the regime (`beyond_reach`, which
# says why).

# %% tags=["parameters"]
profile = "default"  # smoke | default | headline | paper; params.yaml's notebooks.a3_theory.profiles sets the counts below
figures_dir = None  # default: figures/<profile>/a3_theory
analyses_dir = None  # trained-model analyses (a_130m, a_250m); default: analyses/<profile>
seed = 0
torch_threads = 1  # one thread per process is fastest on the shared 2-core CPU
n_boot = 300  # bootstrap resamples of every fitted exponent
var_layers = 96  # section 1, variance against depth: blocks per random stack
var_samples = 48  # stacks drawn
var_d = 64  # their width
var_tokens = 16  # their tokens
input_stds = [0.3, 1.0, 3.0, 10.0, 30.0]  # input scales of the local law
jac_layers = 64  # Jacobian products: blocks per stack
jac_samples = 12  # stacks drawn
jac_d = 32  # their width (also of the identity-approach and query-gradient stacks)
jac_tokens = 4  # their tokens
id_samples = 12  # identity approach: draws per input scale
id_stds = [0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0]  # its input scales
qg_depths = [1, 2, 4, 8, 16, 32]  # query gradient: stack depths
qg_samples = 6  # draws per depth
qg_iter = 15  # power iterations per gradient norm
lm_layers = 16  # tiny trained LM: blocks
lm_d = 64  # its width
lm_steps = 150  # Adam steps
lm_batch = 16  # sequences per step
lm_seq = 32  # tokens per sequence
lm_jac_tokens = 8  # tokens of its block Jacobians

# %%
from cod import kernel

figures_dir = kernel.start("a3_theory", profile, figures_dir)  # unset: a folder of its own
analyses_dir = analyses_dir or f"analyses/{profile}"

# %%
from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from IPython.display import Markdown, display

import cod.claims.verdicts
from cod import plots
from cod.records.analyses import load_analyses
from cod.theory import attention_variance, bounds, checks, fits, jacobians, real_stack, residual_variance
from cod.theory.stack import StackConfig, simulate
from cod.claims.verdicts import Claims, Verdict, beyond_reach, compare

print(cod.claims.verdicts.rule())
torch.set_num_threads(torch_threads)
ledger = Claims("A", profile, seeds=[seed])
results = checks.Results(figures_dir, profile, seed, settings=dict(  # the counts, recorded with the results
    var_layers=var_layers, var_samples=var_samples, var_d=var_d, var_tokens=var_tokens, input_stds=input_stds,
    n_boot=n_boot, jac_layers=jac_layers, jac_samples=jac_samples, jac_d=jac_d, jac_tokens=jac_tokens,
    id_samples=id_samples, id_stds=id_stds, qg_depths=qg_depths, qg_samples=qg_samples, qg_iter=qg_iter,
    lm_layers=lm_layers, lm_d=lm_d, lm_steps=lm_steps, lm_batch=lm_batch, lm_seq=lm_seq,
    lm_jac_tokens=lm_jac_tokens,
))
out = results.out


def show(fig, name):
    plots.show(fig, out, name)
    plt.close(fig)


# %% [markdown]
# ## 1. Lemmas 3.2 and 4.1: variance against depth in random Pre-LN and LNS stacks
#
# The stack of eqs. 2-3 under Assumption 3.1: i.i.d. Gaussian input tokens, every weight matrix
# i.i.d. N(0, 1/d), RMS normalisation, the uniform attention of App. A.1.1 and the ReLU FFN of eq. 28;
# LNS multiplies both normalised inputs of block l by 1/sqrt(l) (eq. 51). `var_samples` independent
# stacks are drawn; the variance of x_l is the per-token variance across features (paper B eq. 4)
# averaged over tokens. We fit the growth from the input, sigma^2_l - sigma^2_1 ~ l^beta, and compare
# the best power, exponential and logarithmic laws (each by the RMS error in log variance of its best
# fit). Alongside, a rigorous bound (`residual_variance.rms_bound`): every branch sees an input of
# fixed norm, so it adds at most c_l (||W_V W_O|| + ||W_1|| ||W_2||) to the rms of a token; sigma_{x_L}
# therefore grows at most linearly (Pre-LN) or like sqrt(L) (LNS).

# %%
base = StackConfig(
    d_model=var_d, d_ff=4 * var_d, n_heads=4, n_tokens=var_tokens, n_layers=var_layers
)
runs = {norm: simulate(base.with_(norm=norm), var_samples, seed) for norm in ("pre_ln", "lns")}
runs_causal = {
    norm: simulate(base.with_(norm=norm, attention="causal"), var_samples, seed) for norm in ("pre_ln", "lns")
}
rbound = {norm: residual_variance.rms_bound(base.with_(norm=norm), var_samples, seed) ** 2 for norm in runs}
growth = {}
for norm, st in {**runs, **{k + "_causal": v for k, v in runs_causal.items()}}.items():
    beta = residual_variance.growth_exponent(st, n_boot=n_boot, seed=seed)
    rms = residual_variance.growth_models(st)
    growth[norm] = dict(beta=beta, rms=rms, var_last=float(st.var.mean(0)[-1]), var_first=float(st.var.mean(0)[0]))
    print(f"{norm:14s} beta = {beta}   RMS log-error of best fit: " + ", ".join(f"{k} {v:.3f}" for k, v in rms.items()))
bound_ratio = {n: float(np.median(rbound[n][:, -1] / runs[n].var[:, -1])) for n in runs}
bound_violations = {n: int((runs[n].var > rbound[n]).sum()) for n in runs}
for norm in runs:
    print(f"{norm}: rigorous bound / measured at l = L: {bound_ratio[norm]:.0f}x, violations {bound_violations[norm]}")
results["variance_growth"] = growth
results["rigorous_bound_ratio_at_L"] = bound_ratio

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
layer = np.arange(var_layers + 1)
for norm, color in (("pre_ln", "C0"), ("lns", "C1")):
    v = runs[norm].var
    m, lo, hi = v.mean(0), *np.percentile(v, [2.5, 97.5], 0)
    fit = fits.power_law(layer[1:], (m - m[0])[1:])
    expo = fits.exponential_law(layer[1:], m[1:])
    for i, ax in enumerate(axes):
        ax.plot(layer, m, color=color, label=f"{norm}: mean of {v.shape[0]} stacks, 95% band" if i == 0 else None)
        ax.fill_between(layer, lo, hi, color=color, alpha=0.2, linewidth=0)
        ax.plot(
            layer[1:],
            m[0] + np.exp(fit.coef[1]) * layer[1:] ** fit.coef[0],
            "--",
            color=color,
            label=rf"{norm}: power fit $\sigma^2_1 + a\,l^{{{growth[norm]['beta'].value:.2f}}}$" if i == 0 else None,
        )
    for ax in axes[1:]:
        ax.plot(layer[1:], np.exp(expo.coef[1] + expo.coef[0] * layer[1:]), "-.", color=color, alpha=0.7,
                label=f"{norm}: best exponential fit" if ax is axes[1] else None)
        ax.plot(
            layer, rbound[norm].mean(0), ":", color=color, label=f"{norm}: rigorous bound" if ax is axes[1] else None
        )
for ax, title in zip(axes, ("linear axes", "log y (an exponential is a line)", "log-log (a power law is a line)")):
    ax.set(xlabel="block $l$", ylabel=plots.SIGMA2 + " of $x_l$", title=title)
axes[1].set_yscale("log")
axes[2].set(xscale="log", yscale="log", xlim=(1, None))
fig.legend(loc="outside lower center", ncol=4)
show(fig, "variance_vs_depth")

# %%
beta_pre, beta_lns = growth["pre_ln"]["beta"], growth["lns"]["beta"]
rms_pre, rms_lns = growth["pre_ln"]["rms"], growth["lns"]["rms"]
display(Markdown(f"""
**What the figure shows** ({var_samples} stacks, d = {var_d}, {var_tokens} tokens, {var_layers}
blocks).
Pre-LN variance grows as a power law close to linear: sigma^2_l - sigma^2_1 ~ l^{beta_pre} (causal softmax
attention: l^{growth['pre_ln_causal']['beta'].value:.2f}); the best exponential fits
{rms_pre['exponential'] / rms_pre['power']:.0f}x worse in log variance (RMS log-error {rms_pre['exponential']:.3f} vs
{rms_pre['power']:.3f}). The rigorous bound (dotted) holds on every draw ({bound_violations['pre_ln']} violations)
and is
itself loose ({bound_ratio['pre_ln']:.0f}x at l = {var_layers}), but it is polynomial. Under LNS the growth
decelerates: l^{beta_lns} over {var_layers} blocks, with RMS log-errors
{', '.join(f'{k} {v:.3f}' for k, v in rms_lns.items())}.
"""))

# %% [markdown]
# Nothing exponential happens. The reason is visible in the recursion: the branch output has a fixed
# variance (its input is normalised) and is uncorrelated with the residual (section 9), so the variance
# grows by a constant per block. Lemma 3.2's two bounds, Theta(L) <= sigma^2 <= Theta(exp L), hold, but only
# the lower one is approached; the rigorous bound shows that no Pre-LN stack with bounded weights can grow
# faster than L^2, whatever the correlations. Under LNS the increments shrink like 1/l (the branch sees an
# input scaled by 1/sqrt(l)); Lemma 4.1's lower bound Theta(L) fails for the very stack it is about, and its
# upper bound Theta(L^(2-eps)) cannot be approached either (the rigorous bound is O(L) for LNS).

# %%
ledger.add(
    "A-lem32-bounds",
    "Lemma 3.2",
    "Under Pre-LN the variance grows at least linearly and at most exponentially with depth: Theta(L) <= "
    "sigma^2_{x_L} <= Theta(exp L) (eq. 7).",
    "Theta(L) <= sigma^2 <= Theta(exp(L))",
    Verdict(
        checks.weakest(checks.at_least_verdict(beta_pre, 1.0), checks.upper_law_verdict(rms_pre, "exponential")),
        f"random Pre-LN stack (uniform attn, ReLU, L={var_layers}): sigma^2_l - sigma^2_1 ~ l^beta, "
        f"beta = {beta_pre} (lower bound: {checks.at_least_verdict(beta_pre, 1.0)}); RMS log-error power "
        f"{rms_pre['power']:.3f} vs exponential {rms_pre['exponential']:.3f} (upper bound: "
        f"{checks.upper_law_verdict(rms_pre, 'exponential')}, never approached); causal softmax beta = "
        f"{growth['pre_ln_causal']['beta']}; a rigorous O(L^2) bound is violated on "
        f"{bound_violations['pre_ln']} of {runs['pre_ln'].var.size} (draw, layer) pairs",
    ),
)
ledger.add("A-abstract-exponential", "Abstract, Sec. 1, App. B",
           "Pre-LN output variance grows exponentially with depth.",
           "exponential growth in depth",
           Verdict(checks.law_preference_verdict(rms_pre, "exponential"),
                   "best-fit RMS log-error at init (all laws fitted to log variance): exponential "
                   f"{rms_pre['exponential']:.3f} vs power {rms_pre['power']:.3f} (beta = {beta_pre})"))
ledger.add("A-lem41-bounds", "Lemma 4.1",
           "Under LNS the variance growth is polynomial: Theta(L) <= sigma^2_{x_L} <= Theta(L^(2-eps)), 1/2 <= eps < "
           "1 (eq. 14).",
           "between Theta(L) and Theta(L^(2-eps))",
           Verdict(checks.at_least_verdict(beta_lns, 1.0),
                   f"random LNS stack: beta = {beta_lns} (the lower bound needs beta >= 1); best law: "
                   f"{min(rms_lns, key=rms_lns.get)} "
                   "(RMS log-error " + ", ".join(f"{k} {v:.3f}" for k, v in rms_lns.items()) + ")"))

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
    sweep = [simulate(base.with_(norm=norm, input_std=s, n_layers=min(var_layers, 48)), var_samples, seed)
             for s in input_stds]
    local[norm] = residual_variance.local_law(sweep, n_boot=n_boot, seed=seed)
    print(f"{norm}: b = {local[norm][0]},  c = {local[norm][1]}")
results["local_law"] = {k: {"b": v[0], "c": v[1]} for k, v in local.items()}
ledger.add("A-lem32-law", "Lemma 3.2 (eqs. 6, 30-31)",
           "Per block, sigma^2_{x_{l+1}} = sigma^2_{x_l} Theta(1 + 1/sigma_{x_l}): the relative variance gain falls "
           "like 1/sigma.",
           "g_l - 1 ~ sigma_l^-1",
           Verdict(checks.exponent_verdict(local["pre_ln"][0], -1.0, tol=0.15),
                   f"g_l - 1 ~ sigma_l^b l^c with b = {local['pre_ln'][0]}, c = {local['pre_ln'][1]} (input std "
                   f"{input_stds})"))
ledger.add("A-lem41-law", "Lemma 4.1 (eqs. 13, 54)",
           "Per block under LNS, sigma^2_{x_{l+1}} = sigma^2_{x_l} Theta(1 + 1/(sqrt(l) sigma_{x_l})).",
           "g_l - 1 ~ sigma_l^-1 l^-1/2",
           Verdict(checks.weakest(checks.exponent_verdict(local["lns"][0], -1.0, tol=0.15),
                                  checks.exponent_verdict(local["lns"][1], -0.5, tol=0.15)),
                   f"b = {local['lns'][0]}, c = {local['lns'][1]}"))
display(Markdown(f"""
**Result.** The per-layer gain falls like sigma^{local['pre_ln'][0]} under Pre-LN and like
sigma^{local['lns'][0].value:.2f} l^{local['lns'][1].value:.2f} under LNS: close to the exponents of an independent
branch of fixed variance (b = -2, and c = -1 for LNS), not the lemmas' sigma^-1 (and l^-1/2).
"""))

# %% [markdown]
# The lemmas' own proof explains the gap: eqs. 21-23 keep the cross term rho sigma_x sigma_branch, which is
# what makes the gain Theta(1/sigma); Assumption 3.1 (independence) sets rho = 0, and then the gain is
# Theta(1/sigma^2). The lemmas' formulas (6) and (13) are therefore not the consequence of their own
# assumption, and the difference is not cosmetic: it is the difference between Theta(L^2) and Theta(L) for
# Pre-LN and between Theta(L) and Theta(log L) for LNS (next section).

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
        rec_fit[f"{'lns' if lns else 'pre_ln'}_{form}"] = fits.power_law(
            layers[n_rec // 10 :], s2[n_rec // 10 :] - s2[0]
        ).estimate(0)
Ls = np.array([10, 100, 1000, 10_000, 100_000])
lower = residual_variance.proof_lower_bound(Ls)
lower_fit = fits.power_law(Ls, lower).estimate(0)
for k, v in rec_fit.items():
    print(f"recursion {k:20s}: sigma^2_L - sigma^2_1 ~ L^{v.value:.3f} (last 90% of {n_rec} layers)")
print("eqs. 34/57 lower bound at L =", Ls, ":", np.round(lower, 2), " -> L^", lower_fit)
results["recursions"] = rec_fit
results["proof_lower_bound"] = dict(L=Ls, value=lower, exponent=lower_fit)
ledger.add("A-appA1-eq34", "App. A.1 eq. 34, App. A.3 eq. 57",
           "The proofs' lower bound exp(sum_{k<L}(1/k - 1/(2k))) (with sigma^2_k = k) is Theta(exp(sqrt L)) (eq. 34), "
           "resp. Theta(L) (eq. 57).",
           "Theta(exp(sqrt(L))) and Theta(L)",
           Verdict(checks.exponent_verdict(lower_fit, 1.0, tol=0.05),
                   f"exact evaluation for L = {Ls[0]}..{Ls[-1]:.0e}: ~ L^{lower_fit.value:.3f}, i.e. Theta(sqrt L) "
                   "(tolerance 0.05 on the exponent of eq. 57's Theta(L)); recursion (6) taken literally gives "
                   f"L^{rec_fit['pre_ln_paper'].value:.2f}, (13) gives L^{rec_fit['lns_paper'].value:.2f}"))
display(Markdown(f"""
**Result.** Iterated literally, recursion (6) grows like L^{rec_fit['pre_ln_paper'].value:.2f} and (13) like
L^{rec_fit['lns_paper'].value:.2f}. With independent branches the rates are
L^{rec_fit['pre_ln_independent'].value:.2f} and
(for LNS) L^{rec_fit['lns_independent'].value:.2f} over the last 90% of {n_rec} layers, i.e. logarithmic. The proofs'
lower-bound step exp(sum_{{k<L}} 1/(2k)) grows like L^{lower_fit.value:.3f}.
"""))

# %% [markdown]
# The only growth rates consistent with the lemmas' own formulas are quadratic (Pre-LN) and linear (LNS),
# inside the stated intervals but never near exp(L). The proofs' lower-bound step is Theta(sqrt L), not
# Theta(exp(sqrt L)) as eq. 34 states nor Theta(L) as eq. 57 states: the proof of the Theta(L) lower bound
# does not go through even with its own choice sigma^2_k = k.

# %% [markdown]
# ## 4. Block Jacobians approach the identity as the input variance grows (eq. 5)
#
# Eq. 5: d PreLN(x)/dx = I + (df/dN)(dN/dx), and ||dN/dx|| = 1/rms(x). One Pre-LN block (causal
# softmax attention, SwiGLU, the real-model ingredients) is fed N(0, s^2) tokens for s over three
# decades; ||J - I||_2 of the whole block (on the full sequence, exact forward-mode Jacobian) is
# fitted against s on the upper half of the range. The law is ||J - I|| ~ s^-1, i.e. (variance)^-1/2.

# %%
id_cfg = StackConfig(d_model=jac_d, d_ff=4 * jac_d, n_heads=4, n_tokens=max(jac_tokens, 4),
                     attention="causal", ffn="swiglu")
stds = np.array(id_stds)
dev = jacobians.identity_approach(id_cfg, stds, id_samples, seed)
upper = slice(len(stds) // 2, None)
id_slope = fits.bootstrap(dev[:, upper], lambda d: fits.power_law(stds[upper], d.mean(0)).coef[:1], n_boot, seed)[
    0
]
print("||J - I||_2 mean over draws:", np.round(dev.mean(0), 4), "  slope vs input std:", id_slope)
results["identity_approach"] = dict(stds=stds, dev=dev.mean(0), slope=id_slope)
fig, ax = plt.subplots(figsize=(5.5, 4))
ax.loglog(stds, dev.mean(0), "o-", label=f"one block: mean of {dev.shape[0]} draws, min..max band")
ax.fill_between(stds, dev.min(0), dev.max(0), alpha=0.2, linewidth=0)
ax.loglog(stds, dev.mean(0)[-1] * (stds / stds[-1]) ** -1.0, "k--", label="slope $-1$ (eq. 5)")
ax.set(xlabel=r"input std $s$ (variance $s^2$)", ylabel=r"$\|J - I\|_2$", title=f"fitted slope {id_slope}")
ax.legend()
show(fig, "block_jacobian_vs_input_variance")
ledger.add("A-eq5-identity", "Sec. 3, eq. 5",
           "As the input variance grows, a Pre-LN block's Jacobian approaches the identity.",
           "||J - I|| -> 0, through dLN/dx ~ 1/sigma",
           Verdict(checks.exponent_verdict(id_slope, -1.0),
                   f"||J - I||_2 ~ s^b with b = {id_slope} over s in [{stds[upper][0]:g}, {stds[-1]:g}] (causal "
                   "softmax, SwiGLU)"))
display(Markdown(f"""
**Result.** ||J - I||_2 falls like s^{id_slope} once the input dominates the branch outputs
(s >= {stds[upper][0]:g}).
"""))

# %% [markdown]
# A Pre-LN sublayer's branch sees only x / rms(x), so its contribution to the Jacobian scales as 1/sigma.
# This is the one mechanism of the paper that holds without caveat. At small s the block is not
# scale-invariant (the FFN sees x + Attn(...)), and the slope flattens.

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
jcfg = StackConfig(
    d_model=jac_d, d_ff=4 * jac_d, n_heads=4, n_tokens=jac_tokens, n_layers=jac_layers
)
jac = {norm: jacobians.run_jacobians(jcfg.with_(norm=norm), jac_samples, seed) for norm in ("pre_ln", "lns")}
A, B = bounds.takase_constants(jcfg.sigma_w, jcfg.d_model, jcfg.d_ff, jcfg.n_heads, jcfg.n_tokens)
print(
    f"A = {A:.1f}, B = {B:.1f} (eqs. 47-48 at d={jcfg.d_model}, d_ff={jcfg.d_ff}, h={jcfg.n_heads}, s={jcfg.n_tokens}, "
    f"sigma={jcfg.sigma_w:.3f})"
)
jres, log_meas = {}, {}
for norm, r in jac.items():
    lns = norm == "lns"
    log_meas[norm] = np.log10(r.prod_norm)
    log_eq9 = bounds.log10_product_bound(r.rms_x, A, B, lns=lns)
    attn_f, ffn_f = bounds.lemma_a2_factors(
        r.rms_x, r.rms_mid, jcfg.sigma_w, jcfg.d_model, jcfg.d_ff, jcfg.n_heads, jcfg.n_tokens, lns=lns
    )
    log_eq36 = np.cumsum(np.log10(attn_f * ffn_f), 1)
    log_rig = np.cumsum(np.log10(r.rigorous_attn * r.rigorous_ffn), 1)
    depth = np.arange(1, r.prod_norm.shape[1] + 1)
    half = depth >= depth[-1] // 4
    gamma = fits.bootstrap(
        r.prod_norm[:, half], lambda p: fits.power_law(depth[half], p.mean(0)).coef[:1], n_boot, seed
    )[0]
    jres[norm] = dict(
        prod_norm=r.prod_norm.mean(0),
        growth_exponent=gamma,
        log10_eq9=log_eq9.mean(0),
        log10_eq36=log_eq36.mean(0),
        log10_rigorous=log_rig.mean(0),
        ffn_factor_violations=float((r.norm_ffn > ffn_f).mean()),
        ffn_factor_verdict=checks.bound_verdict(r.norm_ffn, ffn_f),
        ffn_factor_excess=float(np.median(ffn_f - 1)),
        attn_factor_violations=float((r.norm_attn > attn_f).mean()),
        rigorous_violations=float(((r.norm_attn > r.rigorous_attn) | (r.norm_ffn > r.rigorous_ffn)).mean()),
        product_violations=float((log_meas[norm] > log_eq9).mean()),
        bound_verdict=checks.bound_verdict(10 ** np.clip(log_meas[norm], None, 300), 10 ** np.clip(log_eq9, None, 300)),
        dev_diag=r.dev_diag.mean(0),
        dev_block=r.dev_block.mean(0),
    )
    print(
        f"{norm}: ||dy_L/dx_1|| at L=1,{depth[-1]}: {r.prod_norm.mean(0)[0]:.2f}, {r.prod_norm.mean(0)[-1]:.2f}; "
        f"growth ~ L^{gamma};"
        f" log10 bounds at L: eq.9 {log_eq9.mean(0)[-1]:.0f}, eq.36 {log_eq36.mean(0)[-1]:.0f}, rigorous "
        f"{log_rig.mean(0)[-1]:.1f}; printed FFN factor violated on "
        f"{100 * jres[norm]['ffn_factor_violations']:.0f}% of (draw, block)"
    )
results["jacobian_product"] = jres

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
for ax, norm in zip(axes[:2], ("pre_ln", "lns")):
    d = np.arange(1, len(jres[norm]["prod_norm"]) + 1)
    ax.plot(d, np.log10(jres[norm]["prod_norm"]), "k-", lw=2, label=r"measured $\|\partial y_L / \partial x_1\|_2$")
    ax.plot(d, jres[norm]["log10_rigorous"], "g--", label="product of rigorous per-sublayer bounds")
    ax.plot(d, jres[norm]["log10_eq36"], "b:", label="eq. 36/61 as printed")
    ax.plot(d, jres[norm]["log10_eq9"], "r-.", label="eq. 9/15 with A, B of eqs. 47-48")
    ax.set(xlabel="depth $L$", ylabel=r"$\log_{10}$ of the norm", title=f"{norm}: Jacobian product and bounds")
axes[0].legend(loc="upper left")
for norm, color in (("pre_ln", "C0"), ("lns", "C1")):
    d = np.arange(1, len(jres[norm]["prod_norm"]) + 1)
    plots.seed_band(axes[2], d, pd.DataFrame(jac[norm].prod_norm.T), color,
                    label=f"{norm}: $\\sim L^{{{jres[norm]['growth_exponent'].value:.2f}}}$ (mean, min..max of draws)")
axes[2].set(xscale="log", yscale="log", xlabel="depth $L$", ylabel=r"$\|\partial y_L / \partial x_1\|_2$",
            title="measured product, log-log")
axes[2].legend()
show(fig, "jacobian_product_vs_depth")

# %%
slack = {n: float(jres[n]["log10_eq9"][-1] - np.log10(jres[n]["prod_norm"][-1])) for n in jres}
display(Markdown(f"""
**What the figure shows** ({jac_samples} draws, d = {jac_d}, {jac_tokens} tokens, {jac_layers}
blocks;
A = {A:.0f}, B = {B:.0f} from eqs. 47-48). The printed FFN factor of eq. 36/41 (about 1 +
{jres['pre_ln']['ffn_factor_excess']:.1e}
here) is below the measured norm of the FFN sublayer's Jacobian on
{100 * jres['pre_ln']['ffn_factor_violations']:.0f}% (Pre-LN)
and {100 * jres['lns']['ffn_factor_violations']:.0f}% (LNS) of (draw, block); the rigorous factor
1 + c_l ||W_1|| ||W_2|| / rms(x') is violated on {100 * jres['pre_ln']['rigorous_violations']:.0f}%. The eq. 9 / eq.
15 bounds
exceed the measured norm by 10^{slack['pre_ln']:.0f} (Pre-LN) and 10^{slack['lns']:.0f} (LNS) at L = {jac_layers}.
The measured product grows like L^{jres['pre_ln']['growth_exponent']} under Pre-LN
({jres['pre_ln']['prod_norm'][0]:.1f} at
L = 1, {jres['pre_ln']['prod_norm'][-1]:.0f} at L = {jac_layers}) and like L^{jres['lns']['growth_exponent']}
under LNS
({jres['lns']['prod_norm'][-1]:.0f} at L = {jac_layers}); the deepest block's ||Jbar - I||_F / d is
{jres['lns']['dev_diag'][-1]:.4f} (LNS) vs {jres['pre_ln']['dev_diag'][-1]:.4f} (Pre-LN).
"""))

# %% [markdown]
# The proof of eq. 41 divides by (sqrt d + sqrt d_FFN)^2 where eq. 40 multiplies by it, which is why the
# printed FFN factor is violated; the correct factor holds. The eq. 9 / eq. 15 bounds hold but are vacuous,
# with A in the thousands. At initialisation the measured product is not bounded under Pre-LN, and LNS
# makes it grow *slower*, with deep blocks closer to the identity: by eq. 5 the deviation of block l is
# c_l / sigma_l, and LNS shrinks c_l. Section 10 asks the same question of trained models.

# %%
for norm, item, eq in (("pre_ln", "Theorem 3.3", "eq. 9"), ("lns", "Theorem 4.2", "eq. 15")):
    r = jres[norm]
    ledger.add(f"A-thm{item.split()[1].replace('.', '')}-bound", f"{item} ({eq})",
               f"||dy_L/dx_1||_2 <= prod_l (1 + A/({'l ' if norm == 'lns' else ''}sigma_l) + "
               f"B/({'l^2 ' if norm == 'lns' else ''}sigma_l^2)) with A, B of eqs. 47-48.",
               f"{eq} holds",
               Verdict(r["bound_verdict"],
                       f"holds on {100 * (1 - r['product_violations']):.0f}% of (draw, depth); at L={jac_layers} "
                       f"the bound exceeds the measured norm {r['prod_norm'][-1]:.1f} by 10^{slack[norm]:.0f} (A = "
                       f"{A:.0f}, B = {B:.0f}); loose beyond 10x"))
ledger.add("A-lemA2-ffn-factor", "Lemma A.2 (eqs. 36, 41)",
           "The FFN sublayer Jacobian satisfies ||dy_l/dx'_l||_2 <= 1 + sigma^2 / (sigma_x' (sqrt d + sqrt d_FFN)^2).",
           "eq. 41 bound holds",
           Verdict(checks.weakest(jres["pre_ln"]["ffn_factor_verdict"], jres["lns"]["ffn_factor_verdict"]),
                   f"violated on {100 * jres['pre_ln']['ffn_factor_violations']:.0f}% (Pre-LN) and "
                   f"{100 * jres['lns']['ffn_factor_violations']:.0f}% (LNS) of (draw, block); the rigorous "
                   f"1 + ||W_1|| ||W_2|| / rms(x') holds on {100 * (1 - jres['pre_ln']['rigorous_violations']):.0f}%"))

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
    print(
        f"{key}: sigma^2=e^l: ln P converges to {exp_growth[-1]:.3f} "
        f"(eq. 49: ln M = {regimes[key]['paper_M_log']:.3f});"
        f" sigma^2=l: local exponent d lnP/d lnL = {local_exp[99]:.2f} (L=1e2), {local_exp[9_999]:.2f} (1e4), "
        f"{local_exp[-1]:.2f} (1e5); LNS sigma^2=l^1.5: ln P = {lns_poly[999]:.4f} (L=1e3), {lns_poly[-1]:.4f} (1e5)"
    )
ma = np.linspace(0.1, 10, 200)
m_true = np.array(
    [bounds.log_product(x, 1.0, np.exp(np.arange(1, 200)))[-1] for x in ma]
)  # the paper's own sigma_k = e^k
m_paper = np.array([np.log(bounds.paper_m(x, 1.0)) for x in ma])
a_cross = float(ma[np.argmax(m_paper < m_true)]) if np.any(m_paper < m_true) else float("nan")
m_true_11 = float(bounds.log_product(1.0, 1.0, np.exp(np.arange(1, 200)))[-1])
m_paper_11 = float(np.log(bounds.paper_m(1.0, 1.0)))
print(f"eq. 49's M falls below the product's true limit for A >= {a_cross:.2f} (B = 1)")
results["bound_regimes"] = regimes
results["paper_M_invalid_from_A"] = a_cross
fig, ax = plt.subplots(figsize=(5.5, 4))
ax.plot(ma, m_true, label=r"$\ln$ of the true limit of $\prod_k (1 + A e^{-k} + B e^{-2k})$")
ax.plot(ma, m_paper, "--", label=r"$\ln M$ of eq. 49")
ax.set(xlabel="$A$ ($B$ = 1)", ylabel=r"$\ln$ (limit)", title="eq. 49 against the product it approximates")
ax.legend()
show(fig, "paper_M_vs_true_limit")
r11 = regimes["A=1,B=1"]
ledger.add("A-thm33-exp-regime", "Theorem 3.3 (eq. 10, 49)",
           "If sigma^2_l grows exponentially, the bound converges to a constant M given by eq. 49.",
           "bounded by M of eq. 49",
           Verdict(checks.weakest(checks.bounded_verdict(r11["exp_change_last_100"], claimed_bounded=True),
                                  checks.bound_verdict(np.exp(m_true), np.exp(m_paper))),
                   f"the product converges (ln P changes by {r11['exp_change_last_100']:.1e} over its last 100 "
                   f"factors), but eq. 49's M lies below the true limit (ln M = {m_paper_11:.2f} vs {m_true_11:.2f} "
                   f"at A = B = 1; below it for every A >= {a_cross:.2f}), so M does not bound it; exponential "
                   "variance growth is impossible for bounded weights (section 1)"))
ledger.add("A-thm33-linear-regime", "Theorem 3.3 (eq. 11, 50)",
           "If sigma^2_l grows linearly, the bound grows linearly in depth: Theta(L).",
           "Theta(L)",
           Verdict(checks.exponent_verdict(checks.exact(r11["linear_local_exponent_at"]["L1e5"]), 1.0),
                   "with sigma^2_l = l and A = B = 1 the local exponent d ln P / d ln L is "
                   f"{r11['linear_local_exponent_at']['L1e2']:.1f} at L=1e2 and "
                   f"{r11['linear_local_exponent_at']['L1e5']:.0f} at L=1e5 (Theta(L) needs 1): the bound grows like "
                   "exp(2A sqrt L)"))
ledger.add("A-thm42-regime", "Theorem 4.2 (eqs. 16, 64-65)",
           "Under LNS with sigma^2_l ~ l^(2-eps) the bound is omega(1): it keeps growing with depth.",
           "omega(1)",
           Verdict(checks.bounded_verdict(r11["lns_log_at"]["L1e5"] - r11["lns_log_at"]["L1e3"], claimed_bounded=False),
                   f"with sigma^2_l = l^1.5 (eps = 1/2), A = B = 1: ln P = {r11['lns_log_at']['L1e3']:.4f} at L=1e3 "
                   f"and {r11['lns_log_at']['L1e5']:.4f} at L=1e5: the product converges (its terms ~ l^-(2-eps/2) "
                   "are summable; eq. 64 itself tends to a constant)"))
display(Markdown(f"""
**Result.** With exponential variance the product converges (ln P changes by {r11['exp_change_last_100']:.1e} over
its last
100 factors), but eq. 49's closed form is below the true limit for every A >= {a_cross:.2f} (ln M = {m_paper_11:.2f} vs
{m_true_11:.2f} at A = B = 1). With linear variance the local exponent d ln P / d ln L is
{r11['linear_local_exponent_at']['L1e2']:.0f} at L = 100 and {r11['linear_local_exponent_at']['L1e5']:.0f} at L = 10^5.
Under LNS with sigma^2 ~ l^1.5, ln P is {r11['lns_log_at']['L1e3']:.3f} at L = 10^3 and
{r11['lns_log_at']['L1e5']:.3f} at 10^5.
"""))

# %% [markdown]
# Theorem 3.3's first case holds as mathematics (the product converges), but eq. 49's M, a second-order
# truncation of an alternating series, is not an upper bound on the limit, so the statement "bounded by
# M" fails; at the A of real widths M underflows to 0. With linear variance the product is not Theta(L):
# it grows like exp(2A sqrt L) (the proof of eq. 50 uses sigma_k = k where sigma^2_k = k means
# sigma_k = sqrt k, and even then prod (1 + A/k) is Theta(L^A), not Theta(L)). Under LNS with
# sigma^2 ~ l^(2-eps) the product converges: the bound is O(1), not omega(1); eq. 64 itself tends to
# exp(A/(1 - eps/2)).

# %% [markdown]
# ## 7. Theorem 4.3: the gradient with respect to the first layer's query weights
#
# ||d x_{L+1} / d W_Q^(1)||_2 (operator norm, power iteration on J^T J) in random stacks with
# softmax attention (under the uniform attention of App. A.1.1 the output does not depend on W_Q at
# all, so the theorem is vacuous there), against the bound of eq. 81 evaluated at the measured
# variances.

# %%
qcfg = StackConfig(d_model=jac_d, d_ff=4 * jac_d, n_heads=4, n_tokens=8, attention="softmax")
depths = qg_depths
qg = {
    norm: jacobians.query_gradient_norm(qcfg.with_(norm=norm), depths, qg_samples, seed, qg_iter)
    for norm in ("pre_ln", "lns")
}
q_uniform = jacobians.query_gradient_norm(qcfg.with_(attention="uniform"), depths[:1], qg_samples, seed, 2)[0]
qres = {}
for norm, (gnorm, rms_x, rms_mid) in qg.items():
    sig = rms_x.mean(0)
    attn_f, ffn_f = bounds.lemma_a2_factors(
        sig, rms_mid.mean(0), qcfg.sigma_w, qcfg.d_model, qcfg.d_ff, qcfg.n_heads, qcfg.n_tokens, lns=norm == "lns"
    )
    log_prod = np.concatenate([[0.0], np.cumsum(np.log10(attn_f * ffn_f))])
    pref = bounds.thm43_prefactor(float(sig[0]), qcfg.sigma_w, qcfg.d_model, qcfg.n_heads, qcfg.n_tokens)
    log_bound = np.array([log_prod[dd - 1] + np.log10(pref) for dd in depths])
    gexp = (
        fits.bootstrap(gnorm, lambda g: fits.power_law(depths, g.mean(0)).coef[:1], n_boot, seed)[0]
        if len(depths) > 2
        else None
    )
    qres[norm] = dict(depths=depths, grad_norm=gnorm.mean(0), log10_bound=log_bound, growth_exponent=gexp,
                      violations=float((np.log10(gnorm) > log_bound).mean()))
    print(
        f"{norm}: ||dy/dW_Q1|| = {np.round(gnorm.mean(0), 2)} at depths {depths}; growth ~ L^{gexp}; "
        f"log10 eq.81 bound {np.round(log_bound, 0)}"
    )
print("uniform attention: ||dy/dW_Q1|| =", float(q_uniform.max()))
results["query_gradient"] = qres
fig, ax = plt.subplots(figsize=(5.5, 4))
for norm, color in (("pre_ln", "C0"), ("lns", "C1")):
    plots.seed_band(
        ax,
        depths,
        pd.DataFrame(qg[norm][0].T),
        color,
        label=f"{norm}: mean, min..max of {qg[norm][0].shape[0]} draws",
        marker="o",
        markersize=3,
    )
ax.set(xscale="log", yscale="log", xlabel="depth $L$", ylabel=r"$\|\partial y_L / \partial W_Q^{(1)}\|_2$",
       title="first-layer query gradient (softmax attention)")
ax.legend()
show(fig, "query_gradient_vs_depth")
q_slack = float(np.median(qres["pre_ln"]["log10_bound"] - np.log10(qres["pre_ln"]["grad_norm"])))
q_measured = np.concatenate([qg[n][0].ravel() for n in qg])
q_bound = 10 ** np.clip(
    np.concatenate([np.broadcast_to(qres[n]["log10_bound"], qg[n][0].shape).ravel() for n in qg]), None, 300
)
ledger.add("A-thm43", "Theorem 4.3 (eqs. 18, 81)",
           "The gradient norm with respect to the first layer's query weights is bounded by a product over layers "
           "(eq. 81), which LNS keeps from exploding.",
           "eq. 81 bound; LNS tames the growth",
           Verdict(checks.bound_verdict(q_measured, q_bound),
                   f"bound holds on {100 * (1 - max(q['violations'] for q in qres.values())):.0f}% of draws, "
                   f"exceeding the measured norm by ~10^{q_slack:.0f} (loose beyond 10x); growth with depth: Pre-LN "
                   f"L^{qres['pre_ln']['growth_exponent']}, LNS L^{qres['lns']['growth_exponent']}; exactly 0 under "
                   "uniform attention"))
display(Markdown(f"""
**Result.** The eq. 81 bound holds on {100 * (1 - max(q['violations'] for q in qres.values())):.0f}% of draws, about
10^{q_slack:.0f} above the measured norms ({qres['pre_ln']['grad_norm'][0]:.0f} at L = {depths[0]} for Pre-LN;
{qres['pre_ln']['grad_norm'][-1]:.0f} (Pre-LN) vs {qres['lns']['grad_norm'][-1]:.0f} (LNS) at L = {depths[-1]}). The
first-layer
query gradient grows with depth like L^{qres['pre_ln']['growth_exponent']} under Pre-LN and
L^{qres['lns']['growth_exponent']} under LNS; under uniform attention it is {float(q_uniform.max()):.1g}.
"""))

# %% [markdown]
# LNS does tame the growth of the first-layer gradient, as the theorem's discussion says, and the bound
# holds, loosely. Under the uniform attention the appendix assumes, the gradient is exactly 0 (the output
# does not depend on W_Q), so the theorem needs an assumption the rest of the analysis excludes.

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
cfg1 = base.with_(n_layers=1, d_model=var_d)
by_n = [simulate(cfg1.with_(n_tokens=n), max(var_samples, 8), seed) for n in ns]
by_s = [simulate(cfg1.with_(weight_std=s), max(var_samples, 8), seed) for s in sws]
e_attn_n = fits.bootstrap(
    np.stack([r.var_attn[:, 0] for r in by_n], 1), lambda d: fits.power_law(ns, d.mean(0)).coef[:1], n_boot, seed
)[0]
e_attn_s = fits.bootstrap(
    np.stack([r.var_attn[:, 0] for r in by_s], 1), lambda d: fits.power_law(sws, d.mean(0)).coef[:1], n_boot, seed
)[0]
e_ffn_s = fits.bootstrap(
    np.stack([r.var_ffn[:, 0] for r in by_s], 1), lambda d: fits.power_law(sws, d.mean(0)).coef[:1], n_boot, seed
)[0]
ffn_const = float(np.mean([r.var_ffn[:, 0].mean() / s**4 for r, s in zip(by_s, sws)]))
lam_ns = [4, 16, 64, 256, 1024, 4096]
dist, conc = attention_variance.softmax_concentration(lam_ns, max(20 * var_samples, 100), 1.0, seed)
e_lema1 = fits.mean_exponent(lam_ns, dist, n_boot, seed)
n_sum_p2 = conc.mean(0) * np.array(lam_ns)
print(
    f"Var(Attn) ~ n^{e_attn_n} (eq. 27: n^0),  ~ sigma_W^{e_attn_s} (eq. 27: sigma_W^2);  "
    f"Var(FFN) ~ sigma_W^{e_ffn_s} (eq. 29: 4), "
    f"constant {ffn_const:.0f} vs d d_ff / 2 = {cfg1.d_model * cfg1.d_ff / 2:.0f}"
)
print(f"Lemma A.1: E sum (p - 1/N)^2 ~ N^{e_lema1};  N E sum p^2 = {np.round(n_sum_p2, 3)} (-> e = {np.e:.3f}, not 1)")
results["appendix_a1"] = dict(
    attn_n_exponent=e_attn_n,
    attn_sigma_exponent=e_attn_s,
    ffn_sigma_exponent=e_ffn_s,
    ffn_constant=ffn_const,
    lemma_a1_exponent=e_lema1,
    lemma_a1_n_sum_p2=n_sum_p2,
)
ledger.add("A-eq27-attn-variance", "App. A.1.1 (eq. 27)",
           "Under uniform attention the attention output variance is d_head sigma_V^2 = sigma_W^2 d, independent of "
           "the number of tokens n.",
           "Var ~ n^0 sigma_W^2",
           Verdict(checks.weakest(checks.exponent_verdict(e_attn_n, 0.0), checks.exponent_verdict(e_attn_s, 2.0)),
                   f"measured Var(Attn) ~ n^{e_attn_n} and ~ sigma_W^{e_attn_s} (the average of n independent rows "
                   "divides by n; W_V and W_O both enter)"))
ledger.add("A-eq29-ffn-variance", "App. A.1.2 (eq. 29)",
           "The FFN output variance scales as sigma_W^4.",
           "sigma_FFN^2 ~ sigma_W^4",
           Verdict(checks.exponent_verdict(e_ffn_s, 4.0),
                   f"measured exponent {e_ffn_s}; prefactor {ffn_const:.0f} vs d d_ff / 2 = "
                   f"{cfg1.d_model * cfg1.d_ff / 2:.0f} (omitted by eq. 29, d^2 in eq. 31)"))
ledger.add("A-lemA1", "Lemma A.1 (eq. 26)",
           "The softmax of N i.i.d. logits concentrates on the uniform distribution: E sum_i (p_i - 1/N)^2 -> 0.",
           "-> 0 as N -> infinity",
           Verdict(checks.below_verdict(e_lema1),
                   f"E sum (p - 1/N)^2 ~ N^{e_lema1} -> 0 (logit std 1); but N E sum p^2 -> {n_sum_p2[-1]:.2f} = "
                   "e^(s^2), so the attention variance sigma^2 sum p^2 stays e^(s^2) times the uniform value"))
display(Markdown(f"""
**Result.** The uniform average of n independent value rows has variance ~ n^{e_attn_n.value:.2f} and
~ sigma_W^{e_attn_s.value:.2f}; eq. 29's FFN law is sigma_W^{e_ffn_s.value:.2f}, with a prefactor {ffn_const:.0f}
(d d_FFN / 2 = {cfg1.d_model * cfg1.d_ff / 2:.0f}). Lemma A.1's distance to uniform decays like N^{e_lema1.value:.2f},
while N E sum p_i^2 reaches {n_sum_p2[-1]:.2f} at N = {lam_ns[-1]} (e^(s^2) = {np.e:.2f} for logit std 1).
"""))

# %% [markdown]
# Eq. 27 fails twice: the derivation sums (1/n) Var(V_i) instead of (1/n^2) Var(V_i), and W_V and W_O both
# enter, so the variance is quartic in sigma_W, not quadratic. Paper B's Theorem 4 (same co-author) has the
# correct 1/n. Eq. 29's sigma_W^4 holds, with the prefactor d d_FFN / 2 it omits. Lemma A.1 holds as
# stated, but it does not license "softmax ~ uniform" for variances: N E sum p_i^2 tends to e^(s^2), so the
# attention variance is e^(s^2) times the uniform one at any N. Paper B's notebook (b2_theory) measures how
# this bends Theorem 4's 1/n.

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
# Jacobians on `lm_jac_tokens` tokens. One draw per model: no spread is drawn.

# %%
src = real_stack.MarkovSource(64, alpha=0.1, seed=seed)
eval_idx = src.sample(32, lm_seq, np.random.default_rng(seed + 99))
lm = {}
for norm in ("pre_ln", "lns"):
    torch.manual_seed(seed)
    model = real_stack.tiny_lm(norm, d_model=lm_d, n_layers=lm_layers, max_seq_len=lm_seq)
    jac0 = real_stack.block_jacobians(model, eval_idx[0, : lm_jac_tokens])
    losses, prof = real_stack.train(
        model, src, lm_steps, lm_batch, lm_seq, 1e-3, seed, eval_idx, (0, lm_steps)
    )
    jac1 = real_stack.block_jacobians(model, eval_idx[0, : lm_jac_tokens])
    lm[norm] = dict(losses=losses, init=prof[0], trained=prof[lm_steps], jac_init=jac0, jac_trained=jac1)
    print(f"{norm}: loss {losses[0]:.3f} -> {np.mean(losses[-10:]):.3f} (entropy rate {src.entropy():.3f})")
lm_fit = {}
for norm in lm:
    for stage in ("init", "trained"):
        v = lm[norm][stage]["var"]
        layers = np.arange(1, len(v))
        inc = v[1:] - v[0]
        lm_fit[f"{norm}_{stage}"] = dict(
            beta=fits.power_law(layers, inc).estimate(0),
            rms=fits.growth_models(layers, inc),
            rho_attn_max=float(np.abs(lm[norm][stage]["rho_attn"]).max()),
            rho_ffn_mean=float(lm[norm][stage]["rho_ffn"].mean()),
            kurtosis_max=float(np.abs(lm[norm][stage]["kurtosis"][1:]).max()),
        )
        f = lm_fit[f"{norm}_{stage}"]
        print(
            f"{norm:6s} {stage:7s}: var {v[0]:.2e} -> {v[-1]:.2e}; beta {f['beta']}; RMS power {f['rms']['power']:.3f} "
            f"exp {f['rms']['exponential']:.3f} log {f['rms']['log']:.3f}; |rho_attn| <= {f['rho_attn_max']:.2f}, "
            f"mean rho_ffn {f['rho_ffn_mean']:.2f}, |kurtosis| <= {f['kurtosis_max']:.2f}"
        )
results["tiny_lm"] = {
    **lm_fit,
    "profiles": {n: {s: lm[n][s] for s in ("init", "trained")} for n in lm},
    "jacobians": {n: {"init": lm[n]["jac_init"], "trained": lm[n]["jac_trained"]} for n in lm},
    "final_loss": {n: float(np.mean(lm[n]["losses"][-10:])) for n in lm},
    "entropy_rate": src.entropy(),
}

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
for norm, color in (("pre_ln", "C0"), ("lns", "C1")):
    for stage, ls in (("init", ":"), ("trained", "-")):
        v = lm[norm][stage]["var"]
        axes[0].semilogy(np.arange(len(v)), v, ls, color=color, label=f"{norm} {stage}")
        axes[1].loglog(np.arange(1, len(v)), v[1:] - v[0], ls, color=color,
                       label=rf"{norm} {stage}: $\beta$ = {lm_fit[f'{norm}_{stage}']['beta'].value:.2f}")
        axes[2].semilogy(
            np.arange(1, len(v)), lm[norm][f"jac_{stage}"]["dev_diag"], ls, color=color, label=f"{norm} {stage}"
        )
axes[0].set(
    xlabel="layer $l$ (0 = embeddings)", ylabel=plots.SIGMA2 + " of $h_l$", title="tiny LM: variance against depth"
)
axes[1].set(xlabel="layer $l$", ylabel=r"$\sigma^2_l - \sigma^2_0$", title="growth from the embeddings (log-log)")
axes[2].set(xlabel="block $l$", ylabel=plots.JACOBIAN_DEVIATION, title="block Jacobian distance from the identity")
for ax in axes:
    ax.legend()
show(fig, "tiny_lm_variance_and_jacobians")

# %%
pre_i, pre_t = lm_fit["pre_ln_init"], lm_fit["pre_ln_trained"]
lns_t = lm_fit["lns_trained"]
idl = runs["pre_ln"]
asm_settings = {
    "random stack": (
        max(np.abs(idl.rho_attn.mean(0)).max(), np.abs(idl.rho_ffn.mean(0)).max()),
        float(np.abs(idl.kurtosis.mean(0)).max()),
    ),
    "tiny LM at init": (max(pre_i["rho_attn_max"], abs(pre_i["rho_ffn_mean"])), pre_i["kurtosis_max"]),
    f"tiny LM after {lm_steps} steps": (
        max(pre_t["rho_attn_max"], abs(pre_t["rho_ffn_mean"])),
        pre_t["kurtosis_max"],
    ),
}
ledger.add(
    "A-asm31",
    "Assumption 3.1",
    "Inputs, intermediate states and weights are zero-mean Gaussian and independent at every layer (branch "
    "outputs uncorrelated with the residual).",
    "Gaussian, zero-mean, independent",
    Verdict(
        checks.gaussian_independent_verdict(list(asm_settings.values())),
        "; ".join(f"{k}: max |rho| {r:.2f}, max |excess kurtosis| {q:.2f}" for k, (r, q) in asm_settings.items())
        + " (tolerance |rho| <= 0.1, |kurtosis| <= 0.5; loosely within twice that)",
    ),
)
ledger.add("A-appB-trained-exponential", "App. B (Fig. 9), beyond the assumptions",
           "In a trained Pre-LN model the variance grows exponentially with depth.",
           "exponential growth across layers at every training stage",
           Verdict(checks.law_preference_verdict(pre_t["rms"], "exponential"),
                   f"tiny LM after {lm_steps} steps: sigma^2_l - sigma^2_0 ~ l^beta, beta = {pre_t['beta']} "
                   f"(Lemma 3.2's Theta(L) lower bound: {checks.at_least_verdict(pre_t['beta'], 1.0)}), RMS log-error "
                   f"power {pre_t['rms']['power']:.3f} vs exponential {pre_t['rms']['exponential']:.3f}; LNS: beta = "
                   f"{lns_t['beta']}"))
dd_pre, dd_lns = lm["pre_ln"]["jac_trained"]["dev_diag"], lm["lns"]["jac_trained"]["dev_diag"]
half = slice(len(dd_pre) // 2, None)
var_pre, var_lns = lm["pre_ln"]["trained"]["var"], lm["lns"]["trained"]["var"]
display(Markdown(f"""
**What the tiny model shows** ({lm_layers} blocks, d = {lm_d}, {lm_steps} Adam steps; loss
{lm['pre_ln']['losses'][0]:.2f} -> {results['tiny_lm']['final_loss']['pre_ln']:.2f} (Pre-LN) and
{results['tiny_lm']['final_loss']['lns']:.2f} (LNS), entropy rate {src.entropy():.2f}). At initialisation the FFN
output is
uncorrelated with the residual (mean rho_FFN {pre_i['rho_ffn_mean']:.2f}), the attention output nearly so
(|rho_attn| <= {pre_i['rho_attn_max']:.2f}), coordinates are close to Gaussian (|excess kurtosis| <=
{pre_i['kurtosis_max']:.2f}),
and the variance grows as a power law (beta = {pre_i['beta'].value:.2f}). After training the FFN branch output is
correlated
with the residual it is added to (mean rho_FFN {pre_t['rho_ffn_mean']:.2f} under Pre-LN, {lns_t['rho_ffn_mean']:.2f}
under LNS).
The trained Pre-LN variance grows {var_pre[-1] / var_pre[0]:.0f}x over {lm_layers} blocks as a power law
(beta = {pre_t['beta']}; the exponential fits {pre_t['rms']['exponential'] / pre_t['rms']['power']:.1f}x worse in log
variance),
and LNS ends {var_pre[-1] / var_lns[-1]:.1f}x lower (beta = {lns_t['beta'].value:.2f}). Over the deeper half of the
blocks
after training, ||Jbar - I||_F / d is {dd_lns[half].mean():.4f} (LNS) vs {dd_pre[half].mean():.4f} (Pre-LN).
"""))

# %% [markdown]
# Training breaks Assumption 3.1's independence within a few hundred steps, and the trained variance still
# grows as a power law, not exponentially. A single tiny model trained briefly cannot say how LNS changes the
# deep blocks of a trained LLM; the next section reads that from the committed analyses of the trained
# miniatures.

# %% [markdown]
# ## 10. Trained models: does LNS make deep layers less identity-like?
#
# Section 4.1 (after Theorem 4.2) and section 5.5 read Theorem 4.2 as: with LNS, fewer deep layers act as
# identity maps. This is a claim about trained models, so it is judged on the committed analyses of the
# trained a_130m (12 blocks) and a_250m (24 blocks) miniatures (`analyses/<profile>/a_*`, written by
# `python -m cod.runs.analysis`): the token-averaged Jacobian of every block, Jbar_l, and its distance from the
# identity ||Jbar_l - I||_F / d. The statistic is the mean over the deeper half of the blocks, per seed;
# `compare` asks whether LNS's is higher than Pre-LN's in every seed by more than the seed spread.
#
# The companion claim, that the *product* of Jacobians saturates under Pre-LN but keeps growing under LNS,
# is a statement about L -> infinity. It cannot be decided at 12-24 blocks, and the stored per-block
# token-averaged Jacobians do not give the end-to-end Jacobian (the product of averages is not the average
# of products, and cross-token terms are absent). It is recorded as inconclusive at this scale, with the
# product of the averaged Jacobians quoted as a proxy only.

# %%
trained = {}
for size in ("a_130m", "a_250m"):
    found = load_analyses(Path(analyses_dir) / size, ["pre_ln", "lns"])
    if not found:
        print(f"no stored analyses of {size} under {analyses_dir}")
    for (variant, s), la in found.items():
        dev_l = np.asarray(la.jacobians.deviation, float)
        n_l = len(dev_l)
        prod, norms = np.eye(la.jacobians.mean.shape[-1]), []
        for j in la.jacobians.mean.astype(np.float64):
            prod = j @ prod
            norms.append(np.linalg.norm(prod, 2))
        trained[size, variant, s] = dict(deviation=dev_l, deep=float(dev_l[n_l // 2:].mean()), proxy=np.array(norms))
deep = pd.Series({k: v["deep"] for k, v in trained.items()}, dtype=float)
if len(deep):
    display(deep.unstack(level=[0, 1]).round(4).rename_axis("seed"))

# %%
sizes = sorted({k[0] for k in trained})
if sizes:
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.5 * len(sizes), 4), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        for variant, color in (("pre_ln", "C0"), ("lns", "C1")):
            table = pd.DataFrame(
                {s: v["deviation"] for (z, var, s), v in trained.items() if z == size and var == variant}
            )
            if not table.empty:
                plots.seed_band(
                    ax,
                    np.arange(1, len(table) + 1),
                    table,
                    color,
                    label=f"{variant} (mean, min..max of {table.shape[1]} seeds)",
                    marker="o",
                    markersize=3,
                )
        ax.set(
            yscale="log", xlabel="block $l$", ylabel=plots.JACOBIAN_DEVIATION, title=f"trained {size}: block Jacobians"
        )
        ax.axvspan(len(table) / 2 + 0.5, len(table) + 0.5, color="0.92", zorder=0, label="deeper half (the statistic)")
        ax.legend()
    show(fig, "trained_jacobian_deviation")

# %%
for size in ("a_130m", "a_250m"):
    per_seed = {v: pd.Series({s: deep[size, v, s] for (z, var, s) in trained if z == size and var == v}, dtype=float)
                for v in ("pre_ln", "lns")}
    verdict = compare(per_seed["lns"], per_seed["pre_ln"], higher_is_better=True)
    ledger.add(f"A-lns-deep-identity-{size.split('_')[1]}", "Sec. 4.1 (after Theorem 4.2), Sec. 5.5",
               f"{'(ours) ' if size != 'a_130m' else ''}LNS makes deep layers less identity-like than Pre-LN "
               f"(trained {size}).",
               "fewer deep layers act as identity maps under LNS",
               replace(verdict, why=f"mean ||Jbar - I||_F/d over the deeper half, LNS vs Pre-LN: {verdict.why}"))
proxy_250 = {
    v: np.mean(
        [
            t["proxy"][-1] / t["proxy"][len(t["proxy"]) // 2 - 1]
            for (z, var, s), t in trained.items()
            if z == "a_250m" and var == v
        ]
    )
    if any(k[:2] == ("a_250m", v) for k in trained)
    else float("nan")
    for v in ("pre_ln", "lns")
}
ledger.add(
    "A-lns-vs-preln-product",
    "Sec. 4.1 after Theorem 4.2",
    "With LNS the gradient norm ||dy_L/dx_1|| keeps growing with depth, whereas Pre-LN's is bounded by a "
    "constant (fewer identity-like layers).",
    "Pre-LN: <= M (saturates); LNS: grows (omega(1))",
    beyond_reach(
        "bounded vs growing is a limit L -> infinity, out of reach at 12-24 trained blocks, and the stored "
        "token-averaged "
        "block Jacobians do not give the end-to-end Jacobian; proxy (norm of the product of averaged "
        f"Jacobians, a_250m, growth over the deeper half): Pre-LN x{proxy_250['pre_ln']:.2f}, LNS "
        f"x{proxy_250['lns']:.2f}; random stacks at init (section 5): Pre-LN "
        f"L^{jres['pre_ln']['growth_exponent']}, LNS L^{jres['lns']['growth_exponent']}"
    ),
)
rows = {r["id"]: r for r in ledger.rows}
if sizes:
    display(
        Markdown(
            "**Result.** "
            + " ".join(
                f"{size}: deeper-half ||Jbar - I||_F / d is {deep.loc[size, 'lns'].mean():.4f} under LNS vs "
                f"{deep.loc[size, 'pre_ln'].mean():.4f} under Pre-LN "
                f"({rows[f'A-lns-deep-identity-{size.split(chr(95))[1]}']['verdict']})."
                for size in sizes
            )
            + f" The product proxy grows over the deeper half of a_250m by x{proxy_250['pre_ln']:.2f} (Pre-LN) "
            f"and x{proxy_250['lns']:.2f} (LNS)."
        )
    )

# %% [markdown]
# In the trained miniatures, as at initialisation, LNS's deep blocks are *closer* to the identity than
# Pre-LN's, the direction eq. 5 predicts from the extra 1/sqrt(l) and the reverse of the paper's reading.
# Whatever LNS changes in these models (a5 compares their losses), it is not less identity-like deep blocks
# in this sense; a10 measures the layers' usefulness directly.

# %% [markdown]
# ## Where the theory of paper A is loose or wrong (summary of the sections above)
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
#   convergent product; eq. 41 divides where eq. 40 multiplies (the printed FFN factor is violated);
#   eq. 27 drops a 1/n.
# - **Vacuous constants.** A of eq. 47 is in the thousands at d = 32, making eqs. 9, 15 and 81 true by
#   many orders of magnitude.
# - **Direction of the LNS story.** At init, after short training and in the trained miniatures, LNS blocks
#   are closer to the identity than Pre-LN's, the reverse of section 4.1's reading of Theorem 4.2. What
#   survives: deep Pre-LN blocks do approach the identity as 1/sigma (eq. 5), LNS does keep variance (and
#   first-layer gradient growth) much lower, and Theorem 4.3's bound holds.

# %% [markdown]
# ## Verdicts
#
# Each row: the statement, what the paper states, what we measured, and the verdict by the rules stated
# at the top (theory rules of `cod/theory/checks.py`; the trained-model claims by `cod/claims/verdicts.py`).

# %%
print(f"runtime {results.save():.0f} s, profile {profile}")
ledger.save(out)

# %% [markdown]
# ## What the figures show
# Generated from the claims this notebook judged (its claims.json): no number below is typed.

# %%
from cod.claims import scoreboard

display(Markdown(scoreboard.closing_of(figures_dir)))
