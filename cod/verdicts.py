"""The one verdict rule of the package, and the ledger of claims each notebook writes.

The rule, stated in every notebook before its numbers:

* A claim is decided by a **95% confidence interval on its effect over seeds** (level
  ALPHA = 0.05). "a is better than b" (`compare`): the paired Student-t interval of the
  per-seed differences when two or more seeds have both sides, Welch's t interval of the two
  samples otherwise (two or more seeds each). "A per-seed statistic lies above / below its null
  value" (`one_sample`): the one-sample t interval of its mean. "A value rises / falls along an
  ordered ladder" (`monotone`): per seed, the least-squares slope of the value against the rung
  index; the one-sample t interval of the mean slope. Positive quantities (perplexities,
  variances: scale "ratio") are compared on log values and reported as ratios; others (scale
  "difference") as differences.
* **reproduced** when the interval lies entirely on the paper's side of no effect (a
  difference of 0, a ratio of 1) and the gap of the means exceeds any stated noise floor (e.g.
  twice the binomial standard error of a difference of accuracies, `accuracy_floor`); **not
  reproduced** when it lies entirely on the other side, with the same floor; **inconclusive at
  this scale** otherwise, with fewer than two seeds, or with an interval of zero width at no
  effect. With no effect and normal noise a claim is called either way in 5% of cases
  (`tests/test_verdicts.py` measures it).
* "`best` beats every other entry" (`best_of`): reproduced when it beats each by `compare` (an
  intersection-union test: still 5%); not reproduced when one beats it at level
  ALPHA / (number of others) (Bonferroni); inconclusive otherwise.
* **beyond reach**: a floor test, stated before any comparison, finds the miniature where the
  claim cannot show: every compared model within two binomial standard errors of chance
  accuracy (`accuracy_at_chance`), no block useful (`usefulness_at_floor`), attention entropy
  within 1% of uniform (`attention_near_uniform`), every run stopped as diverged by the trainer
  (`diverged`), or a regime named in words (`beyond_reach`).
* **not run**: a claim with no runs on one side at this profile (a profile that trains only some
  of the paper's settings) is not judged: `Claims` leaves it out of claims.json and names it;
  `best_of` compares only the entries that have runs.

Every verdict reports our effect and its interval beside the paper's (`effect_text`), e.g.
"ratio 0.987 [0.975, 0.999] (paper 0.964)". A failed run enters with its perplexity raised to
the failure line's at least (`cod.compare.mark_failed`: no better than the unigram model); an
infinite value still passed is clipped to the largest finite value of the values judged (-inf
to the smallest), so a failed run counts as the worst run that did not fail. Theory checks
(`cod.theory.claims`) keep holds / holds loosely / fails with their stated tolerances.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
# stdtrit: the t distribution's quantile, what scipy.stats.t.ppf calls (scipy.stats takes a second to import)
from scipy.special import stdtrit

from cod.registry import ClaimEntry, load_registry
from cod.results import save_claims

ALPHA = 0.05
REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, BEYOND_REACH = "reproduced", "not reproduced", "inconclusive", "beyond reach"
NOT_RUN = "not run"  # no runs at this profile: never a verdict in claims.json
SCALES = ("ratio", "difference")


@dataclass(frozen=True)
class Verdict:
    verdict: str  # reproduced | not reproduced | inconclusive | beyond reach (theory: holds | holds loosely | fails)
    why: str  # the numbers that decided it
    mean: float | None = None  # our value: mean over seeds (of the claim's subject)
    spread: float | None = None  # its standard deviation over seeds
    n: int | None = None  # seeds (or measurements) behind it
    effect: float | None = None  # ours: a ratio or a difference (see `scale`)
    ci: tuple[float, float] | None = None  # its confidence interval at `level`
    scale: str | None = None  # ratio | difference
    level: float | None = None  # confidence level of `ci`
    paper_effect: float | None = None  # the same quantity from the paper's numbers


def t_interval(x: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and Student-t interval (level 1 - alpha) of the mean over the last axis of x."""
    x = np.asarray(x, float)
    n = x.shape[-1]
    mean = x.mean(axis=-1)
    half = stdtrit(n - 1, 1 - alpha / 2) * x.std(axis=-1, ddof=1) / math.sqrt(n)
    return mean, mean - half, mean + half


