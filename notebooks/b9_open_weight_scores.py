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
# # B9 · Paper B's measures on public models: is the curse of depth there too?
#
# **Beyond both papers.** Paper B measures the curse of depth on the Pre-LN models it trains
# itself (0.9-2.3B parameters, 12-32 layers, 10B tokens): deep blocks whose Jacobians sit near the
# identity (Fig. 2b), a residual variance that grows with depth (Fig. 2a), falling causal,
# permutation and usefulness scores, and wasted layers (Table 1: 3 of 16 up to 14 of 32 at
# tau = 10%). Here the same measures run on the open-weight decoders that ship offline
# (`cod.eval.pretrained`), trained by others on trillions of tokens, from three families and
# at three depths:
#
# | model | family | layers | width | norms |
# |---|---|---|---|---|
# | SmolLM2-135M-Instruct | LLaMA | 30 | 576 | Pre-LN |
# | Qwen2.5-Coder-0.5B-Instruct | Qwen2 (q/k/v biases) | 24 | 896 | Pre-LN |
# | Gemma-3-270M (base) | Gemma 3 (5 sliding-window layers to 1 global) | 18 | 640 | pre- and post-norm ("sandwich") |
#
# All three ship as 4-bit GGUF files, dequantised to fp32 on load: the geometry of the
# quantised models, not of their bf16 originals. SmolLM2 and Qwen2.5 run as our `Transformer`
# (converted exactly), Gemma-3 as Hugging Face's own modules behind `cod.metrics.adapters`.
#
# **Measures** (definitions in `cod/metrics/*.py`), computed by the `analyse_open@MODEL` stages
# (`cod/runs/analysis.py`, settings in `params.yaml`, `open_weights:`) on BBC news articles of the
# offline corpus in windows of `seq_len` tokens, each article after the model's document
# separator: layer removal, the causal score (eq. 5-6) and usefulness (eq. 9-10, affine maps
# fitted on other windows) on the evaluation windows; the permutation score (eq. 7-8), whose
# L(L - 1) / 2 swaps cost most, on the first of them; ||J - I||_F / d of the token-mean block
# Jacobian on one random token of each of a few short windows; the output variance of every
# block (eq. 4); attention sparsity at three thresholds and entropy (eq. 15-16, 21-23); kurtosis
# (eq. 19-20). Token counts were set by a budget of 20 minutes for the costliest model, before
# any score was looked at. Beside them, our own depth ladder (`b1_depth_scaling`, the
# `analyse@b_depth` stage), mean over seeds.

# %% tags=["parameters"]
profile = "default"  # smoke | default | headline | paper: which analyses to read
analyses_root = "analyses"
figures_dir = None  # default: figures/<profile>/b9_open_weight_scores
models = ["smollm2-135m", "qwen2.5-coder-0.5b", "gemma3-270m"]  # analyses/<profile>/open_weights/<model>/
ladder = "b_depth"  # our depth ladder's analysis, shown beside the public models
ladder_variants = ["d12", "d16", "d24", "d32"]
taus = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5]  # thresholds of the usefulness curve
timing_model = "smollm2-135m"  # the model whose timings scoring_times.md shows (a 135M decoder)

# %%
from cod import kernel

figures_dir = kernel.start("b9_open_weight_scores", profile, figures_dir)  # unset: a folder of its own

# %%
import json
import warnings
from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

import cod.claims.verdicts
from cod import plots
from cod.claims import scoreboard
from cod.records.analyses import load_analyses, load_layers
from cod.claims.verdicts import Claims, Verdict, monotone, one_sample, usefulness_at_floor

open_dir = Path(analyses_root) / profile / "open_weights"
found = {m: open_dir / m for m in models if (open_dir / m / "layers.json").exists()}
for m in set(models) - set(found):
    print(f"{m}: no analysis in {open_dir / m}: `python -m cod.runs.analysis open_weights {m} --profile {profile}` "
          "makes it; left out")
