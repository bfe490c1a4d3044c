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
# # A9 · Where the 1/sqrt(l) factor goes (Table 8)
#
# Paper A, section 6, **Table 8**: LLaMA-130M with LayerNorm Scaling's factor 1/sqrt(l)
# placed at six points of each sublayer. The paper reports perplexities: Pre-LN (no factor)
# 26.73; before the norm 26.97; after Attn/FFN 26.53; after the residual 1358.11 (diverged);
# only after Attn 26.89; only after FFN 26.43; after the norm (LNS) **25.76**, the best.
#
# **The positions** (`model.lns_position`, `cod/model.py`; each tested against a forward
# written from the definition in `tests/test_variants.py`), for block l of sublayer
# x + f(norm(x)): `before_norm` norm(x / sqrt(l)); `after_branch` f(.) / sqrt(l);
# `after_residual` (x + f(.)) / sqrt(l); `attn_only` and `mlp_only` the after-norm factor in
# one sublayer only; `after_norm` (LNS) norm(x) / sqrt(l). With RMSNorm (as with LayerNorm),
# the norm removes any scale of its input, so `before_norm` differs from Pre-LN only through
# the norm's epsilon: expect Pre-LN's numbers.
#
# **What is shrunk here.** The `default` profile's 130M miniature (`a0_miniature`): 12 layers
# at width 24, 0.86M tokens (10 tokens per non-embedding parameter; the paper: 2.2B tokens,
# 17), the paper's recipe otherwise. The runs belong to the `a_130m` experiment, the norm
# sweep shared with Tables 1, 6 and 7 and Fig. 4; Pre-LN and LNS have three seeds, the other
# positions two.
#
# **The verdict rule, fixed before the numbers** (`cod/compare.py`): "A beats B" is
# *reproduced* when A has the lower validation perplexity in every seed both have and the gap
# of the means exceeds the larger seed standard deviation, *not reproduced* when B wins that
# way, *inconclusive* otherwise. A run is **failed** (the paper's 1358.11) when the trainer
# stopped it as diverged or its perplexity is no better than a unigram model's.

# %% tags=["parameters"]
profile = "default"  # smoke | default | paper: which runs were trained
experiment = "a_130m"  # runs/<profile>/<experiment>/<variant>_s<seed>/ (paper A's 130M norm sweep)
runs_root = "runs"
figures_dir = None  # default: figures/<profile>/a9_lns_position

# %%
figures_dir = figures_dir or f"figures/{profile}/a9_lns_position"

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from cod import plots
from cod.compare import by_seed, failure_line, judge, judge_best, load_sweep, ppl_table
from cod.results import load_history, save_claims

ROWS = {"Pre-LN": "pre_ln", "before LN": "lns_before_norm", "after Attn/FFN": "lns_after_branch",
        "after residual": "lns_after_residual", "only after Attn": "lns_attn_only",
        "only after FFN": "lns_mlp_only", "after LN (LNS)": "lns"}
PAPER = pd.DataFrame({"130M": [26.73, 26.97, 26.53, "1358.11 (diverged)", 26.89, 26.43, 25.76]},
                     index=list(ROWS))  # PAPER_NUMBERS.md, A-Table 8

runs_dir = Path(runs_root) / profile
chance = failure_line(runs_dir, experiment)
sweep = load_sweep({"130M": experiment}, runs_dir, chance)
sweep = sweep[sweep["variant"].isin(ROWS.values())]
print(f"profile={profile}: {len(sweep)} runs; failure line (unigram perplexity) {chance:.1f}")
display(sweep[["variant", "seed", "status", "diverged_at", "val_ppl", "failed", "tokens"]]
        .sort_values(["variant", "seed"]))

# %% [markdown]
# ## Table 8: validation perplexity, ours beside the paper's
# Mean ± standard deviation over seeds (n seeds); failed seeds are counted apart. Our
# perplexities are on a 2,048-token vocabulary and the offline corpus, so only the ordering
# compares with the paper's.

