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
# # A10 · Layer effectiveness under LayerNorm Scaling (Fig. 7)
#
# Paper A, section 5.5, **Fig. 7**: LLaMA-130M under Pre-LN and LayerNorm Scaling (LNS: the
# output of every pre-norm of block l multiplied by 1/sqrt(l)). Left: the performance drop when
# one layer is pruned; right: the angular distance between the representations entering
# subsequent layers. The text: with LNS the drop is more uniformly distributed across layers,
# and pruning LNS's deep layers costs more than pruning Pre-LN's; most LNS layers sit at an
# angular distance above **0.6** from their neighbour, while Pre-LN's is much lower and falls
# with depth.
#
# **What is shrunk here.** The `default` profile's calibrated miniature (`a0_miniature`): the
# 130M shape at 12 layers but width 24 (4 heads), 2,048-token BPE vocabulary on the offline
# corpus, 0.86M training tokens (about 10 tokens per non-embedding parameter; the paper: 2.2B
# tokens, 17); the 250M shape likewise at 24 layers, width 24 and 1.72M tokens (the paper's
# Fig. 7 is 130M only). The runs are the `a_130m` and `a_250m` experiments (shared with
# Tables 1, 6-8 and Fig. 4), three seeds each. The layer scores come from the
# `analyse@a_130m` and `analyse@a_250m` stages (`cod/runs/analysis.py`, settings printed below): one
# residual-stream pass over `eval_tokens` held-out validation tokens in windows of the
# training length. Angular distance: arccos(cos) / pi between the residual stream entering
# block l and the one entering block l + 1 (the last block's output after the last), averaged
# over tokens (`cod/metrics/angular.py`). The paper's drop is a task accuracy; at this scale
# zero-shot accuracy sits at chance (`b1_depth_scaling`, Table 1), so the drop here is the
# rise in next-token loss (nats) on the held-out tokens when block l is skipped
# (`cod/metrics/pruning.py`). A size whose analysis has not been run yet is left out, and
# said so below.
#
# **The claims, fixed before the numbers.** Per run: the *coefficient of variation* of the loss
# increase across layers (standard deviation over layers / mean over layers: lower is more
# uniform; undefined, and dropped, if the mean is not positive); the mean loss increase and the
# mean adjacent angular distance over the *deeper half* of blocks (L/2 + 1 .. L); the slope of a
# least-squares line of Pre-LN's adjacent distance against the layer index; the share of LNS's
# blocks whose adjacent distance exceeds 0.6 **on the scale of the paper's figure**. Fig. 7's
# caption gives no scale, Fig. 3's says its distances are "scaled to the range [0, 1]", and the
# authors' released heatmap script (`utils/angular_analysis.py` of lmsdss/LayerNorm-Scaling)
# clips each row of the grid (one offset n, all layers) to its 1st-99th percentile and min-max
# scales it to [0, 1]. So the threshold is applied, per run, to the adjacent distances (the n = 1
# row) scaled that way: 0 is the run's smallest adjacent distance, 1 its largest. On the raw
# arccos/pi of eq. 1, 0.6 would mean 108 degrees between consecutive states. (That script also
# takes the last token of each window, where we average over tokens.) The comparisons of LNS
# with Pre-LN (claims 1-3) use `compare`, paired by seed; coefficients of variation and
# distances are positive and compared as ratios, loss increases (which can be negative) as
# differences. Claims on one norm use `one_sample`: the slope against 0 (claim 4), the share
# against one half (claim 5). No further noise floor: every run is scored on the same held-out
# tokens. The paper shows Fig. 7 for 130M only, so the 250M claims are ours. Every claim is
# judged by the one rule of the package (`cod/claims/verdicts.py`), printed below. Claims, per size:
# 1. the pruning drop is more uniform across layers under LNS (lower coefficient of variation);
# 2. the deep-half pruning drop is larger under LNS than under Pre-LN;
# 3. the deep-half adjacent angular distance (raw arccos/pi) is higher under LNS than under Pre-LN;
# 4. Pre-LN's adjacent angular distance falls with depth (negative slope);
# 5. the paper's magnitude: most LNS blocks (more than half) have a scaled adjacent distance
#    above 0.6.
#
# Every curve is the mean over seeds, the band their min..max.

