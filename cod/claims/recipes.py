"""Training recipes compared on the same claim: cod's (the papers' text) against the authors' released one.

A `Recipe` names the runs of one way of training the same shape: cod's, paper A's released one
(token embedding N(0, 2/5), Adam with beta2 0.999, no clipping), or one departure of it alone.
Each recipe's runs give, per seed, the statistic a claim is judged on (a `Statistic`): LNS's
perplexity over Pre-LN's, the last layer's variance under LNS over Pre-LN's, Pre-LN's deep-layer
variance at the end over its value after warmup, Fig. 7's deep-half scores, DeepNorm's
perplexity over Pre-LN's. `RecipeTest.judge` asks of the authors' recipe the one question of
notebooks/h2_departures.py:

    does the authors' recipe move our effect toward the paper's value?

by the package's rule (`cod.claims.verdicts.compare`), paired by seed: where the paper gives a value,
on each seed's distance from it (on the log scale for a ratio) under the authors' recipe against
the same seed's under cod's, so "reproduced" means closer to the paper's value and a recipe that
overshoots it to a greater distance moves away; where the paper states only a direction, on the
statistic itself, toward that side. "not reproduced" when it moves away, "inconclusive"
otherwise. Both recipes' own effects keep their intervals beside it. The departures themselves, with the commits that show them, are the
registry's `departures:` (`cod.claims.registry.departures`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from cod.records.analyses import load_analyses
from cod.metrics.angular import adjacent_distances
from cod.records.results import load_final, load_layer_stats
from cod.claims.verdicts import Verdict, compare, one_sample

@dataclass(frozen=True)
class Recipe:
    """Where one recipe's runs live: the runs that play each role."""

    roles: dict[str, str]  # role (pre_ln, lns, deepnorm, ...) -> "<experiment>/<variant>" (runs/<profile>/...)

    def of(self, role: str) -> tuple[str, str]:
        experiment, variant = self.roles[role].split("/")
        return experiment, variant


class CommittedRuns:
    """The committed results of one profile, read once per experiment."""

    def __init__(self, runs_root: str | Path, analyses_root: str | Path, profile: str):
        self.runs, self.analyses = Path(runs_root) / profile, Path(analyses_root) / profile
        self._final: dict[str, pd.DataFrame] = {}
        self._stats: dict[str, pd.DataFrame] = {}

    def final(self, experiment: str) -> pd.DataFrame:
        if experiment not in self._final:
            found = (self.runs / experiment).is_dir()
            self._final[experiment] = load_final(experiment, self.runs) if found else pd.DataFrame()
        return self._final[experiment]

    def stats(self, experiment: str) -> pd.DataFrame:
        if experiment not in self._stats:
            found = (self.runs / experiment).is_dir()
            self._stats[experiment] = load_layer_stats(experiment, self.runs) if found else pd.DataFrame()
        return self._stats[experiment]

    def per_seed(self, frame: pd.DataFrame, variant: str, column: str) -> pd.Series:
        """`column` of `variant`'s runs, indexed by seed (empty when there are none)."""
        if frame.empty:
            return pd.Series(dtype=float)
        rows = frame[frame["variant"] == variant]
        return rows.set_index("seed")[column].astype(float).sort_index()


# ---------------------------------------------------------------- per-seed statistics of one recipe
def val_ppl(source: CommittedRuns, runs: Recipe, role: str) -> pd.Series:
    """Final validation perplexity of a role's runs, by seed (a diverged run keeps its value)."""
    experiment, variant = runs.of(role)
    return source.per_seed(source.final(experiment), variant, "val_ppl")


def variance_table(source: CommittedRuns, runs: Recipe, role: str) -> pd.DataFrame:
    """Residual-stream variance of a role's runs: rows (seed, step), columns layer (1-based)."""
    experiment, variant = runs.of(role)
    stats = source.stats(experiment)
    rows = stats[stats["variant"] == variant] if not stats.empty else stats
    if rows.empty:
        return pd.DataFrame()
    return rows.pivot_table(index=["seed", "step"], columns="layer", values="resid_var")


def last_layer_end(source: CommittedRuns, runs: Recipe, role: str) -> pd.Series:
    """The last layer's variance at the last logged step, by seed."""
    table = variance_table(source, runs, role)
    if table.empty:
        return pd.Series(dtype=float)
    return table.groupby(level="seed").tail(1).droplevel("step").iloc[:, -1]


def deep_after_warmup(source: CommittedRuns, runs: Recipe, role: str, deep_layers: int, warmup_fraction: float) -> pd.Series:
    """The deep layers' (the last `deep_layers`) mean variance at the end over its value at the
    first logged step at or after warmup (a `warmup_fraction` of the last logged step), by seed."""
    table = variance_table(source, runs, role)
    if table.empty:
        return pd.Series(dtype=float)
    out = {}
    for seed, rows in table.groupby(level="seed"):
        deep = rows.droplevel("seed").iloc[:, -deep_layers:].mean(axis=1)
        steps = deep.index.to_numpy()
        warm = steps[steps >= warmup_fraction * steps[-1]][0]
        out[seed] = deep.iloc[-1] / deep.loc[warm]
    return pd.Series(out, dtype=float)


