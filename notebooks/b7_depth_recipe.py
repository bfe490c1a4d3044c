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
# # B7 · The depth recipe: a deeper model at equal parameters, sparsity added step by step
#
# Paper B, section 5 and **Fig. 1** (details in appendix C.6, Table 8). At a constant 1.2B
# parameters the paper compares a 16-layer model with a 32-layer one (width 2048 against 1536),
# then adds sparsity to the 32-layer model one mechanism at a time: a 4x longer context
# (T = 1024 -> 4096), weight decay lambda = 0.3 (from 0.1), grouped-query attention with
# G = 2 query heads per KV head, and finally a mixture of experts. Each model is judged by the
# mean zero-shot accuracy on ARC-Challenge and HellaSwag and by the usefulness score. The
# naive 32-layer model loses 0.6 points of accuracy and drops from 0.75 to 0.53 in usefulness;
# the full recipe reaches 44.1 (+4.6 over the naive model, +4.0 over the 16-layer one) at a
# usefulness of 0.75. The paper also shows two rungs past the chosen ones (T = 8192,
# lambda = 0.6 and 1.0) whose accuracy falls again; they are not trained here.
#
# **What is shrunk here** (the `default` profile; the headline profile's two rungs are its own,
# in `params.yaml`). The 16-layer model is paper B's 8-layer miniature (`b_depth/d16`:
# width 24, SwiGLU 96, weight decay 0.1, 580 steps of 8 x 128 tokens, 74K parameters outside
# the embeddings), the 32-layer one its 16-layer twin of width 16 (SwiGLU 72, 72K; `b_recipe`).
# Every rung trains the same 594K tokens. The longer context doubles the length to 256 tokens
# at 4 sequences a step (4x would have cost a quarter hour more of the budget); weight decay
# is the paper's 0.3; GQA keeps 4 query heads over 2 KV heads (G = 2); the MoE replaces each
# SwiGLU by 8 experts of width 36, 2 active, so its active FFN width is the dense 72. All of
# this was fixed in params.yaml before any rung was trained. Accuracy is lm-evaluation-harness's
# `acc_norm` (the paper's appendix C.1 convention) on all 299 ARC-Challenge validation items and
# 1,000 HellaSwag ones, from the `analyse@b_recipe` and `analyse@b_recipe_shallow` stages; the
# layer scores are those of `analyse@b_depth` for the 16-layer model.
#
# **The headline profile** trains the recipe's headline claim alone (the full recipe against the
# naive deep model, `h_recipe` in params.yaml): the naive model is `h_250m/pre_ln` (24 layers,
# width 64), the full recipe the same shape with every sparsity step at once. Its ladder has
# these two rungs; the claims on the others are named as not run.

# %% tags=["parameters"]
profile = "default"  # smoke | default | headline | paper: which runs were trained
runs_root = "runs"
analyses_root = "analyses"
figures_dir = None  # default: figures/<profile>/b7_depth_recipe
# the rungs, named as the paper's (in its order; a profile may leave some out): label -> "experiment/variant"
# (a third part "/analysis": the folder of its layer scores)
ladder = {"L=16": "b_depth/d16", "L=32": "b_recipe/baseline", "+ long context": "b_recipe/long_context",
          "+ weight decay": "b_recipe/weight_decay", "+ GQA": "b_recipe/gqa", "+ MoE": "b_recipe/moe"}
zero_shot = {"L=16": "b_recipe_shallow"}  # rung label -> the analysis with its zero-shot accuracies, if not its own
tasks = ["arc_challenge", "hellaswag"]  # Fig. 1's accuracy: the mean over these
metric = "acc_norm"  # acc | acc_norm (the paper's, appendix C.1)
chance = 25.0  # chance accuracy (%) of the tasks: four answer choices
taus = [1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3]  # thresholds of the usefulness curve

# %%
from cod import kernel

figures_dir = kernel.start("b7_depth_recipe", profile, figures_dir)  # unset: a folder of its own

# %%
from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