def welch_interval(x: np.ndarray, y: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Difference of the means of x and y (over their last axes) and its Welch t interval."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    nx, ny = x.shape[-1], y.shape[-1]
    vx, vy = x.var(axis=-1, ddof=1) / nx, y.var(axis=-1, ddof=1) / ny
    se = np.sqrt(vx + vy)
    with np.errstate(invalid="ignore", divide="ignore"):  # both samples constant: no df, zero width
        df = (vx + vy) ** 2 / (vx**2 / (nx - 1) + vy**2 / (ny - 1))
        half = np.where(se > 0, stdtrit(df, 1 - alpha / 2) * se, 0.0)
    diff = x.mean(axis=-1) - y.mean(axis=-1)
    return diff, diff - half, diff + half


def ladder_slopes(y: np.ndarray) -> np.ndarray:
    """Least-squares slope of y (..., rungs, seeds) against the rung index 0..k-1, per seed."""
    y = np.asarray(y, float)
    x = np.arange(y.shape[-2]) - (y.shape[-2] - 1) / 2
    return np.einsum("k,...ks->...s", x, y) / (x @ x)


def decide(low: np.ndarray, high: np.ndarray, sign: int) -> np.ndarray:
    """The verdict of an interval on an effect the paper puts on the side `sign` (+1 / -1) of zero."""
    near, far = np.minimum(sign * low, sign * high), np.maximum(sign * low, sign * high)
    return np.where(near > 0, REPRODUCED, np.where(far < 0, NOT_REPRODUCED, INCONCLUSIVE))


def effect_text(verdict: Verdict, name: str | None = None) -> str:
    """'ratio 0.987 [0.975, 0.999] (paper 0.964)': our effect, its interval and the paper's."""
    if verdict.effect is None:
        return "no effect measured"
    fmt = "{:.4g}" if verdict.scale == "ratio" else "{:+.4g}"
    low, high = verdict.ci
    text = f"{name or verdict.scale} {fmt.format(verdict.effect)} [{fmt.format(low)}, {fmt.format(high)}]"
    if verdict.level is not None and not math.isclose(verdict.level, 1 - ALPHA):
        text += f" ({verdict.level:.1%} CI)"
    return text + (f" (paper {fmt.format(verdict.paper_effect)})" if verdict.paper_effect is not None else "")


def _check_scale(scale: str) -> None:
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r} is not allowed; allowed: {SCALES}")


def _clip(*values: pd.Series | pd.DataFrame) -> list:
    """The values with +inf / -inf clipped to the largest / smallest finite value of all of them."""
    finite = np.concatenate([np.asarray(v, float).ravel() for v in values])
    finite = finite[np.isfinite(finite)]
    return [v.clip(finite.min(), finite.max()) for v in values]


def _log(values, scale: str):
    """The values the interval is computed on: log values on the ratio scale."""
    if scale == "difference":
        return values
    if (np.asarray(values, float) <= 0).any():
        raise ValueError(f"scale='ratio' needs positive values, got {np.asarray(values, float).min():.4g}; "
                         "use scale='difference'")
    return np.log(values)


def _effect(est: float, low: float, high: float, scale: str) -> tuple[float, tuple[float, float]]:
    """Effect and interval back from the log scale on the ratio scale."""
    back = math.exp if scale == "ratio" else float
    return back(est), (back(low), back(high))


def _paper_effect(paper: tuple[float, float] | float | None, scale: str) -> float | None:
    """The paper's effect: a / b (ratio) or a - b (difference) of `paper = (a, b)`, or as given."""
    if paper is None:
        return None
    if isinstance(paper, tuple):
        a, b = map(float, paper)
        return a / b if scale == "ratio" else a - b
    return float(paper)


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


