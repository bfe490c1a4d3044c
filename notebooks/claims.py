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
# `figures/<profile>/<notebook>/claims.json`; this notebook gathers them. One rule decides
# every verdict (`cod/verdicts.py`), stated in each notebook before its numbers:
#
# - **reproduced**: the paper's direction holds in every seed, and the effect exceeds the
#   seed spread and any stated noise floor (e.g. twice the binomial standard error of an
#   accuracy difference);
# - **not reproduced**: the opposite direction, by the same standard. This is a finding at
#   this scale, reported with its numbers, not a failure to hide;
# - **inconclusive** at this scale: neither, fewer than two paired seeds, or a claim about a
#   regime the miniature cannot reach (the row says which).
#
# Theory checks (`a3_theory`, `b2_theory`) simulate a lemma or theorem and keep **holds /
# holds loosely / fails**, each with the tolerance its notebook states. `ours` quotes the
# numbers that decided a verdict; `mean`, `spread` and `n` are our value's mean and standard
# deviation over the n seeds (or measurements) behind it, where a claim has one value;
# `command` regenerates the notebook that judged it.

# %% tags=["parameters"]
profile = "default"  # smoke | default | paper: whose notebooks to gather
figures_root = "figures"
figures_dir = None  # default: figures/<profile>/claims
readme = "README.md"  # its claims-summary block is rewritten for the profile below
readme_profile = "default"  # the profile whose results the README shows

# %%
figures_dir = figures_dir or f"{figures_root}/{profile}/claims"

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from cod import plots, scoreboard
from cod.results import save_claims

table = scoreboard.collect(figures_root, profile)
out = Path(figures_dir)
out.mkdir(parents=True, exist_ok=True)
table.to_csv(out / "claims.csv", index=False)
(out / "claims.md").write_text(f"# Every judged claim ({profile} profile)\n\n"
                               + scoreboard.markdown(table.drop(columns=["profile"]), index=False))
save_claims(out, [])  # this notebook gathers claims; it judges none itself
by_paper, by_notebook = scoreboard.summary(table, "paper"), scoreboard.summary(table, "notebook")
by_paper.to_csv(out / "summary_by_paper.csv")
by_notebook.to_csv(out / "summary_by_notebook.csv")
print(f"profile={profile}: {len(table)} claims from {table['notebook'].nunique()} notebooks")
display(by_paper)
display(by_notebook)

# %% [markdown]
# ## Verdicts per notebook
# Each bar counts one notebook's claims by verdict: the replication claims (left group of
# colours) and the theory checks (right group).

# %%
colors = {"reproduced": "#2a9d8f", "not reproduced": "#e76f51", "inconclusive": "#bdbdbd",
          "holds": "#264653", "holds loosely": "#8ab17d", "fails": "#9d0208"}
counts = by_notebook.drop(index="all").drop(columns="total")
fig, ax = plt.subplots(figsize=(7.5, 0.35 * len(counts) + 1.2))
left = pd.Series(0, index=counts.index)
for verdict in counts.columns:
    ax.barh(counts.index, counts[verdict], left=left, color=colors[verdict], label=verdict)
    left += counts[verdict]
ax.invert_yaxis()
ax.set_xlabel("claims")
ax.legend(ncol=3, loc="lower center", bbox_to_anchor=(0.5, 1.0))
plots.save(fig, figures_dir, "verdicts_by_notebook")
plt.show()

# %% [markdown]
# ## The summary the README shows
# Generated here and copied into README.md between its claims-summary markers.

# %%
replication = table[table["verdict"].isin(["reproduced", "not reproduced", "inconclusive"])]
theory = table[table["verdict"].isin(["holds", "holds loosely", "fails"])]
share = replication["verdict"].value_counts()
lines = [
    f"**{len(table)} claims judged** on the `{profile}` profile: {len(replication)} replication claims "
    f"({share.get('reproduced', 0)} reproduced, {share.get('not reproduced', 0)} not reproduced, "
    f"{share.get('inconclusive', 0)} inconclusive at this scale) and {len(theory)} theory checks.",
    "",
    scoreboard.markdown(by_paper.rename(index={"A": "paper A", "B": "paper B"})),
    f"Every claim, its numbers and the command that regenerates it: "
    f"[figures/{profile}/claims/claims.md](figures/{profile}/claims/claims.md) "
    f"([CSV](figures/{profile}/claims/claims.csv)); per notebook: "
    f"[summary_by_notebook.csv](figures/{profile}/claims/summary_by_notebook.csv).",
]
block = "\n".join(lines)
(out / "summary.md").write_text(block + "\n")
display(Markdown(block))
if profile == readme_profile and scoreboard.update_readme(readme, block):
    print(f"{readme}: claims summary updated")

# %% [markdown]
# ## The claims that do not reproduce at this scale
# Findings, not failures: each is reported with the numbers that decided it.

# %%
shown = ["notebook", "id", "claim", "paper_value", "ours"]
display(table[table["verdict"] == "not reproduced"][shown].reset_index(drop=True))
