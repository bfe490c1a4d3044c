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
# # B5 · Grouped-query attention: sharing key-value heads at equal FLOPs
#
# Paper B, section 4.2.1, **Fig. 7**, **Table 4** and appendix C.9 (**Figs. 26-27**). The paper
# trains 1.2B Pre-LN models (16 layers, 16 query heads, sequences of 4096) with 16, 4 and 1
# key-value heads (group size G = 1, 4, 16: MHA, GQA, MQA) at equal training FLOPs, the models
# with fewer KV heads training on more tokens (5B, 5.35B, 5.6B). It reports that the last
# layer's output variance falls monotonically with G, MQA's about half of MHA's (Fig. 7), and
# that perplexity (14.52 -> 14.47) and the permutation and usefulness scores improve (Table 4).
# Theorem 5 (appendix B.6, checked in `b2_theory`) gives the mechanism: averaging over heads.
#
# **What is shrunk here** (the `default` profile; the headline profile's ladder is its own, in
# `params.yaml`). The 8-layer miniature of paper B's ladder (`b_depth/d16`: width 24,
# 4 query heads of 6, sequences of 128, weight decay 0.1) with 4 (MHA, its own runs), 2 and 1
# KV heads: G = 1, 2, 4. Each trains for the steps that give it MHA's training FLOPs
# (`equal_flops` in `params.yaml`, counted by `cod.model.flops`): 599 and 609 steps against 580, a
# smaller bonus than the paper's because at width 24 the vocabulary projection dominates a
# token's FLOPs. Scores come from the `analyse@b_gqa` stage (the settings of `analyse@b_depth`).

# %% tags=["parameters"]
profile = "default"  # smoke | default | headline | paper: which runs were trained
runs_root = "runs"
analyses_root = "analyses"
figures_dir = None  # default: figures/<profile>/b5_grouped_query_attention
# the rungs, MHA first and MQA last: label -> "experiment/variant" (a third part "/analysis": the folder of its scores)
ladder = {"MHA (G=1)": "b_depth/d16", "GQA (G=2)": "b_gqa/kv2", "MQA (G=4)": "b_gqa/kv1"}
taus = [1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3]  # thresholds of the usefulness curve
matched_share = 0.81  # the paper's usefulness of MHA (Table 4): the matched tau gives our MHA this share
variance_ratio = 0.75  # "MQA's variance about half of MHA's": the per-seed ratio lies below this (a free choice)

# %%
from cod import kernel

figures_dir = kernel.start("b5_grouped_query_attention", profile, figures_dir)  # unset: a folder of its own

# %%
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display

import cod.claims.verdicts
from cod import plots
from cod.claims.ladder import SCORES, load_ladder, paper_along, paper_rows, rungs_from
from cod.claims.tables import written
from cod.claims.verdicts import Claims, monotone, one_sample, usefulness_at_floor

# paper B, Table 4, by the paper's G; our rung of each (MHA, GQA, MQA in both)
PAPER = pd.DataFrame({"val_ppl": [14.52, 14.50, 14.47], "causal": [0.31, 0.31, 0.34],
                      "permutation": [0.51, 0.57, 0.63], "usefulness": [0.81, 0.87, 0.87]},
                     index=["MHA (G=1)", "GQA (G=4)", "MQA (G=16)"])
PAPER_ROW = {"MHA (G=1)": "MHA (G=1)", "GQA (G=2)": "GQA (G=4)", "MQA (G=4)": "MQA (G=16)"}
ladder = load_ladder(rungs_from(ladder), Path(runs_root) / profile, Path(analyses_root) / profile)
paper = paper_rows(PAPER, ladder.labels, PAPER_ROW)
baseline, mqa = ladder.labels[0], ladder.labels[-1]
tau = ladder.tau
display(ladder.runs[["rung", "seed", "status", "steps", "tokens", "params", "val_ppl", "last_var_train", "causal",
                     "permutation", "usefulness"]].round(4))

# %% [markdown]
# ## The verdict rule, fixed before the numbers
# The package's one rule, printed from `cod/claims/verdicts.py`:

# %%
print(cod.claims.verdicts.rule())

# %% [markdown]
# Here "X falls (rises) as KV heads are shared" is `monotone` from MHA through GQA to MQA, beside
# the slope of the paper's values. "MQA's variance is about half of MHA's" is `one_sample` on
# the per-seed ratio of their last-layer variances, below `variance_ratio`. Only seeds trained
# on every rung count. Usefulness at the paper's tau first goes through `usefulness_at_floor`;
# two readings of our own (marked "(ours)") follow: the matched tau (the threshold at which our
# MHA runs have the paper's MHA useful share, set from MHA alone before the other rungs are
# read) and the mean loss rise under affine replacement.

# %%
matched = ladder.match_tau(baseline, matched_share)
print(f"matched tau = {matched:.4g}: our MHA runs have a useful share of about {matched_share} there")
ladder.save(figures_dir)

# %% [markdown]
# ## Fig. 7: the last layer's output variance during training
# Mean over seeds, band min..max; the runs with fewer KV heads train a few steps longer (equal
# FLOPs), so their curves run further, as in the paper's unaligned Fig. 19.