def _failed_text(*values: pd.Series | pd.DataFrame) -> str:
    failed = sum(int((~np.isfinite(np.asarray(v, float))).sum()) for v in values)
    return f"; {failed} infinite value(s) (failed runs) clipped to the finite range" if failed else ""


def _floor_text(gap: float, floor: float) -> str:
    return f"; gap of the means {gap:.3g} vs noise floor {floor:.3g}" if floor else ""


def compare(a: pd.Series, b: pd.Series, higher_is_better: bool = False, floor: float = 0.0, scale: str = "ratio",
            paper: tuple[float, float] | float | None = None, alpha: float = ALPHA) -> Verdict:
    """The verdict on "a is better than b", both indexed by seed: the paired t interval of the
    per-seed differences (log ratios on the ratio scale) when two or more seeds pair, else Welch's
    interval; `paper` = (paper's a, paper's b) or the paper's effect; `floor` on the gap of the means."""
    _check_scale(scale)
    a, b = a.dropna().astype(float), b.dropna().astype(float)
    common = a.index.intersection(b.index)
    paired = len(common) >= 2
    side_a, side_b = (a[common], b[common]) if paired else (a, b)
    n = len(common) if paired else min(len(a), len(b))
    mean, spread, _ = _stats(side_a)
    kept = dict(scale=scale, level=1 - alpha, paper_effect=_paper_effect(paper, scale))
    if n < 2:
        return Verdict(INCONCLUSIVE, f"too few seeds for the rule: n={n}", mean, spread, n, **kept)
    if not np.isfinite(pd.concat([side_a, side_b])).any():
        return Verdict(INCONCLUSIVE, "no finite value: every run failed", mean, spread, n, **kept)
    clipped_a, clipped_b = _clip(side_a, side_b)
    log_a, log_b = _log(clipped_a, scale), _log(clipped_b, scale)
    better = "higher" if higher_is_better else "lower"
    if paired:
        est, low, high = t_interval((log_a - log_b).to_numpy(), alpha)
        wins = int(((clipped_a > clipped_b) if higher_is_better else (clipped_a < clipped_b)).sum())
        how = f"the first {better} in {wins}/{n} paired seeds"
    else:
        est, low, high = welch_interval(log_a.to_numpy(), log_b.to_numpy(), alpha)
        how = f"Welch's interval over {len(a)} and {len(b)} unpaired seeds"
    sign = 1 if higher_is_better else -1
    gap = float(clipped_a.mean() - clipped_b.mean())
    verdict = INCONCLUSIVE if floor and abs(gap) <= floor else str(decide(low, high, sign))
    effect, ci = _effect(est, low, high, scale)
    v = Verdict(verdict, "", mean, spread, n, effect, ci, **kept)
    why = (f"{effect_text(v)}; {_text(side_a)} vs {_text(side_b)}, {how}"
           f"{_floor_text(gap, floor)}{_failed_text(side_a, side_b)}")
    return replace(v, why=why)


