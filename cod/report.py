"""The replication report, docs/report.md, under the ML Reproducibility Challenge's headings.

    python -m cod.report            # rewrite docs/report.md (DVC's `report` stage)
    python -m cod.report --check    # exit 1 when docs/report.md is not what the committed files give

Every number in the report is read from a committed file: the claims each notebook judged
(figures/<profile>/<notebook>/claims.json), the registry (cod/registry.yaml: the claims, the
headline questions' claims, the departures of the authors' code), params.yaml (the profiles) and
the verdict rule itself (cod.verdicts: its level and the power of its designs). Each effect links
to the executed notebook that judged it and names the DVC stage that regenerates it.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from cod import ROOT, load_yaml
from cod.registry import ClaimEntry, departures, load_registry
from cod.scoreboard import VERDICT_ORDER, collect
from cod.verdicts import ALPHA, BEYOND_REACH, INCONCLUSIVE, NOT_REPRODUCED, POWER, REPRODUCED, detectable

REPORT = Path("docs/report.md")
PROFILES = ("default", "headline")  # the CPU profiles whose claims are committed: the miniature and the headline pilot


@dataclass(frozen=True)
class Question:
    """A headline question of a paper, answered by the claims that decide it."""

    paper: str
    text: str
    claims: tuple[str, ...]


QUESTIONS = (
    Question("A", "Does LNS lower the perplexity against Pre-LN?", ("a5-lns-beats-pre-ln-130m", "a5-lns-beats-pre-ln-250m")),
    Question("A", "Is LNS the best of the normalisations compared?", ("a5-lns-best-130m", "a5-lns-best-250m")),
    Question("A", "Does LNS hold the deep layers' variance below Pre-LN's, and does Pre-LN's grow?",
             ("a4-lns-caps-variance", "a4-lns-suppresses-growth", "a4-deep-variance-grows")),
    Question("A", "Are LNS's deep layers more effective (costlier to prune, more distinct)?",
             ("a10-drop-deep-130m", "a10-adjacent-distance-deep-130m")),
    Question("B", "Does the curse of depth show: variance up and layer scores down with depth?",
             ("b1-variance-grows-with-depth", "b1-causal-falls-with-depth", "b1-usefulness-falls-with-depth")),
    Question("B", "Does weight decay damp the variance?", ("b3-variance-falls-with-lambda",)),
    Question("B", "Does a longer training context damp it?", ("b4-variance-falls-with-length",)),
    Question("B", "Does grouped-query attention damp it?", ("b5-variance-falls-with-sharing",)),
    Question("B", "Does a mixture of experts damp it?", ("b6-variance-lower:large",)),
    Question("B", "Does the full sparsity recipe lift a deep model's accuracy?", ("b7-recipe-accuracy-above:L=32",)),
)


# ---------------------------------------------------------------- reading the committed files
def claims(root: Path, profile: str) -> pd.DataFrame:
    """Every judged claim of a profile, indexed by id (empty when none is committed)."""
    try:
        table = collect(root / "figures", profile)
    except FileNotFoundError:
        return pd.DataFrame(columns=["id"]).set_index("id")
    return table.set_index("id")


def stage_of(notebook: str, profile: str, root: Path) -> str:
    """The DVC stage that executes `notebook` at `profile` (dvc.yaml's stage names)."""
    stages = load_yaml(root / "dvc.yaml")["stages"]
    headline = f"headline_{notebook}"
    return headline if profile == "headline" and headline in stages else notebook


def link(row: pd.Series, profile: str, root: Path) -> str:
    """'[effect [low, high]](executed notebook)' of a claim row, with its id and stage."""
    notebook = row["notebook"]
    target = f"../notebooks/executed/{profile}/{notebook}.ipynb"
    if row.get("effect") is None or pd.isna(row.get("effect")):
        shown = row["verdict"]
    else:
        shown = f"{row['scale']} {row['effect']:.3g} [{row['ci_low']:.3g}, {row['ci_high']:.3g}]"
    return f"[{shown}]({target}) (`{row.name}`, stage `{stage_of(notebook, profile, root)}`)"


def paper_effect(row: pd.Series) -> str:
    value = row.get("paper_effect")
    return "a direction only" if value is None or pd.isna(value) else f"{value:.3g}"


# ---------------------------------------------------------------- the sections
def scope(registry: dict[str, ClaimEntry], judged: dict[str, pd.DataFrame]) -> str:
    lines = ["## Scope of reproducibility", "",
             "Two papers on the curse of depth: paper A (*The Curse of Depth in Large Language Models*, LayerNorm "
             "Scaling) and paper B (*When Does Sparsity Mitigate the Curse of Depth in LLMs*). Each claim is "
             "registered from the paper's text before it is judged; our own readings (extra sizes, tests of the "
             "authors' code, public models) are registered apart and counted apart.", "",
             "| paper | the papers' claims | our readings | judged at default | judged at headline |",
             "|---|---|---|---|---|"]
    for paper in ("A", "B"):
        entries = [e for e in registry.values() if e.paper == paper and not e.planned]
        counts = [sum(not e.ours for e in entries), sum(e.ours for e in entries)]
        shown = [int((table["paper"] == paper).sum()) if len(table) else 0 for table in judged.values()]
        lines.append(f"| {paper} | {counts[0]} | {counts[1]} | {shown[0]} | {shown[1]} |")
    return "\n".join(lines)


def methodology(root: Path) -> str:
    params = load_yaml(root / "params.yaml")
    lines = ["## Methodology", "", "**Profiles.** Every result is stored under the profile that made it:", ""]
    for profile in PROFILES:
        base = params["profiles"][profile]["base"]
        tokens = base["data.batch_size"] * base["data.seq_len"]
        seeds = params["profiles"][profile]["seeds"]
        lines.append(f"- `{profile}`: vocabulary {base['data.vocab_size']}, {tokens:,} tokens a step, "
                     f"seeds {seeds[0]}-{seeds[-1]} ({len(seeds)}); the shapes are in params.yaml "
                     f"(`profiles.{profile}.sizes`).")
    rows = [f"| {n} | {detectable(1 / n ** 0.5, n - 1):.2f} |" for n in (2, 3, 5)]
    lines += ["", f"**The rule** (`cod/verdicts.py`, printed in every notebook before its numbers): a claim is "
              f"decided by a {1 - ALPHA:.0%} t-interval on its effect over seeds, paired by seed; decisive when "
              f"the interval lies wholly on one side of no effect. With no effect it calls a claim either way in "
              f"{ALPHA:.0%} of cases (tests/test_verdicts.py simulates it). An inconclusive row states the "
              f"smallest effect its design detects with {POWER:.0%} power; for a paired design, in units of the "
              f"seed standard deviation of the per-seed effect:", "",
              "| seeds | smallest effect seen with 80% power (seed SDs) |", "|---|---|", *rows]
    return "\n".join(lines)


def results(judged: dict[str, pd.DataFrame], root: Path) -> str:
    lines = ["## Results", "", "Each headline question, its deciding claims at both profiles: our effect "
             "[95% interval] beside the paper's, and the verdict.", ""]
    for paper in ("A", "B"):
        lines += [f"### Paper {paper}", "", "| question | claim | paper | default | headline |", "|---|---|---|---|---|"]
        for question in (q for q in QUESTIONS if q.paper == paper):
            for id_ in question.claims:
                found = {p: t.loc[id_] for p, t in judged.items() if id_ in t.index}
                if not found:
                    continue
                row = next(iter(found.values()))
                cells = [f"**{found[p]['verdict']}** {link(found[p], p, root)}" if p in found else "not run"
                         for p in PROFILES]
                lines.append(f"| {question.text} | {row['claim']} | {paper_effect(row)} | {cells[0]} | {cells[1]} |")
        lines.append("")
    return "\n".join(lines)


def tally(judged: dict[str, pd.DataFrame]) -> str:
    lines = ["| profile | source | " + " | ".join(VERDICT_ORDER[:4]) + " |", "|---|---|" + "---|" * 4]
    for profile, table in judged.items():
        for source in ("paper", "ours"):
            rows = table[table["source"] == source] if len(table) else table
            counts = [int((rows["verdict"] == v).sum()) if len(rows) else 0 for v in VERDICT_ORDER[:4]]
            lines.append(f"| {profile} | {source} | " + " | ".join(map(str, counts)) + " |")
    return "\n".join(lines)


EASY = """## What was easy
- LNS itself: one factor after each pre-norm, a plain float, checked against a forward written from the paper's
  definition (tests/test_variants.py).
- The scores of paper B on any model that exposes its blocks: causal, permutation and usefulness take one model and
  held-out tokens (cod.metrics), and run on public decoders as they are.

## What was difficult
- Scale: the papers train 130M-2.3B models on billions of tokens; two CPU cores reach about a million parameters and
  a few million tokens. Some claims need what such models cannot show (accuracy above chance, a useful block), and
  are called beyond reach below rather than judged.
- The papers' recipes are not fully stated: initialisation, Adam's betas, clipping and DeepNorm's constants come from
  the authors' released code, which departs from the papers' text in places (next section).
- Seeds: one run per setting in the papers; here three to five, so every verdict has an interval and a stated power.
"""


def departures_section(judged: pd.DataFrame, root: Path) -> str:
    lines = ["## Departures of the authors' code from their papers", "",
             "Each was checked in the authors' repository at the commit and file named (cod/registry.yaml, "
             "`departures:`). Where a run tests one, the claims of `h2_departures` ask whether the authors' recipe "
             "moves our effect toward the paper's value (a reading of ours, by the same rule).", ""]
    for name, d in departures(root / "cod/registry.yaml").items():
        lines += [f"### {name} (paper {d.paper})", "", f"- **The paper:** {d.says}.",
                  f"- **The released code** ({d.repository} at {d.commit}, {d.file}): {d.released}.",
                  f"- **cod:** {d.cod}.", f"- **Bears on:** " + ", ".join(f"`{c}`" for c in d.bears_on) + "."]
        tested = [id_ for id_ in d.tested_by if id_ in judged.index]
        if not d.tested_by:
            lines.append(f"- **Tested:** no; {d.untested_why}.")
        elif not tested:
            lines.append("- **Tested:** declared (" + ", ".join(f"`{c}`" for c in d.tested_by) + "); no run yet.")
        else:
            lines.append("- **Tested:**")
            lines += [f"  - {judged.loc[id_]['claim']} moved toward the paper: **{judged.loc[id_]['verdict']}**, "
                      f"{link(judged.loc[id_], 'headline', root)}" for id_ in tested]
        lines.append("")
    return "\n".join(lines)


def beyond(judged: dict[str, pd.DataFrame]) -> str:
    lines = ["## Beyond reach on two CPU cores", "", "A claim is beyond reach when a floor test, stated before any "
             "comparison, finds the miniature where the claim cannot show; the measured value is the row's.", ""]
    for profile, table in judged.items():
        rows = table[table["verdict"] == BEYOND_REACH] if len(table) else table
        lines.append(f"**{profile}** ({len(rows)} claims):")
        lines += [f"- `{id_}`: {row['ours']}" for id_, row in rows.iterrows()]
        lines.append("")
    return "\n".join(lines)


def report(root: Path = ROOT) -> str:
    registry = load_registry(root / "cod/registry.yaml")
    judged = {profile: claims(root, profile) for profile in PROFILES}
    verdicts = ", ".join((REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, BEYOND_REACH))
    header = ["# Replication report", "", "Generated by `python -m cod.report` (the `report` stage) from the "
              f"committed claims; verdicts are {verdicts}.", ""]
    parts = [scope(registry, judged), methodology(root), results(judged, root), "### Every verdict, counted",
             tally(judged), EASY, departures_section(judged["headline"], root), beyond(judged)]
    return "\n".join(header) + "\n\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/report.md is stale")
    args = parser.parse_args(argv)
    text, path = report(), ROOT / REPORT
    if args.check:
        current = path.read_text() if path.exists() else ""
        print(f"{REPORT}: {'up to date' if current == text else 'stale: run python -m cod.report'}")
        return int(current != text)
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    print(f"{REPORT} written ({len(text):,} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
