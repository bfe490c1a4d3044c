"""Perplexity tables of variants compared over seeds: cells beside the paper's, and failed runs.

The verdict rule every table is judged by lives in `cod/claims/verdicts.py` (`compare`, `best_of`,
`monotone`); this module only prepares the per-seed values it is applied to. What counts as
a failed run was fixed before any table was filled (paper A's Tables 1, 3, 6, 7, 8):

* A run **failed** (the paper's perplexities above 1000) when the trainer stopped it as
  diverged, or when its validation perplexity is no better than a unigram model of the
  training split: a model that learned nothing about context. A failed run counts as no better
  than the unigram model: its perplexity is the larger of its own and the failure line's (the
  failure line's when the trainer stopped it with none), and the tables count it apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from cod.records.baselines import failure_line_of, failure_lines_file
from cod.plots import loss_curves, paper_line
from cod.records.results import load_final, train_command


def written(frame: pd.DataFrame, figures_dir: str | Path, name: str) -> pd.DataFrame:
    """`frame`, written to figures_dir/NAME.csv."""
    frame.to_csv(Path(figures_dir) / f"{name}.csv")
    return frame


def failure_line(runs_root: str | Path, experiment: str) -> float:
    """The failure line of `experiment`'s runs under `runs_root` (ROOT/runs/PROFILE): the unigram
    perplexity the `failure_lines` stage recorded in figures/PROFILE/failure_lines.json, a committed
    file; counted from the token arrays (`cod.records.baselines.failure_line_of`) where that record lacks it."""
    runs_root = Path(runs_root)
    record = failure_lines_file(runs_root)
    if record.is_file() and experiment in (lines := json.loads(record.read_text())):
        return lines[experiment]
    config = next((runs_root / experiment).glob("*/config.json"), None)
    if config is None:
        raise FileNotFoundError(f"no finished run in {runs_root / experiment}: "
                                f"`{train_command(experiment, runs_root.name)}` trains them")
    return failure_line_of(config)


def mark_failed(final: pd.DataFrame, chance_ppl: float) -> pd.DataFrame:
    """`final` (cod.records.results.load_final) with `failed` and `ppl` (val_ppl; when failed, the larger
    of val_ppl and `chance_ppl`, and `chance_ppl` without a val_ppl)."""
    out = final.copy()
    ppl = pd.to_numeric(out["val_ppl"], errors="coerce")
    out["failed"] = (out["status"] == "diverged") | ppl.isna() | (ppl >= chance_ppl)
    out["ppl"] = ppl.where(~out["failed"], ppl.clip(lower=chance_ppl).fillna(chance_ppl))
    return out


def by_seed(table: pd.DataFrame, variant: str, value: str = "ppl") -> pd.Series:
    """`value` of one variant indexed by seed."""
    return table[table["variant"] == variant].set_index("seed")[value].sort_index()


def _failed(values: pd.Series, failed: pd.Series | None) -> pd.Series:
    """Per seed of `values`: True where `failed` (by seed) says so or the value is not finite."""
    flags = failed.reindex(values.index, fill_value=False).astype(bool) if failed is not None else False
    return ~np.isfinite(values) | flags


def cell(values: pd.Series, raw: pd.Series | None = None, digits: int = 1, failed: pd.Series | None = None) -> str:
    """'mean ± std (n=K)' of per-seed values over the seeds that did not fail (`failed`, by seed,
    e.g. mark_failed's column; an infinite value counts as failed too); failed seeds are counted
    apart with their raw values (`raw`, e.g. val_ppl; 'diverged' where the trainer stopped the
    run), as the paper prints a diverged run's perplexity."""
    values = values.dropna()
    if values.empty:
        return "not trained"
    bad = _failed(values, failed)
    finite, failed_seeds = values[~bad], values.index[bad]
    text = ""
    if len(finite):
        text = f"{finite.mean():.{digits}f}" + (f" ± {finite.std():.{digits}f}" if len(finite) > 1 else "")
        text += f" (n={len(finite)})"
    if len(failed_seeds):
        shown = "" if raw is None else ": " + ", ".join(
            "diverged" if pd.isna(raw.get(seed)) else f"{raw.get(seed):.{digits}f}" for seed in failed_seeds)
        text += f"{', ' if text else ''}failed {len(failed_seeds)}/{len(values)}{shown}"
    return text


def load_sweep(experiments: dict[str, str], runs_root: str | Path, chance_ppl: float) -> pd.DataFrame:
    """Final results of several experiments ({size label: experiment}) in one table with a
    `size` column, `failed` and `ppl` marked; an experiment with no finished run is left out."""
    tables = []
    for size, experiment in experiments.items():
        if not (Path(runs_root) / experiment).exists():
            continue
        final = load_final(experiment, runs_root)
        if len(final):
            tables.append(mark_failed(final, chance_ppl).assign(size=size))
    if not tables:
        commands = ", ".join(f"`{train_command(e, Path(runs_root).name)}`" for e in experiments.values())
        raise FileNotFoundError(f"none of {list(experiments.values())} has finished runs under {runs_root}: "
                                f"{commands} train them")
    return pd.concat(tables, ignore_index=True)


def load_size_sweep(experiments: dict[str, str], runs_root: str | Path) -> pd.DataFrame:
    """`load_sweep` of one sweep at several sizes on one dataset ({size: experiment}): every run
    is marked against the failure line of the first experiment."""
    return load_sweep(experiments, runs_root, failure_line(runs_root, next(iter(experiments.values()))))


def load_variants(experiment: str, runs_root: str | Path, variants: list[str], size: str = "130M"
                  ) -> tuple[pd.DataFrame, float]:
    """The runs of `variants` of one experiment (`load_sweep` with `size` as its size) and the
    failure line they were marked against."""
    chance = failure_line(runs_root, experiment)
    sweep = load_sweep({size: experiment}, runs_root, chance)
    return sweep[sweep["variant"].isin(variants)], chance


@dataclass(frozen=True)
class Perplexities:
    """Each row of a table ({label: variant}, one size of a sweep) by seed: `ppl` (`mark_failed`'s,
    the failure line's at least where failed) and `failed`; `perplexities` reads them."""

    ppl: dict[str, pd.Series]
    failed: dict[str, pd.Series]

    def text(self, label: str, digits: int = 0) -> str:
        """The row's `cell` (whole perplexities unless `digits` says), failed seeds counted apart."""
        return cell(self.ppl[label], digits=digits, failed=self.failed[label])

    def mean(self, label: str) -> float:
        """The row's mean perplexity over the seeds that did not fail."""
        return float(self.ppl[label][~self.failed[label]].mean())


def perplexities(sweep: pd.DataFrame, rows: dict[str, str]) -> Perplexities:
    """`Perplexities` of the rows {label: variant} of `sweep` (one size, `failed` marked)."""
    return Perplexities({label: by_seed(sweep, variant) for label, variant in rows.items()},
                        {label: by_seed(sweep, variant, "failed") for label, variant in rows.items()})


def ppl_table(sweep: pd.DataFrame, rows: dict[str, str], paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rows {label: variant} by the sizes of `sweep` (`load_sweep`: with `failed` marked): our
    perplexity cell, and the paper's value beside it where `paper` (same labels, sizes as
    columns) has one."""
    columns = {}
    for size in sweep["size"].unique():
        at = sweep[sweep["size"] == size]
        columns[(size, "ours")] = [cell(by_seed(at, variant), by_seed(at, variant, "val_ppl"),
                                        failed=by_seed(at, variant, "failed")) for variant in rows.values()]
        if paper is not None and size in paper.columns:
            columns[(size, "paper")] = [paper[size].get(label, "") for label in rows]
    return pd.DataFrame(columns, index=list(rows))


def ppl_dots(ax, sweep: pd.DataFrame, rows: dict[str, str], paper: pd.Series | None = None,
             reference: str = "Pre-LN") -> None:
    """Final validation perplexity of {label: variant} in `sweep` (one size; `failed` marked by
    `mark_failed`) as a ratio to the `reference` row's (the mean of its seeds that did not fail): a
    dot per seed, a bar at the mean of the seeds that did not fail, and, in a band kept free at the
    top of the axis, a cross with 'failed k/n' for failed seeds. The paper's values (`paper`, by
    label) go on the same axis as ratios to its own `reference` value: two models far apart in
    training compared by where each row stands against its baseline. A paper value above 1000 or
    not a number (a diverged run) is left off and written as 'paper: diverged' in the top band."""
    if reference not in rows:
        raise ValueError(f"reference={reference!r} is not a row; allowed: {', '.join(rows)}")

    def finished(variant: str) -> tuple[pd.Series, pd.Series]:
        values = by_seed(sweep, variant).dropna()
        return values, values[~_failed(values, by_seed(sweep, variant, "failed"))]

    base = finished(rows[reference])[1].mean()
    x = np.arange(len(rows))
    notes = [[] for _ in rows]
    for i, (color, variant) in enumerate(zip(plt.cm.tab10.colors, rows.values())):
        values, finite = finished(variant)
        ax.scatter(np.full(len(finite), i), finite / base, color=color, s=18, zorder=3)
        if len(finite):
            ax.hlines(finite.mean() / base, i - 0.3, i + 0.3, color=color, linewidth=2)
        if len(finite) < len(values):
            ax.scatter([i], [0.965], marker="x", color=color, transform=ax.get_xaxis_transform(), zorder=3)
            notes[i].append(f"failed {len(values) - len(finite)}/{len(values)}")
    ax.axhline(1, color="0.6", linewidth=0.8)
    ax.set_ylabel(f"validation perplexity / {reference}'s\n(below 1: lower, better)")
    ax.set_xticks(x, list(rows), rotation=30, ha="right", rotation_mode="anchor")
    ax.set_xlim(-0.6, len(rows) - 0.4)
    if paper is not None:
        given = pd.Series([paper.get(label) for label in rows])
        numbers = pd.to_numeric(given, errors="coerce")
        diverged = (given.notna() & (numbers.isna() | (numbers > 1000))).to_numpy()
        own = numbers[list(rows).index(reference)]
        if not diverged[list(rows).index(reference)] and pd.notna(own):
            paper_line(ax, x, (numbers / own).where(~diverged).to_numpy(float), "paper")
        for i in np.flatnonzero(diverged):
            notes[i].append("paper:\ndiverged")
    if any(notes):  # keep the top 20% of the axis free for the notes
        low, high = ax.get_ylim()
        ax.set_ylim(low, high + 0.25 * (high - low))
        for i, note in enumerate(notes):
            if note:
                ax.text(x[i], 0.93, "\n".join(note), transform=ax.get_xaxis_transform(), ha="center", va="top",
                        fontsize=7, color="0.3")


def ppl_dots_legend(target, paper: str, reference: str = "Pre-LN", **legend_kwargs):
    """One legend for `ppl_dots`'s marks (a seed, the mean, the paper's value labelled `paper`), each
    a ratio to the `reference` row's, in neutral colours since each row has its own; `target` is the
    axis or figure that holds it. Returns the legend."""
    handles = [
        Line2D([], [], color="0.3", marker="o", linestyle="none", markersize=5, label="ours: a seed"),
        Line2D([], [], color="0.3", linewidth=2, label="ours: mean of the seeds that did not fail"),
        Line2D([], [], color="0.45", linestyle="--", marker="s", markersize=3, label=f"{paper}, / its {reference}"),
    ]
    return target.legend(handles=handles, **legend_kwargs)


def ppl_and_loss(sweep: pd.DataFrame, history: pd.DataFrame, rows: dict[str, str], paper: pd.Series, paper_label: str,
                 titles: tuple[str, str], height: float = 4.2):
    """Two panels for the rows {label: variant} of one size, titled `titles`: final perplexity relative
    to Pre-LN's (`ppl_dots`, the paper's likewise, labelled `paper_label` in one legend below) and
    training loss (`cod.plots.loss_curves` of `history` over 5 logged steps, cut at the median loss + 1)."""
    fig, (ax_ppl, ax) = plt.subplots(1, 2, figsize=(12, height), gridspec_kw={"width_ratios": [2, 3]})
    ppl_dots(ax_ppl, sweep, rows, paper)
    ppl_dots_legend(fig, paper_label, loc="outside lower center", ncol=3)
    loss_curves(ax, history, rows, smooth=5)
    ax.set_ylim(top=history["loss"].quantile(0.5) + 1.0)
    ax.legend()
    for panel, title in zip((ax_ppl, ax), titles):
        panel.set_title(title)
    return fig
