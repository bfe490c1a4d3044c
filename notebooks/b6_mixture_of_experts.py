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
# # B6 · Mixture of experts against dense models of equal active size
#
# Paper B, section 4.2.2, **Fig. 8**, **Table 5** and appendix C.10 (**Figs. 28-29**). The paper
# trains two MoE models against dense models with as many active parameters: MoE-2B-A400M (32
# experts, top-4, one shared expert) against Dense-400M, and MoE-7B-A1B (64 experts, top-8)
# against Dense-1B, with OLMoE's load-balancing loss (0.01) and router z-loss (0.001). It
# reports that MoE lowers the last layer's output variance (about 6x and 3x, Fig. 8), lowers
# perplexity (17.56 -> 15.89, 14.52 -> 13.82) and raises the causal, permutation and
# usefulness scores (Table 5). Theorem 6 (appendix B.7, checked in `b2_theory`) gives the
# mechanism: the output averages over the selected experts.
#
# **What is shrunk here** (the `default` profile; the headline profile's ladder is its own, in
# `params.yaml`). The 8-layer miniature of paper B's ladder (`b_depth/d16`: width 24,
# SwiGLU width 96, weight decay 0.1, 580 steps of 8 x 128 tokens) is the larger dense model;
# its MoE twin has 8 experts of width 48, 2 per token (96 active, as the dense width). The
# smaller pair halves the dense width to 48; its MoE has 8 experts of width 16, 2 per token,
# and a shared expert of width 16 (48 active). Experts are SwiGLU, gates the softmax over all
# experts of the chosen ones (OLMoE's), dispatch exact and dropless (`cod.model.MoE`), with the
# paper's auxiliary-loss weights. Scores come from the `analyse@b_moe` stage (the settings of
# `analyse@b_depth`).

# %% tags=["parameters"]
profile = "default"  # smoke | default | headline | paper: which runs were trained
runs_root = "runs"
analyses_root = "analyses"
figures_dir = None  # default: figures/<profile>/b6_mixture_of_experts
# the rungs: label -> "experiment/variant" (a third part "/analysis": the folder of its scores); the pairs
# compared are (Dense-small, MoE-small (shared)) and (Dense, MoE), each judged where both are on the ladder
ladder = {"Dense-small": "b_moe/dense_small", "MoE-small (shared)": "b_moe/moe_small_shared", "Dense": "b_depth/d16",
          "MoE": "b_moe/moe"}
taus = [1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3]  # thresholds of the usefulness curve
matched_share = 0.81  # the paper's usefulness of Dense-1B (Table 5): our larger dense model's share at the matched tau

# %%
from cod import kernel

figures_dir = kernel.start("b6_mixture_of_experts", profile, figures_dir)  # unset: a folder of its own

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

import cod.claims.verdicts
from cod import plots
from cod.claims.ladder import load_ladder, paper_pair, paper_rows, rungs_from
from cod.claims.tables import written
from cod.records.results import read_history
from cod.claims.verdicts import Claims, compare, usefulness_at_floor

PAIRS = {"small": ("Dense-small", "MoE-small (shared)"), "large": ("Dense", "MoE")}  # (dense, MoE) of equal active size
# paper B, Table 5, by the paper's model; our rung of each
PAPER = pd.DataFrame({"val_ppl": [17.56, 15.89, 14.52, 13.82], "causal": [0.30, 0.36, 0.31, 0.34],
                      "permutation": [0.54, 0.59, 0.51, 0.61], "usefulness": [0.87, 0.94, 0.81, 0.94]},
                     index=["Dense-400M", "MoE-2B-A400M", "Dense-1B", "MoE-7B-A1B"])
PAPER_ROW = {"Dense-small": "Dense-400M", "MoE-small (shared)": "MoE-2B-A400M", "Dense": "Dense-1B",
             "MoE": "MoE-7B-A1B"}