# %% tags=["parameters"]
profile = "default"  # smoke | default | headline | paper: which runs were trained and analysed
analyses = ["a_130m", "a_250m"]  # analyses/<profile>/<name>/<variant>_s<seed>/layers.json, one per model size
analyses_root = "analyses"
runs_root = "runs"
figures_dir = None  # default: figures/<profile>/a10_layer_effectiveness_lns
threshold = 0.6  # the paper's "most layers exceed 0.6" (section 5.5), on its figure's [0, 1] scale
deep_share = 0.5  # the deep blocks' share of the model: a registered free choice, judged again at its neighbours

# %%
from cod import kernel

figures_dir = kernel.start("a10_layer_effectiveness_lns", profile, figures_dir)  # unset: a folder of its own

# %%
from functools import partial
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

import cod.claims.verdicts
from cod import plots
from cod.claims.sizes import deep_share_runs, load_sizes, size_label
from cod.claims.tables import load_size_sweep
from cod.metrics.angular import adjacent_distances
from cod.records.results import spread
from cod.claims.verdicts import Claims, SizeClaims, compare, one_sample

VARIANTS = {"Pre-LN": "pre_ln", "LNS": "lns"}
COLORS = {"Pre-LN": "C0", "LNS": "C2"}


def figure_scale(distances: np.ndarray) -> np.ndarray:
    """Paper A's figure scale of one row of distances (one offset, all layers): clipped to its
    1st-99th percentile, then min-max scaled to [0, 1] (the authors' utils/angular_analysis.py)."""
    clipped = np.clip(distances, *np.percentile(distances, [1, 99]))
    return (clipped - clipped.min()) / (clipped.max() - clipped.min())


layers, experiments = load_sizes(Path(analyses_root) / profile, analyses, VARIANTS)
sizes = list(layers)
print(cod.claims.verdicts.rule())  # the rule every claim below is judged by

# %% [markdown]
# ## The runs and their per-run statistics
# Validation perplexity from training (`final.json`), the intact loss on the analysis's
# held-out tokens, whether the run failed (diverged, or no better than a unigram model:
# `cod.claims.tables`), and the statistics the claims are judged on.

# %%
def measure(a, deep_share: float = deep_share):
    """A run's statistics (those the claims are judged on, and some for reading) and its per-layer values; the deep
    blocks are the last `deep_share` of them."""
    n = len(a.variance)
    index = np.arange(1, n + 1)
    adjacent = adjacent_distances(a.angular)  # d(x^l, x^{l+1}): block l's input against its output
    scaled = figure_scale(adjacent)
    drop = a.removal.loss_increase
    deep = index > n - round(deep_share * n)
    statistics = {"drop_cv": drop.std() / drop.mean() if drop.mean() > 0 else np.nan,
                  "drop_deep": drop[deep].mean(), "drop_shallow": drop[~deep].mean(),
                  "adjacent_deep": adjacent[deep].mean(), "adjacent_shallow": adjacent[~deep].mean(),
                  "adjacent_slope": np.polyfit(index, adjacent, 1)[0],
                  "adjacent_slope_after_first": np.polyfit(index[1:], adjacent[1:], 1)[0],
                  "scaled_deep": scaled[deep].mean(), "share_above": float(np.mean(scaled > threshold))}
    return statistics, {"adjacent_distance": adjacent, "adjacent_scaled": scaled, "loss_increase": drop}