def one_sample(values: pd.Series, null: float | None = None, higher_is_better: bool = True,
               scale: str = "difference", paper: float | None = None, why: str = "",
               alpha: float = ALPHA) -> Verdict:
    """The verdict on "the per-seed statistic `values` lies above (higher_is_better) / below
    `null`" (default 0, or 1 on the ratio scale): the one-sample t interval of its mean (of its
    log on the ratio scale); `paper` is the paper's value of the statistic."""
    _check_scale(scale)
    null = null if null is not None else (1.0 if scale == "ratio" else 0.0)
    values = values.dropna().astype(float)
    mean, spread, n = _stats(values)
    paper_effect = None if paper is None else float(paper / null if scale == "ratio" else paper - null)
    kept = dict(scale=scale, level=1 - alpha, paper_effect=paper_effect)
    suffix = f"; {why}" if why else ""
    if n < 2:
        return Verdict(INCONCLUSIVE, f"too few seeds for the rule: n={n}{suffix}", mean, spread, n, **kept)
    if not np.isfinite(values).any():
        return Verdict(INCONCLUSIVE, f"no finite value: every run failed{suffix}", mean, spread, n, **kept)
    (clipped,) = _clip(values)
    shift = math.log(null) if scale == "ratio" else null
    est, low, high = t_interval(_log(clipped, scale).to_numpy() - shift, alpha)
    effect, ci = _effect(est, low, high, scale)
    v = Verdict(str(decide(low, high, 1 if higher_is_better else -1)), "", mean, spread, n, effect, ci, **kept)
    side = int(((clipped > null) if higher_is_better else (clipped < null)).sum())
    name = f"ratio to {null:g}" if scale == "ratio" else f"difference from {null:g}"
    text = (f"{effect_text(v, name)}; {_text(values)}, {'above' if higher_is_better else 'below'} {null:g} in "
            f"{side}/{n} seeds{_failed_text(values)}{suffix}")
    return replace(v, why=text)


def _paper_per_rung(paper: Sequence[float] | float | None, scale: str) -> float | None:
    """The paper's per-rung effect: the slope of its values per rung (as `monotone`), or as given."""
    if paper is None or np.isscalar(paper):
        return None if paper is None else float(paper)
    slope = float(ladder_slopes(_log(np.asarray(paper, float)[:, None], scale))[0])
    return math.exp(slope) if scale == "ratio" else slope


def monotone(values: pd.DataFrame, sign: int, floor: float = 0.0, scale: str = "ratio",
             paper: Sequence[float] | float | None = None, alpha: float = ALPHA) -> Verdict:
    """The verdict on "the value rises (sign +1) / falls (-1) along an ordered ladder": `values`
    has the rungs as rows, in order, and seeds as columns (a seed counts when present on every
    rung). Per seed, the least-squares slope of the value (log value on the ratio scale) against
    the rung index; the one-sample t interval of the mean slope against 0, reported per rung (a
    ratio or a difference); `floor` on the gap of the last and first rungs' means; `paper` is
    the paper's value per rung (its slope computed alike) or its per-rung effect."""
    if sign not in (1, -1):
        raise ValueError(f"sign={sign} is not allowed; allowed: 1, -1")
    _check_scale(scale)
    paired = values.dropna(axis=1).astype(float)
    mean, spread, _ = _stats(paired.iloc[-1]) if len(paired) else (None, None, 0)
    n = paired.shape[1]
    kept = dict(scale=scale, level=1 - alpha, paper_effect=_paper_per_rung(paper, scale))
    if len(paired) < 2 or n < 2:
        why = f"too few seeds for the rule: n={n} on {len(paired)} rungs"
        return Verdict(INCONCLUSIVE, why, mean, spread, n, **kept)
    if not np.isfinite(paired.to_numpy()).any():
        return Verdict(INCONCLUSIVE, "no finite value: every run failed", mean, spread, n, **kept)
    (clipped,) = _clip(paired)
    est, low, high = t_interval(ladder_slopes(_log(clipped, scale).to_numpy()), alpha)
    gap = float(clipped.iloc[-1].mean() - clipped.iloc[0].mean())
    verdict = INCONCLUSIVE if floor and abs(gap) <= floor else str(decide(low, high, sign))
    effect, ci = _effect(est, low, high, scale)
    v = Verdict(verdict, "", mean, spread, n, effect, ci, **kept)
    order = pd.Series(np.arange(len(clipped)), index=clipped.index, dtype=float)
    with warnings.catch_warnings(action="ignore"):  # a constant seed has no rank correlation: NaN
        rho = [clipped[seed].rank().corr(order) for seed in clipped.columns]
    why = (f"{effect_text(v, f'{scale} per rung')} over {n} seeds; Spearman rho with the order "
           f"{' < '.join(map(str, values.index))} per seed {', '.join(f'{r:+.2f}' for r in rho)}; "
           f"{values.index[-1]} {_text(paired.iloc[-1])} vs {values.index[0]} {_text(paired.iloc[0])}"
           f"{_floor_text(gap, floor)}{_failed_text(paired)}")
    return replace(v, why=why)


