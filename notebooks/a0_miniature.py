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
# # A0 · Choosing the default miniature
#
# Not a paper item: the pilot that fixed the `default` profile's shapes, token budgets, batch
# and schedule **before any claim was judged on them**. Fidelity at our scale is bounded by
# tokens, so the miniature is chosen by tokens per non-embedding parameter, the quantity that
# says how far along training a run is, and by what the whole profile costs on a 2-core CPU.
#
# **The criterion, written before the pilot ran:**
# 1. *Budget.* The complete default profile, every run that the 19 notebooks will need (the
#    runs of today's experiments and the `planned:` runs of later issues, shared wherever one
#    model serves several notebooks), costs at most 4 hours on the 2-core machine, estimated
#    from measured throughput (`python -m cod.pipeline.experiments plan`).
# 2. *Tokens.* Paper A's runs see at least 10 tokens per non-embedding parameter (paper A: 10
#    at 1B to 26 at 130M); paper B's depth ladder sees 4 (deepest) to 11 (shallowest) at equal
#    tokens, as paper B's 10B tokens do for its 2.3B and 0.9B models.
# 3. *Depth.* Paper A's depths are kept (12 layers for 130M, 24 for 250M and 350M, widths in the
#    paper's ratios); paper B's ladder 12/16/24/32 is halved to 6/8/12/16 (ratios kept).
# 4. *Among shapes meeting 1-3,* the lowest validation loss at equal compute (a compute-optimal
#    choice, blind to every claim). Recipe fixed to paper A's: peak lr 1e-3, 10% warmup, cosine
#    to 10%, AdamW without decay (paper B's runs add its weight decay 0.1).
#
# **The pilot.** Four widths of paper A's 12-layer model (16, 24, 32, 48; 4 heads), each trained
# for the same compute (about 90 core-seconds, the per-run budget that criterion 1 leaves a
# 12-layer run) at 2,048 tokens a step and sequence 64, two seeds each. Throughput at these
# widths is bound by per-token overhead, not by matrix products, so a narrower model buys
# tokens: equal compute gives the narrow models more steps. Sequence 64 (paper A: 256) because
# attention at 128 costs ~40% of a step at these widths and no claim of paper A concerns length.

# %% tags=["parameters"]
profile = "default"  # smoke | default | headline | paper: which pilot runs to read
experiment = "a0_miniature"  # runs/<profile>/<experiment>/<variant>_s<seed>/
runs_root = "runs"
figures_dir = None  # default: figures/<profile>/a0_miniature
budget_hours = 4.0  # criterion 1: the complete profile on 2 cores
min_tokens_per_param = 10.0  # criterion 2, paper A
chosen_size = "a130m"  # the size the default profile uses for paper A's 130M, checked against the pilot

# %%
from cod import kernel

figures_dir = kernel.start("a0_miniature", profile, figures_dir)  # unset: a folder of its own

# %%
import io
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from IPython.display import Markdown, display

from cod import plots
from cod.config import ImageSet, run_config
from cod.runs import curves
from cod.runs.params import all_runs, load_params, resolve_runs
from cod.runs.plan import plan
from cod.model import Transformer
from cod.records.results import load_final, load_history, save_claims, spread

params = load_params()
params["profile"] = profile
runs_dir = Path(runs_root) / profile
final = load_final(experiment, runs_dir)
history = load_history(experiment, runs_dir)
final["tokens_per_param"] = final["tokens"] / final["params_non_embedding"]
# A shape's throughput is its least disturbed measurement (the fastest seed): speeds are measured
# with two runs side by side, and any other load on the machine only slows a run down.
speed = final.groupby("variant")["tokens_per_s"].max()
final["core_s"] = final["tokens"] / final["variant"].map(speed)
widths = {run.variant: run.config.model.d_model for run in resolve_runs(experiment, params)}
final["width"] = final["variant"].map(widths)
display(final[["variant", "seed", "width", "steps", "tokens", "params_non_embedding", "tokens_per_param",
               "tokens_per_s", "core_s", "val_loss", "val_bbc_loss"]].round(3))

# %% [markdown]
# ## Loss against tokens and against compute
# Left: training loss against tokens seen. Right: the same against single-core seconds of
# training (each run's tokens over its measured throughput), the axis on which the candidates
# were given equal budgets. Mean over seeds, band min..max.

# %%
variants = sorted(widths, key=widths.get)
colors = dict(zip(variants, plt.cm.viridis([0.0, 0.3, 0.6, 0.85])))
fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
for v in variants:
    h = history[history["variant"] == v]
    curve = h.pivot_table(index="tokens", columns="seed", values="loss")
    label = f"width {widths[v]}"
    plots.seed_band(axes[0], curve.index / 1e6, curve, colors[v], label)
    plots.seed_band(axes[1], curve.index / speed[v], curve, colors[v], label)
axes[0].set_xlabel("tokens (millions)")
axes[1].set_xlabel("single-core seconds of training")
for ax in axes[:2]:
    ax.set_ylabel("training loss (nats)")
    ax.set_ylim(top=7.0)