import cod.claims.verdicts
from cod import plots
from cod.claims.ladder import load_ladder, paper_pair, rungs_from
from cod.claims.tables import written
from cod.claims.verdicts import Claims, Verdict, accuracy_at_chance, accuracy_floor, compare, usefulness_at_floor

# paper B, Figure 1: the chosen rungs (T = 4096, lambda = 0.3, G = 2, MoE), accuracy in percent
PAPER = pd.DataFrame({"accuracy": [40.1, 39.5, 40.0, 41.4, 42.1, 44.1],
                      "usefulness": [0.75, 0.53, 0.59, 0.63, np.nan, 0.75]},
                     index=["L=16", "L=32", "+ long context", "+ weight decay", "+ GQA", "+ MoE"])
SHALLOW, NAIVE, FULL = "L=16", "L=32", "+ MoE"
STEPS = list(zip(PAPER.index[1:-1], PAPER.index[2:]))  # (before, after) of each sparsity step
rungs = [replace(rung, zero_shot=zero_shot.get(rung.label)) for rung in rungs_from(ladder, PAPER.index)]
ladder = load_ladder(rungs, Path(runs_root) / profile, Path(analyses_root) / profile)
accuracy = ladder.mean_accuracy(tasks, metric)
ladder.runs["accuracy"] = 100 * ladder.runs[accuracy]  # percent, as the paper's
tau = ladder.tau
display(ladder.runs[["rung", "seed", "status", "params", "params_non_embedding", "val_ppl", "accuracy",
                     *[f"{metric}:{task}" for task in tasks], "last_var_train", "usefulness"]].round(4))

# %% [markdown]
# ## The verdict rule, fixed before the numbers
# The package's one rule, printed from `cod/claims/verdicts.py`:

# %%
print(cod.claims.verdicts.rule())

# %% [markdown]
# Here each claim compares two rungs by `compare` over the paired seeds (the 16-layer model has
# a third seed), beside the paper's difference of the same rungs. Floors come first: an
# accuracy claim goes through `accuracy_at_chance` (both rungs within two binomial standard
# errors of chance), then the noise floor `accuracy_floor`; a usefulness claim at the paper's
# tau = 10% through `usefulness_at_floor`. Usefulness at the matched tau (the threshold at which
# our first rung's runs have the paper's useful share of that rung, 0.75 for the 16-layer model,
# set from them alone before any other rung is read) is a reading of our own, marked "(ours)". A
# claim on a rung this profile's ladder leaves out is named as not run.
#
# **Added after a first look at the numbers** (marked "(ours)"): every rung's accuracy sat at
# chance (25%), so two claims on validation perplexity, the one performance measure that
# resolves differences at this scale, were added. The paper does not quote perplexity for
# Fig. 1; its direction (the naive deep model worse, the recipe better) is the one its accuracy
# shows. The last-layer variance claim is the mechanism of sections 3-4 read on the recipe, not
# a claim of Fig. 1: also ours.

# %%
first = ladder.labels[0]  # the paper's usefulness of our first rung fixes the matched tau
matched_share = PAPER.loc[first, "usefulness"]
matched = ladder.match_tau(first, matched_share)
print(f"matched tau = {matched:.4g}: our {first} runs have a useful share of about {matched_share} there")
# the mean of k tasks scored on n_1 .. n_k items has the binomial error of k^2 / sum(1 / n_i) items
items = {task: int(ladder.runs[f"n:{task}"].max()) for task in tasks}
n_effective = round(len(tasks) ** 2 / sum(1 / n for n in items.values()))
print(f"items per task: {items}; the mean accuracy counts as {n_effective:.0f} items")
ladder.save(figures_dir)

# %% [markdown]
# ## Fig. 1: accuracy and usefulness along the recipe
# Left: the mean of ARC-Challenge and HellaSwag `acc_norm` per rung (dots: seeds; crosses: the
# paper's values; dashed: chance, 25%). Middle: usefulness at the paper's tau (our miniatures
# have no block above it) and at the matched tau. Right: validation perplexity, which the
# paper does not plot.

