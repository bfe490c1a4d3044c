"""Every notebook's judged claims in one table, and its summary.

Each notebook writes figures/<profile>/<notebook>/claims.json (`cod.claims.verdicts.Claims`). The
closing `claims` notebook calls `collect` to gather them and writes the table and `summary` as
CSV and Markdown (summary.md, findings.md, headline.md), which `cod.report` puts in
docs/results.md: their numbers are regenerated, never typed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from cod.records.results import notebook_command
from cod.claims.verdicts import BEYOND_REACH, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

VERDICT_ORDER = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, BEYOND_REACH, "holds", "holds loosely", "fails")
COLUMNS = ("id", "paper", "item", "source", "claim", "paper_value", "ours", "effect", "ci_low", "ci_high",
           "paper_effect", "scale", "level", "margin", "power_effect", "powered", "mean", "spread", "n", "verdict",
           "robustness", "premise", "test", "profile", "notebook", "command")
# an inconclusive claim by what its design could see (cod.claims.verdicts.powered): the paper's effect, or not
POWER_CLASSES = ("powered to see the paper's effect", "not powered to see it", "no paper effect or spread to size")
SOURCES = {"paper": "the papers' claims", "ours": "our own readings"}  # tallied apart

# what each timed measure of an open-weight analysis loops over (`cod.metrics.effectiveness`), and on which tokens
TIMED_UNITS = {
    "removal": ("block", "{eval_tokens}"),
    "causal": ("block", "{eval_tokens}"),
    "permutation": ("pair", "{permutation_tokens}"),
    "usefulness": ("block", "{fit_tokens} fitted, {eval_tokens} scored"),
    "jacobian": ("block", "{jacobian_tokens} x {jacobian_context}-token windows"),
}


def no_claims(figures_root: str | Path, profile: str) -> FileNotFoundError:
    """The error of a profile whose notebooks have written no claims, naming the command that writes them."""
    return FileNotFoundError(f"no claims.json under {Path(figures_root, profile)}: each notebook writes its own, "
                             f"`{notebook_command(profile)}` (every notebook stage: `python -m cod.pipeline.notebook --all`)")


def collect(figures_root: str | Path, profile: str, exclude: tuple[str, ...] = ("claims",)) -> pd.DataFrame:
    """One row per claim of every notebook's claims.json under figures_root/profile, with the
    notebook it came from and the command that regenerates it from the committed results
    (`--single-item`: that notebook alone, never the training stages upstream of it)."""
    rows = []
    for path in sorted(Path(figures_root, profile).glob("*/claims.json")):
        notebook = path.parent.name
        if notebook in exclude:
            continue
        for claim in json.loads(path.read_text()):
            n = claim.get("n")
            if n is None:  # theory ledgers: one seed; tables: the seeds listed
                seeds = claim.get("seeds", [claim["seed"]] if "seed" in claim else [])
                n = len(seeds) or None
            rows.append({**{key: claim.get(key) for key in COLUMNS}, "n": n, "notebook": notebook,
                         "command": f"dvc repro --single-item {notebook}"})
    if not rows:
        raise no_claims(figures_root, profile)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def paper_order(name: str) -> tuple:
    """Sort key of a notebook (or paper) name in natural order: its letters, then its number
    (a0, a1, a2, ..., a10, a11, b1, ...); a name without a number sorts by its letters alone."""
    match = re.match(r"([A-Za-z]+)(\d+)", name)
    return (match[1], int(match[2]), name) if match else (name, -1, name)


def effect(row: pd.Series, named: bool = False) -> str:
    """'ratio 0.945 [0.895, 0.998] (paper 0.975)' of a claim row, or '' without an effect; `named`:
    with the way it runs after the scale ('ratio Mix-LN @130M / Pre-LN @130M 0.945 ...', `direction`)."""
    if row.get("effect") is None or pd.isna(row.get("effect")):
        return ""
    scale = row.get("scale") or "effect"
    way = direction(row) if named else ""
    text = f"{scale}{f' {way}' if way else ''} {row['effect']:.3g} [{row['ci_low']:.3g}, {row['ci_high']:.3g}]"
    paper = row.get("paper_effect")
    return text + ("" if paper is None or pd.isna(paper) else f" (paper {paper:.3g})")


def direction(row: pd.Series) -> str:
    """Which way a claim row's ratio (or difference) runs, in words: the two of the paper's labelled
    values whose ratio (difference) is the paper's effect ('LNS @130M / Pre-LN @130M'), ours being
    taken the same way; else, for a test against a fixed value, the statistic our text names
    and the value it is set against ('(deep σ² end / first step after warmup) to 1', 'to 2'); else our
    two means ('237.8 / 223.3'); '' if none."""
    sign = " / " if row.get("scale") == "ratio" else " - "
    values, paper, ours = row.get("paper_value"), row.get("paper_effect"), str(row.get("ours") or "")
    if re.search(r"(ratio|difference) per rung", ours):
        return "per rung, along the ladder"
    if isinstance(values, dict) and paper is not None and not pd.isna(paper):
        numbers = {label: v for label, v in values.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        for first, a in numbers.items():
            for second, b in numbers.items():
                if first != second and b and abs((a / b if sign == " / " else a - b) - paper) <= 1e-3 * max(abs(paper), 1e-9):
                    return f"{first}{sign}{second}"
    null = re.search(r"(?:ratio (to)|difference (from)) ([-+\d.e]+) ", ours)
    if null:
        named = [re.split(r" per seed|:| [-+]?\d", part.strip())[0] for part in ours.split(";")
                 if sign in part and "[" not in part]
        return f"{f'({named[-1]}) ' if named else ''}{null[1] or null[2]} {null[3]}"
    pair = re.search(r"(?:^|; )([-+\d.e]+) vs ([-+\d.e]+)", ours)
    return f"{pair[1]}{sign}{pair[2]}" if pair else ""


def closing(table: pd.DataFrame, shown: str = "the figures above", detail: bool = True) -> str:
    """A paragraph generated from judged claims (a notebook's claims.json, or `collect`'s table):
    what `shown` show, as verdict counts; with `detail`, each decisive claim with its effect and the
    way it runs (`effect`, `direction`), then the other claims' ids by verdict."""
    rows = table.reset_index(drop=True)
    if rows.empty:
        return f"No claim is judged on {shown}."
    counts = rows["verdict"].value_counts()
    order = [v for v in VERDICT_ORDER if v in counts.index] + sorted(set(counts.index) - set(VERDICT_ORDER))
    text = (f"What {shown} show, read from the {len(rows)} claims judged on them: "
            + ", ".join(f"{int(counts[v])} {v}" for v in order) + ".")
    if not detail:
        return text
    decisive = rows[rows["verdict"].isin([REPRODUCED, NOT_REPRODUCED])]
    if len(decisive):
        text += " Decisive: " + "; ".join(
            f"{r['claim'].rstrip('.')}: **{r['verdict']}**" + (f", {effect(r, named=True)}" if effect(r) else "")
            for _, r in decisive.iterrows()) + "."
    rest = [v for v in order if v not in (REPRODUCED, NOT_REPRODUCED)]
    if rest:
        text += " The others: " + "; ".join(
            f"{v}: " + ", ".join(f"`{i}`" for i in rows.loc[rows["verdict"] == v, "id"]) for v in rest) + "."
    return text