def deep_half(source: CommittedRuns, runs: Recipe, role: str, score: str) -> pd.Series:
    """Fig. 7's statistic over the deeper half of blocks (L/2 + 1 .. L), by seed: `score` is
    "drop" (mean loss increase when the block is removed) or "adjacent" (mean angular distance
    between a block's input and output, arccos/pi)."""
    experiment, variant = runs.of(role)
    found = load_analyses(source.analyses / experiment, [variant])
    out = {}
    for (_, seed), analysis in found.items():
        values = analysis.removal.loss_increase if score == "drop" else adjacent_distances(analysis.angular)
        values = np.asarray(values, float)
        out[seed] = float(values[len(values) // 2:].mean())
    return pd.Series(out, dtype=float).sort_index()


# ---------------------------------------------------------------- one claim under two recipes
@dataclass(frozen=True)
class Statistic:
    """How a claim is measured on one recipe's runs: `effect` judges the claim on them (our effect
    with its interval), `per_seed` gives the per-seed value the recipes are compared on."""

    name: str  # what the number is, in words (a table's column)
    scale: str  # ratio | difference
    paper: float | None  # the paper's value of the effect; None where it states only a direction
    effect: Callable[[CommittedRuns, Recipe], Verdict]
    per_seed: Callable[[CommittedRuns, Recipe], pd.Series]
    side: int = 0  # with no paper value: +1 the paper's effect lies above no effect, -1 below

    def distance(self, values: pd.Series) -> pd.Series:
        """Each value's distance from the paper's: |log(value / paper)| for a ratio, |value - paper|
        for a difference."""
        if self.scale == "ratio":
            return np.log(values / self.paper).abs()
        return (values - self.paper).abs()


Value = Callable[[CommittedRuns, Recipe, str], pd.Series]  # a per-seed value of one role's runs


def paired(value: Value, top: str, bottom: str, name: str, paper: float | None, scale: str = "ratio",
           higher_is_better: bool = False, side: int = 0) -> Statistic:
    """One role's per-seed value against another's, paired by seed: their ratio (e.g. LNS's
    perplexity over Pre-LN's) or difference; the claim holds when `top` is the better."""
    def effect(source: CommittedRuns, runs: Recipe) -> Verdict:
        return compare(value(source, runs, top), value(source, runs, bottom), higher_is_better=higher_is_better,
                       scale=scale, paper=paper)

    def per_seed(source: CommittedRuns, runs: Recipe) -> pd.Series:
        a, b = value(source, runs, top), value(source, runs, bottom)
        return (a / b if scale == "ratio" else a - b).dropna()

    return Statistic(name, scale, paper, effect, per_seed, side)


def level(value: Value, role: str, name: str, paper: float | None, null: float = 1.0, side: int = 0) -> Statistic:
    """One role's per-seed value as a ratio to `null` (above 1: it grows; with null = the paper's
    value, ours over the paper's); `paper` is the paper's value of the ratio."""
    def effect(source: CommittedRuns, runs: Recipe) -> Verdict:
        return one_sample(value(source, runs, role), null=null, scale="ratio",
                          paper=None if paper is None else paper * null)

    def per_seed(source: CommittedRuns, runs: Recipe) -> pd.Series:
        return value(source, runs, role).dropna()

    return Statistic(name, "ratio", paper, effect, per_seed, side)


@dataclass(frozen=True)
class RecipeTest:
    """One recipe of the authors' set against cod's on one claim."""

    departure: str  # the departure tested, in words
    claim: str  # the claim of the paper it bears on, in words
    statistic: Statistic
    cod: Recipe  # the runs of cod's recipe
    released: Recipe  # the runs of the authors' recipe (or one departure of it)

    def judge(self, source: CommittedRuns) -> tuple[Verdict, Verdict, Verdict]:
        """(our effect under cod's recipe, under the authors', and whether the authors' recipe
        moves it toward the paper's value), each by the package's rule."""
        ours, theirs = self.statistic.effect(source, self.cod), self.statistic.effect(source, self.released)
        return ours, theirs, self.toward_paper(source, ours)

    def toward_paper(self, source: CommittedRuns, ours: Verdict) -> Verdict:
        """compare() paired by seed of the authors' recipe against cod's: of each seed's distance
        from the paper's value (smaller is toward it), or, where the paper states only a direction,
        of the per-seed statistic on that side."""
        statistic = self.statistic
        cod, released = statistic.per_seed(source, self.cod), statistic.per_seed(source, self.released)
        if ours.effect is None:  # cod's own runs are missing: nothing to move from
            return compare(released, pd.Series(dtype=float), scale=statistic.scale)
        if statistic.paper is None:
            return compare(released, cod, higher_is_better=statistic.side > 0, scale=statistic.scale)
        return compare(statistic.distance(released), statistic.distance(cod), scale="difference")

    def row(self, source: CommittedRuns) -> dict:
        """The departure's line of the table: the paper's value, ours under both recipes, the move."""
        ours, theirs, move = self.judge(source)
        return {"departure": self.departure, "claim": self.claim, "statistic": self.statistic.name,
                "paper": "a direction" if self.statistic.paper is None else f"{self.statistic.paper:.3g}",
                "cod": _cell(ours), "released": _cell(theirs, self.statistic.per_seed(source, self.released)),
                "moved toward the paper": move.verdict if move.n else "not run", "move": _cell(move)}


def _cell(v: Verdict, per_seed: pd.Series | None = None) -> str:
    """'effect [low, high] (n=K)'; one seed's value where a single seed gives no interval."""
    if v.effect is None and per_seed is not None and len(per_seed) == 1:
        return f"{per_seed.iloc[0]:.3g} (n=1, no interval)"
    if v.effect is None:
        return f"n={v.n or 0}"
    return f"{v.effect:.3g} [{v.ci[0]:.3g}, {v.ci[1]:.3g}] (n={v.n})"
