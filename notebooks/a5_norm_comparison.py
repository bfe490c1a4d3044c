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
# # A5 · LNS against Post-LN, DeepNorm, Mix-LN and Pre-LN across model sizes (Table 1, Figs. 1 and 6)
#
# Paper A, section 5.1, **Table 1**: LLaMA models of 130M, 250M, 350M and 1B parameters (C4,
# 2.2B to 8.9B tokens) under five norms. Perplexities (130M / 250M / 350M / 1B): Post-LN
# 26.95 / 1409.79 / 1368.33 / 1390.75; DeepNorm 27.17 / 22.77 / 1362.59 / 1409.08; Mix-LN
# 26.07 / 21.39 / 1363.21 / 1414.78; Pre-LN 26.73 / 21.92 / 19.58 / 17.02; **LNS 25.76 / 20.35 /
# 18.20 / 15.71**. Values above 1000 are runs that diverged: Post-LN from 250M, DeepNorm and
# Mix-LN from 350M. LNS is best at every size. **Fig. 1 (right)** and **Fig. 6** show training
# loss of OLMo models up to 7B: LNS converges slightly slower early, then ends clearly below
# Pre-LN (7B: 2.50 vs 2.69). **Table 4** (Qwen2.5-0.5B, 6B tokens: Pre-LN 20.62, LNS 19.57) is
# a different architecture; the miniature has no Qwen-shaped model, so it is not reproduced
# here, and the ladder below stands in for "LNS at a larger scale".
#
# **What is shrunk here.** The `default` profile's size ladder (`a0_miniature`) keeps the
# paper's depths (12 / 24 / 24) and width ratios (768 : 768 : 1024 as 24 : 24 : 32) for 130M,
# 250M and 350M, at 10 tokens per non-embedding parameter each (0.86M, 1.72M, 3.07M tokens;
# the paper: 17, 23 and 20); 1B is not trained (its width ratio, 2048, would need width 64:
# 1.2M non-embedding parameters, 12M tokens a run at 10 per parameter, four times a 350M run's
# parameters and tokens). Heads are 4 and the SwiGLU width 8/3 of the hidden size at every
# size (the paper: 12-16 heads, and 3.3x at 250M). Recipe as the paper's (peak lr 1e-3, 10%
# warmup, cosine to 10%, no weight decay), sequences of 64 tokens instead of 256. Runs: the `a_130m`, `a_250m`
# and `a_350m` experiments, three seeds per norm and size, shared with Tables 6, 7, 8 and Fig. 4.
#
# **The verdict rule, fixed before the numbers** (`cod/compare.py`): "A beats B" is
# *reproduced* when A has the lower validation perplexity in every seed both have and the gap
# of the means exceeds the larger seed standard deviation, *not reproduced* when B wins that
# way, *inconclusive* otherwise. A run is **failed** (the paper's > 1000 entries) when the
# trainer stopped it as diverged (non-finite loss, or above 20 for 3 logged steps) or its
# perplexity is no better than a unigram model's; a failed run loses every comparison. "Early
# loss" is each seed's mean training loss over 10-30% of its tokens.

# %% tags=["parameters"]
profile = "default"  # smoke | default | paper: which runs were trained
experiments = {"130M": "a_130m", "250M": "a_250m", "350M": "a_350m"}  # Table 1's sizes -> runs/<profile>/<experiment>/
runs_root = "runs"
figures_dir = None  # default: figures/<profile>/a5_norm_comparison
early = [0.1, 0.3]  # fraction of training tokens over which the early loss is averaged (Fig. 6)

# %%
figures_dir = figures_dir or f"figures/{profile}/a5_norm_comparison"

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from cod import plots
from cod.compare import by_seed, failure_line, judge, judge_best, load_sweep, ppl_table
from cod.results import load_history, save_claims

ROWS = {"Post-LN": "post_ln", "DeepNorm": "deepnorm", "Mix-LN": "mix_ln", "Pre-LN": "pre_ln", "LNS": "lns"}
PAPER = pd.DataFrame({"130M": [26.95, 27.17, 26.07, 26.73, 25.76],
                      "250M": [1409.79, 22.77, 21.39, 21.92, 20.35],
                      "350M": [1368.33, 1362.59, 1363.21, 19.58, 18.20],
                      "1B": [1390.75, 1409.08, 1414.78, 17.02, 15.71]},
                     index=list(ROWS))  # PAPER_NUMBERS.md, A-Table 1 (> 1000: diverged)

