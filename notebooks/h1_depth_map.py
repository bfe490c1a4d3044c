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
# # H1 · The curse-of-depth map
#
# Not a paper item: a map neither paper draws. Paper A compares LayerNorm Scaling (LNS) with
# Pre-LN at a few sizes (Table 1), each trained to one budget; paper B grows depth at one budget
# (Table 1, Fig. 2). Here the two central effects are laid over **depth** and **training tokens**
# at the `headline` profile's width (64, chosen by the pilot `h0_pilot` before any of these runs
# trained):
# 1. **the LNS gap**: LNS's validation loss minus Pre-LN's, in nats, paired by seed (negative:
#    LNS pays);
# 2. **the deep-to-shallow variance ratio**: the blocks' output variance (paper B eq. 4) in the
#    deepest quarter of blocks over that in the shallowest quarter (geometric means): the curse
#    as the papers describe it, variance that piles up with depth.
#
# Depths 6, 12 and 24 blocks (paper A's 130M has 12, its 250M 24), 4M tokens each; the token axis
# is the validation loss logged every 0.5M tokens and the variances every 0.1M. A point before
# the end is a model mid-schedule (warmup, then cosine to 10%), not one trained to that budget.
# Paper A's own points are drawn on the same axes of tokens per non-embedding parameter: its
# Table 1 gaps at 130M (12 layers), 250M, 350M and 1B (24 layers). The papers give no
# deep-to-shallow ratio, so the second effect has no paper points.
#
# The claims below are readings of ours (the registry marks them so), judged by the package's one
# verdict rule, printed before the numbers.

# %% tags=["parameters"]
profile = "headline"  # smoke | headline: which runs to read
points = {6: ["h_depth", "pre_ln_l6", "lns_l6"], 12: ["h_130m", "pre_ln", "lns"],
          24: ["h_250m", "pre_ln", "lns"]}  # blocks -> [experiment, Pre-LN variant, LNS variant]
runs_root = "runs"
figures_dir = None  # default: figures/<profile>/h1_depth_map
early = 0.25  # "early in training": the first validation point at this fraction of the run or later

# %%
from cod import kernel

figures_dir = kernel.start("h1_depth_map", profile, figures_dir)  # unset: a folder of its own

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

import cod.claims.verdicts
from cod import plots
from cod.claims.depth_map import (PAPER_A_GAPS, MapPoint, at_fraction, gap_interval, load_curves, load_stats, loss_gap,
                           variance_ratio)
from cod.claims.verdicts import Claims, compare, monotone

points = {int(depth): MapPoint(*where) for depth, where in sorted(points.items(), key=lambda kv: int(kv[0]))}
runs_dir = Path(runs_root) / profile
curves = load_curves(points, runs_dir)
gap = loss_gap(curves)
ratio = variance_ratio(load_stats(points, runs_dir))
seeds = sorted(int(s) for s in curves["seed"].unique())
per_step = curves.groupby("depth")["tokens"].max() / curves.groupby("depth")["step"].max()  # tokens a step
counts = curves.groupby(["depth", "norm"])["seed"].nunique().unstack()
display(counts.rename_axis(index="blocks", columns="runs (seeds)"))

# %% [markdown]
# ## The verdict rule, fixed before the numbers

# %%
print(cod.claims.verdicts.rule())

# %% [markdown]
# ## The map
# Left: the LNS gap (mean over seeds; a dot where its 95% interval over seeds excludes zero).
# Right: the Pre-LN deep-to-shallow variance ratio (mean over seeds, log colour scale).

# %%
interval = gap_interval(gap).droplevel(["step", "tokens_per_param"])
mean_gap, decided = interval["mean"].unstack("tokens"), interval["decided"].unstack("tokens")
pre_ratio = ratio[ratio["norm"] == "pre_ln"].groupby(["depth", "step"])["ratio"].mean().unstack("step")

fig, axes = plt.subplots(1, 2, figsize=(14, 3.8))
limit = float(np.nanmax(np.abs(mean_gap.to_numpy())))
shown = axes[0].imshow(mean_gap.to_numpy(), aspect="auto", cmap="RdBu_r", vmin=-limit, vmax=limit, origin="lower")
rows, cols = np.nonzero(decided.fillna(False).astype(bool).to_numpy())
axes[0].scatter(cols, rows, color="k", s=12, label="95% interval excludes 0")
axes[0].set_xticks(range(len(mean_gap.columns)), [f"{t / 1e6:.2g}" for t in mean_gap.columns], rotation=45)
axes[0].set_yticks(range(len(mean_gap.index)), mean_gap.index)
axes[0].set_xlabel("training tokens (millions)")
axes[0].set_ylabel("blocks")
axes[0].set_title("LNS minus Pre-LN validation loss (nats; blue: LNS better)")
axes[0].legend(fontsize=8, loc="upper left")
fig.colorbar(shown, ax=axes[0])
shown = axes[1].imshow(np.log10(pre_ratio.to_numpy()), aspect="auto", cmap="viridis", origin="lower")
ticks = np.linspace(0, len(pre_ratio.columns) - 1, min(8, len(pre_ratio.columns))).round().astype(int)
axes[1].set_xticks(ticks, [f"{pre_ratio.columns[i] * per_step.iloc[0] / 1e6:.2g}" for i in ticks], rotation=45)  # one batch at every depth
axes[1].set_yticks(range(len(pre_ratio.index)), pre_ratio.index)
axes[1].set_xlabel("training tokens (millions)")
axes[1].set_ylabel("blocks")
axes[1].set_title("Pre-LN deep-quarter / shallow-quarter output variance\n(log10; higher: deep blocks' outputs larger)")
fig.colorbar(shown, ax=axes[1])
fig.suptitle(f"The curse-of-depth map ({profile} profile)")
plots.show(fig, figures_dir, "depth_map")

