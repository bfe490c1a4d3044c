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
# # A4 · Output variance during training: Pre-LN, Pre-LN + scaled init, LNS
#
# Paper A, section 5.4, **Fig. 4** and appendix B, **Fig. 9**. The paper trains LLaMA-130M
# (12 layers, hidden 768) for 10K steps and logs the output variance of every layer. Under
# Pre-LN and Pre-LN with scaled initialisation (output projections / sqrt(2L)), shallow
# layers stay flat while deep layers grow after about 2K steps, reaching **~175** in the last
# layer; LayerNorm Scaling (pre-norm outputs of block l multiplied by 1/sqrt(l)) caps it at
# **~25**. Fig. 9 shows, for Pre-LN at 1K, 3K and 6K steps, variance rising with depth in
# what the paper calls an exponential pattern.
#
# **What is shrunk here.** The `default` profile's calibrated miniature (`a0_miniature`): the
# 12-layer shape at width 24 (4 heads of 6, SwiGLU width 64) with a 2,048-token BPE vocabulary on
# the offline corpus, 420 steps of 32 sequences of 64 tokens (0.86M tokens: 10.3 tokens per
# non-embedding parameter, against the paper's ~27 for LLaMA-130M, whose 10K-step Fig. 4 run saw
# 1.3B tokens); the paper's recipe otherwise (peak lr 1e-3, 10% warmup, cosine to 10%, no
# weight decay). The runs are the `a_130m` experiment, shared with paper A's tables. Variance
# is the per-token variance across the hidden dimension averaged over tokens (paper B eq. 4),
# measured on a fixed batch of validation tokens on the residual stream leaving each block.
# Every curve is the mean over seeds, the band their min..max.

# %% tags=["parameters"]
profile = "default"  # smoke | default | paper: which runs were trained
experiment = "a_130m"  # runs/<profile>/<experiment>/<variant>_s<seed>/ (paper A's 130M runs, shared)
runs_root = "runs"
figures_dir = None  # default: figures/<profile>/a4_variance_dynamics
steps_to_show = [0.1, 0.3, 0.6, 1.0]  # fractions of training for the depth panels (Fig. 9)
shallow_layers = 4  # the first blocks, counted as shallow
variants = ["pre_ln", "scaled_init", "lns"]

# %%
figures_dir = figures_dir or f"figures/{profile}/a4_variance_dynamics"

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display

from cod import plots
from cod.results import load_final, load_layer_stats, save_claims, spread

LABELS = {"pre_ln": "Pre-LN", "scaled_init": "Pre-LN + scaled init", "lns": "LNS"}
runs_dir = f"{runs_root}/{profile}"
stats = load_layer_stats(experiment, runs_dir)
final = load_final(experiment, runs_dir)
stats, final = stats[stats["variant"].isin(variants)], final[final["variant"].isin(variants)]
seeds = sorted(int(s) for s in final["seed"].unique())
n_layers = stats["layer"].max()
steps = sorted(stats["step"].unique())
print(f"profile={profile}: {len(final)} runs, seeds {seeds}, {n_layers} layers, "
      f"variance logged at {len(steps)} steps up to {steps[-1]}")
display(final[["variant", "seed", "status", "steps", "tokens", "val_ppl", "val_bbc_ppl", "tokens_per_s"]])

# %% [markdown]
# ## Fig. 4: variance of every layer over training
# One line per layer, shallow blue to deep red.

# %%
fig, axes = plt.subplots(1, len(variants), figsize=(5 * len(variants), 3.8), sharey=True)
for ax, variant in zip(np.atleast_1d(axes), variants):
    plots.layer_curves_over_training(ax, stats[stats["variant"] == variant])
    ax.set_title(LABELS[variant])
    ax.set_yscale("log")
axes[0].set_ylabel("output variance")
axes[-1].legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))
fig.suptitle(f"Per-layer output variance during training ({profile} profile, {len(seeds)} seeds)")
plots.save(fig, figures_dir, "fig4_variance_over_training")
plt.show()

# %% [markdown]
# ## Fig. 9: variance against depth at several points of training

# %%
shown = sorted({min(steps, key=lambda s: abs(s - f * steps[-1])) for f in steps_to_show})
fig, axes = plt.subplots(1, len(variants), figsize=(5 * len(variants), 3.8), sharey=True)
for ax, variant in zip(np.atleast_1d(axes), variants):
    for color, step in zip(plt.cm.viridis(np.linspace(0, 0.9, len(shown))), shown):
        plots.depth_profile(ax, stats[stats["variant"] == variant], step, color, f"step {step}")
    ax.set_title(LABELS[variant])
    ax.set_yscale("log")