sweep = load_size_sweep(experiments, Path(runs_root) / profile)
# runs_at(share): the tables with that deep share; runs: those at `deep_share` (saved)
runs_at, runs = deep_share_runs(layers, VARIANTS, measure, sweep, deep_share, figures_dir)
table, per_layer = runs.per_run, runs.per_layer
display(table.round(4))

# %% [markdown]
# ## Fig. 7: pruning drop and adjacent-layer angular distance per layer
# Left: held-out loss without block l minus the intact model's (nats; symmetric-log axis,
# since removing the first block can cost orders of magnitude more than the others). Middle:
# d(x^l, x^{l+1}), raw arccos/pi (eq. 1). Right: the same on the paper's figure scale (each
# run's adjacent distances clipped to their 1st-99th percentile and min-max scaled to [0, 1]),
# where the dashed line is the paper's 0.6. The dotted line splits the shallow and deep halves.

# %%
panels = ["loss_increase", "adjacent_distance", "adjacent_scaled"]
fig, axes = plt.subplots(len(sizes), 3, figsize=(17, 4 * len(sizes)), squeeze=False)
for row, name in enumerate(sizes):
    plots.layer_bands(axes[row], per_layer[per_layer["size"] == name], COLORS, panels)
    axes[row, 0].set_title(f"{size_label(name)}: performance drop of layer pruning")
    axes[row, 1].set_ylim(bottom=0)
    axes[row, 1].set_ylabel(r"$d(x^l, x^{l+1})$ (arccos / $\pi$)")
    axes[row, 1].set_title(f"{size_label(name)}: angular distance to the next layer")
    axes[row, 2].axhline(threshold, color="grey", linestyle="--", linewidth=1,
                         label=f"paper: most LNS layers above {threshold}")
    axes[row, 2].set_ylim(0, 1.05)
    axes[row, 2].set_ylabel(r"$d(x^l, x^{l+1})$, scaled to [0, 1] per run")
    axes[row, 2].set_title(f"{size_label(name)}: on the paper's figure scale")
    for ax in axes[row]:
        ax.legend()
plots.show(fig, figures_dir, "fig7_layer_effectiveness")

# %% [markdown]
# ## Claims, judged by the rule
# Per-seed statistics, then mean ± standard deviation over seeds. `adjacent_slope` is per
# layer; `adjacent_slope_after_first` leaves block 1 out, `drop_shallow` is the shallow half's
# mean and `scaled_deep` the deep half's mean adjacent distance on the figure's [0, 1] scale, all
# for reading only: the verdicts use the statistics as declared.

# %%
summary = ["drop_cv", "drop_deep", "drop_shallow", "adjacent_deep", "adjacent_slope", "adjacent_slope_after_first",
           "scaled_deep", "share_above"]
display(table.pivot_table(index=["size", "seed"], columns="norm", values=summary).round(4))
display(table.groupby(["size", "norm"])[summary].agg(spread))


def values(series: pd.Series, digits: int = 3) -> str:
    return ", ".join(f"{v:.{digits}g}" for v in series)


