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
# # A7 · LNS against other scaling methods (Tables 6 and 3)
#
# Paper A, section 6, **Table 6**: LLaMA-130M and LLaMA-250M under Pre-LN with LayerScale
# (per-channel learnable gain on each branch, initialised small), SkipInit (one learnable
# scalar per branch, initialised to 1/sqrt(L)), depth-scaled initialisation (every matrix of
# block l at std / sqrt(2l)), scaled initialisation (attention output and FFN down
# projections at std / sqrt(2L)), LNS, and LNS with scaled initialisation. Perplexities
# 130M / 250M: Pre-LN 26.73 / 21.92; LayerScale 27.93 / 23.45; SkipInit 27.41 / 22.29;
# depth-scaled 26.95 / 21.50; scaled 26.04 / 20.98; **LNS 25.76 / 20.35**; LNS + scaled
# 25.80 / 20.79. The paper reads: learnable scalars hurt; the larger (global) scaling factor
# beats the depth-scaled one; LNS is best; adding scaled initialisation to LNS makes it worse.
#
# **Table 3** (section 5.3.1): OLMo-1B on 20B tokens with OLMo's initialisation (input
# projections 1/sqrt(d), output projections 1/sqrt(2 d l)) against LNS: training loss 2.96 vs
# **2.85**, perplexity 19.30 vs **17.28**. Here it is the 130M miniature's `olmo_init` run
# against LNS (the miniature has no 1B size: a stand-in, said as such).
#
# **What is shrunk here.** The `default` profile's 130M and 250M miniatures (`a0_miniature`):
# 12 and 24 layers at width 24, 0.86M and 1.72M tokens (10 tokens per non-embedding parameter;
# the paper: 2.2B and 3.9B tokens, 17 and 23), the paper's recipe otherwise. The runs belong
# to the `a_130m` and `a_250m` experiments, the norm sweeps shared with Tables 1, 7 and 8; Pre-LN
# and LNS have three seeds, the other rows two. The variants' definitions are checked against
# a forward written from each paper in `tests/test_variants.py` and `tests/test_model.py`.
#
# **The verdict rule, fixed before the numbers** (`cod/compare.py`): "A beats B" is
# *reproduced* when A has the lower validation perplexity in every seed both have and the gap
# of the means exceeds the larger seed standard deviation, *not reproduced* when B wins that
# way, *inconclusive* otherwise. A run whose perplexity is no better than a unigram model's
# counts as failed. A claim that holds at one size and not the other is judged per size.

# %% tags=["parameters"]
profile = "default"  # smoke | default | paper: which runs were trained
experiments = {"130M": "a_130m", "250M": "a_250m"}  # Table 6's sizes -> runs/<profile>/<experiment>/
runs_root = "runs"
figures_dir = None  # default: figures/<profile>/a7_scaling_methods

# %%
figures_dir = figures_dir or f"figures/{profile}/a7_scaling_methods"

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from cod import plots
from cod.compare import by_seed, cell, failure_line, judge, judge_best, load_sweep, ppl_table
from cod.results import load_history, save_claims

ROWS = {"Pre-LN": "pre_ln", "+ LayerScale": "layerscale", "+ SkipInit": "skipinit",
        "+ Depth-Scaled Init": "depth_scaled_init", "+ Scaled Init": "scaled_init", "+ LNS": "lns",
        "+ LNS + Scaled Init": "lns_scaled_init"}
PAPER = pd.DataFrame({"130M": [26.73, 27.93, 27.41, 26.95, 26.04, 25.76, 25.80],
                      "250M": [21.92, 23.45, 22.29, 21.50, 20.98, 20.35, 20.79]},
                     index=list(ROWS))  # PAPER_NUMBERS.md, A-Table 6

runs_dir = Path(runs_root) / profile
chance = failure_line(runs_dir, experiments["130M"])
sweep = load_sweep(experiments, runs_dir, chance)
sizes = list(sweep["size"].unique())
print(f"profile={profile}: {len(sweep)} runs at sizes {sizes}; failure line (unigram perplexity) {chance:.1f}")
shown = sweep[sweep["variant"].isin([*ROWS.values(), "olmo_init"])]
display(shown[["size", "variant", "seed", "status", "val_ppl", "final_train_loss", "failed"]]
        .sort_values(["size", "variant", "seed"]))

# %% [markdown]
# ## Table 6: validation perplexity, ours beside the paper's
# Mean ± standard deviation over seeds (n seeds). Our perplexities are on a 2,048-token
# vocabulary and the offline corpus, so only the ordering compares with the paper's.

# %%
table = ppl_table(sweep, ROWS, PAPER)
Path(figures_dir).mkdir(parents=True, exist_ok=True)
table.to_csv(Path(figures_dir) / "table6.csv")
display(table)

# %% [markdown]
# ## Table 3: OLMo's initialisation against LNS (at 130M)
# Final training loss (the loss of the last training batch) and validation perplexity.

# %%
small = sweep[sweep["size"] == "130M"]
table3 = pd.DataFrame({
    "training loss (ours)": [cell(by_seed(small, v, "final_train_loss"), digits=3) for v in ("olmo_init", "lns")],
    "training loss (paper, 1B)": [2.96, 2.85],
    "perplexity (ours)": [cell(by_seed(small, v)) for v in ("olmo_init", "lns")],
    "perplexity (paper, 1B)": [19.30, 17.28],
}, index=["OLMo scaled init", "LNS"])
table3.to_csv(Path(figures_dir) / "table3.csv")
display(table3)