# %%
plots.show(plots.ladder_variance(ladder, "last layer during training (Fig. 7)"), figures_dir, "fig7_variance")

# %% [markdown]
# ## Table 4: perplexity and the three scores, ours beside the paper's
# Ours: mean ± std over seeds (min..max, n); the paper's values are of one run each.

# %%
display(written(ladder.table(["steps", "val_ppl", "causal", "permutation", "usefulness", "affine_rise",
                               "usefulness_matched", "last_var_train"], paper), figures_dir, "table4"))
plots.show(plots.ladder_scores(ladder, paper, matched), figures_dir, "table4_scores")

# %% [markdown]
# ## Usefulness against tau (sensitivity), and Figs. 26-27: the scores layer by layer
# The useful share E / L of each rung as the threshold moves (mean over seeds; dotted: the paper's
# tau, dash-dotted: the matched tau), then the causal and permutation matrices (mean over seeds)
# and each layer's loss rise under its affine replacement, for every rung.

# %%
curve = plots.ladder_sensitivity(ladder, taus, tau, matched, figures_dir, "fig26_27_score_matrices")

# %% [markdown]
# ## Claims, judged by the rule above

# %%
paired = ladder.paired_seeds
values = ladder.paired(SCORES)
ratio = values["last_var_train"].loc[mqa] / values["last_var_train"].loc[baseline]
step = ladder.share_step()  # a share of L layers moves in steps of 1 / L

claims = Claims("B", profile, paired, choices={"variance_ratio": variance_ratio})
claims.add("b5-variance-falls-with-sharing", "Fig. 7 / section 4.2.1",
           "The last layer's output variance falls from MHA through GQA to MQA", "decreases monotonically with G",
           monotone(values["last_var_train"], -1))
claims.add("b5-mqa-half-variance", "Fig. 7 / section 4.2.1",
           f"MQA's last-layer variance is about half of MHA's (ratio at most {variance_ratio:g})", "2x lower",
           lambda variance_ratio: one_sample(ratio, null=variance_ratio, higher_is_better=False, scale="ratio",
                                             paper=0.5, why="MQA / MHA last-layer variance per seed "
                                                            + ", ".join(f"{r:.3f}" for r in ratio)))
claims.add("b5-ppl-falls-with-sharing", "Table 4", "Validation perplexity falls from MHA to MQA at equal FLOPs",
           "14.52 / 14.50 / 14.47", monotone(values["val_ppl"], -1, paper=paper_along(paper["val_ppl"])))
for name, paper_value in (("causal", "0.31 / 0.31 / 0.34"), ("permutation", "0.51 / 0.57 / 0.63")):
    claims.add(f"b5-{name}-rises-with-sharing", "Table 4", f"The {name} score rises from MHA to MQA", paper_value,
               monotone(values[name], +1, scale="difference", paper=paper_along(paper[name])))
claims.add("b5-usefulness-rises-with-sharing", "Table 4", f"The usefulness score (tau = {tau:g}) rises from MHA to MQA",
           "0.81 / 0.87 / 0.87 (13 -> 14 effective layers)",
           usefulness_at_floor(ladder.largest_rise(), tau)
           or monotone(values["usefulness"], +1, scale="difference", paper=paper_along(paper["usefulness"]),
                       resolution=step))
claims.add("b5-usefulness-authors-rises-with-sharing", "Table 4 (the authors' fit)",
           f"(ours) The usefulness score (tau = {tau:g}) under the authors' fit rises from MHA to MQA",
           "0.81 / 0.87 / 0.87",
           ladder.authors_fit_lacks()
           or usefulness_at_floor(ladder.largest_rise(authors=True), tau, fit="under the authors' fit")
           or monotone(values["usefulness_authors"], +1, scale="difference", paper=paper_along(paper["usefulness"]),
                       resolution=step))
claims.add("b5-affine-rise-rises-with-sharing", "Table 4 (sensitivity: before the threshold)",
           "(ours) The mean loss rise under affine replacement rises from MHA to MQA",
           "implied by the rising usefulness",
           monotone(values["affine_rise"], +1, scale="difference"))
claims.add("b5-usefulness-matched-rises-with-sharing", "Table 4 (sensitivity: matched tau)",
           f"(ours) Usefulness at the matched tau ({matched:.3g}) rises from MHA to MQA", "0.81 / 0.87 / 0.87",
           monotone(values["usefulness_matched"], +1, scale="difference", paper=paper_along(paper["usefulness"]),
                    resolution=step))
display(claims.save(figures_dir))

# %% [markdown]
# ## Reading the result
# Built from the numbers of this run.

# %%
verdicts = {r["id"]: r["verdict"] for r in claims.rows}
mean = ladder.means(["val_ppl", "last_var_train", "causal", "permutation", "usefulness_matched"])
display(Markdown(
    f"Over seeds {paired} of the `{profile}` profile: " + "; ".join(f"**{v}** {k}" for k, v in verdicts.items())
    + ".\n\n" + " ".join(
        f"{name}: " + ", ".join(f"{k} {v:.4g}" for k, v in mean[name].items()) + "." for name in mean)
    + f" MQA's last-layer variance is {ratio.mean():.2f} of MHA's (paper: about 0.5)."
))