PAPER_VARIANCE_FACTOR = {"small": 6, "large": 3}  # dense / MoE last-layer variance (section 4.2.2)
ladder = load_ladder(rungs_from(ladder), Path(runs_root) / profile, Path(analyses_root) / profile)
paper = paper_rows(PAPER, ladder.labels, PAPER_ROW)
pairs = {pair: rungs for pair, rungs in PAIRS.items() if not ladder.lacks(*rungs)}  # the pairs on this ladder
tau = ladder.tau
display(ladder.runs[["rung", "seed", "status", "params", "params_non_embedding", "val_ppl", "last_var_train",
                     "causal", "permutation", "usefulness"]].round(4))

# %% [markdown]
# ## The verdict rule, fixed before the numbers
# The package's one rule, printed from `cod/claims/verdicts.py`:

# %%
print(cod.claims.verdicts.rule())

# %% [markdown]
# Here each claim compares an MoE model with the dense model of its pair by `compare` (paired by
# seed), beside the paper's ratio or difference of the same pair (the variance: the paper's
# about 6x and 3x reductions). Only seeds trained on every rung count. Usefulness at the paper's
# tau first goes through `usefulness_at_floor`; two readings of our own (marked "(ours)")
# follow: the matched tau (the threshold at which our larger dense model has Dense-1B's useful
# share, set from it alone before the MoE runs are read) and the mean loss rise under affine
# replacement.

# %%
matched = ladder.match_tau("Dense", matched_share)
print(f"matched tau = {matched:.4g}: our larger dense runs have a useful share of about {matched_share} there")
ladder.save(figures_dir)

# %% [markdown]
# ## Fig. 8: the last layer's output variance during training

# %%
plots.show(plots.ladder_variance(ladder, "last layer during training (Fig. 8)"), figures_dir, "fig8_variance")

# %% [markdown]
# ## Routing: expert load per layer
# The share of routed tokens each expert received in each layer, at the last step logged in
# training (`moe_load` in the history; the balance loss pushes it towards 1 / n). Mean over
# seeds.

# %%
def last_load(label: str) -> np.ndarray | None:
    """(L, n) expert shares at the last logged step of each seed, averaged over seeds."""
    loads = []
    for seed in ladder.seeds:
        path = ladder.rung(label).run(Path(runs_root) / profile, seed) / "history.jsonl"
        rows = read_history(path) if path.exists() else []
        logged = [r["moe_load"] for r in rows if "moe_load" in r]
        if logged:
            loads.append(np.asarray(logged[-1]))
    return np.mean(loads, axis=0) if loads else None


moe_loads = {moe: last_load(moe) for _, moe in pairs.values()}
fig, axes = plt.subplots(1, len(moe_loads), figsize=(5 * len(moe_loads), 3.4), squeeze=False)
plots.heatmaps(fig, axes[0], [load for load in moe_loads.values()], "share of routed tokens", aspect="auto")
for ax, (label, load) in zip(axes[0], moe_loads.items()):
    ax.set(title=label, xlabel="expert", ylabel="layer")
    ax.set_yticks(range(len(load)), range(1, len(load) + 1))
plots.show(fig, figures_dir, "expert_load")

# %% [markdown]
# ## Table 5: perplexity and the three scores, ours beside the paper's

# %%
display(written(ladder.table(["params", "params_non_embedding", "val_ppl", "causal", "permutation", "usefulness",
                               "affine_rise", "usefulness_matched", "last_var_train"], paper), figures_dir, "table5"))
plots.show(plots.ladder_scores(ladder, paper, matched, rotation=20), figures_dir, "table5_scores")

# %% [markdown]
# ## Usefulness against tau (sensitivity), and Figs. 28-29: the scores layer by layer
# The useful share E / L of each rung as the threshold moves (mean over seeds; dotted: the paper's
# tau, dash-dotted: the matched tau), then the causal and permutation matrices (mean over seeds)
# and each layer's loss rise under its affine replacement, for every rung.

# %%
curve = plots.ladder_sensitivity(ladder, taus, tau, matched, figures_dir, "fig28_29_score_matrices")

# %% [markdown]
# ## Claims, judged by the rule above

