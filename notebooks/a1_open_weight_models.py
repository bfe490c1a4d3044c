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
# # A1 · The curse of depth in open-weight models: Pre-LN decoder vs Post-LN encoder
#
# Paper A, section 2.1, **Fig. 2** and **Fig. 5**. The paper removes one layer at a time from
# Qwen3-8B, LLaMA2-13B, DeepSeek-7B (Pre-LN decoders, scored on MMLU) and BERT-Large (a
# Post-LN encoder, scored on SQuAD), and measures the angular distance
# d(x^l, x^{l+n}) = arccos(cos(x^l, x^{l+n})) / pi between the inputs of layers l and l + n
# (eq. 1) over 256K C4 tokens. In the Pre-LN models, removing a deep layer costs little and
# adjacent deep layers are nearly parallel (DeepSeek-7B below 0.2 after layer 18, about half
# of Qwen3-8B's layers below 0.2); BERT-Large shows the opposite. Fig. 5 shows token-averaged
# block Jacobians of LLaMA2-7B turning diagonal-dominant, close to the identity, with depth.
#
# **What stands in, and why.** No machine here reaches a model hub, so the models are the
# five that ship inside PyPI wheels (`cod.eval.pretrained`, loaded by `load_layered`):
# - Pre-LN decoders, in place of Qwen3 / LLaMA2 / DeepSeek: **SmolLM2-135M-Instruct** (LLaMA
#   architecture, 30 layers, width 576) and **Qwen2.5-Coder-0.5B-Instruct** (Qwen2, 24 layers,
#   width 896), both converted exactly into our `Transformer`; and **Gemma-3-270M** (18 layers,
#   width 640), whose blocks normalise both the input and the output of each branch ("sandwich"
#   norms; the residual stream itself is never normalised, as in Pre-LN), run as Hugging Face's
#   own modules behind `cod.metrics.adapters`. All three ship as 4-bit GGUF files and are **dequantised
#   to fp32** on load: the layer geometry of 4-bit models, not of the bf16 originals.
# - Post-LN encoders, in place of BERT-Large (24 layers): **all-MiniLM-L6-v2** (BERT, 6 layers,
#   width 384) and **all-mpnet-base-v2** (MPNet, 12 layers, width 768), both fine-tuned for
#   sentence embeddings, far shallower than BERT-Large.
#
# **Measures**, computed by the `analyse_open_weight_depth` stage (`python -m cod.runs.analysis
# open_weight_depth`: `cod.metrics.depth`, settings in `params.yaml`, `open_weight_depth:`), which
# writes them to `analyses/<profile>/open_weight_depth/`; this notebook reads them. Text: BBC
# news articles from the offline corpus (`data/raw/bbc.jsonl`, the most web-like source, never
# trained on by our models) in place of C4, cut into windows of `seq_len` tokens, in `groups`
# disjoint groups of windows. Layer-removal drop (`cod.metrics.pruning`): for the decoder the
# rise in next-token loss (nats) on these tokens, plus zero-shot
# ARC-Easy accuracy (`cod.eval`, lm-evaluation-harness scoring) for a few removed layers on a
# small item subset, in place of MMLU, on which a 135M model sits near chance; for the
# encoder, which has no SQuAD or masked-LM head, the **representation drop** 1 - cos between
# the mean-pooled sentence embedding with the layer removed and without (`cod.metrics.adapters.
# HFEncoder`). Angular distance: `cod.metrics.angular` on the residual stream entering each
# block. Jacobians: `cod.metrics.jacobian`, the per-token Jacobian d y_t / d x_t of a block at
# one sampled token per sequence; closeness to the identity is ||J_t - I||_F / d per token,
# beside the share of the squared Frobenius norm on the diagonal, diag(J)^2 / |J|^2.
#
# Appendix C, Fig. 10 (the vision and language branches of Qwen2.5-VL-7B) is not reproduced:
# no vision-language model ships offline. Paper B's scores on the same decoders are in
# `b9_open_weight_scores`.

# %% tags=["parameters"]
profile = "default"  # smoke | default | headline | paper: which analyses to read (params.yaml's open_weight_depth: their sizes)
analyses_root = "analyses"  # <analyses_root>/<profile>/open_weight_depth/, the analyse_open_weight_depth stage's
figures_dir = None  # default: figures/<profile>/a1_open_weight_models