# %% [markdown]
# ## Each depth along training, beside paper A
# Left: the LNS gap against tokens per non-embedding parameter (mean, band min..max over seeds),
# with paper A's Table 1 gaps (squares, labelled by size) on the same axes. Right: the
# deep-to-shallow variance ratio, Pre-LN solid and LNS dashed.

# %%
colors = dict(zip(points, plt.cm.viridis(np.linspace(0.0, 0.85, len(points)))))
fig, axes = plt.subplots(1, 2, figsize=(14, 4))
for depth in points:
    at = gap.xs(depth, level="depth")
    plots.seed_band(axes[0], at.index.get_level_values("tokens_per_param"), at, colors[depth], f"ours, {depth} blocks")
axes[0].axhline(0, color="0.3", linewidth=0.8, label="no gap")
axes[0].plot(PAPER_A_GAPS["tokens_per_param"], PAPER_A_GAPS["gap"], "s", color="0.45", linestyle="none",
             label="paper A, Table 1")
axes[0].set_xscale("log")
axes[0].set_xlabel("training tokens per non-embedding parameter")
axes[0].set_ylabel("LNS minus Pre-LN validation loss\n(nats; below 0: LNS better)")
axes[0].legend(fontsize=8)
for depth in points:
    for norm, style in (("pre_ln", "-"), ("lns", "--")):
        at = ratio[(ratio["depth"] == depth) & (ratio["norm"] == norm)].pivot(index="step", columns="seed", values="ratio")
        plots.seed_band(axes[1], at.index * per_step[depth] / 1e6, at, colors[depth],
                        f"{depth} blocks, {'Pre-LN' if norm == 'pre_ln' else 'LNS'}", linestyle=style)
axes[1].set_yscale("log")
axes[1].set_xlabel("training tokens (millions)")
axes[1].set_ylabel("deep-quarter / shallow-quarter output\nvariance (higher: deep blocks' larger)")
axes[1].legend(fontsize=8, ncol=2)
plots.label_points(axes[0], [(row["tokens_per_param"], row["gap"], f"paper A {size} ({row['layers']:.0f} layers)")
                             for size, row in PAPER_A_GAPS.iterrows()])  # last: where the layout puts them
plots.show(fig, figures_dir, "depth_map_curves")

# %% [markdown]
# ## Where LNS starts to pay
# Per depth, the first validation point whose gap's 95% interval over seeds lies below zero (LNS
# better), and the last point's gap.

# %%
pays = interval["pays"].unstack("tokens").fillna(False).astype(bool)  # tokens a depth never reached: no
first_paying = {depth: pays.columns[pays.loc[depth].to_numpy()].min() if pays.loc[depth].any() else None
                for depth in points}
final_gap = at_fraction(gap, 1.0)
onset = pd.DataFrame({
    "first tokens (M) where LNS pays": {d: None if t is None else t / 1e6 for d, t in first_paying.items()},
    "final gap (nats)": final_gap.mean(axis=1).droplevel(["step", "tokens", "tokens_per_param"]),
    "seeds": final_gap.notna().sum(axis=1).droplevel(["step", "tokens", "tokens_per_param"]),
}).rename_axis("blocks")
display(onset.round(4))
lines = [f"- {depth} blocks: " + ("LNS never pays within the run" if t is None else
                                  f"LNS pays from {t / 1e6:.1f}M tokens on")
         + f"; final gap {onset.loc[depth, 'final gap (nats)']:+.4f} nats" for depth, t in first_paying.items()]
display(Markdown("\n".join(lines)))

# %% [markdown]
# ## Claims, judged by the rule above

# %%
deepest = max(points)
by_depth_gap = final_gap.droplevel(["step", "tokens", "tokens_per_param"])  # blocks x seeds
final_step = ratio.groupby("depth")["step"].transform("max")
pre_final = ratio[(ratio["norm"] == "pre_ln") & (ratio["step"] == final_step)].pivot(index="depth", columns="seed",
                                                                                     values="ratio")
early_gap = at_fraction(gap, early).xs(deepest, level="depth").iloc[0]
late_gap = by_depth_gap.loc[deepest]
paper_per_doubling = PAPER_A_GAPS.loc["250M", "gap"] - PAPER_A_GAPS.loc["130M", "gap"]

claims = Claims("A", profile, seeds, choices={"early": early})
claims.add("h1-lns-gain-grows-with-depth", "the map (Table 1's sizes)",
           f"The LNS gap at the end of training grows (more negative) from {min(points)} to {deepest} blocks",
           {size: round(row["gap"], 4) for size, row in PAPER_A_GAPS.iterrows()},
           monotone(by_depth_gap, -1, scale="difference", paper=paper_per_doubling))
claims.add("h1-variance-ratio-grows-with-depth", "the map",
           "Pre-LN's deep-to-shallow output variance ratio at the end of training grows with depth",
           "no ratio in either paper", monotone(pre_final, +1, scale="ratio"))
claims.add("h1-lns-gain-grows-in-training", "the map",
           f"At {deepest} blocks the LNS gap at the end is larger (more negative) than at {early:.0%} of training",
           "no curve in either paper",
           lambda early: compare(late_gap, at_fraction(gap, early).xs(deepest, level="depth").iloc[0],
                                 higher_is_better=False, scale="difference"))
display(claims.save(figures_dir))

# %% [markdown]
# ## What the figures show
# Generated from the claims this notebook judged (its claims.json): no number below is typed.

# %%
from cod.claims import scoreboard

display(Markdown(scoreboard.closing_of(figures_dir)))