def closing_of(figures_dir: str | Path, shown: str = "the figures above") -> str:
    """`closing` of the claims.json a notebook wrote to `figures_dir`."""
    return closing(pd.DataFrame(json.loads((Path(figures_dir) / "claims.json").read_text())), shown)


def findings(table: pd.DataFrame) -> str:
    """One Markdown paragraph per notebook, in paper order: its verdict counts (the papers' claims,
    then ours) and every decisive claim with its effect beside the paper's."""
    paragraphs = []
    for notebook in sorted(table["notebook"].unique(), key=paper_order):
        rows = table[table["notebook"] == notebook]
        counts = "; ".join(f"{label}: " + ", ".join(f"{n} {v}" for v, n in rows[rows["source"] == source]["verdict"]
                                                     .value_counts().reindex(VERDICT_ORDER).dropna().astype(int).items())
                           for source, label in SOURCES.items() if (rows["source"] == source).any())
        decisive = rows[rows["verdict"].isin([REPRODUCED, NOT_REPRODUCED])]
        listed = "; ".join(f"`{r['id']}`{' (ours)' if r['source'] == 'ours' else ''} {r['verdict']}"
                           + (f", {effect(r)}" if effect(r) else "") for _, r in decisive.iterrows())
        paragraphs.append(f"**`{notebook}`** ({counts}).{' Decisive: ' + listed + '.' if listed else ''}")
    return "\n\n".join(paragraphs) + "\n"


def paper_value(value) -> str:
    """The paper's numbers of a claim as text ('LNS @130M: 25.76; Pre-LN @130M: 26.73')."""
    if isinstance(value, dict):
        return "; ".join(f"{key}: {number:g}" if isinstance(number, int | float) else f"{key}: {number}"
                         for key, number in value.items())
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def power_class(row: pd.Series) -> str:
    """Which of POWER_CLASSES an inconclusive claim row falls in (its `powered` field)."""
    value = row.get("powered")
    if value is True or value == 1:
        return POWER_CLASSES[0]
    if value is False or value == 0:
        return POWER_CLASSES[1]
    return POWER_CLASSES[2]