# %%
from cod import kernel

figures_dir = kernel.start("a1_open_weight_models", profile, figures_dir)  # unset: a folder of its own

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

import cod.claims.verdicts
from cod import plots
from cod.records.analyses import OPEN_DEPTH, load_open_depth, stored_settings
from cod.metrics.angular import by_offset
from cod.metrics.depth import shown_blocks
from cod.claims.verdicts import INCONCLUSIVE, Claims, Verdict

analysis = Path(analyses_root) / profile / OPEN_DEPTH
settings = stored_settings(analysis)
loaded = load_open_depth(analysis)  # {model: cod.records.analyses.OpenModelDepth}, in the stage's order
models = list(loaded)
print(f"profile={profile}: {settings['text_tokens']} tokens in {settings['groups']} groups of windows of "
      f"{settings['seq_len']}; ARC-Easy limit {settings['arc_limit']}; Jacobians of {settings['jacobian_blocks']} "
      f"blocks on {settings['jacobian_sequences']} tokens ({analysis}, measured on {settings['device']})")

# %% [markdown]
# ## The models and their windows
# A decoder reads a stream of articles, each after its document separator (end-of-text, or BOS
# where there is none), cut into consecutive windows; Gemma-3, which expects BOS at the start of
# every input, gets it at the start of every window (`cod.runs.analysis.open_weight_windows`, shared with
# `b9`). An encoder reads `[CLS] ... [SEP]` windows of the same text (`cod.runs.analysis.encoder_windows`).
# Times are the stage's, on the machine that measured.

# %%
for name, m in loaded.items():
    print(f"{name}: {m.kind} ({m.architecture}), {m.layers} blocks, {m.parameters / 1e6:.0f}M parameters, "
          f"{m.tokens} tokens, loaded in {m.load_seconds:.0f} s")

# %% [markdown]
# ## Fig. 2 (top): the cost of removing one layer
# Each group of windows gives one estimate per layer; lines are the mean over groups, bands
# their min..max. Each model keeps its colour in both figures of Fig. 2; encoders are dashed.
# On the first decoder, black squares: its ARC-Easy accuracy drop (right axis).

# %%
removal = {name: m.measures.removal for name, m in loaded.items()}  # a cod.metrics.pruning.LayerRemoval per group
for name, m in loaded.items():
    print(f"{name}: removal and distances in {m.measures.seconds['removal']:.0f} s; intact loss per group "
          f"{[round(r.base_loss, 4) for r in removal[name]]}")

# %%
arc = None
decoders = [n for n in loaded if loaded[n].kind == "decoder"]
arc_limit = settings["arc_limit"]
if decoders and loaded[decoders[0]].zero_shot is not None:
    name = decoders[0]
    full = loaded[name].zero_shot[0]  # removed: none; then each block of the stage's arc_layers
    arc = pd.DataFrame(loaded[name].zero_shot)
    arc["drop_acc"] = full["acc"] - arc["acc"]
    arc["drop_acc_norm"] = full["acc_norm"] - arc["acc_norm"]
    print(f"ARC-Easy on {name} in {loaded[name].measures.seconds['zero_shot']:.0f} s")
    display(arc)

# %%
MEASURE = {"decoder": "next-token loss increase (nats)", "encoder": "1 - cos(sentence embedding)"}
COLORS = dict(zip(models, plt.cm.tab10.colors))  # one colour per model, the same in every panel of Fig. 2
LINESTYLES = {"decoder": "-", "encoder": "--"}
fig, axes = plt.subplots(1, len(loaded), figsize=(4.8 * len(loaded), 3.8))
for ax, (name, m) in zip(np.atleast_1d(axes), loaded.items()):
    table = pd.DataFrame(np.stack([r.loss_increase for r in removal[name]], axis=1))
    layers = np.arange(1, m.layers + 1)
    plots.seed_band(ax, layers, table, COLORS[name], linestyle=LINESTYLES[m.kind], marker="o", markersize=3)
    ax.set_yscale("log")
    ax.set_xlabel("removed layer")
    ax.set_ylabel(MEASURE[m.kind])
    ax.set_title(f"{name}\n({m.label})")
    if arc is not None and name == decoders[0]:
        twin = ax.twinx()
        kept = arc[arc["removed"] != "none"]
        twin.plot(kept["removed"].astype(int) + 1, kept["drop_acc"] * 100, "s", color="k", label="ARC-E acc drop")
        twin.set_ylabel("ARC-Easy accuracy drop (points)", color="k")
        twin.set_ylim(min(0, twin.get_ylim()[0]), None)
        twin.legend(loc="upper right")