def _margin(v: Verdict, sign: int) -> float:
    """How far `v`'s interval lies on the claimed side of no effect (negative: it reaches across)."""
    if v.ci is None:
        return -math.inf
    null = 1.0 if v.scale == "ratio" else 0.0
    return min(sign * (v.ci[0] - null), sign * (v.ci[1] - null))


def too_few_rivals(values: dict[str, pd.Series], best: str, least: int = 2) -> str | None:
    """Why "`best` beats every other entry" is not judged when fewer than `least` other entries
    have runs (one rival is a pairwise claim, judged as such), else None; for `Claims.add`."""
    rivals = [name for name in values if name != best and values[name].notna().any()]
    if len(rivals) >= least:
        return None
    return (f"only {', '.join(rivals) or 'no other entry'} trained beside {best} at this size: a best-of claim "
            f"needs {least} rivals")


def best_of(values: dict[str, pd.Series], best: str, higher_is_better: bool = False,
            floors: dict[str, float] | None = None, scale: str = "ratio",
            paper: dict[str, Any] | pd.Series | None = None) -> Verdict:
    """The verdict on "`best` beats every other entry": reproduced when it beats each by `compare`
    (with `floors[name]` as that comparison's floor), not reproduced when one beats it by `compare`
    at level ALPHA / (number of others), inconclusive otherwise; the effect reported is against
    the closest rival (`paper`: the paper's value by name)."""
    floors = floors or {}
    papers = pd.to_numeric(pd.Series(paper if paper is not None else {}, dtype=object), errors="coerce").dropna()
    others = [name for name in values if name != best and values[name].notna().any()]  # those with runs
    if not others:
        raise ValueError(f"best_of needs entries with runs other than {best!r}")
    sign = 1 if higher_is_better else -1

    def against(name: str, alpha: float) -> Verdict:
        given = (papers[best], papers[name]) if best in papers and name in papers else None
        return compare(values[best], values[name], higher_is_better, floors.get(name, 0.0), scale, given, alpha)

    at_alpha = {name: against(name, ALPHA) for name in others}
    corrected = {} if all(v.verdict == REPRODUCED for v in at_alpha.values()) else {
        name: against(name, ALPHA / len(others)) for name in others}
    lost = [name for name, v in corrected.items() if v.verdict == NOT_REPRODUCED]
    unclear = [name for name, v in at_alpha.items() if v.verdict != REPRODUCED]
    if not corrected:
        head, shown, names, text = REPRODUCED, at_alpha, others, f"clearly ahead of all {len(others)}"
    elif lost:
        head, shown, names, text = NOT_REPRODUCED, corrected, lost, f"beaten clearly by {', '.join(lost)}"
    else:
        head, shown, names, text = INCONCLUSIVE, at_alpha, unclear, f"not clearly ahead of {', '.join(unclear)}"
    closest = min(names, key=lambda name: _margin(shown[name], sign))
    v = shown[closest]
    mean, spread, n = _stats(values[best].dropna().astype(float))
    return replace(v, verdict=head, why=f"{text}; against {closest}: {v.why}", mean=mean, spread=spread, n=n)


def _named(values: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:.4g}" for name, value in values.items())


def accuracy_at_chance(accuracies: dict[str, pd.Series], chance: float, n_items: int) -> Verdict | None:
    """Beyond reach when every compared model's mean accuracy over seeds (fractions or percents,
    as `chance`) lies within two binomial standard errors (at chance, on `n_items` items) of chance."""
    means = {name: float(v.dropna().mean()) for name, v in accuracies.items()}
    unit = 100.0 if max([chance, *means.values()]) > 1.0 else 1.0
    band = 2 * accuracy_se(chance / unit, n_items) * unit
    if not all(chance - band <= m <= chance + band for m in means.values()):
        return None
    return Verdict(BEYOND_REACH, f"accuracy at chance: {_named(means)} all within 2 binomial SE ({band:.3g}) of "
                                 f"chance {chance:g} on {n_items} items", n=len(means))