# %%
fig, axes = plt.subplots(1, 3, figsize=(16, 3.8))
x = np.arange(len(ladder.labels))
for ax, (column, paper_column, ylabel) in zip(axes, [("accuracy", "accuracy", "mean accuracy (%)"),
                                                     ("usefulness_matched", "usefulness", "usefulness"),
                                                     ("val_ppl", None, "validation perplexity")]):
    values = ladder.by_seed(column)
    for seed in values.columns:
        ax.plot(x, values[seed], "o", alpha=0.6, label=f"ours, seed {seed}")
    ax.plot(x, values.mean(axis=1), "-", color="black", label="ours, mean")
    if paper_column:
        ax.plot(x, PAPER.loc[ladder.labels, paper_column], "x", color="tab:red", markersize=9, label="paper")
    ax.set(xticks=x, ylabel=ylabel)
    ax.set_xticklabels(ladder.labels, rotation=20)
axes[0].axhline(chance, ls="--", color="grey", lw=1, label=f"chance, {chance:g}%")
axes[1].plot(x, ladder.by_seed("usefulness").mean(axis=1), "s--", color="grey", label=f"ours at tau = {tau:g}")
axes[1].set_title(f"usefulness at the matched tau = {matched:.3g} (paper: tau = {tau:g})")
axes[0].set_title(f"mean {metric} of {', '.join(tasks)}")
for ax in axes[:2]:
    ax.legend(fontsize=7)
plots.show(fig, figures_dir, "fig1_recipe")

# %% [markdown]
# ## The recipe's table: every rung beside the paper's

# %%
display(written(ladder.table(["params", "params_non_embedding", "val_ppl", "accuracy",
                               *[f"{metric}:{t}" for t in tasks], "usefulness", "usefulness_matched", "affine_rise",
                               "causal", "permutation", "last_var_train"], PAPER), figures_dir, "table_fig1"))

# %% [markdown]
# ## The last layer's output variance during training
# Not in Fig. 1: paper B's mechanism (sections 3-4) is that each kind of sparsity damps the
# residual variance; this shows whether the recipe's rungs do so here.

# %%
plots.show(plots.ladder_variance(ladder, "last layer during training"), figures_dir, "last_layer_variance")

# %% [markdown]
# ## Usefulness against tau (sensitivity), and the scores layer by layer

# %%
curve = plots.ladder_sensitivity(ladder, taus, tau, matched, figures_dir, "score_matrices")

# %% [markdown]
# ## Claims, judged by the rule above

# %%
paired = ladder.paired_seeds
claims = Claims("B", profile, paired)


def judged(first: str, second: str, column: str, higher: bool, scale: str, paper: str | None = None) -> Verdict | str:
    """The verdict on "`first` is better than `second` in `column`" over the paired seeds, floors
    first, beside the paper's values of the two rungs in PAPER[`paper`] where it has both; why not,
    where either rung is not on the ladder."""
    absent = ladder.lacks(first, second)
    if absent:
        return absent
    values = ladder.by_seed(column)[paired]
    if column == "accuracy":
        at_chance = accuracy_at_chance({rung: values.loc[rung] for rung in (first, second)}, chance, n_effective)
        if at_chance:
            return at_chance
    if column in ("usefulness", "usefulness_authors"):
        authors = column == "usefulness_authors"
        lacking = ladder.authors_fit_lacks([first, second]) if authors else None
        at_floor = lacking or usefulness_at_floor(ladder.largest_rise([first, second], authors=authors), tau,
                                                  **({"fit": "under the authors' fit"} if authors else {}))
        if at_floor:
            return at_floor
    floor = accuracy_floor(values.loc[first], values.loc[second], n_effective) if column == "accuracy" else 0.0
    shares = column.startswith("usefulness")  # a share of L layers: steps of 1 / L
    return compare(values.loc[first], values.loc[second], higher_is_better=higher, floor=floor, scale=scale,
                   paper=None if paper is None else paper_pair(PAPER, paper, first, second),
                   resolution=ladder.share_step([first, second]) if shares else None)


def quoted_pair(first: str, second: str, column: str) -> str:
    return f"{first} {PAPER.loc[first, column]:g} vs {second} {PAPER.loc[second, column]:g}"