plots.show(fig, figures_dir, "fig2_layer_removal")

# %% [markdown]
# ## Fig. 2 (bottom): angular distance between the inputs of layers l and l + n
# Left: each column a starting layer l, each row an offset n (paper A's layout), mean over
# all groups, every model on one colour scale. Right: adjacent layers (n = 1) against relative
# depth, for every model (mean over groups, min..max band).

# %%
fig = plt.figure(figsize=(4 * (len(loaded) + 1.5), 4))
left, right = fig.subfigures(1, 2, width_ratios=[len(loaded), 1.5])
grid_axes = left.subplots(1, len(loaded))
grids = [by_offset(m.measures.angular) for m in loaded.values()]  # angular: the mean over groups
plots.heatmaps(left, grid_axes, grids, "angular distance $d(x^l, x^{l+n})$", cmap="viridis_r", origin="lower",
               aspect="auto")
for ax, (name, m) in zip(np.atleast_1d(grid_axes), loaded.items()):
    ticks = list(range(1, m.layers + 1)) if m.layers <= 12 else [1, *range(5, m.layers + 1, 5)]
    ax.set_xticks([t - 1 for t in ticks], ticks)
    ax.set_yticks([t - 1 for t in ticks], ticks)
    ax.set(xlabel="layer $l$", ylabel="offset $n$", title=name)
adjacent = {name: m.measures.adjacent for name, m in loaded.items()}  # (L, groups)
ax = right.subplots()
for name, table in adjacent.items():
    depth = np.arange(1, len(table) + 1) / len(table)
    plots.seed_band(ax, depth, pd.DataFrame(table), COLORS[name], label=f"{name} ({loaded[name].label})",
                    linestyle=LINESTYLES[loaded[name].kind], marker="o", markersize=3)
ax.axhline(0.2, color="grey", linestyle=":", linewidth=1, label="0.2 (paper's mark)")
ax.set(xlabel="relative depth $l / L$", ylabel="$d(x^l, x^{l+1})$", title="adjacent layers")
ax.legend()
plots.show(fig, figures_dir, "fig2_angular_distance")

# %% [markdown]
# ### Why the decoder's distances are small at every depth
# Share of each token's squared norm in the three dimensions with the largest mean square
# (picked at the input of the block a third of the way in), and the adjacent distance with
# those three dimensions left out, on the first two windows.

# %%
top3 = {}
for name in decoders:
    dominant = loaded[name].measures.dominant  # cod.metrics.depth.DominantDimensions
    table = pd.DataFrame({
        "share of |x|^2 in top-3 dims": dominant.share,
        "adjacent distance": dominant.adjacent,
        "without the top-3 dims": dominant.without,
    }, index=pd.Index(range(1, loaded[name].layers + 1), name="layer"))
    top3[name] = table
    print(f"{name}: top-3 dimensions {dominant.dims}")
    display(table.round(3).T)

# %% [markdown]
# ## Fig. 5: block Jacobians across depth
# Per-token Jacobians d y_t / d x_t of `jacobian_blocks` evenly spaced blocks (the first and
# the last among them) at `jacobian_sequences` sampled tokens (one random position in each
# sequence of `jacobian_seq_len` tokens). The heatmaps show the top-left 48 x 48 corner of the
# token-averaged Jacobian minus the identity, J - I, of a shallow, a middle and a deep block
# (the full matrices are d x d, d the model's width): the first blocks of every model on one
# colour scale, the middle and deep blocks on another (each with its colour bar; a block at the
# identity is white). The right-hand panels show ||J_t - I||_F / d per block
# (mean over tokens, min..max band) and the diagonal share.

