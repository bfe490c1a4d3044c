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
# # A8 · LNS against other normalisations (Table 7)
#
# Paper A, section 6, **Table 7**: LLaMA-130M trained with identical settings under Pre-LN,
# Admin, Group-LN, Sandwich-LN, Mix-LN and LayerNorm Scaling. The paper reports perplexities
# 26.73 / 27.91 / 28.01 / 26.51 / 26.07 / **25.76**: Admin and Group-LN worse than Pre-LN,
# Sandwich-LN slightly better, Mix-LN and LNS better by good margins, LNS best.
#
# **The variants** (`cod/model/transformer.py`, each tested against a forward written from its paper in
# `tests/test_variants.py`):
# - *Admin* (Liu et al. 2020): Post-LN with a learnable per-channel weight on the residual,
#   norm(omega * x + f(x)), omega initialised by one profiling pass so that omega * x carries
#   the variance a Pre-LN residual stream would have there.
# - *Group-LN* (Wu & He 2018, as paper A cites it with Ma et al. 2024): Pre-LN whose norms
#   normalise 4 groups of channels separately (per token, RMSNorm form). Megalodon's timestep
#   normalisation, which also pools statistics over time, is not what is implemented here.
# - *Sandwich-LN* (Ding et al. 2021): x + norm(f(norm(x))).
# - *Mix-LN* (Li et al. 2024): Post-LN in the first floor(L/4) = 3 blocks, Pre-LN after.
#
# **What is shrunk here.** The `default` profile's 130M miniature (`a0_miniature`): 12 layers
# at width 24, 0.86M tokens (10 tokens per non-embedding parameter; the paper: 2.2B tokens,
# 17), the paper's recipe otherwise. The runs belong to the `a_130m` experiment, the norm
# sweep shared with Tables 1, 6 and 8 and Fig. 4; Pre-LN, Mix-LN and LNS have three seeds,
# the others two.
#
# **What is judged.** The final validation perplexity of two norms, paired by seed; "LNS is
# best" must beat every other norm. A run whose perplexity is no better than a unigram model's,
# or that the trainer stopped as diverged, is **failed** (the paper's > 1000 entries;
# `cod/claims/tables.py`). No noise floor is added: every run is scored by one validation pass over
# the same held-out tokens. Every claim is judged by the one rule of the package
# (`cod/claims/verdicts.py`), fixed before the numbers and printed below.

# %% tags=["parameters"]
profile = "default"  # smoke | default | headline | paper: which runs were trained
experiment = "a_130m"  # runs/<profile>/<experiment>/<variant>_s<seed>/ (paper A's 130M norm sweep)
runs_root = "runs"
figures_dir = None  # default: figures/<profile>/a8_other_norms

# %%
from cod import kernel

figures_dir = kernel.start("a8_other_norms", profile, figures_dir)  # unset: a folder of its own

# %%
from functools import partial
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display

import cod.claims.verdicts
from cod import plots
from cod.claims.tables import load_variants, ppl_and_loss, ppl_table, written
from cod.records.results import load_history
from cod.claims.sweep import Sweep
from cod.claims.verdicts import REPRODUCED, best_of, effect_text

ROWS = {"Pre-LN": "pre_ln", "Admin": "admin", "Group-LN": "group_ln", "Sandwich-LN": "sandwich_ln",
        "Mix-LN": "mix_ln", "LNS": "lns"}
PAPER = pd.DataFrame({"130M": [26.73, 27.91, 28.01, 26.51, 26.07, 25.76]},
                     index=list(ROWS))  # paper A, Table 7

runs_dir = Path(runs_root) / profile
sweep, chance = load_variants(experiment, runs_dir, list(ROWS.values()))
print(f"profile={profile}: {len(sweep)} runs; failure line (unigram perplexity) {chance:.1f}")
display(sweep[["variant", "seed", "status", "val_ppl", "failed", "tokens"]].sort_values(["variant", "seed"]))
print(cod.claims.verdicts.rule())  # the rule every claim below is judged by

# %% [markdown]
# ## Table 7: validation perplexity, ours beside the paper's
# Mean ± standard deviation over seeds (n seeds). Our perplexities are on a 2,048-token
# vocabulary and the offline corpus, so only the ordering compares with the paper's.

# %%
display(written(ppl_table(sweep, ROWS, PAPER), figures_dir, "table7"))

# %% [markdown]
# ## Final perplexity and training loss
# Left: final validation perplexity, a dot per seed and a bar at the mean, as ratios to
# Pre-LN's mean; the paper's Table 7 as ratios to its own Pre-LN on the same axis (grey,
# dashed), since its perplexities (C4, 32K vocabulary) are on another scale. Right: training
# loss, mean over seeds of each seed's running mean over 5
# logged steps (50 optimiser steps), min..max band.