scores = {m: load_layers(path) for m, path in found.items()}
settings = {m: json.loads((path / "settings.json").read_text()) for m, path in found.items()}
models = list(scores)
ladder_scores = load_analyses(Path(analyses_root) / profile / ladder, ladder_variants)
tau = next(iter(settings.values()))["tau"]
print("settings:", {k: v for k, v in next(iter(settings.values())).items() if k not in ("models", "model")})

# paper B, Table 1 and Figure 2 (project page), paper B's own trained models
PAPER = pd.DataFrame({"layers": [12, 16, 24, 32], "causal": [0.355, 0.336, 0.289, 0.259],
                      "permutation": [0.985, 0.713, 0.438, 0.306], "usefulness": [1.000, 0.813, 0.625, 0.562],
                      "E": [12, 13, 15, 18], "W": [0, 3, 9, 14]})

# %% [markdown]
# ## The scores of every model
# One row per public model; then our ladder, one row per depth (mean over seeds, with the
# seeds' standard deviation where it varies), then paper B's models. `E` / `W`: useful and
# wasted layers at tau = 10% (the paper's headline); `affine_rise`: the mean over layers of the
# relative loss rise when a block is replaced by its affine fit, before thresholding;
# `jac_dev`: ||J - I||_F / d averaged over the layers; `last_var`: the last block's output
# variance; `entropy`: mean attention entropy (nats); `sparsity@eps`: the share of attention
# weights below eps; `kurtosis`: mean per-layer kurtosis (3 for a Gaussian).


# %%
def summary(a, name: str, source: str) -> dict:
    L = len(a.variance)
    row = {"model": name, "source": source, "layers": L, "base_loss": a.removal.base_loss,
           "causal": a.causal.global_score, "permutation": a.permutation.global_score,
           "usefulness": a.usefulness.score, "E": a.usefulness.effective, "W": a.usefulness.wasted,
           "affine_rise": float(np.mean(a.usefulness.relative_increase)),
           "jac_dev": float(a.jacobians.deviation.mean()),
           "last_var": float(a.variance[-1]), "kurtosis": float(a.kurtosis.layer.mean())}
    if a.attention is not None:
        row["entropy"] = a.attention.global_entropy
        row.update({f"sparsity@{eps:g}": s for eps, s in zip(a.attention.thresholds, a.attention.global_sparsity)})
    return row


rows = [summary(a, m, "public") for m, a in scores.items()]
ladder_rows = pd.DataFrame([{**summary(a, v, "ours"), "seed": s} for (v, s), a in ladder_scores.items()])
table = pd.DataFrame(rows)
if len(ladder_rows):
    ladder_mean = ladder_rows.drop(columns="seed").groupby(["model", "source"], sort=False).mean().reset_index()
    table = pd.concat([table, ladder_mean.assign(model=lambda t: "ladder " + t["model"])], ignore_index=True)
paper_rows = PAPER.assign(model=lambda t: "paper B L=" + t["layers"].astype(str), source="paper B")
table = pd.concat([table, paper_rows], ignore_index=True)
display(table.round(4))
table.to_csv(Path(figures_dir) / "scores.csv", index=False)
cost = pd.DataFrame({m: a.seconds for m, a in scores.items()}).T.round(0)
cost["total"] = cost.sum(axis=1)
print("wall time of each measure (s), on the machine that made the analyses:")
display(cost)

# %% [markdown]
# ## Per layer, against relative depth (the cross-model figure)
# Each public model in colour; our ladder's deepest model in grey (mean over seeds, min..max
# band). x is the relative depth l / L so that models of 16 to 30 layers share an axis.

# %%
COLORS = dict(zip(models, ["C0", "C1", "C2", "C4", "C5"]))
PER_LAYER = {
    "usefulness U_l (relative loss rise, affine block)": lambda a: a.usefulness.relative_increase,
    "layer removal: loss rise (nats)": lambda a: a.removal.loss_increase,
    plots.JACOBIAN_DEVIATION: lambda a: a.jacobians.deviation,
    "block output variance": lambda a: a.variance,
    "kurtosis of block outputs": lambda a: a.kurtosis.layer,
    "attention entropy (nats, mean over heads)": lambda a: None if a.attention is None else a.attention.entropy.mean(1),
}
per_layer = pd.concat([pd.DataFrame({"model": m, "layer": np.arange(1, len(a.variance) + 1),
                                     **{k: f(a) for k, f in PER_LAYER.items() if f(a) is not None}})
                       for m, a in scores.items()], ignore_index=True)