# %%
jacobians = {name: m.measures.jacobians for name, m in loaded.items()}  # cod.metrics.depth.SampledJacobians
for name, j in jacobians.items():
    print(f"{name}: Jacobians of blocks {[blk + 1 for blk in j.blocks]} in "
          f"{loaded[name].measures.seconds['jacobians']:.0f} s")
STATISTICS = ["diag_share_mean_J", "diag_share_per_token", "deviation_from_I", "deviation_per_token", "mean_abs_diag",
              "mean_abs_offdiag"]
jac_rows = [{"model": name, "layer": blk + 1, "depth": (blk + 1) / loaded[name].layers,
             **{key: getattr(j, key)[k] for key in STATISTICS}}
            for name, j in jacobians.items() for k, blk in enumerate(j.blocks)]
jac_table = pd.DataFrame(jac_rows)
display(jac_table.round(4))

# %%
fig = plt.figure(figsize=(19, 4 * len(jacobians)))
first_fig, later_fig, right = fig.subfigures(1, 3, width_ratios=[1.25, 2.3, 1.5])
panels = {"first": [], "later": []}
for name, j in jacobians.items():
    for k, blk in enumerate(shown_blocks(j.blocks)):  # the first, middle and last of the blocks measured
        panels["first" if k == 0 else "later"].append((j.corner_of(blk), f"{name}: block {blk + 1}"))
# the first blocks on one scale, the middle and deep blocks of every model on another
for sub, key, n_cols in ((first_fig, "first", 1), (later_fig, "later", 2)):
    axes = sub.subplots(len(jacobians), n_cols, squeeze=False)
    plots.heatmaps(sub, axes, [c for c, _ in panels[key]], "$J - I$ (token mean, top-left 48 × 48)", cmap="RdBu_r",
                   symmetric=True)
    for ax, (_, title) in zip(axes.ravel(), panels[key]):
        ax.set_title(title)
        ax.set_xticks([]), ax.set_yticks([])
line_axes = right.subplots(len(jacobians), 1, squeeze=False)[:, 0]
for ax, (name, j) in zip(line_axes, jacobians.items()):
    table = pd.DataFrame(j.deviation)  # (blocks, tokens)
    plots.seed_band(ax, np.array(j.blocks) + 1, table, "C2", marker="^", markersize=3,
                    label=plots.JACOBIAN_DEVIATION + f" ({table.shape[1]} tokens)")
    ax.set(yscale="log", xlabel="layer", ylabel=plots.JACOBIAN_DEVIATION, title=name)
    twin = ax.twinx()
    sub = jac_table[jac_table["model"] == name]
    twin.plot(sub["layer"], sub["diag_share_per_token"], "s--", color="C1", markersize=3,
              label="diagonal share of $|J|^2$")
    twin.set_ylim(0, 1)
    twin.set_ylabel("diagonal share of $|J|^2$", color="C1")
    twin.spines["right"].set_visible(True)
    lines = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    ax.legend(lines, [h.get_label() for h in lines], loc="upper center")
plots.show(fig, figures_dir, "fig5_jacobians")

# %% [markdown]
# ## How the verdicts are decided
#
# The package's one rule (`cod/claims/verdicts.py`), printed below, decides a claim by an interval over
# **seeds**. A model here has no seeds: the groups of windows (and the sampled tokens of the
# Jacobians) are repeated measurements of one set of weights, so their spread is text-sampling
# noise, not the variation between independently trained models that the rule's interval is
# about. Each claim below is therefore about one model and is stated as a measurement with the
# verdict **inconclusive** ("one model: no seed replication"); a judgement across models (each
# model one unit) would have two Pre-LN decoders and a sandwich-norm one, or two encoders, too few
# and too unlike for an interval.
#
# The measurement, per group (token), is the **median over the layers of the first half**
# against the **median over the second half** of the blocks. Halves rather than thirds:
# MiniLM has six layers, so a third is two layers, and the median of two is their mean; with
# halves each side has three layers, and the median lets no single layer decide (the first
# and the last block are outliers in SmolLM2 and MiniLM, and an older shallow-third statistic
# of SmolLM2's Jacobians rested on block 1 alone). The paper's models are 15-100 times larger
# and its encoder two to four times deeper; magnitudes are not compared, only directions.

# %%
print(cod.claims.verdicts.rule())