def usefulness_at_floor(max_loss_rise: dict[str, float | pd.Series], tau: float | None) -> Verdict | None:
    """Beyond reach when no block of any compared model is useful: each model's largest relative
    loss rise from an affine replacement (per seed or one number) at most `tau`; with tau None,
    the values are usefulness fractions, and beyond reach means all zero."""
    largest = {name: float(np.nanmax(np.asarray(v, float))) for name, v in max_loss_rise.items()}
    if not all(value <= (tau or 0.0) for value in largest.values()):
        return None
    what = (f"largest loss rise from an affine replacement {_named(largest)}, none above tau = {tau:g}"
            if tau is not None else f"usefulness {_named(largest)}")
    return Verdict(BEYOND_REACH, f"no block useful: {what}", n=len(largest))


def attention_near_uniform(entropy_ratio: dict[str, float | pd.Series], margin: float = 0.01) -> Verdict | None:
    """Beyond reach when every compared model's attention entropy (as a fraction of the uniform
    distribution's, mean over seeds) is within `margin` of 1: attention too flat to show sparsity."""
    ratios = {name: float(np.nanmean(np.asarray(v, float))) for name, v in entropy_ratio.items()}
    if not all(r >= 1 - margin for r in ratios.values()):
        return None
    return Verdict(BEYOND_REACH, f"attention near uniform: entropy / uniform entropy {_named(ratios)}, all within "
                                 f"{margin:.0%} of 1", n=len(ratios))


def diverged(final: pd.DataFrame) -> Verdict | None:
    """Beyond reach when the trainer stopped every run of `final` (`cod.results.load_final`) as
    diverged (status 'diverged'; a run merely above the failure line does not count)."""
    if final.empty or not (final["status"] == "diverged").all():
        return None
    runs = ", ".join(f"{variant} s{seed}" for variant, seed in zip(final["variant"], final["seed"]))
    return Verdict(BEYOND_REACH, f"diverged: the trainer stopped every run ({runs}) as diverged", n=len(final))