per_layer["relative depth"] = per_layer["layer"] / per_layer.groupby("model")["layer"].transform("max")
per_layer.to_csv(Path(figures_dir) / "per_layer.csv", index=False)
deepest = max(ladder_variants, key=lambda v: max((len(a.variance) for (w, _), a in ladder_scores.items() if w == v),
                                               default=0))
ladder_runs = {s: a for (v, s), a in ladder_scores.items() if v == deepest}

fig, axes = plt.subplots(2, 3, figsize=(15, 7.5))
for ax, (key, f) in zip(axes.ravel(), PER_LAYER.items()):
    for m, a in scores.items():
        values = f(a)
        if values is not None:
            L = len(values)
            ax.plot(np.arange(1, L + 1) / L, values, "o-", markersize=3, color=COLORS[m], label=f"{m} (L={L})")
    ours = [f(a) for a in ladder_runs.values()]
    if ours and ours[0] is not None:
        L = len(ours[0])
        plots.seed_band(ax, np.arange(1, L + 1) / L, pd.DataFrame(np.stack(ours, axis=1)), "0.5", marker=".",
                        label=f"ours, ladder {deepest} (L={L}, {len(ours)} seeds)")
    if key.startswith("usefulness"):
        plots.tau_line(ax, tau, color="k", linestyle=":")
    if key.startswith(("usefulness", "layer removal")):  # a replaced or removed block can lower the loss
        ax.set_yscale("symlog", linthresh=1e-3)
    elif "entropy" not in key:
        ax.set_yscale("log")
    ax.set(xlabel="relative depth l / L", title=key)
axes[0, 0].legend(fontsize=8)
plots.show(fig, figures_dir, "per_layer_scores")

# %% [markdown]
# ## Usefulness against tau
# The share of useful blocks (E / L) as the threshold tau varies; paper B's tau = 10% is the
# dotted line, where its models of 16-32 layers have E / L = 0.81-0.56.

# %%
curve = pd.DataFrame({m: [a.usefulness.at(t).score for t in taus] for m, a in scores.items()}, index=taus)
for v in ladder_variants:
    runs = [a for (w, _), a in ladder_scores.items() if w == v]
    if runs:
        curve[f"ladder {v} (L={len(runs[0].variance)})"] = [np.mean([a.usefulness.at(t).score for a in runs])
                                                             for t in taus]
curve.index.name = "tau"
display(curve.round(3))
curve.to_csv(Path(figures_dir) / "usefulness_vs_tau.csv")
fig, ax = plt.subplots(figsize=(6.5, 4))
for column in curve:
    public = column in scores
    ax.plot(curve.index, curve[column], "o-" if public else ".--", color=COLORS.get(column, None),
            alpha=1 if public else 0.6, label=column)
ax.plot([tau] * len(PAPER), PAPER["usefulness"], "k^", label="paper B, L = 12-32 (tau = 0.1)")
plots.tau_line(ax, tau, vertical=True, color="k", linestyle=":")
ax.set(xscale="log", xlabel="tau", ylabel="useful share E / L", ylim=(-0.03, 1.03))
ax.legend(fontsize=7)
plots.show(fig, figures_dir, "usefulness_vs_tau")

# %% [markdown]
# ## Causal and permutation matrices
# c(s, l), the relative change of block l's update when block s is skipped (eq. 5), and P(i, j),
# the relative loss change when blocks i and j swap (eq. 7); one column per model.

