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
# # B1 · Depth scaling: variance, Jacobians and layer effectiveness
#
# Paper B, section 2, **Fig. 2**, **Fig. 3**, **Table 1**, appendix A.1 (**Fig. 9**) and A.3
# (**Fig. 12**). The paper trains Pre-LN LLaMA-style models of depth 12, 16, 24 and 32 at fixed
# width (hidden 2048, FFN 8192, 16 heads, sequence 1024, weight decay 0.1, 10B tokens, a learning
# rate sweep per depth) and reports that deeper models have a larger last-layer output variance
# (Fig. 2a, Fig. 9), block Jacobians closer to the identity (||J - I||_F / d falls with the layer
# index, Fig. 2b; Jacobian heatmaps grow diagonal-dominant, Fig. 3, Fig. 12) and falling causal,
# permutation and usefulness scores (Fig. 2c: usefulness 1.00 / 0.81 / 0.63 / 0.56), so that
# more and more layers are wasted (E/W 12/0, 13/3, 15/9, 18/14) while perplexity improves only
# slightly (13.72 to 13.47, Table 1).
#
# **What is shrunk here.** The `default` profile's calibrated miniature (`a0_miniature`) halves
# the depth ladder to 6 / 8 / 12 / 16 layers (ratios kept) at width 24 (4 heads, SwiGLU width
# 96 = 4 x hidden, untied embeddings), with a 2,048-token BPE vocabulary on the offline corpus
# and sequences of 128 (the paper: 1024). Every depth sees the same 0.59M tokens (580 steps of
# 8 x 128), which is 4.0 tokens per non-embedding parameter at 16 layers and 10.7 at 6, the
# paper's range (10B tokens: 4.3 at 2.3B, 11 at 0.9B); peak lr 1e-3 for every depth (no sweep)
# and the paper's weight decay 0.1. The runs are the `b_depth` experiment, whose 8-layer runs are
# also the baseline of paper B's sparsity notebooks. Layer-effectiveness scores come from the
# `analyse@b_depth` stage (settings in `params.yaml`, `analyses.b_depth`), measured on held-out
# validation tokens at the training length (the paper uses 100 sequences of 512 tokens):
# removal, causal, permutation and usefulness on `eval_tokens`, the usefulness fits on
# `fit_tokens` other tokens, the Jacobians on one random position of each of `jacobian_tokens`
# sequences (definitions and where they depart from the authors' scripts: `cod/metrics/*.py`).
# Every curve is the mean over seeds, the band their min..max; the paper's values are drawn
# beside ours against the paper's depth.

# %% tags=["parameters"]
profile = "default"  # smoke | default | paper: which runs were trained
experiment = "b_depth"  # runs/<profile>/<experiment>/<variant>_s<seed>/
analysis = "b_depth"  # analyses/<profile>/<analysis>/<variant>_s<seed>/: the runs' layer scores (analyse@b_depth)
runs_root = "runs"
analyses_root = "analyses"
figures_dir = None  # default: figures/<profile>/b1_depth_scaling
variants = ["d12", "d16", "d24", "d32"]  # named after the paper's depth; the profile sets the layers
jacobian_vmax = 0.25  # colour range of the Jacobian heatmaps (the diagonal, near 1, saturates)

# %%
figures_dir = figures_dir or f"figures/{profile}/b1_depth_scaling"

# %%
import json
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from cod import plots
from cod.analysis import load_layers, load_zero_shot
from cod.results import load_final, load_layer_stats, save_claims, spread

