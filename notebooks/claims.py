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
# # Claims · every judged claim of both papers in one table
#
# Each notebook judges the claims of its paper items and writes them to
# `figures/<profile>/<notebook>/claims.json`; this notebook gathers them. Every claim is
# registered in `cod/claims/registry.yaml`, written from the papers' text: its paraphrase, the paper's
# numbers, the runs it is judged on, and whether it is **the paper's claim** or **a reading of
# ours** (an extra size, a sensitivity reading, a claim added after the results). The two are
# tallied apart. One rule decides every verdict, printed below from `cod/claims/verdicts.py`. Theory
# checks (`a3_theory`, `b2_theory`) simulate a lemma or theorem and keep **holds / holds loosely
# / fails**, each with the tolerance its notebook states. In the table, `ours` quotes the numbers
# that decided a verdict, `effect` [`ci_low`, `ci_high`] is our effect with its 95% interval
# beside `paper_effect`, the paper's; `command` regenerates the notebook that judged it from the
# committed results, without training.

# %% tags=["parameters"]
profile = "default"  # smoke | default | headline | paper: whose notebooks to gather
figures_root = "figures"
figures_dir = None  # default: figures/<profile>/claims
miniature_profile = "default"  # the profile the headline table sets the headline profile's verdicts beside
headline_profile = "headline"  # run under it, this notebook writes the headline table (headline.md): both profiles

# %%
from cod import kernel

figures_dir = kernel.start("claims", profile, figures_dir)  # unset: a folder of its own

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from cod import plots

from cod.claims import scoreboard, verdicts
from cod.claims.registry import headline_claims, load_registry
from cod.records.results import save_claims

print(verdicts.rule(ledger=False))

table = scoreboard.collect(figures_root, profile)
out = Path(figures_dir)
out.mkdir(parents=True, exist_ok=True)
table.to_csv(out / "claims.csv", index=False)
(out / "claims.md").write_text(f"# Every judged claim ({profile} profile)\n\n"
                               + scoreboard.markdown(table.drop(columns=["profile"]), index=False))
save_claims(out, [])  # this notebook gathers claims; it judges none itself
paper_claims, our_readings = (table[table["source"] == source] for source in scoreboard.SOURCES)
by_paper = scoreboard.summary(paper_claims, "paper")
by_notebook = scoreboard.summary(table, "notebook")
ours_by_paper = scoreboard.summary(our_readings, "paper")
by_paper.to_csv(out / "summary_by_paper.csv")
ours_by_paper.to_csv(out / "summary_of_our_readings.csv")
by_notebook.to_csv(out / "summary_by_notebook.csv")
(out / "summary.json").write_text(scoreboard.summary_json(by_paper, ours_by_paper))  # `dvc metrics show`
print(f"profile={profile}: {len(table)} claims from {table['notebook'].nunique()} notebooks: "
      f"{len(paper_claims)} of the papers, {len(our_readings)} readings of ours")
display(by_paper)
display(ours_by_paper)
display(by_notebook)

# %% [markdown]
# ## Verdicts per notebook
# Each bar counts one notebook's claims (the papers' and ours) by verdict: the replication
# claims (left group of colours) and the theory checks (right group), notebooks in paper order
# (a0, a1, ..., a10, a11, then b1, ...).

# %%
colors = {"reproduced": "#2a9d8f", "not reproduced": "#e76f51", "inconclusive": "#bdbdbd",
          "beyond reach": "#f4d58d", "holds": "#264653", "holds loosely": "#8ab17d", "fails": "#9d0208"}
counts = by_notebook.drop(index="all").drop(columns="total")  # rows in paper order (`scoreboard.paper_order`)
fig, ax = plt.subplots(figsize=(7.5, 0.35 * len(counts) + 1.2))
left = pd.Series(0, index=counts.index)
for verdict in counts.columns:
    ax.barh(counts.index, counts[verdict], left=left, color=colors[verdict], label=verdict)
    left += counts[verdict]
ax.invert_yaxis()
ax.set_xlabel("claims")
ax.legend(ncol=4, loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=8)
fig.suptitle(f"Verdicts per notebook: every judged claim ({profile} profile, {len(table)} claims)")
plots.show(fig, figures_dir, "verdicts_by_notebook")

# %% [markdown]
# ## The summary docs/results.md shows
# Generated here (summary.md, findings.md); `python -m cod.report` puts them in docs/results.md.

# %%
REPLICATION = ["reproduced", "not reproduced", "inconclusive", "beyond reach"]


def tally(claims: pd.DataFrame) -> str:
    counts = claims["verdict"].value_counts()
    return ", ".join(f"{counts.get(v, 0)} {v}" for v in REPLICATION)