axes[0].legend()
by_variant = final.groupby("variant")
axes[2].bar([f"w{widths[v]}" for v in variants], [speed[v] for v in variants], color=[colors[v] for v in variants])
axes[2].set_ylabel("training tokens/s, one core")
axes[2].set_title("throughput (fastest seed; two runs side by side)")
fig.suptitle(f"Pilot: paper A's 12-layer model at four widths, equal compute ({profile} profile)")
plots.show(fig, figures_dir, "pilot_loss_vs_tokens_and_compute")

# %% [markdown]
# ## The candidates at equal compute

# %%
pilot = pd.DataFrame([{
    "variant": v, "width": widths[v],
    "non-embedding params": int(by_variant.get_group(v)["params_non_embedding"].iloc[0]),
    "tokens": int(by_variant.get_group(v)["tokens"].iloc[0]),
    "tokens/param": by_variant.get_group(v)["tokens_per_param"].mean(),
    "tokens/s": speed[v],
    "core-s": by_variant.get_group(v)["core_s"].mean(),
    "val loss": by_variant.get_group(v)["val_loss"].mean(),
    "val loss (seeds)": spread(by_variant.get_group(v)["val_loss"]),
} for v in variants]).set_index("variant")
pilot.to_csv(Path(figures_dir) / "pilot.csv")
display(pilot.round(3))

# %% [markdown]
# ## Criterion 1: what the complete profile costs
# The plan of every run of the profile, from `python -m cod.pipeline.experiments plan`: runs of today's
# experiments and the planned runs of later issues, costed at their shapes' throughput
# (measured by finished runs, else timed now on this machine).

# %%
printed = io.StringIO()
hours = plan(params, out=printed)
print(printed.getvalue())
Path(figures_dir, "plan.txt").write_text(printed.getvalue())

# %% [markdown]
# ## Criterion 2: tokens per parameter, ours against the papers'
# The papers' non-embedding parameter counts are those of the `paper` profile's shapes (built
# on the meta device), their tokens the papers' budgets; ours those of this profile. Epochs:
# tokens over the 10M-token offline training split (the papers never repeat data).

# %%
def tokens_and_params(profile_name: str, size: str) -> tuple[int, int]:
    spec = params["profiles"][profile_name]
    cfg = run_config({**spec["base"], **spec["sizes"][size]})
    with torch.device("meta"):
        n = Transformer(cfg.model).num_params(embeddings=False)
    return cfg.train.steps * cfg.data.batch_size * cfg.data.seq_len, n


TRAIN_SPLIT = 10.0e6
rows = []
for size in ["a130m", "a250m", "a350m", "b_d12", "b_d16", "b_d24", "b_d32"]:
    row = {"size": size}
    for name in (profile, "paper"):
        if size in params["profiles"][name]["sizes"]:
            tokens, n = tokens_and_params(name, size)
            row.update({f"{name} params": n, f"{name} tokens": tokens, f"{name} tokens/param": tokens / n})
    row["epochs of the offline split"] = row[f"{profile} tokens"] / TRAIN_SPLIT
    rows.append(row)
ratios = pd.DataFrame(rows).set_index("size")
ratios.to_csv(Path(figures_dir) / "tokens_per_parameter.csv")
display(ratios.round(2))

# %% [markdown]
# ## The choice

# %%
per_run_budget = pilot["core-s"].mean()
qualifies = pilot[pilot["tokens/param"] >= min_tokens_per_param]
best = qualifies["val loss"].idxmin() if len(qualifies) else None
chosen_width = params["profiles"][profile]["sizes"][chosen_size]["model.d_model"]
consistent = best is not None and widths[best] == chosen_width
verdict_text = (
    f"At equal compute (~{per_run_budget:.0f} core-seconds a run), "
    + (f"width{'s' if len(qualifies) > 1 else ''} {' and '.join(str(widths[v]) for v in qualifies.index)}"
       if len(qualifies) else "no width") + " reach "
    f"{min_tokens_per_param:g} tokens per parameter; among them width "
    f"{widths[best] if best else '-'} has the lowest validation loss. The complete profile is estimated at "
    f"{hours['all']:.2f} h on {params['profiles'][profile].get('jobs', 1)} cores (budget {budget_hours:g} h). "
    f"The profile's `{chosen_size}` uses width {chosen_width}: "
    + ("consistent with the pilot." if consistent else "**not** the pilot's choice: see below.")
)
display(Markdown(verdict_text))
lowest = pilot["val loss"].idxmin()
if best is not None and lowest != best:
    display(Markdown(
        f"The lowest loss at equal compute overall is width {widths[lowest]} "
        f"({pilot.loc[lowest, 'val loss']:.3f} nats against {pilot.loc[best, 'val loss']:.3f}) at "
        f"{pilot.loc[lowest, 'tokens/param']:.1f} tokens per parameter: the price of criterion 2 in loss."))
save_claims(figures_dir, [])  # a0 judges no paper claim: it fixes the scale the others are judged at


# %% [markdown]
# ## The pilot in words (pilot.md, which docs/measurements.md shows, with the closing numbers below)