runs_dir = Path(runs_root) / profile
chance = failure_line(runs_dir, experiments["130M"])
sweep = load_sweep(experiments, runs_dir, chance)
sweep = sweep[sweep["variant"].isin(ROWS.values())]
sizes = list(sweep["size"].unique())
missing = [s for s in experiments if s not in sizes]
print(f"profile={profile}: {len(sweep)} runs at sizes {sizes}" + (f"; not trained yet: {missing}" if missing else "")
      + f"; failure line (unigram perplexity) {chance:.1f}")
display(sweep[["size", "variant", "seed", "status", "diverged_at", "val_ppl", "failed", "tokens"]]
        .sort_values(["size", "variant", "seed"]))

# %% [markdown]
# ## Table 1: validation perplexity, ours beside the paper's
# Mean ± standard deviation over seeds (n seeds); failed seeds counted apart. Our
# perplexities are on a 2,048-token vocabulary and the offline corpus, so only orderings and
# failures compare with the paper's.

# %%
table = ppl_table(sweep, ROWS, PAPER)
Path(figures_dir).mkdir(parents=True, exist_ok=True)
table.to_csv(Path(figures_dir) / "table1.csv")
display(table)

# %% [markdown]
# ## Fig. 1 (right): final loss against model size
# Validation loss against non-embedding parameters, mean over seeds with min..max bars; failed
# seeds are left out of the mean (the table counts them). The paper draws OLMo's training loss
# from 60M to 7B parameters, Pre-LN against LNS.

# %%
fig, ax = plt.subplots(figsize=(6, 4))
for color, (label, variant) in zip(plt.cm.tab10.colors, ROWS.items()):
    rows = sweep[(sweep["variant"] == variant) & ~sweep["failed"]]
    if rows.empty:
        continue
    stats = rows.groupby("params_non_embedding")["val_loss"].agg(["mean", "min", "max"])
    ax.errorbar(stats.index, stats["mean"], yerr=[stats["mean"] - stats["min"], stats["max"] - stats["mean"]],
                color=color, marker="o", capsize=3, label=label)
ax.set_xscale("log")
ax.set_xlabel("non-embedding parameters")
ax.set_ylabel("validation loss")
ax.legend(fontsize=8)
ax.set_title(f"Final loss against size ({profile} profile)")
plots.save(fig, figures_dir, "fig1_loss_vs_size")
plt.show()

# %% [markdown]
# ## Figs. 1 (right) and 6: training loss, every norm at every size
# Mean over seeds of each seed's running mean over 5 logged steps, min..max band. The lower
# row zooms on LNS against Pre-LN, as Fig. 6 does.

# %%
history = pd.concat([load_history(e, runs_dir).assign(size=s) for s, e in experiments.items() if s in sizes])
history = history[history["variant"].isin(ROWS.values())]
fig, axes = plt.subplots(2, len(sizes), figsize=(6 * len(sizes), 7.5), squeeze=False)
for column, size in enumerate(sizes):
    at = history[history["size"] == size]
    plots.loss_curves(axes[0][column], at, ROWS, smooth=5)
    axes[0][column].set_ylim(top=at["loss"].quantile(0.5) + 1.0)
    axes[0][column].set_title(f"{size} miniature: all norms")
    pair = at[at["variant"].isin(["pre_ln", "lns"])]
    plots.loss_curves(axes[1][column], pair, {"Pre-LN": "pre_ln", "LNS": "lns"}, smooth=5)
    tail = pair[pair["tokens"] >= 0.5 * pair["tokens"].max()]["loss"]
    axes[1][column].set_ylim(tail.min() - 0.05, tail.max() + 0.1)
    axes[1][column].set_xlim(left=0.5 * pair["tokens"].max())
    axes[1][column].set_title(f"{size}: Pre-LN and LNS, second half")
axes[0][-1].legend(fontsize=8)
axes[1][-1].legend(fontsize=8)
plots.save(fig, figures_dir, "fig6_loss_curves")
plt.show()

# %% [markdown]
# ## Claims, judged by the rule above, per size

# %%
def early_loss(at: pd.DataFrame, variant: str) -> pd.Series:
    """Per seed: mean training loss over the `early` fraction of its tokens."""
    rows = at[at["variant"] == variant]
    span = rows["tokens"].max()
    window = rows[(rows["tokens"] >= early[0] * span) & (rows["tokens"] <= early[1] * span)]
    return window.groupby("seed")["loss"].mean()