claims.add("b7-naive-deep-accuracy-lower", "Fig. 1 / section 5",
           f"the naive {NAIVE} model has a lower accuracy than the {SHALLOW} one",
           quoted_pair(NAIVE, SHALLOW, "accuracy"), judged(SHALLOW, NAIVE, "accuracy", True, "difference", "accuracy"))
for column, label in (("usefulness", f"tau = {tau:g}"), ("usefulness_matched", f"matched tau {matched:.3g}"),
                      ("usefulness_authors", f"tau = {tau:g} under the authors' fit")):
    claims.add(f"b7-naive-deep-{column.replace('_', '-')}-lower", "Fig. 1 / section 5" + (
        {"usefulness_matched": " (sensitivity: matched tau)",
         "usefulness_authors": " (the authors' fit)"}.get(column, "")),
        ("(ours) " if column != "usefulness" else "")
        + f"the naive {NAIVE} model has a lower usefulness ({label}) than the {SHALLOW} one",
        quoted_pair(NAIVE, SHALLOW, "usefulness"), judged(SHALLOW, NAIVE, column, True, "difference", "usefulness"))
for before, after in STEPS:
    claims.add(f"b7-step-accuracy:{after.strip('+ ').replace(' ', '-')}", "Fig. 1 / section 5",
               f"adding {after.strip('+ ')} raises the accuracy ({before} -> {after})",
               quoted_pair(after, before, "accuracy"),
               judged(after, before, "accuracy", True, "difference", "accuracy"))
for column, label in (("accuracy", "accuracy"), ("usefulness_matched", "usefulness at the matched tau")):
    paper_column = "accuracy" if column == "accuracy" else "usefulness"
    for reference in (NAIVE, SHALLOW):
        claims.add(f"b7-recipe-{column.replace('_', '-')}-above:{reference}", "Fig. 1 / section 5" + (
            " (sensitivity: matched tau)" if column != "accuracy" else ""),
            ("(ours) " if column != "accuracy" else "")
            + f"the full recipe ({FULL}) has a higher {label} than the {reference} model",
            quoted_pair(FULL, reference, paper_column),
            judged(FULL, reference, column, True, "difference", paper_column))
claims.add("b7-naive-deep-ppl-higher", "Fig. 1 / section 5 (perplexity; added after a first look)",
           f"(ours) the naive {NAIVE} model has a higher validation perplexity than the {SHALLOW} one",
           "not quoted (its accuracy: 39.5 vs 40.1)", judged(SHALLOW, NAIVE, "val_ppl", False, "ratio"))
claims.add("b7-recipe-ppl-lower", "Fig. 1 / section 5 (perplexity; added after a first look)",
           f"(ours) the full recipe ({FULL}) has a lower validation perplexity than the naive {NAIVE} model",
           "not quoted (its accuracy: 44.1 vs 39.5)", judged(FULL, NAIVE, "val_ppl", False, "ratio"))
claims.add("b7-recipe-variance-lower", "sections 3-4 (the mechanism, not in Fig. 1)",
           f"(ours) the full recipe has a lower last-layer output variance than the naive {NAIVE} model",
           "sparsity damps the variance", judged(FULL, NAIVE, "last_var_train", False, "ratio"))
display(claims.save(figures_dir))

# %% [markdown]
# ## Reading the result
# Built from the numbers of this run.

# %%
verdicts = {r["id"]: r["verdict"] for r in claims.rows}
mean = ladder.means(["accuracy", "val_ppl", "usefulness_matched", "last_var_train"])
display(Markdown(
    f"Over seeds {paired} of the `{profile}` profile: " + "; ".join(f"**{v}** {k}" for k, v in verdicts.items())
    + ".\n\n" + " ".join(
        f"{name}: " + ", ".join(f"{k} {v:.4g}" for k, v in mean[name].items()) + "." for name in mean)
    + f" Chance accuracy is {chance:g}%; twice the binomial standard error of one model's mean accuracy there is "
    f"{200 * np.sqrt(chance / 100 * (1 - chance / 100) / n_effective):.1f} points."
))