def power_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The inconclusive claims counted by source (the papers' claims, ours) and by whether their
    design had 80% power to see the paper's effect (`power_class`), with a total column."""
    inconclusive = table[table["verdict"] == INCONCLUSIVE]
    classes = inconclusive.apply(power_class, axis=1) if len(inconclusive) else pd.Series(dtype=str)
    counts = pd.crosstab(inconclusive["source"].map(SOURCES), classes).reindex(
        index=list(SOURCES.values()), columns=list(POWER_CLASSES), fill_value=0)
    counts["inconclusive"] = counts.sum(axis=1)
    return counts.rename_axis(index="claims", columns=None)


def robustness_summary(table: pd.DataFrame) -> dict[str, int]:
    """How many judged claims rest on free choices of the analysis, and how many of those would
    change verdict at a neighbouring value (their `robustness` names the choice)."""
    stated = table["robustness"].dropna() if "robustness" in table else pd.Series(dtype=str)
    return {"with free choices": len(stated), "depends on one": int(stated.str.startswith("depends on").sum())}


def headline_pairs(first: pd.DataFrame, second: pd.DataFrame, ids: list[str]) -> list[tuple[str, pd.DataFrame, pd.DataFrame]]:
    """(id, its rows in `first`, its rows in `second`) for each headline claim id: `second`'s rows
    by id or else by stem (the part before ':'), so a rung named otherwise at that profile still
    matches; no rows where a profile has not judged the claim."""
    stems = second["id"].str.split(":").str[0] if len(second) else pd.Series(dtype=str)
    pairs = []
    for id_ in ids:
        exact = second[second["id"] == id_]
        pairs.append((id_, first[first["id"] == id_], exact if len(exact) else second[stems == id_.split(":")[0]]))
    return pairs


def headline_markdown(first: pd.DataFrame, second: pd.DataFrame, ids: list[str], profiles: tuple[str, str]) -> str:
    """The headline table (docs/results.md): each headline claim, the paper's value, and its verdict with
    its effect at both profiles ('not yet run' where a profile has not judged it)."""
    def result(rows: pd.DataFrame) -> str:
        if rows.empty:
            return "not yet run"
        return "; ".join(f"**{r['verdict']}**" + (f" ({effect(r, named=True)})" if effect(r) else
                                                  f" ({r['ours']})" if r["ours"] else "")
                         for _, r in rows.iterrows())

    lines = []
    for id_, rows, other in headline_pairs(first, second, ids):
        known = rows if len(rows) else other
        what = f"{known.iloc[0]['paper']} {known.iloc[0]['item']}: {known.iloc[0]['claim']}" if len(known) else ""
        value = paper_value(known.iloc[0]["paper_value"]) if len(known) else ""
        lines.append({"claim": f"`{id_}` {what}".strip(), "paper": value,
                      f"today's miniature ({profiles[0]})": result(rows), f"headline profile ({profiles[1]})": result(other)})
    return markdown(pd.DataFrame(lines), index=False)


def summary(table: pd.DataFrame, by: str = "paper") -> pd.DataFrame:
    """Counts of each verdict per value of `by` (paper or notebook; rows in `paper_order`), with a
    total column and row."""
    counts = pd.crosstab(table[by], table["verdict"])
    counts = counts.loc[sorted(counts.index, key=paper_order)]
    counts = counts[[v for v in VERDICT_ORDER if v in counts.columns]]
    counts["total"] = counts.sum(axis=1)
    counts.loc["all"] = counts.sum()
    return counts


def summary_json(papers: pd.DataFrame, ours: pd.DataFrame) -> str:
    """The verdict counts per paper of the papers' claims and of our readings (`summary` tables) as
    JSON, the claims summary `dvc metrics show` prints: {"papers": {"A": {"reproduced": 14, ...}}}."""
    counts = {"papers": papers.to_dict("index"), "ours": ours.to_dict("index")}
    return json.dumps(counts, indent=1, default=int) + "\n"


def scoring_times(seconds: dict[str, float], settings: dict, n_layers: int) -> pd.DataFrame:
    """The measured seconds of each long measure of one open-weight analysis (`layers.json`'s
    `seconds`, `settings.json`), per item it loops over: blocks, or the permutation pairs scored."""
    pairs = settings["permutation_pairs"] or n_layers * (n_layers - 1) // 2
    rows = {}
    for measure, (unit, tokens) in TIMED_UNITS.items():
        count = pairs if unit == "pair" else n_layers
        rows[measure] = {"tokens": tokens.format(**settings), "items": f"{count} {unit}s",
                         "seconds": round(seconds[measure], 1), "seconds per item": round(seconds[measure] / count, 2)}
    return pd.DataFrame(rows).T.rename_axis("measure")


def markdown(frame: pd.DataFrame, index: bool = True) -> str:
    """A GitHub Markdown table of `frame` (pipes in cells escaped)."""
    frame = frame.reset_index() if index else frame
    cells = [[_cell(value) for value in row] for row in frame.itertuples(index=False)]
    header = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells]) + "\n"


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")




def span(values, fmt: str) -> str:
    """'low-high' of `values` in format `fmt` ('{:.2f}'), one value when both ends print alike."""
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return low if low == high else f"{low}-{high}"