claims = []


def claim(id_, item, text, paper_value, verdict_why):
    verdict, why = verdict_why
    claims.append({"id": id_, "item": item, "claim": text, "paper_value": paper_value, "ours": why,
                   "verdict": verdict})


for size in sizes:
    at, tag, p = sweep[sweep["size"] == size], size.lower(), PAPER[size]
    ppl = {label: by_seed(at, variant) for label, variant in ROWS.items()}
    claim(f"a5-lns-best-{tag}", "Table 1", f"LNS has the lowest perplexity of the five norms ({size})",
          f"{p['LNS']}, best of five", judge_best(ppl, "LNS"))
    claim(f"a5-lns-beats-pre-ln-{tag}", "Table 1 / Fig. 6", f"LNS ends below Pre-LN ({size})",
          f"{p['LNS']} vs {p['Pre-LN']}", judge(ppl["LNS"], ppl["Pre-LN"]))
    for label in ("Post-LN", "DeepNorm", "Mix-LN"):
        failed = by_seed(at, ROWS[label], "failed")
        verdict, why = judge(ppl["Pre-LN"], ppl[label])
        claim(f"a5-{ROWS[label].replace('_', '-')}-vs-pre-ln-{tag}", "Table 1",
              f"{label} is worse than Pre-LN ({size}; the paper: diverged from "
              f"{ {'Post-LN': '250M', 'DeepNorm': '350M', 'Mix-LN': '350M'}[label]})",
              f"{p[label]} vs {p['Pre-LN']}", (verdict, f"{why}; failed in {int(failed.sum())}/{len(failed)} seeds"))
    hist = history[history["size"] == size]
    claim(f"a5-lns-slower-early-{tag}", "Fig. 6", f"LNS converges more slowly than Pre-LN early in training ({size})",
          "slightly slower early (OLMo-7B)", judge(early_loss(hist, "pre_ln"), early_loss(hist, "lns")))
for c in claims:
    c.update(paper="A", profile=profile, seeds=sorted(int(s) for s in sweep["seed"].unique()))
save_claims(figures_dir, claims)
display(pd.DataFrame(claims)[["id", "paper_value", "ours", "verdict"]])

# %% [markdown]
# ## Reading the result
#
# The tables above are regenerated from the runs every time this notebook executes; the
# paragraph below interprets the committed `default`-profile runs.
#
# **Not reproduced: LNS is not the best norm at any of the three sizes.** Post-LN, DeepNorm and
# Mix-LN beat it, and beat Pre-LN, clearly at every size (about 223 against 236 at 130M, 119-123
# against 126 at 250M, 66-69 against 73 at 350M, with seed spreads of 0.1-4).
#
# **LNS against Pre-LN changes with size.** At 130M the two tie (238 ± 2 against 236 ± 4,
# inconclusive), at 250M LNS is worse in every seed (127.6 against 125.8, about twice the seed
# spread), and at 350M it is better in every seed (70.8 ± 0.6 against 72.9 ± 0.6: reproduced).
# Three sizes do not make a trend. 250M and 350M have the same depth (24 layers) and differ in
# width (24 against 32) and tokens (1.7M against 3.1M), so either may be what turns the sign.
#
# **Not reproduced: no norm fails.** Every Post-LN, DeepNorm and Mix-LN run trains at 24 layers,
# where the paper's Post-LN diverges from 250M and DeepNorm and Mix-LN from 350M. At 420-1,500
# steps with 10% warmup, gradient clipping at 1 and width 24-32, nothing drives these models to
# the instability the paper's 130M-1B runs meet.
#
# **Fig. 6's early phase.** LNS is slightly behind Pre-LN early in training (10-30% of tokens):
# reproduced at 250M (6.133 against 6.121), inside the seed spread at 130M and 350M. At 130M and
# 250M LNS never overtakes Pre-LN, unlike the paper's curves; at 350M it is ahead by the end.
#
# The layer analyses of `a10_layer_effectiveness_lns` show what LNS does at this scale: its deep
# blocks stay nearly inert, since 1/sqrt(l) shrinks what they see and 420-840 steps are too few
# for their weights to make up for it. The paper's runs take about 35-40 times more optimiser
# steps (16,800 at 130M against our 420) at about twice our tokens per parameter. More steps at
# the same shapes would test that reading (`train.steps` of the sizes in `params.yaml`). Here,
# these tables are the finding.