# %%
fig, axes = plt.subplots(2, len(scores), figsize=(4.6 * len(scores), 8), squeeze=False)
plots.heatmaps(fig, axes[0], [a.causal.matrix for a in scores.values()], "causal effect c(s, l)", cmap="magma")
plots.heatmaps(fig, axes[1], [a.permutation.matrix for a in scores.values()], "permutation P(i, j)", cmap="magma")
for k, (m, a) in enumerate(scores.items()):
    axes[0, k].set(title=f"{m}: C = {a.causal.global_score:.3f}", xlabel="affected block l", ylabel="skipped block s")
    axes[1, k].set(title=f"{m}: P = {a.permutation.global_score:.3f}", xlabel="block j", ylabel="block i")
plots.show(fig, figures_dir, "causal_permutation")

# %% [markdown]
# ## Attention sparsity per layer
# Share of each layer's attention weights (over heads and queries, causal entries only) below
# each threshold.

# %%
with_attention = {m: a for m, a in scores.items() if a.attention is not None}
fig, axes = plt.subplots(1, max(1, len(with_attention)), figsize=(4.6 * max(1, len(with_attention)), 3.6),
                         squeeze=False)
for ax, (m, a) in zip(axes[0], with_attention.items()):
    L = len(a.variance)
    for k, eps in enumerate(a.attention.thresholds):
        ax.plot(np.arange(1, L + 1), a.attention.sparsity[:, :, k].mean(1), "o-", markersize=3, label=f"eps = {eps:g}")
    ax.set(xlabel="layer", ylabel="attention sparsity", title=m, ylim=(0, 1))
    ax.legend(fontsize=8)
plots.show(fig, figures_dir, "attention_sparsity")

# %% [markdown]
# ## Claims, and the rule fixed before the numbers
# The package's one rule, printed from `cod/claims/verdicts.py`:

# %%
print(cod.claims.verdicts.rule())

# %% [markdown]
# Here the **models are the units** in place of seeds. Paper B never measured these public
# models, so every claim below is a reading of ours (marked "(ours)"). A trend along the layers
# is `one_sample` on each model's Spearman correlation of the per-layer value with the layer
# index, on the paper's side of 0; "some layers are wasted" is `one_sample` on each model's W,
# above 0, after `usefulness_at_floor`. The cross-model statement (deeper models waste a larger
# share of their layers) has one measurement per model, so no interval over units can be formed
# for it (`monotone` with the models as rungs and one column): it stays inconclusive, and the
# models differ in family, data and training as well as depth. Each model is measured once, on
# one set of tokens: the spread over tokens is not shown.

# %%
def spearman(values: np.ndarray) -> float:
    layers = pd.Series(np.arange(1, len(values) + 1, dtype=float))
    with warnings.catch_warnings(action="ignore"):
        return layers.corr(pd.Series(np.asarray(values, dtype=float)), method="spearman")


def over_models(values: pd.Series, why: str, higher_is_better: bool = True) -> Verdict:
    """`one_sample` with the models as the units."""
    verdict = one_sample(values, higher_is_better=higher_is_better, why=why)
    return replace(verdict, why=verdict.why.replace("seeds", "models", 1))


def along_layers(f, sign: int) -> Verdict:
    rho = pd.Series({m: spearman(f(a)) for m, a in scores.items()})
    return over_models(rho, "Spearman rho with the layer index: " + ", ".join(f"{m} {r:+.2f}" for m, r in rho.items()),
                       higher_is_better=sign > 0)


def by_depth_order(column: str) -> Verdict:
    """"`column` rises with depth across the public models": `monotone` with the models (ordered by
    depth) as rungs and their one measurement each as the only column."""
    public = table[table["source"] == "public"].sort_values("layers")
    text = "by depth: " + ", ".join(f"{r.model} (L={int(r.layers)}) {getattr(r, column):.3f}"
                                    for r in public.itertuples())
    verdict = monotone(public.set_index("model")[[column]], +1, scale="difference")
    return replace(verdict, why=f"{text}; {verdict.why}: one measurement per model, and the models differ in family, "
                                "data and training as well as depth")