claims = Claims("A", profile, sorted(int(s) for s in table["seed"].unique()), choices={"deep_share": deep_share})
by_size = SizeClaims(claims, "a10", "Fig. 7 / section 5.5")
for name in sizes:
    size = size_label(name)
    pre, lns = partial(runs.per_seed, name, "Pre-LN"), partial(runs.per_seed, name, "LNS")

    def at(norm: str, column: str, deep_share: float, name=name) -> pd.Series:
        return runs_at(deep_share).per_seed(name, norm, column)

    by_size.add(size, "drop-uniform",
        "the pruning drop is more uniformly distributed across layers under LNS than under Pre-LN",
        "Fig. 7 left (130M): LNS's drop more uniform across layers",
        f"coefficient of variation of the loss increase across layers: LNS {spread(lns('drop_cv'))}, "
        f"Pre-LN {spread(pre('drop_cv'))}", compare(lns("drop_cv"), pre("drop_cv")))
    by_size.add(size, "drop-deep", "removing a deep-half layer costs more under LNS than under Pre-LN",
        "Fig. 7 left (130M): pruning LNS's deep layers causes a larger drop",
        lambda deep_share, at=at: f"mean loss increase (nats) over the deep {deep_share:g}: LNS "
                                  f"{spread(at('LNS', 'drop_deep', deep_share))}, Pre-LN "
                                  f"{spread(at('Pre-LN', 'drop_deep', deep_share))}",
        lambda deep_share, at=at: compare(at("LNS", "drop_deep", deep_share), at("Pre-LN", "drop_deep", deep_share),
                                          higher_is_better=True, scale="difference"))
    by_size.add(size, "adjacent-distance-deep",
        "deep-half layers are more distinct from their neighbour (higher adjacent angular distance) under LNS than "
        "under Pre-LN",
        "Fig. 7 right (130M): LNS mostly > 0.6; Pre-LN significantly lower",
        lambda deep_share, at=at: f"mean d(x^l, x^(l+1)) over the deep {deep_share:g}: LNS "
                                  f"{spread(at('LNS', 'adjacent_deep', deep_share))}, Pre-LN "
                                  f"{spread(at('Pre-LN', 'adjacent_deep', deep_share))}",
        lambda deep_share, at=at: compare(at("LNS", "adjacent_deep", deep_share),
                                          at("Pre-LN", "adjacent_deep", deep_share), higher_is_better=True))
    slope = pre("adjacent_slope")
    by_size.add(size, "preln-distance-falls", "under Pre-LN the adjacent angular distance falls with depth",
        "Fig. 7 right (130M): Pre-LN's progressively decreases with depth",
        f"slope of d(x^l, x^(l+1)) against l per seed: {values(slope)}; without block 1: "
        f"{values(pre('adjacent_slope_after_first'))}",
        one_sample(slope, higher_is_better=False, why="slope below 0"))
    share = lns("share_above")
    largest = per_layer[(per_layer["size"] == name) & (per_layer["norm"] == "LNS")]["adjacent_distance"].max()
    by_size.add(size, "lns-above-threshold",
        f"most LNS layers have adjacent angular distance above {threshold} on the figure's scale (each run's "
        "adjacent distances clipped to their 1st-99th percentile, min-max scaled to [0, 1])",
        f"Fig. 7 right (130M): most LNS layers exceed {threshold}",
        f"share of LNS layers above {threshold} on the figure's scale per seed: {values(share, 2)} (Pre-LN: "
        f"{values(pre('share_above'), 2)}); largest raw LNS adjacent distance {largest:.3f} (arccos/pi; "
        f"0.6 there would be 108 degrees)",
        one_sample(share, null=0.5, why="share of layers above the threshold against one half",
                   resolution=1 / int(table[table["size"] == name]["layers"].max())))
display(claims.save(figures_dir))

# %% [markdown]
# ## What agrees and what does not

# %%
display(Markdown(by_size.summary([size_label(name) for name in analyses if name not in sizes])))

# %% [markdown]
# ## Reading the result
# Generated from the analyses above on every execution, so its numbers are those of this run;
# per-layer values are means over seeds.