axes[0].set_ylabel("output variance")
axes[-1].legend(fontsize=8)
plots.save(fig, figures_dir, "fig9_variance_vs_depth")
plt.show()

# %% [markdown]
# ## The numbers, per seed and over seeds
# `last_end`: last layer's variance at the end of training; `growth_deep` / `growth_shallow`:
# end-of-training variance divided by the variance at the first logged step after warmup
# (10% of training), for the last layer and the mean of the first `shallow_layers` layers;
# `growth_from_init`: the last layer's end-of-training variance over its value at step 0;
# `depth_slope`: slope of log(variance) against layer at the end (an exponential in depth
# has a constant positive slope), with the R^2 of that fit and of a straight line.

# %%
warm = min((s for s in steps if s >= 0.1 * steps[-1]), default=steps[0])


def per_run(group):
    at = lambda step: group[group["step"] == step].set_index("layer")["resid_var"]  # noqa: E731
    end, start, init = at(steps[-1]), at(warm), at(steps[0])
    layers = end.index.to_numpy(dtype=float)
    log_end = np.log(end.to_numpy())
    slope, intercept = np.polyfit(layers, log_end, 1)
    r2 = lambda y, fit: 1 - np.sum((y - fit) ** 2) / np.sum((y - y.mean()) ** 2)  # noqa: E731
    lin = np.polyval(np.polyfit(layers, end.to_numpy(), 1), layers)
    return {
        "last_end": end.iloc[-1],
        "growth_deep": end.iloc[-1] / start.iloc[-1],
        "growth_shallow": end.iloc[:shallow_layers].mean() / start.iloc[:shallow_layers].mean(),
        "growth_from_init": end.iloc[-1] / init.iloc[-1],
        "depth_slope": slope,
        "r2_exponential": r2(log_end, slope * layers + intercept),
        "r2_linear": r2(end.to_numpy(), lin),
    }


rows = [{"variant": v, "seed": s, **per_run(g)} for (v, s), g in stats.groupby(["variant", "seed"])]
table = pd.DataFrame(rows).merge(final[["variant", "seed", "val_ppl"]], on=["variant", "seed"])
display(table.round(4))
summary = pd.DataFrame({
    LABELS[v]: {col: spread(table[table["variant"] == v][col]) for col in table.columns[2:]} for v in variants
})
display(summary)

# %% [markdown]
# ## Claims, judged over seeds
# A direction counts as **reproduced** when every seed shows it, **not reproduced** when
# every seed shows the opposite, and **inconclusive** otherwise. The paper's magnitudes
# (175 vs 25) belong to a 130M model after 1.3B tokens and are not expected here; the ratio
# is reported beside them.

# %%
by = {v: table[table["variant"] == v].set_index("seed") for v in variants}


def verdict(flags: pd.Series) -> str:
    """Every seed agrees: reproduced; every seed disagrees: not reproduced; else inconclusive."""
    flags = list(flags.dropna())
    if not flags:
        return "inconclusive"
    return "reproduced" if all(flags) else "not reproduced" if not any(flags) else "inconclusive"


def greater(a: pd.Series, b: pd.Series) -> pd.Series:
    """a > b per seed, on the seeds both variants have."""
    a, b = a.align(b, join="inner")
    return a > b


def log_gap(a: pd.DataFrame, b: pd.DataFrame) -> pd.Series:
    """|log a - log b| of the last layer's final variance, per seed."""
    return np.log(a["last_end"] / b["last_end"]).abs()