# %%
def halves(values: np.ndarray, layers: np.ndarray, n_layers: int) -> tuple[pd.Series, pd.Series]:
    """Median over the first and over the second half of the blocks, per column (group or token);
    row k of `values` is layer layers[k] (1-based)."""
    first, second = values[layers <= n_layers / 2], values[layers > n_layers / 2]
    return pd.Series(np.median(first, axis=0)), pd.Series(np.median(second, axis=0))


measures, rows = {}, []
for name, m in loaded.items():
    L = m.layers
    layers = np.arange(1, L + 1)
    jac_layers = np.array(jacobians[name].blocks) + 1
    values = {
        "removal drop": (np.stack([r.loss_increase for r in removal[name]], axis=1), layers),  # (L, groups)
        "adjacent distance": (adjacent[name], layers),  # (L, groups)
        "Jacobian deviation": (jacobians[name].deviation, jac_layers),  # (blocks, tokens)
    }
    measures[name] = {key: halves(v, at, L) for key, (v, at) in values.items()}
    for key, (first, second) in measures[name].items():
        v, at = values[key]
        rows.append({"model": name, "measure": key, "units": len(first),
                     "first half, median": first.mean(), "second half, median": second.mean(),
                     "first half, mean": v[at <= L / 2].mean(), "second half, mean": v[at > L / 2].mean(),
                     "second lower in": f"{int((second < first).sum())}/{len(first)}"})
halves_table = pd.DataFrame(rows)
display(halves_table.round(4))
per_layer = {name: pd.DataFrame({"removal drop": np.mean([r.loss_increase for r in removal[name]], axis=0),
                                 "adjacent distance": adjacent[name].mean(1)},
                                index=pd.Index(np.arange(1, m.layers + 1), name="layer"))
             for name, m in loaded.items()}
spearman = {}
for name, table in per_layer.items():
    spearman[name] = table["adjacent distance"].corr(table.index.to_series(), method="spearman")
    print(f"{name}: intact loss {np.mean([r.base_loss for r in removal[name]]):.4f}; "
          f"share of layers with adjacent distance < 0.2: {(table['adjacent distance'] < 0.2).mean():.2f}; "
          f"Spearman(adjacent distance, layer) {spearman[name]:.2f}")
    display(table.round(4).T)

# %%
UNITS = {"removal drop": "group", "adjacent distance": "group", "Jacobian deviation": "token"}


def judged(stats: dict, key: str, second_higher: bool, extra: str = "") -> Verdict:
    """One model's measurement, no verdict: the second half's medians against the first half's,
    per group (token); the groups are not seeds."""
    first, second = stats[key]
    side = (second > first) if second_higher else (second < first)
    why = (f"one model: no seed replication; {key}, median over the second half vs the first half: "
           f"{second.mean():.4g} vs {first.mean():.4g} (difference {second.mean() - first.mean():+.4g}), "
           f"second {'higher' if second_higher else 'lower'} in {int(side.sum())}/{len(first)} {UNITS[key]}s "
           f"of this model{extra}")
    return Verdict(INCONCLUSIVE, why, float(second.mean()), None, 1)