# %%
history = load_history(experiment, runs_dir)
fig = ppl_and_loss(sweep, history, ROWS, PAPER["130M"], "paper A, Table 7",
                   titles=("Table 7: final perplexity at 130M",
                           f"Table 7's norms at 130M: training loss ({profile} profile)"))
plots.show(fig, figures_dir, "loss_curves")

# %% [markdown]
# ## Claims, judged by the rule

# %%
variants = Sweep.judged(sweep, ROWS, PAPER, profile)
add, beats, v = variants.add, variants.beats, variants.verdict_of  # v: claim id -> Verdict, for the text below
seeds = variants.perplexities["130M"]
ppl = seeds.ppl
paper = PAPER["130M"]
add("a8-lns-best", "Table 7", "LNS has the lowest perplexity of Table 7's norms", "25.76, best of six",
    best_of(ppl, "LNS", paper=paper))
add("a8-admin-worse", "Table 7", "Admin is worse than Pre-LN", "27.91 vs 26.73", beats("Pre-LN", "Admin"))
add("a8-group-ln-worse", "Table 7", "Group-LN is worse than Pre-LN", "28.01 vs 26.73", beats("Pre-LN", "Group-LN"))
add("a8-sandwich-better", "Table 7", "Sandwich-LN is (slightly) better than Pre-LN", "26.51 vs 26.73",
    beats("Sandwich-LN", "Pre-LN"))
add("a8-mix-ln-better", "Table 7", "Mix-LN is better than Pre-LN", "26.07 vs 26.73", beats("Mix-LN", "Pre-LN"))
add("a8-lns-beats-mix-ln", "Table 7", "LNS is better than Mix-LN", "25.76 vs 26.07", beats("LNS", "Mix-LN"))
display(variants.claims.save(figures_dir))

# %% [markdown]
# ## Reading the result
# Generated from the runs above on every execution, so its numbers are those of this run.

# %%
ours, mean = seeds.text, seeds.mean  # a row's perplexity as text; its mean over the seeds that did not fail
side = partial(variants.lower_or_higher, lower="better", higher="worse")  # a row against Pre-LN
ranked = sorted(ROWS, key=mean)
paper_rank = list(PAPER["130M"].sort_values().index)
text = [
    f"**The ordering.** From best to worst here: {', '.join(ranked)}, with Pre-LN at {ours('Pre-LN')}; the paper's: "
    f"{', '.join(paper_rank)}. LNS's claim to be best is *{v['a8-lns-best'].verdict}* ({v['a8-lns-best'].why}).",
    f"**Admin** is {side('Admin')} than Pre-LN here ({ours('Admin')}; "
    f"{effect_text(v['a8-admin-worse'], 'Pre-LN / Admin')}): *{v['a8-admin-worse'].verdict}* "
    f"(the paper: {PAPER['130M']['Admin']} against {PAPER['130M']['Pre-LN']}). **Group-LN** is {side('Group-LN')} "
    f"({ours('Group-LN')}; {effect_text(v['a8-group-ln-worse'], 'Pre-LN / Group-LN')}): "
    f"*{v['a8-group-ln-worse'].verdict}*.",
    f"**Mix-LN** is {side('Mix-LN')} than Pre-LN ({ours('Mix-LN')}; "
    f"{effect_text(v['a8-mix-ln-better'], 'Mix-LN / Pre-LN')}): *{v['a8-mix-ln-better'].verdict}*; LNS against "
    f"Mix-LN ({ours('LNS')}; {effect_text(v['a8-lns-beats-mix-ln'], 'LNS / Mix-LN')}): "
    f"*{v['a8-lns-beats-mix-ln'].verdict}*.",
    f"**Sandwich-LN**, slightly better than Pre-LN in the paper, is {side('Sandwich-LN')} here "
    f"({ours('Sandwich-LN')}): *{v['a8-sandwich-better'].verdict}*.",
]
if side("Sandwich-LN") == "worse" and v["a8-sandwich-better"].verdict != REPRODUCED:
    text.append("A possible cause, not tested here: Sandwich-LN's output norm gives every branch a unit-RMS "
                "contribution from the first step, many times the scale of the embeddings it is added to "
                "(initialised at std 0.02), which weighs most at this width and token budget.")
display(Markdown("\n\n".join(text)))

# %% [markdown]
# Caveats: 10 tokens per parameter, two seeds for four of the six rows, and a 24-wide model
# where a norm's per-channel details weigh more than at width 768. The paper's perplexities
# are on C4 with a 32K vocabulary, so only orderings and failures compare.

# %% [markdown]
# ## What the figures show
# Generated from the claims this notebook judged (its claims.json): no number below is typed.

# %%
from cod.claims import scoreboard

display(Markdown(scoreboard.closing_of(figures_dir)))
