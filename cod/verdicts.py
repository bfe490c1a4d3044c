"""The one verdict rule of the package, and the ledger of claims each notebook writes.

The rule, stated in every notebook before its numbers:

* **reproduced**: the paper's direction holds in every seed, and the effect (the gap between
  the seed means) exceeds the seed spread (the larger standard deviation over seeds of the
  two sides) and any stated noise floor, e.g. twice the binomial standard error of a
  difference of accuracies (`accuracy_floor`);
* **not reproduced**: the opposite direction, by the same standard;
* **inconclusive at this scale**: neither; or fewer than two paired seeds; or a claim about a
  regime the miniature cannot reach (`beyond_reach`, which says which).

A claim about one variant ("X grows with depth") is judged seed by seed (`every_seed`): it
is reproduced when it holds in every seed, not reproduced when in none. Theory checks
(`cod.theory.claims`) keep holds / holds loosely / fails with their stated tolerances.
A failed run (diverged, or no better than a unigram model; `cod.compare`) counts as an
infinitely bad value and loses every comparison.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"


@dataclass(frozen=True)
class Verdict:
    verdict: str  # reproduced | not reproduced | inconclusive (theory: holds | holds loosely | fails)
    why: str  # the numbers that decided it
    mean: float | None = None  # our value: mean over seeds (of the claim's subject)
    spread: float | None = None  # its standard deviation over seeds
    n: int | None = None  # seeds (or measurements) behind it


def _stats(values: pd.Series) -> tuple[float | None, float | None, int]:
    finite = values[np.isfinite(values)]
    mean = float(finite.mean()) if len(finite) else None
    spread = float(finite.std()) if len(finite) > 1 else None
    return mean, spread, len(values)


def _text(values: pd.Series) -> str:
    finite = values[np.isfinite(values)]
    failed = len(values) - len(finite)
    text = f"{finite.mean():.4g}" if len(finite) else "failed"
    return text + (f" ({failed} failed)" if failed and len(finite) else "")


def compare(a: pd.Series, b: pd.Series, higher_is_better: bool = False, floor: float = 0.0) -> Verdict:
    """The verdict on "a is better than b", both indexed by seed (only paired seeds count)."""
    a, b = a.align(b, join="inner")
    keep = ~(a.isna() | b.isna())
    a, b = a[keep].astype(float), b[keep].astype(float)
    mean, spread, n = _stats(a)
    if n < 2:
        return Verdict(INCONCLUSIVE, f"{n} paired seed(s)", mean, spread, n)
    wins, losses = (a > b, a < b) if higher_is_better else (a < b, a > b)
    why = (f"{_text(a)} vs {_text(b)}: the first {'higher' if higher_is_better else 'lower'} in "
           f"{int(wins.sum())}/{n} seeds")
    if np.isfinite(a).all() and np.isfinite(b).all():
        gap, seed_std = abs(a.mean() - b.mean()), max(a.std(), b.std())
        clear = gap > max(seed_std, floor)
        why += f"; gap {gap:.3g} vs seed std {seed_std:.3g}" + (f" and noise floor {floor:.3g}" if floor else "")
    else:  # a failed run on one side decides its seed; the gap is infinite
        clear = True
        why += " (failed runs count as infinitely bad)"
    verdict = REPRODUCED if wins.all() and clear else NOT_REPRODUCED if losses.all() and clear else INCONCLUSIVE
    return Verdict(verdict, why, mean, spread, n)


def best_of(values: dict[str, pd.Series], best: str, higher_is_better: bool = False,
            floors: dict[str, float] | None = None) -> Verdict:
    """The verdict on "`best` beats every other entry": reproduced when it beats each by the rule
    (with `floors[name]` as that comparison's floor), not reproduced when any beats it by the
    rule, inconclusive otherwise."""
    floors = floors or {}
    verdicts = {name: compare(values[best], v, higher_is_better, floors.get(name, 0.0)).verdict
                for name, v in values.items() if name != best}
    mean, spread, n = _stats(values[best].dropna().astype(float))
    lost = [name for name, v in verdicts.items() if v == NOT_REPRODUCED]
    unclear = [name for name, v in verdicts.items() if v == INCONCLUSIVE]
    if lost:
        return Verdict(NOT_REPRODUCED, f"beaten clearly by {', '.join(lost)}", mean, spread, n)
    if unclear:
        return Verdict(INCONCLUSIVE, f"not clearly ahead of {', '.join(unclear)}", mean, spread, n)
    return Verdict(REPRODUCED, f"clearly ahead of all {len(verdicts)}", mean, spread, n)


def monotone(values: pd.DataFrame, sign: int, floor: float = 0.0, min_rho: float = 0.8) -> Verdict:
    """The verdict on "the value rises (sign +1) / falls (-1) along an ordered ladder": `values`
    has the rungs as rows, in order, and seeds as columns. Reproduced when, in every seed present
    on every rung, the Spearman correlation with the rung order is at least `min_rho` in that
    direction (0.8 allows one adjacent swap among four rungs) and the last rung beats the first
    in that direction by `compare`; not reproduced when the opposite holds by the same standard;
    inconclusive otherwise, including a value that does not change at all."""
    if sign not in (1, -1):
        raise ValueError(f"sign={sign} is not allowed; allowed: 1, -1")
    paired = values.dropna(axis=1)
    order = pd.Series(np.arange(len(paired)), index=paired.index, dtype=float)
    with warnings.catch_warnings(action="ignore"):  # a constant seed has no rank correlation: NaN
        rho = pd.Series({seed: paired[seed].rank().corr(order, method="pearson") for seed in paired.columns})
    ends = compare(paired.iloc[-1], paired.iloc[0], higher_is_better=sign > 0, floor=floor)
    along, against = (sign * rho >= min_rho - 1e-9), (sign * rho <= -min_rho + 1e-9)
    if len(rho) and along.all() and ends.verdict == REPRODUCED:
        verdict = REPRODUCED
    elif len(rho) and against.all() and ends.verdict == NOT_REPRODUCED:
        verdict = NOT_REPRODUCED
    else:
        verdict = INCONCLUSIVE
    why = (f"Spearman rho with the order {' < '.join(map(str, values.index))} per seed "
           f"{', '.join(f'{r:+.2f}' for r in rho)}; {values.index[-1]} vs {values.index[0]}: {ends.why}")
    return Verdict(verdict, why, ends.mean, ends.spread, ends.n)


def every_seed(flags: pd.Series, why: str = "", values: pd.Series | None = None) -> Verdict:
    """The verdict on a claim about one variant, per seed (`flags`: True where it holds):
    reproduced in every seed, not reproduced in none, inconclusive otherwise or with no seed.
    `values` (per seed) gives the quoted mean and spread."""
    flags = flags.dropna().astype(bool)
    mean, spread, _ = _stats(values.dropna().astype(float)) if values is not None else (None, None, 0)
    text = f"holds in {int(flags.sum())}/{len(flags)} seeds" + (f"; {why}" if why else "")
    if flags.empty:
        return Verdict(INCONCLUSIVE, text, mean, spread, 0)
    verdict = REPRODUCED if flags.all() else NOT_REPRODUCED if not flags.any() else INCONCLUSIVE
    return Verdict(verdict, text, mean, spread, len(flags))


def beyond_reach(why: str, mean: float | None = None, n: int | None = None) -> Verdict:
    """Inconclusive because the claim concerns a regime the miniature cannot reach (`why` says which)."""
    return Verdict(INCONCLUSIVE, f"beyond this scale: {why}", mean, None, n)


def accuracy_se(accuracy: float, n: int) -> float:
    """Binomial standard error of an accuracy (a fraction) measured on n items."""
    return math.sqrt(accuracy * (1 - accuracy) / n) if n else math.nan


def accuracy_floor(a: pd.Series, b: pd.Series, n_items: int | pd.Series) -> float:
    """Twice the binomial standard error of the difference of two seed means of accuracies
    (fractions or percents, as given), each seed measured on `n_items` items."""
    scale = 100.0 if max(a.max(), b.max()) > 1.0 else 1.0
    variance = sum((accuracy_se(v.mean() / scale, int(np.mean(n_items))) * scale) ** 2 / len(v) for v in (a, b))
    return 2 * math.sqrt(variance)


class Claims:
    """The claims one notebook judges: `add` each, then `save` writes figures_dir/claims.json
    (checked by `cod.results.save_claims`) and returns the table for display."""

    def __init__(self, paper: str, profile: str, seeds: list[int] | None = None):
        self.paper, self.profile, self.seeds, self.rows = paper, profile, seeds, []

    def add(self, id_: str, item: str, claim: str, paper_value: Any, verdict: Verdict) -> Verdict:
        result = asdict(verdict)
        self.rows.append({"id": id_, "paper": self.paper, "item": item, "claim": claim, "paper_value": paper_value,
                          "ours": result.pop("why"), **result, "profile": self.profile,
                          **({"seeds": self.seeds} if self.seeds is not None else {})})
        return verdict

    def save(self, figures_dir: str | Path) -> pd.DataFrame:
        from cod.results import save_claims

        save_claims(figures_dir, self.rows)
        return pd.DataFrame(self.rows)[["id", "paper_value", "ours", "verdict"]]