# %%
paired = ladder.paired_seeds
claims = Claims("B", profile, paired)
for pair, (dense, moe) in PAIRS.items():
    step = None if ladder.lacks(dense, moe) else ladder.share_step([dense, moe])  # shares of L layers: steps of 1 / L
    absent = ladder.lacks(dense, moe)  # the pair's claims are judged only where both are on the ladder

    def side(name: str) -> tuple[pd.Series, pd.Series]:
        values = ladder.by_seed(name)[paired]
        return values.loc[moe], values.loc[dense]

    def quoted(name: str) -> str:
        return f"{moe} {PAPER.loc[PAPER_ROW[moe], name]} vs {dense} {PAPER.loc[PAPER_ROW[dense], name]}"

    claims.add(f"b6-variance-lower:{pair}", "Fig. 8 / section 4.2.2",
               f"{moe} has a lower last-layer output variance than {dense}",
               f"about {PAPER_VARIANCE_FACTOR[pair]}x lower",
               absent or compare(*side("last_var_train"), paper=1 / PAPER_VARIANCE_FACTOR[pair]))
    claims.add(f"b6-ppl-lower:{pair}", "Table 5", f"{moe} has a lower validation perplexity than {dense}",
               quoted("val_ppl"), absent or compare(*side("val_ppl"), paper=paper_pair(paper, "val_ppl", moe, dense)))
    for name in ("causal", "permutation"):
        claims.add(f"b6-{name}-higher:{pair}", "Table 5", f"{moe} has a higher {name} score than {dense}",
                   quoted(name), absent or compare(*side(name), higher_is_better=True, scale="difference",
                                                   paper=paper_pair(paper, name, moe, dense)))
    claims.add(f"b6-usefulness-higher:{pair}", "Table 5",
               f"{moe} has a higher usefulness score (tau = {tau:g}) than {dense}", quoted("usefulness"),
               absent or usefulness_at_floor(ladder.largest_rise([moe, dense]), tau)
               or compare(*side("usefulness"), higher_is_better=True, scale="difference", resolution=step,
                          paper=paper_pair(paper, "usefulness", moe, dense)))
    claims.add(f"b6-usefulness-authors-higher:{pair}", "Table 5 (the authors' fit)",
               f"(ours) {moe} has a higher usefulness score (tau = {tau:g}) under the authors' fit than {dense}",
               quoted("usefulness"),
               absent or ladder.authors_fit_lacks([moe, dense])
               or usefulness_at_floor(ladder.largest_rise([moe, dense], authors=True), tau,
                                      fit="under the authors' fit")
               or compare(*side("usefulness_authors"), higher_is_better=True, scale="difference", resolution=step,
                          paper=paper_pair(paper, "usefulness", moe, dense)))
    claims.add(f"b6-affine-rise-higher:{pair}", "Table 5 (sensitivity: before the threshold)",
               f"(ours) {moe} has a larger mean loss rise under affine replacement than {dense}",
               "implied by the higher usefulness",
               absent or compare(*side("affine_rise"), higher_is_better=True, scale="difference"))
    claims.add(f"b6-usefulness-matched-higher:{pair}", "Table 5 (sensitivity: matched tau)",
               f"(ours) {moe} has a higher usefulness at the matched tau ({matched:.3g}) than {dense}",
               quoted("usefulness"),
               absent or compare(*side("usefulness_matched"), higher_is_better=True, scale="difference",
                                 resolution=step, paper=paper_pair(paper, "usefulness", moe, dense)))
display(claims.save(figures_dir))

# %% [markdown]
# ## Reading the result
# Built from the numbers of this run.

# %%
verdicts = {r["id"]: r["verdict"] for r in claims.rows}
mean = ladder.means(["val_ppl", "last_var_train", "causal", "permutation", "usefulness_matched"])
factors = {pair: mean["last_var_train"][dense] / mean["last_var_train"][moe] for pair, (dense, moe) in pairs.items()}
display(Markdown(
    f"Over seeds {paired} of the `{profile}` profile: " + "; ".join(f"**{v}** {k}" for k, v in verdicts.items())
    + ".\n\n" + " ".join(
        f"{name}: " + ", ".join(f"{k} {v:.4g}" for k, v in mean[name].items()) + "." for name in mean)
    + " Dense / MoE last-layer variance: " + ", ".join(f"{pair} {f:.2f}x (paper {PAPER_VARIANCE_FACTOR[pair]}x)"
                                                     for pair, f in factors.items()) + "."
))