ledger = Claims("A", profile)
for name, m in loaded.items():
    g = measures[name]
    if m.kind == "decoder":
        ours = "(ours) " if m.label == "sandwich-norm decoder" else ""  # Gemma-3: sandwich norms, not Pre-LN
        arc_text = "" if arc is None or name != decoders[0] else f"; ARC-Easy acc drop (n={arc_limit}) " + ", ".join(
            f"layer {int(r.removed) + 1}: {100 * r.drop_acc:+.0f} pts"
            for r in arc[arc["removed"] != "none"].itertuples())
        ledger.add(f"a1-preln-removal:{name}", "Fig. 2 top / section 2.1",
                   f"{ours}{m.label} ({name}): removing a deep layer costs less than removing an early one",
                   "Qwen3-8B, LLaMA2-13B, DeepSeek-7B: layers past ~18 removable at minimal MMLU cost",
                   judged(g, "removal drop", False, arc_text))
        ledger.add(f"a1-preln-angular:{name}", "Fig. 2 bottom / section 2.1",
                   f"{ours}{m.label} ({name}): adjacent-layer angular distance falls with depth",
                   "DeepSeek-7B < 0.2 after layer 18; ~half of Qwen3-8B's layers < 0.2",
                   judged(g, "adjacent distance", False,
                          f"; layers below 0.2: {(per_layer[name]['adjacent distance'] < 0.2).mean():.2f}"))
        ledger.add(f"a1-preln-jacobian:{name}", "Fig. 5 / section 3",
                   f"{ours}{m.label} ({name}): deep blocks' Jacobians are closer to the identity than "
                   "shallow blocks'",
                   "LLaMA2-7B: deep blocks' Jacobians diagonal, near identity",
                   judged(g, "Jacobian deviation", False))
    else:
        ledger.add(f"a1-postln-removal:{name}", "Fig. 2 top / section 2.1",
                   f"Post-LN ({name}): removing a deep layer costs more than removing an early one",
                   "BERT-Large: pruning deep layers drops SQuAD a lot, early layers little",
                   judged(g, "removal drop", True))
        ledger.add(f"a1-postln-angular:{name}", "Fig. 2 bottom / section 2.1",
                   f"Post-LN ({name}): adjacent-layer angular distance rises with depth",
                   "BERT-Large: deep layers distinct from their neighbours",
                   judged(g, "adjacent distance", True))
        ledger.add(f"a1-postln-jacobian:{name}", "Fig. 5 (contrast)",
                   f"(ours) Post-LN ({name}): deep blocks' Jacobians are farther from the identity than "
                   "shallow blocks'",
                   "not shown in the paper (Fig. 5 is Pre-LN only); implied by the opposite pattern",
                   judged(g, "Jacobian deviation", True))
halves_table.to_csv(Path(figures_dir) / "halves.csv", index=False)
pd.concat(per_layer, names=["model"]).to_csv(Path(figures_dir) / "per_layer.csv")
jac_table.to_csv(Path(figures_dir) / "jacobians.csv", index=False)
if arc is not None:
    arc.to_csv(Path(figures_dir) / "arc_easy_removal.csv", index=False)
display(ledger.save(figures_dir))

# %% [markdown]
# ## Reading the result
# The paragraphs are built from this run's numbers.

# %%
text = []


def half_text(name: str, key: str) -> str:
    first, second = measures[name][key]
    return (f"first-half median {first.mean():.3g} vs second half {second.mean():.3g}, second lower in "
            f"{int((second < first).sum())}/{len(first)} {UNITS[key]}s")