replication = paper_claims[paper_claims["verdict"].isin(REPLICATION)]
theory = paper_claims[~paper_claims["verdict"].isin(REPLICATION)]
powered = scoreboard.power_summary(table)  # the inconclusives, by what their design could have seen
powered.to_csv(out / "inconclusive_by_power.csv")
robust = scoreboard.robustness_summary(table)
lines = [
    f"**{len(table)} claims judged** on the `{profile}` profile. **{len(paper_claims)} are the papers' claims**: "
    f"{len(replication)} replication claims ({tally(replication)}) and {len(theory)} theory checks. "
    f"**{len(our_readings)} are readings of ours**, tallied apart ({tally(our_readings)}, "
    f"{len(our_readings) - our_readings['verdict'].isin(REPLICATION).sum()} theory checks). A claim is decided by a "
    f"95% confidence interval over seeds (false-decisive rate 5%, measured in tests/test_verdicts.py, ties and "
    f"lattice statistics included); an equivalence claim by two one-sided tests at a registered margin; 'beyond "
    f"reach' names a floor the miniature sits at (chance accuracy, no useful block, uniform attention) or a premise "
    f"the baseline does not show.",
    "",
    f"An inconclusive claim is set against the smallest effect its design detects with 80% power (seed spread and "
    f"n as observed): of the papers' {int(powered.loc[scoreboard.SOURCES['paper'], 'inconclusive'])} inconclusive "
    f"claims, {int(powered.loc[scoreboard.SOURCES['paper'], scoreboard.POWER_CLASSES[0]])} were powered to see the "
    f"paper's effect and {int(powered.loc[scoreboard.SOURCES['paper'], scoreboard.POWER_CLASSES[1]])} were not "
    f"({int(powered.loc[scoreboard.SOURCES['paper'], scoreboard.POWER_CLASSES[2]])} with no paper effect or no seed "
    f"spread to size it); of ours, {int(powered.loc[scoreboard.SOURCES['ours'], scoreboard.POWER_CLASSES[0]])} and "
    f"{int(powered.loc[scoreboard.SOURCES['ours'], scoreboard.POWER_CLASSES[1]])} "
    f"({int(powered.loc[scoreboard.SOURCES['ours'], scoreboard.POWER_CLASSES[2]])} unknown). "
    f"{robust['with free choices']} claims rest on a free choice of the analysis (a layer group, a window, a "
    f"threshold), each judged again at the neighbouring values: {robust['depends on one']} change verdict there "
    f"(their rows name the choice).",
    "",
    scoreboard.markdown(powered),
    "The papers' claims:",
    "",
    scoreboard.markdown(by_paper.rename(index={"A": "paper A", "B": "paper B"})),
    "Our own readings:",
    "",
    scoreboard.markdown(ours_by_paper.rename(index={"A": "paper A", "B": "paper B"})),
    f"Every claim, its numbers and the command that regenerates it: "
    f"[figures/{profile}/claims/claims.md](figures/{profile}/claims/claims.md) "
    f"([CSV](figures/{profile}/claims/claims.csv)); per notebook: "
    f"[summary_by_notebook.csv](figures/{profile}/claims/summary_by_notebook.csv).",
]
block = "\n".join(lines)
(out / "summary.md").write_text(block + "\n")
display(Markdown(block))
notes = scoreboard.findings(table)
(out / "findings.md").write_text(notes)

# %% [markdown]
# ## The headline claims at both CPU profiles
# Run under the headline profile, the claims that answer the papers' headline questions
# (`headline: true` in the registry), each beside its verdict on the README's profile, today's
# miniature: the table the README leads its results with.

# %%
if profile == headline_profile:
    ids = list(headline_claims(load_registry()))
    miniature = scoreboard.collect(figures_root, miniature_profile)
    headline = scoreboard.headline_markdown(miniature, table, ids, (miniature_profile, profile))
    judged = sum(len(rows) > 0 for _, _, rows in scoreboard.headline_pairs(miniature, table, ids))
    headline = (f"{judged} of the {len(ids)} headline claims judged on the `{profile}` profile so far, each beside "
                f"its verdict on the `{miniature_profile}` miniature (in brackets the effect, named by what it divides or "
                f"subtracts, or per rung of a ladder, or against the value it is set against; its 95% interval; the "
                f"paper's effect taken the same way):\n\n{headline}")
    (out / "headline.md").write_text(headline)
    display(Markdown(headline))

# %% [markdown]
# ## The claims that do not reproduce at this scale
# Findings, not failures: each is reported with the numbers that decided it.

# %%
shown = ["notebook", "id", "source", "claim", "paper_value", "ours"]
display(table[table["verdict"] == "not reproduced"][shown].reset_index(drop=True))

# %% [markdown]
# ## What the figures show
# Generated from every notebook's claims gathered above: no number below is typed.

# %%
from cod.claims import scoreboard

display(Markdown(scoreboard.closing(table, "the notebooks' figures", detail=False)))