PAPER_DEPTH = {v: int(v[1:]) for v in variants}
# PAPER_NUMBERS.md: B-Table 1 and B-Figure 2 (project page)
PAPER = pd.DataFrame({
    "depth": [12, 16, 24, 32],
    "params": ["900M", "1.2B", "1.7B", "2.3B"],
    "E": [12, 13, 15, 18], "W": [0, 3, 9, 14],
    "ppl": [13.72, 13.65, 13.53, 13.47],
    "causal": [0.355, 0.336, 0.289, 0.259],
    "permutation": [0.985, 0.713, 0.438, 0.306],
    "usefulness": [1.000, 0.813, 0.625, 0.562],
}).set_index("depth")
runs_dir, analysis_dir = Path(runs_root) / profile, Path(analyses_root) / profile / analysis
final = load_final(experiment, runs_dir)
final = final[final["variant"].isin(variants)]
stats = load_layer_stats(experiment, runs_dir)
seeds = sorted(final["seed"].unique())
settings = json.loads((analysis_dir / "settings.json").read_text())
tau, zero_shot_tasks = settings["tau"], settings["zero_shot_tasks"]
display(final[["variant", "seed", "status", "steps", "tokens", "val_ppl", "tokens_per_s"]])
print(f"analysis settings (params.yaml analyses.{analysis}): {settings}")

# %% [markdown]
# ## The layer scores of every run
# Computed by the `analyse@b_depth` stage from the trained weights (`cod/analysis.py`), and
# stored per run in `analyses/<profile>/b_depth/`: one residual-stream pass per token batch is
# shared by all metrics, and the altered forwards of removal, causal, permutation and
# usefulness start from the cached input of the first altered block. The wall time of each
# metric was kept and is shown below.

# %%
analyses, depth_of, params_of = {}, {}, {}
for row in final.itertuples():
    analyses[row.variant, row.seed] = load_layers(analysis_dir / f"{row.variant}_s{row.seed}")
    depth_of[row.variant], params_of[row.variant] = len(analyses[row.variant, row.seed].variance), row.params
variants = [v for v in variants if v in depth_of]
cost = pd.DataFrame({f"{v}_s{s}": a.seconds for (v, s), a in analyses.items()}).T.round(2)
cost.insert(0, "layers", [depth_of[k.rsplit("_s", 1)[0]] for k in cost.index])
cost["total"] = cost.drop(columns="layers").sum(axis=1)
display(cost)

# Projected cost of the same analysis at 32 layers (the paper's deepest model), scaled from the
# deepest run analysed here by the number of blocks each metric runs (a head or an affine map
# counted as one block): permutation sum_k k(k-1) + L(L-1)/2, removal and usefulness L(L+1)/2,
# causal L(L-1)/2, angular L^2, the rest L.
WORK = {"permutation": lambda n: sum(k * (k - 1) for k in range(1, n + 1)) + n * (n - 1) / 2,
        "removal": lambda n: n * (n + 1) / 2, "usefulness": lambda n: n * (n + 1) / 2,
        "causal": lambda n: n * (n - 1) / 2, "angular": lambda n: n * n}
reference = cost.loc[cost["layers"].idxmax()]
projected = pd.Series({metric: reference[metric] * WORK.get(metric, lambda n: n)(32)
                       / WORK.get(metric, lambda n: n)(int(reference["layers"]))
                       for metric in cost.columns.drop(["layers", "total"])})
print(f"projected for 32 layers from {reference.name} ({int(reference['layers'])} layers): "
      f"{projected.sum():.0f}s in all; " + ", ".join(f"{k} {v:.1f}s" for k, v in projected.items()))

# %% [markdown]
# ## Per-run scores
# `causal`, `permutation`, `usefulness`: the global scores (paper B eq. 6, 8, 10); `E` / `W`:
# useful and wasted layers; `jac_dev`: ||J - I||_F / d averaged over layers; `last_var`: the
# last layer's output variance on the evaluation tokens (eq. 4) and `last_var_train` the one
# logged at the end of training.

# %%
rows = []
for (v, s), a in analyses.items():
    logged = stats[(stats["variant"] == v) & (stats["seed"] == s)]
    last = logged[logged["step"] == logged["step"].max()]
    rows.append({
        "variant": v, "seed": s, "paper_depth": PAPER_DEPTH[v], "layers": depth_of[v],
        "causal": a.causal.global_score, "permutation": a.permutation.global_score,
        "usefulness": a.usefulness.score, "E": a.usefulness.effective, "W": a.usefulness.wasted,
        "W_frac": a.usefulness.wasted / depth_of[v],
        "affine_rise": float(np.mean(a.usefulness.relative_increase)),
        "jac_dev": a.jacobians.deviation.mean(), "last_var": a.variance[-1],
        "last_var_train": last.loc[last["layer"].idxmax(), "resid_var"] if len(last) else np.nan,
        "base_loss": a.removal.base_loss,
    })