# %%
def shape_text(size: str) -> str:
    cfg = run_config({**params["profiles"][profile]["base"], **params["profiles"][profile]["sizes"][size]})
    return (f"{cfg.model.n_layers} layers, width {cfg.model.d_model}, {cfg.model.n_heads} heads, SwiGLU {cfg.model.ffn_width}, "
            f"sequence {cfg.data.seq_len}; {cfg.train.steps} steps of {cfg.data.batch_size} x {cfg.data.seq_len}")


pilot_rows = [f"| {'**' if v == best else ''}{widths[v]}{'**' if v == best else ''} "
              f"| {row['non-embedding params'] / 1e3:.0f}K | {row['tokens'] / 1e6:.2f}M | {row['tokens/param']:.1f} "
              f"| {row['tokens/s'] / 1e3:.1f}K | {row['val loss']:.2f} |" for v, row in pilot.iterrows()]
profile_rows = [f"| `{size}` | {shape_text(size)} | {row[f'{profile} tokens'] / 1e6:.2f}M "
                f"| {row[f'{profile} tokens/param']:.1f} | {row['paper tokens/param']:.1f} "
                f"| {row['epochs of the offline split']:.2f} |" for size, row in ratios.iterrows()]
seeds = final.groupby("variant")["seed"].nunique().min()
pilot_block = "\n".join([
    f"The pilot trained paper A's 12-layer model at {len(pilot)} widths for the same compute (about "
    f"{per_run_budget:.0f} core-seconds each, {seeds} seeds; `a0_miniature`, generated from its runs). Its "
    f"throughput was {pilot['tokens/s'].min() / 1e3:.1f}K-{pilot['tokens/s'].max() / 1e3:.1f}K tokens/s on one "
    "core (two runs side by side); the width chosen is bold:",
    "",
    "![Pilot: loss against tokens and compute](figures/default/a0_miniature/pilot_loss_vs_tokens_and_compute.png)",
    "",
    "| width | non-embedding params | tokens | tokens/param | tokens/s | val loss (mean of seeds) |",
    "|---|---|---|---|---|---|",
    *pilot_rows,
    "",
    f"{verdict_text} The resulting shapes, with the papers' tokens per non-embedding parameter beside ours:",
    "",
    "| size | shape and tokens a run | tokens a run | tokens / param | paper's tokens / param | epochs of the offline split |",
    "|---|---|---|---|---|---|",
    *profile_rows,
])
display(Markdown(pilot_block))

# %% [markdown]
# ## Reading the result
# The criterion is a statement about the training regime, not about quality: at 10 tokens per
# parameter a run is about as far along, relative to its capacity, as paper A's 1B model (and
# less than its 130M model at 26). Fixing it buys that regime with width, and pays in absolute
# loss and optimiser steps; a GPU profile (`paper`) removes the trade-off. The numbers, from
# every language-model run of the profile (the pilot's, fine-tuning and the ViT left out):


# %%
finals = curves.finals(Path(runs_root) / profile)  # every run's final metrics, read from runs/<profile>/ itself
language_models = {f"{run.experiment}/{run.name}" for run in all_runs(params, planned=False)
                   if run.experiment != experiment and run.config.vision.dataset == ImageSet.NONE
                   and not run.config.finetune.base}
profile_runs = [f for key, f in finals.items() if key in language_models and f.get("val_loss") is not None]
if profile_runs:
    every = pd.DataFrame(profile_runs)
    loss, diverged = every["val_loss"], int((every["status"] == "diverged").sum())
    if len(qualifies) and best is not None:
        wider = [v for v in variants if widths[v] > widths[best]]
        ratio_text = (f" At width {widths[wider[0]]} the same tokens per parameter would need "
                      f"{pilot.loc[wider[0], 'non-embedding params'] / pilot.loc[best, 'non-embedding params']:.1f}x "
                      f"the tokens of width {widths[best]}." if wider else "")
    else:
        ratio_text = ""
    closing = (
        f"The profile's {len(every)} language-model runs have {every['params_non_embedding'].min() / 1e3:.0f}K-"
        f"{every['params_non_embedding'].max() / 1e3:.0f}K non-embedding parameters and train for "
        f"{every['steps'].min():,}-{every['steps'].max():,} optimiser steps (the papers: 10-70K); their validation "
        f"loss ends at a median of {loss.median():.2f} nats (perplexity {np.exp(loss.median()):.0f}), "
        f"{loss.quantile(0.25):.2f}-{loss.quantile(0.75):.2f} for the middle half and {loss.min():.2f}-{loss.max():.2f} "
        f"in all ({diverged} of the runs diverged).{ratio_text} "
        "The plan's estimate uses the committed runs' own speeds where a shape has been trained (two runs side by "
        "side) and a timing on this machine otherwise.")
else:
    closing = f"No final metrics of the profile's runs in {Path(runs_root) / profile}."
display(Markdown(closing))
Path(figures_dir, "pilot.md").write_text(f"{pilot_block}\n\n{closing}\n")