# %% [markdown]
# ## Training loss
# Mean over seeds of each seed's running mean over 5 logged steps, min..max band.

# %%
history = pd.concat([load_history(e, runs_dir).assign(size=s) for s, e in experiments.items() if s in sizes])
fig, axes = plt.subplots(1, len(sizes), figsize=(7 * len(sizes), 4), squeeze=False)
for ax, size in zip(axes[0], sizes):
    at = history[history["size"] == size]
    plots.loss_curves(ax, at, {**ROWS, "OLMo init": "olmo_init"}, smooth=5)
    ax.set_ylim(top=at["loss"].quantile(0.5) + 1.0)
    ax.set_title(f"{size} miniature")
axes[0][-1].legend(fontsize=8)
plots.save(fig, figures_dir, "loss_curves")
plt.show()

# %% [markdown]
# ## Claims, judged by the rule above, per size

# %%
claims = []


def claim(id_, item, text, paper_value, verdict_why):
    verdict, why = verdict_why
    claims.append({"id": id_, "item": item, "claim": text, "paper_value": paper_value, "ours": why,
                   "verdict": verdict})


for size in sizes:
    at = sweep[sweep["size"] == size]
    ppl = {label: by_seed(at, variant) for label, variant in ROWS.items()}
    tag, p = size.lower(), PAPER[size]
    claim(f"a7-lns-best-{tag}", "Table 6", f"LNS has the lowest perplexity of Table 6's methods ({size})",
          f"{p['+ LNS']}, best of seven", judge_best(ppl, "+ LNS"))
    claim(f"a7-layerscale-hurts-{tag}", "Table 6", f"LayerScale is worse than Pre-LN ({size})",
          f"{p['+ LayerScale']} vs {p['Pre-LN']}", judge(ppl["Pre-LN"], ppl["+ LayerScale"]))
    claim(f"a7-skipinit-hurts-{tag}", "Table 6", f"SkipInit is worse than Pre-LN ({size})",
          f"{p['+ SkipInit']} vs {p['Pre-LN']}", judge(ppl["Pre-LN"], ppl["+ SkipInit"]))
    claim(f"a7-scaled-beats-depth-scaled-{tag}", "Table 6",
          f"Scaled initialisation beats depth-scaled initialisation ({size})",
          f"{p['+ Scaled Init']} vs {p['+ Depth-Scaled Init']}", judge(ppl["+ Scaled Init"], ppl["+ Depth-Scaled Init"]))
    claim(f"a7-lns-scaled-init-worse-{tag}", "Table 6", f"Adding scaled initialisation to LNS makes it worse ({size})",
          f"{p['+ LNS + Scaled Init']} vs {p['+ LNS']}", judge(ppl["+ LNS"], ppl["+ LNS + Scaled Init"]))
small_ppl = {v: by_seed(small, v) for v in ("olmo_init", "lns")}
claim("a7-lns-beats-olmo-init", "Table 3", "LNS reaches a lower perplexity than OLMo's scaled initialisation",
      "17.28 vs 19.30 (OLMo-1B; here 130M)", judge(small_ppl["lns"], small_ppl["olmo_init"]))
claim("a7-lns-beats-olmo-init-loss", "Table 3", "LNS reaches a lower final training loss than OLMo's scaled initialisation",
      "2.85 vs 2.96 (OLMo-1B; here 130M)",
      judge(by_seed(small, "lns", "final_train_loss"), by_seed(small, "olmo_init", "final_train_loss")))
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
# **Reproduced.** Scaled initialisation beats depth-scaled initialisation at both sizes (233 against
# 234 at 130M, 121 against 123 at 250M; every seed, by more than the seed spread). LNS reaches a
# much lower perplexity and training loss than OLMo's initialisation at 130M (238 against 337):
# with input projections at std 1/sqrt(d) = 0.2 at width 24 the OLMo-initialised model starts far
# from the others and does not recover in 0.86M tokens. This is a stand-in for Table 3's OLMo-1B,
# not a measurement of it.
#
# **Not reproduced, at either size.** LNS is the *worst* of Table 6's methods here, not the best:
# at 250M it is beaten clearly by Pre-LN itself (128 against 126) and by every other method. The
# learnable gains the paper finds harmful are the two best rows: LayerScale (221 at 130M, 120 at
# 250M) and SkipInit (232, 122) beat Pre-LN in every seed. Adding scaled initialisation to LNS
# *helps* it (234 against 238 at 130M; at 250M 127 against 128, inconclusive), the reverse of the
# paper's footnote.
#
# A reading that fits both this and `a10_layer_effectiveness_lns` (not tested here): at 10 tokens
# per parameter and 420-840 steps, methods that start each block close to the identity and let it
# grow (LayerScale's 1e-4 gains, SkipInit's 1/sqrt(L)) train fastest, while LNS's 1/sqrt(l) shrinks
# what deep blocks see for the whole run, and their weights have too few steps to make up for it.
# The paper's runs take 35-40 times more optimiser steps (16,800 at 130M against our 420), at
# about twice our tokens per parameter.