# %%
table = ppl_table(sweep, ROWS, PAPER)
Path(figures_dir).mkdir(parents=True, exist_ok=True)
table.to_csv(Path(figures_dir) / "table8.csv")
display(table)

# %% [markdown]
# ## Training loss
# Mean over seeds of each seed's running mean over 5 logged steps (50 optimiser steps),
# min..max band.

# %%
history = load_history(experiment, runs_dir)
fig, ax = plt.subplots(figsize=(7, 4))
plots.loss_curves(ax, history, ROWS, smooth=5)
ax.set_ylim(top=history["loss"].quantile(0.5) + 1.0)
ax.legend(fontsize=8)
ax.set_title(f"Table 8's positions of 1/sqrt(l) at 130M ({profile} profile)")
plots.save(fig, figures_dir, "loss_curves")
plt.show()

# %% [markdown]
# ## Claims, judged by the rule above

# %%
ppl = {label: by_seed(sweep, variant) for label, variant in ROWS.items()}
failed = by_seed(sweep, "lns_after_residual", "failed")
claims = []


def claim(id_, text, paper_value, verdict_why):
    verdict, why = verdict_why
    claims.append({"id": id_, "item": "Table 8", "claim": text, "paper_value": paper_value, "ours": why,
                   "verdict": verdict})


claim("a9-after-norm-best", "After the norm (LNS) is the best position of the factor", "25.76, best of seven",
      judge_best(ppl, "after LN (LNS)"))
claim("a9-after-residual-diverges", "The factor after the residual connection makes training diverge",
      "1358.11 (diverged)",
      ("reproduced" if len(failed) and failed.all() else "not reproduced" if len(failed) and not failed.any()
       else "inconclusive",
       f"failed in {int(failed.sum())}/{len(failed)} seeds; perplexity "
       f"{by_seed(sweep, 'lns_after_residual', 'val_ppl').round(1).tolist()} "
       f"against the failure line {chance:.1f}"))
claim("a9-after-norm-beats-pre-ln", "After the norm (LNS) is better than no factor (Pre-LN)", "25.76 vs 26.73",
      judge(ppl["after LN (LNS)"], ppl["Pre-LN"]))
claim("a9-only-ffn-beats-only-attn", "The factor only after the FFN's norm beats only after the attention's",
      "26.43 vs 26.89", judge(ppl["only after FFN"], ppl["only after Attn"]))
claim("a9-before-norm-worse", "The factor before the norm is worse than Pre-LN", "26.97 vs 26.73",
      judge(ppl["Pre-LN"], ppl["before LN"]))
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
# **Reproduced.** The factor after the residual connection fails in both seeds: its validation
# perplexity (504) sits at the unigram model's (503), the analogue of the paper's 1358. Scaling
# the whole residual stream by 1/sqrt(l) in every sublayer shrinks what the embeddings carry by
# the product of those factors, so the network never learns beyond token frequencies.
#
# **Not reproduced.** After the norm (LNS) is not the best position at this size: the factor
# after the attention and FFN outputs (233 ± 1) and after the attention's norm only (229 ± 6)
# both beat it in every seed by more than the seed spread, and LNS ties with Pre-LN (238 ± 2
# against 236 ± 4). The paper's "only after FFN" beating "only after Attn" is reversed here
# (246 against 229).
#
# **As expected from the norm's definition.** The factor before the norm changes nothing beyond
# seed noise (238 against 236, inconclusive): RMSNorm divides out any scale of its input, so
# norm(x / sqrt(l)) = norm(x) up to the epsilon. The paper's 26.97 against 26.73 is within what
# seeds move here.
#
# Caveats: 0.86M tokens at 10 tokens per parameter, two seeds for the five non-baseline
# positions; the ordering among the positions that train is within a few perplexity points.