# %%
paragraphs = []
for name in sizes:
    size, mean = size_label(name), partial(runs.mean, name)  # mean(norm, column): over seeds
    pre_d, lns_d = runs.profile(name, "Pre-LN", "adjacent_distance"), runs.profile(name, "LNS", "adjacent_distance")
    lns_r = runs.profile(name, "LNS", "loss_increase")
    at = per_layer[(per_layer["size"] == name) & (per_layer["norm"] == "LNS")]
    worst = at.groupby("layer")["loss_increase"].apply(lambda x: x.abs().max())  # largest |drop| over seeds
    small = 0.2 * mean("Pre-LN", "drop_deep")  # "nearly inert": under a fifth of Pre-LN's deep-half drop
    inert_from = next((layer for layer in worst.index if (worst.loc[layer:] < small).all()), None)
    ppl = (table[(table["size"] == name) & ~table["failed"].astype(bool)].groupby("norm")["val_ppl"].mean()
           .reindex(["LNS", "Pre-LN"]))  # NaN where every run of a norm failed
    verdicts = {key: by_size.verdict(size, key) for key in
                ("drop-uniform", "drop-deep", "adjacent-distance-deep", "preln-distance-falls", "lns-above-threshold")}
    text = (f"**{size}.** Pre-LN's adjacent distance goes from {pre_d.iloc[0]:.3f} at block 1 to "
            f"{pre_d.iloc[-3:].mean():.3f} over the last three blocks (claim 4, a falling slope: "
            f"*{verdicts['preln-distance-falls']}*). Under LNS, removing block 1 costs {lns_r.iloc[0]:.3f} nats and "
            f"block 2 {lns_r.iloc[1]:.3f}")
    if inert_from is not None:
        text += (f"; from block {inert_from} on, removing any block moves the held-out loss by at most "
                 f"{worst.loc[inert_from:].max():.5f} nats in any seed (under a fifth of Pre-LN's mean deep-half "
                 f"drop), and those blocks' adjacent distance averages "
                 f"{lns_d.loc[inert_from:].mean():.3f} against Pre-LN's {pre_d.loc[inert_from:].mean():.3f}")
    text += (f". The coefficient of variation of the drop is LNS {mean('LNS', 'drop_cv'):.2f} against "
             f"Pre-LN {mean('Pre-LN', 'drop_cv'):.2f} (claim 1, LNS more uniform: "
             f"*{verdicts['drop-uniform']}*); the deep-half drop, {mean('LNS', 'drop_deep'):.5f} against "
             f"{mean('Pre-LN', 'drop_deep'):.5f} nats (claim 2, LNS larger: *{verdicts['drop-deep']}*); the "
             f"deep-half distance, {mean('LNS', 'adjacent_deep'):.4f} against "
             f"{mean('Pre-LN', 'adjacent_deep'):.4f} (claim 3, LNS higher: "
             f"*{verdicts['adjacent-distance-deep']}*). On the figure's [0, 1] scale the share of LNS blocks above "
             f"{threshold} is {mean('LNS', 'share_above'):.2f} on average (Pre-LN "
             f"{mean('Pre-LN', 'share_above'):.2f}): LNS's largest raw adjacent distance, {lns_d.max():.3f} "
             f"at block {int(lns_d.idxmax())}, sets the top of its scale, and its deep half averages "
             f"{mean('LNS', 'scaled_deep'):.2f} on it (Pre-LN {mean('Pre-LN', 'scaled_deep'):.2f}; "
             f"claim 5: *{verdicts['lns-above-threshold']}*). "
             f"Validation perplexity (runs that did not fail): LNS {ppl['LNS']:.0f}, Pre-LN {ppl['Pre-LN']:.0f}.")
    paragraphs.append(text)
display(Markdown("\n\n".join(paragraphs)))

# %% [markdown]
# A reading that fits but was not tested here: LNS multiplies what block $l$'s branches see by
# $1/\sqrt{l}$, so a deep block's update starts several times smaller than under Pre-LN (more
# for the SwiGLU, nearly quadratic in a small input, and for its attention logits, where
# queries and keys both shrink, by $1/l$: deep heads start near uniform), and a miniature's
# token budget may be too small for its weights to make up for it; the paper's model saw
# hundreds of times more tokens than either CPU profile's. Whether the paper's pattern appears
# with more tokens is a question for the `paper` profile, not something to tune here. The drop
# is a held-out loss rise, not task accuracy (`b1_depth_scaling` judges accuracy against chance).

# %% [markdown]
# ## What the figures show
# Generated from the claims this notebook judged (its claims.json): no number below is typed.

# %%
from cod.claims import scoreboard

display(Markdown(scoreboard.closing_of(figures_dir)))