table["W_frac"] = table["W"] / table["layers"]
claims = Claims("B", profile)
wasted_floor = usefulness_at_floor({m: a.usefulness.relative_increase for m, a in scores.items()}, tau)
claims.add("b9-jacobian-falls-with-layer", "Fig. 2b (public models)",
           "(ours) ||J - I||_F / d falls with the layer index in public decoders (two Pre-LN, Gemma-3 pre- and post-norm)",
           "falls from about 0.014 to 0.002 across layers (paper B's trained models)",
           along_layers(lambda a: a.jacobians.deviation, -1))
claims.add("b9-variance-grows-with-layer", "Fig. 2a (public models)",
           "(ours) The block output variance grows with the layer index in public decoders",
           "grows with depth (Fig. 2a, Fig. 9)", along_layers(lambda a: a.variance, +1))
claims.add("b9-usefulness-falls-with-layer", "eq. 9 / Fig. 2c (public models)",
           "(ours) The usefulness U_l of a block (relative loss rise under its affine fit) falls with the layer index",
           "deep layers are the wasted ones", along_layers(lambda a: a.usefulness.relative_increase, -1))
claims.add("b9-some-layers-wasted", "Table 1 (public models)",
           f"(ours) Some layers are wasted at tau = {tau:g} (W > 0) in the public decoders",
           "W = 3 / 9 / 14 at 16 / 24 / 32 layers",
           wasted_floor or over_models(pd.Series({m: float(a.usefulness.wasted) for m, a in scores.items()}),
                                       "W / L: " + ", ".join(f"{m} {a.usefulness.wasted}/{len(a.variance)}"
                                                             for m, a in scores.items())))
claims.add("b9-deeper-wastes-more", "Table 1 (across public models)",
           f"(ours) Deeper public decoders waste a larger share of their layers (W / L at tau = {tau:g})",
           " / ".join(f"{w}/{l}" for w, l in zip(PAPER["W"], PAPER["layers"])),
           wasted_floor or by_depth_order("W_frac"))
display(claims.save(figures_dir))

# %% [markdown]
# ## Reading the result
# Built from this run's numbers.

# %%
verdicts = {r["id"]: r["verdict"] for r in claims.rows}
lines = []
for m, a in scores.items():
    L = len(a.variance)
    u = a.usefulness.relative_increase
    lines.append(
        f"**{m}** (L = {L}, loss {a.removal.base_loss:.2f} nats on BBC news): C = {a.causal.global_score:.3f}, "
        f"P = {a.permutation.global_score:.3f}, E/W = {a.usefulness.effective}/{a.usefulness.wasted} at tau = {tau:g}; "
        f"U_l from {u.min():.3g} (block {int(u.argmin()) + 1}) to {u.max():.3g} (block {int(u.argmax()) + 1}); "
        f"||J - I||_F / d from {a.jacobians.deviation.max():.3g} to {a.jacobians.deviation.min():.3g}, "
        f"Spearman with the layer {spearman(a.jacobians.deviation):+.2f}; output variance "
        f"{a.variance[0]:.3g} after block 1 and {a.variance[-1]:.3g} after block {L}.")
if ladder_runs:
    a = next(iter(ladder_runs.values()))
    share = np.mean([r.usefulness.at(tau).score for r in ladder_runs.values()])
    lines.append(f"Our ladder's {deepest} (L = {len(a.variance)}): useful share {share:.2f} at tau = {tau:g}, "
                 f"mean U_l {np.mean([r.usefulness.relative_increase.mean() for r in ladder_runs.values()]):.3g}.")
lines.append("Verdicts: " + "; ".join(f"{k}: **{v}**" for k, v in verdicts.items()) + ".")
display(Markdown("\n\n".join(lines)))


# %% [markdown]
# The paragraph on the public models, from the same numbers (public_models.md, which docs/results.md shows).

# %%
def rhos(f) -> str:
    return ", ".join(f"{m} {spearman(f(a)):+.2f}" for m, a in scores.items())