for name, m in loaded.items():
    L, removal_l, adj = m.layers, per_layer[name]["removal drop"], per_layer[name]["adjacent distance"]
    jt = jac_table[jac_table["model"] == name].set_index("layer")
    inner = jt.loc[(jt.index > 1) & (jt.index < L)]
    if m.kind == "decoder":
        middle = removal_l.loc[4:L - 2]
        arc_text = ""
        if arc is not None and name == decoders[0]:
            full = arc[arc["removed"] == "none"].iloc[0]
            kept = arc[arc["removed"] != "none"]
            arc_text = (f" ARC-Easy ({arc_limit} items) falls from {100 * full['acc']:.0f}% to "
                        + ", ".join(f"{100 * r.acc:.0f}% without block {int(r.removed) + 1}"
                                    for r in kept.itertuples()) + ".")
        share = top3[name]["share of |x|^2 in top-3 dims"] if name in top3 else None
        text.append(
            f"**{m.label[0].upper() + m.label[1:]} ({name}).** Removing one of the first three blocks costs "
            f"{', '.join(f'+{x:.1f}' for x in removal_l.iloc[:3])} nats of next-token loss, while the blocks from 4 "
            f"to {L - 2} cost {middle.median():.2f} nats in the median (range {middle.min():.2f}-{middle.max():.2f}, "
            f"the largest at block {middle.idxmax()}), and the last two +{removal_l.iloc[-2]:.1f} and "
            f"+{removal_l.iloc[-1]:.1f}.{arc_text} Over halves (nats): {half_text(name, 'removal drop')}. "
            f"Adjacent-layer angular distance is {adj.iloc[0]:.2f} and "
            f"{adj.iloc[1]:.2f} after the first two blocks, then {adj.iloc[2:].min():.2f}-{adj.iloc[2:].max():.2f}; "
            f"{100 * (adj < 0.2).mean():.0f}% of the layers are below the paper's 0.2 (Qwen3-8B: about half), "
            f"Spearman correlation with depth {spearman[name]:+.2f}; {half_text(name, 'adjacent distance')}."
            + ("" if share is None else
               f" Between the inputs of blocks 3 and {L - 5}, "
               f"{share.loc[3:L - 5].min():.0%}-{share.loc[3:L - 5].max():.0%} of each token's squared norm sits in "
               f"three of {m.measures.width} dimensions ({share.iloc[-1]:.2f} at the "
               "last block)."))
        text.append(
            "Per-token Jacobians: block 1 is far from the identity (||J - I||_F / d "
            f"{jt.loc[1, 'deviation_per_token']:.2f}, diagonal share {jt.loc[1, 'diag_share_per_token']:.2f}); blocks "
            f"2 to {L - 1} lie at {inner['deviation_per_token'].min():.3f}-{inner['deviation_per_token'].max():.3f} "
            f"(diagonal share {inner['diag_share_per_token'].min():.2f}-{inner['diag_share_per_token'].max():.2f}), "
            f"and block {L} at {jt.loc[L, 'deviation_per_token']:.3f}. Over halves: "
            f"{half_text(name, 'Jacobian deviation')}.")
    else:
        text.append(
            f"**{m.label[0].upper() + m.label[1:]} ({name}).** Removing block {removal_l.idxmax()} moves the "
            f"sentence embedding most (1 - cos = {removal_l.max():.2f}), against "
            f"{removal_l.min():.2f}-{removal_l.drop(removal_l.idxmax()).max():.2f} for the others (block 1: "
            f"{removal_l.iloc[0]:.2f}); {half_text(name, 'removal drop')}. "
            f"Adjacent-layer distance goes from {adj.iloc[0]:.2f} to {adj.iloc[-1]:.2f} (Spearman "
            f"{spearman[name]:+.2f}); {half_text(name, 'adjacent distance')}. "
            "Its per-token Jacobians lie at ||J - I||_F / d "
            f"{jt['deviation_per_token'].min():.3f}-{jt['deviation_per_token'].max():.3f} in every block (diagonal "
            f"share {jt['diag_share_per_token'].min():.2f}-{jt['diag_share_per_token'].max():.2f}); "
            f"{half_text(name, 'Jacobian deviation')}.")
display(Markdown("\n\n".join(text)))

# %% [markdown]
# **Interpretation.** Over five models, the contrast the paper draws holds in kind but not in
# every model. The Post-LN MiniLM relies most on its last layers (removal cost and adjacent-layer
# distance both rise with depth); MPNet's last block moves its embedding most, but over halves
# neither measure changes with depth. Among the decoders, Gemma-3's removal cost and adjacent-
# layer distance both fall with depth and Qwen2.5-Coder's distance does, the paper's pattern,
# while SmolLM2 shows neither: its first and last blocks matter and its middle blocks are cheap
# to remove at any depth. In every decoder the first block is far from the identity and the
# others much closer, but over halves the deep blocks are not measurably closer than the shallow
# ones on four tokens per block; Gemma-3's blocks, whose branch outputs are normalised again
# before they join the stream, stay an order of magnitude farther from the identity than the
# Pre-LN decoders' blocks. The decoders' small angular distances come with a few massive
# dimensions that carry a large share of each token's squared norm through the middle blocks.
# Caveats: each model is one trained network, so no claim has a verdict (all inconclusive);
# 4-bit weights; instruction-tuned SmolLM2 and Qwen2.5 beside a base Gemma-3; encoders
# of 6 and 12 layers, not 24, measured on their sentence embedding (which favours the last block,
# whose output it is) rather than on a task; ARC-Easy on one decoder and 50 items. Whether the
# monotone decline appears at 7-13B, as in the paper, cannot be checked offline. Paper B's
# scores of the same decoders: `b9_open_weight_scores`.

# %% [markdown]
# ## What the figures show
# Generated from the claims this notebook judged (its claims.json): no number below is typed.

# %%
from cod.claims import scoreboard

display(Markdown(scoreboard.closing_of(figures_dir)))