ratio = (by["pre_ln"]["last_end"] / by["lns"]["last_end"]).dropna()
claims = [
    {
        "id": "a4-deep-variance-grows",
        "item": "Fig. 4 / section 5.4",
        "claim": "Under Pre-LN the last layer's output variance grows during training",
        "paper_value": "grows after ~2K steps to ~175",
        "ours": f"growth end/warmup {spread(by['pre_ln']['growth_deep'])}; end/init "
                f"{spread(by['pre_ln']['growth_from_init'])}",
        "verdict": verdict(by["pre_ln"]["growth_deep"] > 1),
    },
    {
        "id": "a4-shallow-flat",
        "item": "Fig. 4 / section 5.4",
        "claim": "Under Pre-LN shallow layers grow less than the last layer",
        "paper_value": "shallow layers stay flat",
        "ours": f"shallow growth {spread(by['pre_ln']['growth_shallow'])} vs deep {spread(by['pre_ln']['growth_deep'])}",
        "verdict": verdict(greater(by["pre_ln"]["growth_deep"], by["pre_ln"]["growth_shallow"])),
    },
    {
        "id": "a4-lns-caps-variance",
        "item": "Fig. 4 / section 5.4",
        "claim": "LNS keeps the last layer's variance below Pre-LN's",
        "paper_value": "~25 vs ~175 (ratio ~7)",
        "ours": f"LNS {spread(by['lns']['last_end'])} vs Pre-LN {spread(by['pre_ln']['last_end'])}; "
                f"ratio {spread(ratio)}",
        "verdict": verdict(ratio > 1),
    },
    {
        "id": "a4-scaled-init-insufficient",
        "item": "Fig. 4 / section 5.4",
        "claim": "With scaled initialisation the last layer ends closer to Pre-LN's variance than to LNS's",
        "paper_value": "scaled init reaches ~175 like Pre-LN; LNS ~25",
        "ours": f"scaled init {spread(by['scaled_init']['last_end'])}, Pre-LN {spread(by['pre_ln']['last_end'])}, "
                f"LNS {spread(by['lns']['last_end'])}",
        "verdict": verdict(greater(log_gap(by["scaled_init"], by["lns"]), log_gap(by["scaled_init"], by["pre_ln"]))),
    },
    {
        "id": "a9-variance-rises-with-depth",
        "item": "Fig. 9 / appendix B",
        "claim": "Under Pre-LN variance rises with depth at the end of training",
        "paper_value": "rises with depth at 1K, 3K, 6K steps",
        "ours": f"log-variance slope per layer {spread(by['pre_ln']['depth_slope'])}",
        "verdict": verdict(by["pre_ln"]["depth_slope"] > 0),
    },
    {
        "id": "a9-variance-exponential-in-depth",
        "item": "Fig. 9 / appendix B",
        "claim": "Under Pre-LN the rise with depth is exponential rather than linear",
        "paper_value": "'an exponential growth pattern as depth increases'",
        "ours": f"R^2 of an exponential fit {spread(by['pre_ln']['r2_exponential'])} vs a straight line "
                f"{spread(by['pre_ln']['r2_linear'])}",
        "verdict": verdict(greater(by["pre_ln"]["r2_exponential"], by["pre_ln"]["r2_linear"])),
    },
]
for claim in claims:
    claim.update(paper="A", seeds=seeds, profile=profile)
save_claims(figures_dir, claims)
table.to_csv(Path(figures_dir) / "per_run.csv", index=False)
display(pd.DataFrame(claims)[["id", "paper_value", "ours", "verdict"]])

# %% [markdown]
# ## Reading the result
#
# The table above is regenerated from the runs every time this notebook executes; the
# paragraph below interprets the committed `default`-profile run.
#
# **Agrees with the paper.** In every seed, LNS ends training with a lower last-layer variance
# than Pre-LN (1.6x lower here, about 7x in the paper's 175 vs 25), and its profile across depth
# is much flatter (log-variance slope per layer about a third of Pre-LN's). Under Pre-LN the
# variance rises with depth at every logged step.
#
# **Does not agree, at this budget.** (1) The paper's deep-layer variance grows *after* ~2K
# steps; our whole run is 420 steps of 2K tokens (0.86M tokens, 10 per parameter), so it lies
# inside the paper's early phase in steps even though it is calibrated in tokens per parameter.
# What we see instead is a sharp peak shortly after warmup (step ~80; warmup ends at 42), then a
# steady decay as the cosine schedule lowers the learning rate: the last layer ends ~17x above
# its value at initialisation but ~7x below its peak, while shallow layers keep growing slowly
# (they end ~1.5x above their post-warmup value), the opposite of the paper's picture.
# (2) Scaled initialisation ends between Pre-LN and LNS, and no closer to Pre-LN in every seed
# (inconclusive). (3) The rise with depth fits a straight line better than an exponential in
# two of three seeds, in line with the theory checks of `a3_theory`, which find no exponential
# growth in random Pre-LN stacks either.
#
# **What changed with the calibrated miniature.** The previous default (width 64, 400 steps of
# 4K tokens, 2.6 tokens per parameter) showed the same shape over training and the same verdicts
# except two: LNS's advantage was 3.9x (now 1.6x), and scaled initialisation ended as low as LNS
# (now between the two). Longer training in steps, not in tokens per parameter, is what the
# paper's late growth needs: `train.steps` of the `a130m` size in `params.yaml` sets it, at
# about 20 seconds of one core per 100 steps of this shape.