public_text = " ".join([
    f"On {len(scores)} public decoders, with the models as units: ||J - I||_F / d against the layer index has Spearman",
    f"{rhos(lambda a: a.jacobians.deviation)} (falls with the layer: **{verdicts['b9-jacobian-falls-with-layer']}**),",
    f"and the block output variance {rhos(lambda a: a.variance)} (grows: **{verdicts['b9-variance-grows-with-layer']}**).",
    f"At paper B's tau = {tau:g}, effective/wasted layers E/W are",
    ", ".join(f"{a.usefulness.effective}/{a.usefulness.wasted} ({m})" for m, a in scores.items()),
    f"against paper B's {PAPER['E'].iloc[0]}/{PAPER['W'].iloc[0]} to {PAPER['E'].iloc[-1]}/{PAPER['W'].iloc[-1]} at",
    f"{PAPER['layers'].iloc[0]}-{PAPER['layers'].iloc[-1]} layers (some layers wasted: **{verdicts['b9-some-layers-wasted']}**;",
    f"deeper models waste a larger share: **{verdicts['b9-deeper-wastes-more']}**, three models of different families",
    f"cannot tell); usefulness against the layer index has Spearman {rhos(lambda a: a.usefulness.relative_increase)}",
    f"(falls: **{verdicts['b9-usefulness-falls-with-layer']}**). Causal scores",
    f"{scoreboard.span([a.causal.global_score for a in scores.values()], '{:.2f}')} and permutation scores",
    f"{scoreboard.span([a.permutation.global_score for a in scores.values()], '{:.2f}')} stand against paper B's",
    f"{scoreboard.span(PAPER['causal'], '{:.2f}')} and {scoreboard.span(PAPER['permutation'], '{:.2f}')}.",
    (f"Our ladder's {deepest} (L = {len(next(iter(ladder_runs.values())).variance)}) has a useful share of "
     f"{np.mean([r.usefulness.at(tau).score for r in ladder_runs.values()]):.2f}." if ladder_runs else ""),
    "Each stage alone on this 2-core CPU took",
    ", ".join(f"{sum(a.seconds.values()) / 60:.0f} minutes for {m}" for m, a in scores.items()),
    "(the budget was 20 minutes a model); the section below lists each measure's time.",
]).replace("  ", " ")
display(Markdown(public_text))
Path(figures_dir, "public_models.md").write_text(public_text + "\n")

# %% [markdown]
# ## What scoring costs on this CPU
# Each long measure's seconds as the `analyse_open@MODEL` stage timed it (one process, the
# threads of `open_weights.threads`), per item it loops over: a measure's cost grows with its
# items and its tokens, so a run at other settings can be priced from these.

# %%
times = pd.concat({m: scoreboard.scoring_times(a.seconds, settings[m], len(a.variance)) for m, a in scores.items()},
                  names=["model"])
times.to_csv(Path(figures_dir) / "scoring_times.csv")
display(times)
if timing_model in scores:  # scoring_times.md, which docs/measurements.md shows
    at, n_blocks = times.loc[timing_model], len(scores[timing_model].variance)
    all_pairs = n_blocks * (n_blocks - 1) // 2
    block = "\n".join([
        f"Scoring `{timing_model}` ({n_blocks} blocks) on this project's 2-core CPU machine, as the "
        f"`analyse_open@{timing_model}` stage timed it ({settings[timing_model]['threads']} threads; `b9_open_weight_scores`, "
        f"[all {len(scores)} models](figures/{profile}/b9_open_weight_scores/scoring_times.csv)):",
        "",
        scoreboard.markdown(at).strip(),
        "",
        f"All {all_pairs} permutation pairs at {settings[timing_model]['permutation_tokens']} tokens would take about "
        f"{all_pairs * at.loc['permutation', 'seconds per item'] / 60:.0f} minutes; pass `pairs=` to draw fewer.",
    ])
    Path(figures_dir, "scoring_times.md").write_text(block + "\n")

# %% [markdown]
# ## What the figures show
# Generated from the claims this notebook judged (its claims.json): no number below is typed.

# %%
from cod.claims import scoreboard

display(Markdown(scoreboard.closing_of(figures_dir)))