table = pd.DataFrame(rows).merge(final[["variant", "seed", "val_ppl"]], on=["variant", "seed"])
table = table.sort_values(["paper_depth", "seed"]).reset_index(drop=True)
display(table.round(4))
per_layer = pd.DataFrame([
    {"variant": v, "seed": s, "layer": l + 1, "jac_dev": a.jacobians.deviation[l], "variance": a.variance[l],
     "usefulness_increase": a.usefulness.relative_increase[l], "removal_increase": a.removal.loss_increase[l],
     "kurtosis": a.kurtosis.layer[l]}
    for (v, s), a in analyses.items() for l in range(depth_of[v])
])
Path(figures_dir).mkdir(parents=True, exist_ok=True)
per_layer.to_csv(Path(figures_dir) / "per_layer.csv", index=False)
cost.to_csv(Path(figures_dir) / "analysis_seconds.csv")


def by_seed(column: str, frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rows: paper depth; columns: seeds; values from `frame` (default: the per-run table)."""
    return (table if frame is None else frame).pivot_table(index="paper_depth", columns="seed", values=column)


colors = dict(zip(variants, plt.cm.viridis(np.linspace(0, 0.85, len(variants)))))
label = {v: f"L={depth_of[v]} (paper {PAPER_DEPTH[v]})" for v in variants}

# %% [markdown]
# ## Fig. 2a and Fig. 9: output variance against depth
# Left: the last layer's output variance during training for each depth (Fig. 2a). Right: every
# layer's variance at the end of training against the layer index (the end point of Fig. 9;
# the full trajectories of every layer follow).

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
for v in variants:
    s = stats[stats["variant"] == v]
    last = s[s["layer"] == depth_of[v]].pivot_table(index="step", columns="seed", values="resid_var")
    plots.seed_band(axes[0], last.index, last, colors[v], label[v])
    plots.depth_profile(axes[1], s, s["step"].max(), colors[v], label[v])
axes[0].set_xlabel("training step")
for ax in axes:
    ax.set_yscale("log")
    ax.set_ylabel("output variance")
axes[0].set_title("last layer during training (Fig. 2a)")
axes[1].set_title("every layer at the end of training")
axes[1].legend(fontsize=8)
plots.save(fig, figures_dir, "fig2a_last_layer_variance")
plt.show()

fig, axes = plt.subplots(1, len(variants), figsize=(4 * len(variants), 3.4), sharey=True)
for ax, v in zip(np.atleast_1d(axes), variants):
    plots.layer_curves_over_training(ax, stats[stats["variant"] == v])
    ax.set_title(label[v])
    ax.set_yscale("log")
np.atleast_1d(axes)[0].set_ylabel("output variance")
plots.save(fig, figures_dir, "fig9_variance_every_layer")
plt.show()

# %% [markdown]
# ## Fig. 2b: ||J - I||_F / d by layer
# J is the per-token Jacobian d y_t / d x_t of each block (other positions held fixed),
# averaged over the sampled tokens. The paper's 2048-wide models go from about 0.014 to 0.002.

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
for v in variants:
    dev = per_layer[per_layer["variant"] == v].pivot_table(index="layer", columns="seed", values="jac_dev")
    plots.seed_band(axes[0], dev.index, dev, colors[v], label[v], marker="o", markersize=3)
    plots.seed_band(axes[1], dev.index / depth_of[v], dev, colors[v], label[v], marker="o", markersize=3)
axes[0].set_xlabel("layer")
axes[1].set_xlabel("layer / depth")
for ax in axes:
    ax.set_ylabel("||J - I||_F / d")
    ax.set_yscale("log")
axes[0].legend(fontsize=8)
plots.save(fig, figures_dir, "fig2b_jacobian_deviation")
plt.show()

# %% [markdown]
# ## Fig. 3 and Fig. 12: Jacobian matrices
# Fig. 3 shows layer 10, 14, 22 and 30 of the 12-, 16-, 24- and 32-layer models, i.e. the
# same relative depth (10/12 .. 30/32); here the layer at that fraction of our halved depth.
# Fig. 12 shows several layers of the deepest model. Seed `seeds[0]`; the colour range is
# +-`jacobian_vmax`, so that the diagonal (near 1) saturates and the off-diagonal entries show.

# %%
def heatmap(ax, matrix, title):
    image = ax.imshow(matrix, cmap="RdBu_r", vmin=-jacobian_vmax, vmax=jacobian_vmax)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    return image


fig, axes = plt.subplots(1, len(variants), figsize=(3.2 * len(variants), 3.2))
for ax, v in zip(np.atleast_1d(axes), variants):
    layer = max(1, round(depth_of[v] * (PAPER_DEPTH[v] - 2) / PAPER_DEPTH[v]))
    image = heatmap(ax, analyses[v, seeds[0]].jacobians.mean[layer - 1], f"{label[v]}, layer {layer}")
fig.colorbar(image, ax=axes, shrink=0.8)
plots.save(fig, figures_dir, "fig3_jacobians_by_depth")
plt.show()

deepest = variants[-1]
shown = sorted({max(1, round(f * depth_of[deepest])) for f in (0.125, 0.375, 0.625, 0.875, 1.0)})
fig, axes = plt.subplots(1, len(shown), figsize=(3.2 * len(shown), 3.2))
for ax, layer in zip(np.atleast_1d(axes), shown):
    image = heatmap(ax, analyses[deepest, seeds[0]].jacobians.mean[layer - 1], f"layer {layer}")
fig.colorbar(image, ax=axes, shrink=0.8)
fig.suptitle(f"{label[deepest]}: Jacobians across depth (Fig. 12)")
plots.save(fig, figures_dir, "fig12_jacobians_deepest")
plt.show()

# %% [markdown]
# ## Fig. 2c: causal, permutation and usefulness scores against depth
# Ours (mean over seeds, band min..max) and the paper's, both against the paper's depth.

# %%
our_layers = {PAPER_DEPTH[v]: depth_of[v] for v in variants}
fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
for ax, score in zip(axes, ["causal", "permutation", "usefulness"]):
    plots.seed_band(ax, by_seed(score).index, by_seed(score), "C0", "ours", marker="o")
    ax.plot(PAPER.index, PAPER[score], "s--", color="C3", label="paper B")
    ax.set_title(f"{score} score")
    ax.set_xlabel("paper's depth (our layers)")
    ax.set_xticks(PAPER.index, [f"{d}\n({our_layers[d]})" if d in our_layers else str(d) for d in PAPER.index])
axes[0].legend()
plots.save(fig, figures_dir, "fig2c_scores_vs_depth")
plt.show()

# %% [markdown]
# ### Where the scores come from
# Causal matrix c(s, l) (row: skipped block s; column: later block l), permutation matrix
# P(i, j), and each layer's relative loss rise under its affine replacement (the dashed line is
# tau), all averaged over seeds.

# %%
fig, axes = plt.subplots(3, len(variants), figsize=(3.8 * len(variants), 10), squeeze=False, layout="constrained")
for col, v in enumerate(variants):
    runs = [analyses[v, s] for s in seeds if (v, s) in analyses]
    for row, (name, matrices) in enumerate([("causal", [a.causal.matrix for a in runs]),
                                            ("permutation", [a.permutation.matrix for a in runs])]):
        n = depth_of[v]
        image = axes[row, col].imshow(np.mean(matrices, axis=0), cmap="viridis", extent=(0.5, n + 0.5, n + 0.5, 0.5))
        axes[row, col].set_title(f"{name}, {label[v]}", fontsize=9)
        axes[row, col].set_xlabel("later block l" if name == "causal" else "block j")
        if col == 0:
            axes[row, col].set_ylabel("skipped block s" if name == "causal" else "block i")
        fig.colorbar(image, ax=axes[row, col], shrink=0.7)
    rise = per_layer[per_layer["variant"] == v].pivot_table(index="layer", columns="seed",
                                                             values="usefulness_increase")
    plots.seed_band(axes[2, col], rise.index, rise, "C0", marker="o", markersize=3)
    axes[2, col].axhline(tau, color="C3", linestyle="--")
    axes[2, col].set_yscale("symlog", linthresh=1e-2)
    axes[2, col].set_xlabel("layer")
axes[2, 0].set_ylabel("relative loss rise, affine block")
plots.save(fig, figures_dir, "score_matrices")
plt.show()

# %% [markdown]
# ## Table 1: effective / wasted layers, perplexity and zero-shot accuracy
# Perplexity is the runs' validation perplexity (`final.json`). Zero-shot accuracy is scored
# as in lm-evaluation-harness (`cod.eval`), on `zero_shot_limit` items of each task: accuracy
# for MMLU, length-normalised accuracy for the others, as the paper reports them (appendix C.1).
# Models this small sit near chance (shown beside each task).

# %%
zero_shot = pd.DataFrame([
    {"variant": v, "seed": s, "paper_depth": PAPER_DEPTH[v], "task": r["task"],
     "accuracy": 100 * r["acc" if r["task"] == "mmlu" else "acc_norm"], "chance": 100 * r["chance"], "n": r["n"]}
    for (v, s) in analyses for r in load_zero_shot(analysis_dir / f"{v}_s{s}")
])
average = zero_shot.groupby(["variant", "seed"], as_index=False)["accuracy"].mean()
table = table.merge(average.rename(columns={"accuracy": "zero_shot_avg"}), on=["variant", "seed"])
zero_shot.to_csv(Path(figures_dir) / "zero_shot.csv", index=False)
table.to_csv(Path(figures_dir) / "per_run.csv", index=False)
PAPER_ACCURACY = pd.DataFrame({"mmlu": [24.20, 25.20, 26.39, 27.52], "arc_challenge": [30.89, 31.72, 32.59, 34.22],
                               "arc_easy": [58.96, 60.45, 61.24, 61.74], "hellaswag": [47.24, 47.24, 47.50, 48.63]},
                              index=PAPER.index)

t1 = pd.DataFrame({
    "paper depth": [PAPER_DEPTH[v] for v in variants],
    "our layers": [depth_of[v] for v in variants],
    "our params": [f"{params_of[v] / 1e6:.2f}M" for v in variants],
    "paper params": [PAPER.loc[PAPER_DEPTH[v], "params"] for v in variants],
    "E/W ours (per seed)": [" ".join(f"{e:.0f}/{w:.0f}" for e, w in zip(by_seed("E").loc[PAPER_DEPTH[v]],
                                                                    by_seed("W").loc[PAPER_DEPTH[v]]))
                            for v in variants],
    "E/W paper": [f"{PAPER.loc[PAPER_DEPTH[v], 'E']}/{PAPER.loc[PAPER_DEPTH[v], 'W']}" for v in variants],
    "PPL ours": [spread(by_seed("val_ppl").loc[PAPER_DEPTH[v]]) for v in variants],
    "PPL paper": [PAPER.loc[PAPER_DEPTH[v], "ppl"] for v in variants],
    **{f"{name} ours (chance)": [
        f"{spread(by_seed('accuracy', zero_shot[zero_shot['task'] == name]).loc[PAPER_DEPTH[v]])} "
        f"({zero_shot[zero_shot['task'] == name]['chance'].iloc[0]:.1f})" for v in variants]
       for name in zero_shot_tasks},
    **{f"{name} paper": [PAPER_ACCURACY.loc[PAPER_DEPTH[v], name] if name in PAPER_ACCURACY else np.nan
                         for v in variants] for name in zero_shot_tasks},
}).set_index("paper depth")
t1.to_csv(Path(figures_dir) / "table1.csv")
display(t1)

# %% [markdown]
# ## Claims, judged over seeds
# A trend over the depth ladder holds for one seed when the Spearman rank correlation between
# depth and the quantity reaches 0.8 in the claimed direction (at most one adjacent swap among
# four depths). A claim is **reproduced** when every seed shows it, **not reproduced** when no
# seed does, and **inconclusive** otherwise. "Falls with the layer index" is judged per run
# (every depth and seed) by the Spearman correlation between layer and ||J - I||_F / d being
# negative. A quantity that is constant across depth (e.g. W / L when no layer passes tau)
# shows no trend and counts as not reproduced. Because tau = 10% can leave every layer
# below threshold in a miniature, the mean relative loss rise under affine replacement is
# also judged, as the usefulness score before thresholding. The paper's magnitudes belong to 0.9-2.3B models after 10B tokens and are not
# expected here.

# %%
def verdict(flags) -> str:
    flags = list(flags)
    return "reproduced" if all(flags) else "not reproduced" if not any(flags) else "inconclusive"


def depth_trend(column: str) -> pd.Series:
    """Per seed: Spearman correlation of `column` with depth."""
    frame = by_seed(column)
    with warnings.catch_warnings(action="ignore"):  # a constant column has no rank correlation: NaN
        return frame.apply(lambda values: pd.Series(values.to_numpy()).corr(pd.Series(frame.index),
                                                                           method="spearman"))


def rho_text(rho: pd.Series) -> str:
    return f"Spearman rho with depth per seed {', '.join(f'{r:+.2f}' for r in rho)}"


def by_depth(column: str) -> str:
    return "; ".join(f"{PAPER_DEPTH[v]}: {spread(by_seed(column).loc[PAPER_DEPTH[v]])}" for v in variants)


with warnings.catch_warnings(action="ignore"):
    layer_rho = per_layer.groupby(["variant", "seed"]).apply(
        lambda g: g["layer"].corr(g["jac_dev"], method="spearman"), include_groups=False)
trend_claims = [
    ("b1-variance-grows-with-depth", "Fig. 2a / section 2", "last_var_train", +1,
     "The last layer's output variance grows with depth", "grows with depth (Fig. 2a)"),
    ("b1-jacobian-falls-with-depth", "Fig. 2b / section 2", "jac_dev", -1,
     "Mean ||J - I||_F / d over layers falls with depth", "falls with depth (about 0.014 to 0.002)"),
    ("b1-causal-falls-with-depth", "Fig. 2c / section 2", "causal", -1,
     "The global causal score falls with depth", "0.355 / 0.336 / 0.289 / 0.259"),
    ("b1-permutation-falls-with-depth", "Fig. 2c / section 2", "permutation", -1,
     "The global permutation score falls with depth", "0.985 / 0.713 / 0.438 / 0.306"),
    ("b1-usefulness-falls-with-depth", "Fig. 2c / Table 1", "usefulness", -1,
     "The usefulness score falls with depth", "1.000 / 0.813 / 0.625 / 0.562"),
    ("b1-wasted-layers-grow", "Table 1", "W_frac", +1,
     "The share of wasted layers W / L grows with depth", "W / L = 0 / 0.19 / 0.38 / 0.44"),
    ("b1-effective-layers-grow", "Table 1", "E", +1,
     "The number of effective layers E grows with depth", "E = 12 / 13 / 15 / 18"),
    ("b1-affine-rise-falls-with-depth", "eq. 9 / Fig. 2c", "affine_rise", -1,
     "The mean relative loss rise when a block is replaced by its affine fit (usefulness before "
     "thresholding at tau) falls with depth", "implied by usefulness 1.000 / 0.813 / 0.625 / 0.562"),
    ("b1-ppl-falls-with-depth", "Table 1", "val_ppl", -1,
     "Validation perplexity falls (slightly) with depth", "13.72 / 13.65 / 13.53 / 13.47"),
    ("b1-accuracy-rises-with-depth", "Table 1", "zero_shot_avg", +1,
     "Mean zero-shot accuracy over the tasks rises with depth",
     "mean of MMLU, ARC-C, ARC-E, HellaSwag: 40.3 / 41.2 / 41.9 / 43.0"),
]
claims = []
for claim_id, item, column, sign, text, paper_value in trend_claims:
    rho = depth_trend(column)
    claims.append({"id": claim_id, "item": item, "claim": text, "paper_value": paper_value,
                   "ours": f"{by_depth(column)} (paper depth: mean ± std); {rho_text(rho)}",
                   "verdict": verdict(sign * rho >= 0.8 - 1e-9)})  # rho of one swap is 0.8 up to rounding
claims.append({
    "id": "b1-jacobian-falls-with-layer", "item": "Fig. 2b / section 2",
    "claim": "||J - I||_F / d falls with the layer index",
    "paper_value": "falls from about 0.014 to 0.002 across layers",
    "ours": f"Spearman rho (layer, deviation) per run {spread(layer_rho)}; negative in "
            f"{int((layer_rho < 0).sum())} of {len(layer_rho)} runs",
    "verdict": verdict(layer_rho < 0),
})
for claim in claims:
    claim.update(paper="B", seeds=[int(s) for s in seeds], profile=profile)
save_claims(figures_dir, claims)
display(pd.DataFrame(claims)[["id", "paper_value", "ours", "verdict"]])

# %% [markdown]
# ## What agrees and what does not

# %%
agree = [c["id"] for c in claims if c["verdict"] == "reproduced"]
disagree = [c["id"] for c in claims if c["verdict"] == "not reproduced"]
unclear = [c["id"] for c in claims if c["verdict"] == "inconclusive"]
deep, shallow = PAPER_DEPTH[variants[-1]], PAPER_DEPTH[variants[0]]
display(Markdown(
    f"Over {len(seeds)} seed(s) of the `{profile}` profile: **reproduced** {', '.join(agree) or 'none'}; "
    f"**not reproduced** {', '.join(disagree) or 'none'}; **inconclusive** {', '.join(unclear) or 'none'}.\n\n"
    f"Usefulness goes from {by_seed('usefulness').loc[shallow].mean():.3f} ({depth_of[variants[0]]} layers) to "
    f"{by_seed('usefulness').loc[deep].mean():.3f} ({depth_of[variants[-1]]} layers), against the paper's "
    f"{PAPER.loc[shallow, 'usefulness']:.3f} to {PAPER.loc[deep, 'usefulness']:.3f}; permutation from "
    f"{by_seed('permutation').loc[shallow].mean():.3f} to {by_seed('permutation').loc[deep].mean():.3f} "
    f"(paper {PAPER.loc[shallow, 'permutation']:.3f} to {PAPER.loc[deep, 'permutation']:.3f}); causal from "
    f"{by_seed('causal').loc[shallow].mean():.3f} to {by_seed('causal').loc[deep].mean():.3f} "
    f"(paper {PAPER.loc[shallow, 'causal']:.3f} to {PAPER.loc[deep, 'causal']:.3f}). The full analysis of "
    f"the {depth_of[variants[-1]]}-layer runs took {cost[cost['layers'] == depth_of[variants[-1]]]['total'].mean():.0f}s each."
))

# %% [markdown]
# **Reading the result.** The scores are relative measures and can be compared with the
# paper's directly only in their trend: the permutation score is a relative loss change, which
# depends on how far training has moved the blocks apart, and a miniature trained on 0.59M
# tokens has far less specialised layers than a 1B model after 10B tokens; usefulness uses the
# paper's threshold tau = 0.1 unchanged, which is a large loss rise for a model whose loss is
# still above 5 nats, and zero-shot accuracy this close to chance cannot show the paper's
# 1-3 point gains from depth. ||J - I||_F / d shrinks with the width d for a fixed per-entry
# deviation, so our width-24 values sit above the paper's width-2048 ones. The depths are half
# the paper's, so a wasted-layer count should be compared as a fraction of depth (W / L), not in
# absolute terms.
#
# **What changed with the calibrated miniature** (width 24 and 0.59M tokens, 4-11 tokens per
# parameter, against width 64 and 1.6M tokens, 1.5-4 before, two seeds then and three now): the
# variance, Jacobian and causal trends are reproduced as before. The permutation score and the
# loss rise under affine replacement still fall from 6 to 12 layers, but the 12- and 16-layer
# models now tie, so both trends are inconclusive rather than reproduced. Perplexity no longer
# rises with depth: it is flat (about 205 at every depth, within the seed spread), where the
# paper's falls slightly. Usefulness at tau = 10% is still 0 at every depth.