def beyond_reach(why: str, mean: float | None = None, n: int | None = None) -> Verdict:
    """Beyond reach because the claim concerns a regime the miniature cannot reach (`why` says which)."""
    return Verdict(BEYOND_REACH, f"beyond this scale: {why}", mean, None, n)


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
    (checked by `cod.results.save_claims`) and returns the table for display.

    A claim is the paper's, as the registry (`cod/registry.yaml`) states it: a row takes its item,
    paraphrase, paper numbers and source (the paper's claim, or a reading of ours) from the
    registry entry of its id, and keeps the notebook's own wording as `test` (how the claim is
    measured here). An id the registry lacks is refused. A claim whose `verdict` is a string
    instead (why it cannot be judged here, e.g. `cod.ladder.Ladder.lacks`) is not judged: `save`
    prints it in its line of skipped claims."""

    def __init__(self, paper: str, profile: str, seeds: list[int] | None = None):
        self.paper, self.profile, self.seeds, self.rows = paper, profile, seeds, []
        self.skipped: dict[str, str] = {}

    def add(self, id_: str, item: str, claim: str, paper_value: Any, verdict: Verdict | str) -> Verdict:
        """Record the claim; one given a reason instead of a verdict, or with no runs on one side at
        this profile (n = 0), is only named, as not run (the returned verdict says why)."""
        entry = registered(id_, self.profile)
        if entry is None:
            raise KeyError(f"claim {id_!r} is not in cod/registry.yaml: register it from the paper's text first")
        if entry.paper != self.paper:
            raise ValueError(f"claim {id_!r}: paper {self.paper!r} here, {entry.paper!r} in cod/registry.yaml")
        if isinstance(verdict, Verdict) and verdict.n == 0:
            verdict = f"no runs at the {self.profile} profile"
        if isinstance(verdict, str):
            self.skipped[id_] = verdict
            return Verdict(NOT_RUN, verdict)
        result = asdict(verdict)
        ci = result.pop("ci") or (None, None)
        numbers = dict(entry.paper_numbers) if entry.paper_numbers else paper_value
        self.rows.append({"id": id_, "paper": entry.paper, "item": entry.item, "claim": entry.claim,
                          "source": "ours" if entry.ours else "paper", "test": f"{item}: {claim}",
                          "paper_value": numbers, "ours": result.pop("why"), **result, "ci_low": ci[0],
                          "ci_high": ci[1], "profile": self.profile,
                          **({"seeds": self.seeds} if self.seeds is not None else {})})
        return verdict

    def save(self, figures_dir: str | Path) -> pd.DataFrame:
        save_claims(figures_dir, self.rows)
        if self.skipped:
            print("not judged: " + "; ".join(f"{id_} ({why})" for id_, why in self.skipped.items()))
        return pd.DataFrame(self.rows, columns=["id", "source", "paper_value", "ours", "verdict"])


class SizeClaims:
    """The claims of one figure (`item`) judged at several model sizes, recorded in `claims`, of
    which the paper shows one size (`paper_size`). A claim's id reads PREFIX-KEY-SIZE (the size in
    lower case); at any other size its wording is marked "(ours)" and its paper value says the
    paper has no figure of that size. Verdicts are kept by size for the generated text."""

    def __init__(self, claims: Claims, prefix: str, item: str, paper_size: str = "130M"):
        self.claims, self.prefix, self.item, self.paper_size = claims, prefix, item, paper_size
        self.by_size: dict[str, dict[str, Verdict]] = {}  # size -> {claim id: verdict}, in the order added

    def id_of(self, size: str, key: str) -> str:
        """The id of claim KEY at `size`."""
        return f"{self.prefix}-{key}-{size.lower()}"

    def add(self, size: str, key: str, text: str, paper_value: str, ours: str, verdict: Verdict) -> Verdict:
        """Record claim KEY at `size`; `ours` (its per-seed summary) goes before the rule's numbers."""
        marked = ""
        if size != self.paper_size:
            paper_value = f"no {size} figure in the paper; {paper_value}"
            marked = "(ours) "
        id_ = self.id_of(size, key)
        added = self.claims.add(id_, self.item, f"{marked}{size}: {text}", paper_value,
                                replace(verdict, why=f"{ours}; {verdict.why}"))
        self.by_size.setdefault(size, {})[id_] = added
        return added

    def verdict(self, size: str, key: str) -> str:
        """The verdict of claim KEY at `size`."""
        return self.by_size[size][self.id_of(size, key)].verdict

    def summary(self, left_out: Sequence[str] = ()) -> str:
        """Markdown: a line per size with its seeds and each claim's verdict, then the sizes
        `left_out` (not analysed) if any."""
        lines = [f"**{size}** ({next(iter(at.values())).n} seeds): "
                 + "; ".join(f"{id_}: *{verdict.verdict}*" for id_, verdict in at.items()) + "."
                 for size, at in self.by_size.items()]
        if left_out:
            lines.append(f"Not analysed yet, so not judged: {', '.join(left_out)}.")
        return "\n\n".join(lines)


@functools.cache
def registry() -> dict[str, ClaimEntry]:
    """The claims registry, read once per process."""
    return load_registry()


def registered(id_: str, profile: str) -> ClaimEntry | None:
    """The registry entry of claim `id_`. An id `STEM:SETTING` names one measurement setting of
    the claim STEM (an evaluation length, a model): the registry lists the `default` profile's
    settings, so under another profile an unlisted setting takes the entry of STEM's first listed one."""
    entries = registry()
    if id_ in entries or profile == "default" or ":" not in id_:
        return entries.get(id_)
    stem = id_.split(":")[0]
    return next((entry for key, entry in entries.items() if key.split(":")[0] == stem and ":" in key), None)
