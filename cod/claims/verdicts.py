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
  this scale** otherwise, with fewer than two seeds, or with an interval of zero width (seeds
  that tie exactly: never decisive). A statistic on a lattice (a share of L layers moves in steps
  of 1/L: `resolution`) is inconclusive when its difference is smaller than one step. With no
  effect and normal noise, or lattice statistics with ties, a claim is called either way in at
  most 5% of cases (`tests/test_verdicts.py` measures it at 2, 3 and 5 seeds).
* "a and b are **comparable**" (`equivalent`; the paper says comparable, similar, on par): two
  one-sided tests at level ALPHA against a margin the registry fixes before any comparison, i.e.
  the 90% interval: reproduced when it lies inside the margin, not reproduced when it lies
  wholly outside it, inconclusive otherwise.
* "`best` beats every other entry" (`best_of`): reproduced when it beats each by `compare` (an
  intersection-union test: still 5%); not reproduced when one beats it at level
  ALPHA / (number of others) (Bonferroni); inconclusive otherwise; its n is the deciding
  comparison's.
* **beyond reach**: a floor test, stated before any comparison, finds the miniature where the
  claim cannot show: every compared model within two binomial standard errors of chance
  accuracy (`accuracy_at_chance`), no block useful (`usefulness_at_floor`), attention entropy
  within 1% of uniform (`attention_near_uniform`), every run stopped as diverged by the trainer
  (`diverged`), a regime named in words (`beyond_reach`), or a treatment claim whose premise the
  baseline does not show (the registry's `premise`, judged by this rule first: a claim that a
  treatment suppresses a growth is not judged where the baseline does not grow).
* **not run**: a claim with no runs on one side at this profile (a profile that trains only some
  of the paper's settings) is not judged: `Claims` leaves it out of claims.json and names it;
  `best_of` compares only the entries that have runs.
* **Power.** Every interval comes with the smallest effect the design detects with 80% power
  (`detectable`: the noncentral t at the observed seed spread and the same n), in the claim's
  units beside the paper's effect; an inconclusive row states it ("80% power at ratio 0.979,
  the paper's 0.964"), and the scoreboard counts the inconclusives powered to see the paper's
  effect apart from those that were not.
* **Free choices.** Where the analysis makes a choice the paper does not fix (a layer group, a
  window, a threshold), the registry names it with its value and neighbouring values, and each
  claim is judged again at every neighbour: its row says "robust" or names the choice its
  verdict depends on.

Every verdict reports our effect and its interval beside the paper's (`effect_text`), e.g.
"ratio 0.987 [0.975, 0.999] (paper 0.964)". A failed run enters with its perplexity raised to
the failure line's at least (`cod.claims.tables.mark_failed`: no better than the unigram model); an
infinite value still passed is clipped to the largest finite value of the values judged (-inf
to the smallest), so a failed run counts as the worst run that did not fail. Theory checks
(`cod.theory.checks`) keep holds / holds loosely / fails with their stated tolerances.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
# stdtrit: the t distribution's quantile, what scipy.stats.t.ppf calls (scipy.stats takes a second to import);
# nctdtrinc: the noncentral t's noncentrality at a given probability; chdtri, ndtr: chi-square quantile, normal CDF
from scipy.special import chdtri, nctdtrinc, ndtr, stdtrit

from cod.claims.registry import ClaimEntry, load_registry
from cod.records.results import save_claims

ALPHA = 0.05
POWER = 0.8  # the power at which a design's detectable effect is stated
REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, BEYOND_REACH = "reproduced", "not reproduced", "inconclusive", "beyond reach"
NOT_RUN = "not run"  # no runs at this profile: never a verdict in claims.json
SCALES = ("ratio", "difference")
ZERO_WIDTH = 1e-9  # an interval narrower than this fraction of its ends' size has zero width: the seeds tie
LATTICE_SLACK = 1e-9  # a difference within this fraction of one lattice step counts as the step (float rounding)


def rule(ledger: bool = True) -> str:
    """The rule as this module's docstring states it (all but its first line), which every
    notebook prints before its numbers; without `ledger`, up to how a verdict is reported."""
    text = __doc__.split("\n\n", 1)[1]
    return text if ledger else text.split("\n\nEvery verdict")[0]


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
    # the smallest effect the design detects with POWER, in the claim's units on the paper's side (`detectable`);
    # for an equivalence claim, the margin it would show with POWER at no effect (`equivalence_detectable`)
    power_effect: float | None = None
    margin: float | None = None  # an equivalence claim's margin, as registered (a ratio above 1 or a difference)


def t_interval(x: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and Student-t interval (level 1 - alpha) of the mean over the last axis of x."""
    x = np.asarray(x, float)
    n = x.shape[-1]
    mean = x.mean(axis=-1)
    half = stdtrit(n - 1, 1 - alpha / 2) * x.std(axis=-1, ddof=1) / math.sqrt(n)
    return mean, mean - half, mean + half


def welch_se_df(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Standard error of the difference of the means of x and y (over their last axes) and its
    Welch-Satterthwaite degrees of freedom (NaN when both samples are constant)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    vx, vy = x.var(axis=-1, ddof=1) / x.shape[-1], y.var(axis=-1, ddof=1) / y.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        df = (vx + vy) ** 2 / (vx**2 / (x.shape[-1] - 1) + vy**2 / (y.shape[-1] - 1))
    return np.sqrt(vx + vy), df


def welch_interval(x: np.ndarray, y: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Difference of the means of x and y (over their last axes) and its Welch t interval."""
    se, df = welch_se_df(x, y)
    with np.errstate(invalid="ignore"):  # both samples constant: no df, zero width
        half = np.where(se > 0, stdtrit(df, 1 - alpha / 2) * se, 0.0)
    diff = np.asarray(x, float).mean(axis=-1) - np.asarray(y, float).mean(axis=-1)
    return diff, diff - half, diff + half


def ladder_slopes(y: np.ndarray) -> np.ndarray:
    """Least-squares slope of y (..., rungs, seeds) against the rung index 0..k-1, per seed."""
    y = np.asarray(y, float)
    x = np.arange(y.shape[-2]) - (y.shape[-2] - 1) / 2
    return np.einsum("k,...ks->...s", x, y) / (x @ x)


def zero_width(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Whether each interval has zero width (up to float rounding): its seeds tie exactly."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    return (high - low) <= ZERO_WIDTH * np.maximum(np.abs(low), np.abs(high))


def decide(low: np.ndarray, high: np.ndarray, sign: int) -> np.ndarray:
    """The verdict of an interval on an effect the paper puts on the side `sign` (+1 / -1) of zero;
    an interval of zero width is never decisive."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    near, far = np.minimum(sign * low, sign * high), np.maximum(sign * low, sign * high)
    verdict = np.where(near > 0, REPRODUCED, np.where(far < 0, NOT_REPRODUCED, INCONCLUSIVE))
    return np.where(zero_width(low, high), INCONCLUSIVE, verdict)


def below_resolution(difference: np.ndarray, resolution: float | None) -> np.ndarray:
    """Whether a difference of a lattice statistic is smaller than one step `resolution` (None: no lattice)."""
    if resolution is None:
        return np.zeros(np.shape(difference), bool)
    return np.abs(np.asarray(difference, float)) < resolution * (1 - LATTICE_SLACK)


def detectable(se: float, df: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest true effect the rule's two-sided (1 - alpha) t interval with `df` degrees of
    freedom and standard error `se` puts wholly on the effect's side with probability `power`: the
    noncentrality at which a noncentral t(df) exceeds the critical value t(1 - alpha / 2, df) with
    that probability, times se (NaN without a spread or degrees of freedom)."""
    if not (se > 0 and df > 0):
        return math.nan
    return float(nctdtrinc(df, 1 - power, stdtrit(df, 1 - alpha / 2))) * se


EQUIVALENCE_NODES = 2000  # chi-square quantiles the equivalence power is averaged over


def equivalence_power(margin: float, se: float, df: float, alpha: float = ALPHA) -> float:
    """The probability that two one-sided tests at level alpha (the (1 - 2 alpha) t interval inside
    (-margin, margin)) show equivalence when the true effect is 0, for a mean with standard error
    `se` (its estimate has `df` degrees of freedom): the mean over the estimate's chi-square spread
    of P(|mean| < margin - t(1 - alpha, df) x estimated se)."""
    v = chdtri(df, (np.arange(EQUIVALENCE_NODES) + 0.5) / EQUIVALENCE_NODES)  # chi-square(df) quantiles
    reach = margin / se - stdtrit(df, 1 - alpha) * np.sqrt(v / df)
    return float(np.mean(np.clip(2 * ndtr(reach) - 1, 0.0, None)))


def equivalence_detectable(se: float, df: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest margin that two one-sided tests at level alpha show with probability `power`
    when the true effect is 0 (`equivalence_power`), for standard error `se` (NaN without a spread)."""
    if not (se > 0 and df > 0):
        return math.nan
    low, high = 0.0, 1.0
    while equivalence_power(high * se, se, df, alpha) < power:
        high *= 2
    for _ in range(60):  # bisection on the margin in units of se
        middle = (low + high) / 2
        low, high = (middle, high) if equivalence_power(middle * se, se, df, alpha) < power else (low, middle)
    return high * se


def _fmt(scale: str | None) -> str:
    return "{:.4g}" if scale == "ratio" else "{:+.4g}"


def _margin_text(verdict: Verdict) -> str:
    if verdict.scale == "ratio":
        return f"[{1 / verdict.margin:.4g}, {verdict.margin:.4g}]"
    return f"[{-verdict.margin:+.4g}, {verdict.margin:+.4g}]"


def effect_text(verdict: Verdict, name: str | None = None) -> str:
    """'ratio 0.987 [0.975, 0.999] (paper 0.964)': our effect, its interval and the paper's (and
    an equivalence claim's margin)."""
    if verdict.effect is None:
        return "no effect measured"
    fmt = _fmt(verdict.scale)
    low, high = verdict.ci
    text = f"{name or verdict.scale} {fmt.format(verdict.effect)} [{fmt.format(low)}, {fmt.format(high)}]"
    if verdict.level is not None and not math.isclose(verdict.level, 1 - ALPHA):
        text += f" ({verdict.level:.1%} CI)"
    text += f" (paper {fmt.format(verdict.paper_effect)})" if verdict.paper_effect is not None else ""
    return text + (f", margin {_margin_text(verdict)}" if verdict.margin is not None else "")


def _size(value: float, scale: str | None) -> float:
    """How far `value` lies from no effect, on the scale the rule judges (|log| of a ratio)."""
    if scale == "ratio":
        return abs(math.log(value)) if value > 0 else math.inf
    return abs(value)


def powered(verdict: Verdict) -> bool | None:
    """Whether the design could see the paper's effect: its detectable effect at 80% power is no
    larger than the paper's, on the same side (an equivalence claim: the margin it would show at
    80% power lies within the registered margin); None where either is unknown."""
    if verdict.power_effect is None:
        return None
    if verdict.margin is not None:
        return _size(verdict.power_effect, verdict.scale) <= _size(verdict.margin, verdict.scale)
    if verdict.paper_effect is None:
        return None
    null = 1.0 if verdict.scale == "ratio" else 0.0
    same_side = (verdict.paper_effect - null) * (verdict.power_effect - null) > 0
    return bool(same_side and _size(verdict.paper_effect, verdict.scale) >= _size(verdict.power_effect, verdict.scale))


def power_text(verdict: Verdict) -> str:
    """'80% power at ratio 0.979, the paper's 0.9637': what the design could have seen."""
    if verdict.n is None or verdict.n < 2 or verdict.effect is None:
        return "too few seeds to size the design's power"
    if verdict.power_effect is None:
        return "no seed spread to size the design's power"
    fmt = _fmt(verdict.scale)
    if verdict.margin is not None:
        return (f"80% power to show equivalence within {_margin_text(replace(verdict, margin=verdict.power_effect))}"
                f", the registered margin {_margin_text(verdict)}")
    paper = (f", the paper's {fmt.format(verdict.paper_effect)}" if verdict.paper_effect is not None
             else "; no paper effect to set it against")
    return f"80% power at {verdict.scale} {fmt.format(verdict.power_effect)}{paper}"


def _power_effect(delta: float, scale: str, sign: int) -> float | None:
    """A detectable size `delta` (on the log scale for ratios) as an effect on the side `sign`."""
    if not math.isfinite(delta):
        return None
    return math.exp(sign * delta) if scale == "ratio" else sign * delta


def _check_scale(scale: str) -> None:
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r} is not allowed; allowed: {SCALES}")


def _check_resolution(resolution: float | None, scale: str) -> None:
    if resolution is not None and (scale != "difference" or not resolution > 0):
        raise ValueError(f"resolution={resolution!r} with scale={scale!r}: a lattice step must be positive and "
                         "judged on scale='difference'")


def _clip(*values: pd.Series | pd.DataFrame) -> list:
    """The values with +inf / -inf clipped to the largest / smallest finite value of all of them."""
    finite = np.concatenate([np.asarray(v, float).ravel() for v in values])
    finite = finite[np.isfinite(finite)]
    return [v.clip(finite.min(), finite.max()) for v in values]


def _on_scale(values, scale: str):
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


def _ties_text(low: float, high: float) -> str:
    return "; the seeds tie exactly: an interval of zero width is never decisive" if zero_width(low, high) else ""


def _lattice_text(difference: float, resolution: float | None) -> str:
    if not below_resolution(difference, resolution):
        return ""
    return f"; difference {difference:+.4g} smaller than one step of the statistic ({resolution:.4g}): inconclusive"


@dataclass(frozen=True)
class _Difference:
    """The interval of a per-seed difference of a and b (on the log scale for ratios)."""

    est: float
    low: float
    high: float
    se: float
    df: float
    paired: bool
    side_a: pd.Series  # the values judged (the paired seeds when they pair)
    side_b: pd.Series
    clipped_a: pd.Series  # the same, failed runs clipped to the finite range
    clipped_b: pd.Series


def _sides(a: pd.Series, b: pd.Series) -> tuple[pd.Series, pd.Series, bool, int]:
    """The values of a and b judged (the paired seeds when two or more pair), whether they pair, and n."""
    a, b = a.dropna().astype(float), b.dropna().astype(float)
    common = a.index.intersection(b.index)
    if len(common) >= 2:
        return a[common], b[common], True, len(common)
    return a, b, False, min(len(a), len(b))


def _difference(side_a: pd.Series, side_b: pd.Series, paired: bool, scale: str, alpha: float) -> _Difference:
    clipped_a, clipped_b = _clip(side_a, side_b)
    log_a, log_b = _on_scale(clipped_a, scale), _on_scale(clipped_b, scale)
    if paired:
        diffs = (log_a - log_b).to_numpy()
        est, low, high = t_interval(diffs, alpha)
        se, df = diffs.std(ddof=1) / math.sqrt(len(diffs)), len(diffs) - 1
    else:
        est, low, high = welch_interval(log_a.to_numpy(), log_b.to_numpy(), alpha)
        se, df = welch_se_df(log_a.to_numpy(), log_b.to_numpy())
    return _Difference(float(est), float(low), float(high), float(se), float(df), paired, side_a, side_b,
                       clipped_a, clipped_b)


def compare(a: pd.Series, b: pd.Series, higher_is_better: bool = False, floor: float = 0.0, scale: str = "ratio",
            paper: tuple[float, float] | float | None = None, alpha: float = ALPHA,
            resolution: float | None = None) -> Verdict:
    """The verdict on "a is better than b", both indexed by seed: the paired t interval of the
    per-seed differences (log ratios on the ratio scale) when two or more seeds pair, else Welch's
    interval; `paper` = (paper's a, paper's b) or the paper's effect; `floor` on the gap of the
    means; `resolution`: the lattice step of a statistic that moves in steps (a difference smaller
    than one step is inconclusive)."""
    _check_scale(scale)
    _check_resolution(resolution, scale)
    side_a, side_b, paired, n = _sides(a, b)
    mean, spread, _ = _stats(side_a)
    kept = dict(scale=scale, level=1 - alpha, paper_effect=_paper_effect(paper, scale))
    if n < 2:
        return Verdict(INCONCLUSIVE, f"too few seeds for the rule: n={n}", mean, spread, n, **kept)
    if not np.isfinite(pd.concat([side_a, side_b])).any():
        return Verdict(INCONCLUSIVE, "no finite value: every run failed", mean, spread, n, **kept)
    d = _difference(side_a, side_b, paired, scale, alpha)
    better = "higher" if higher_is_better else "lower"
    if paired:
        wins = int(((d.clipped_a > d.clipped_b) if higher_is_better else (d.clipped_a < d.clipped_b)).sum())
        how = f"the first {better} in {wins}/{n} paired seeds"
    else:
        how = f"Welch's interval over {len(a.dropna())} and {len(b.dropna())} unpaired seeds"
    sign = 1 if higher_is_better else -1
    gap = float(d.clipped_a.mean() - d.clipped_b.mean())
    coarse = bool(below_resolution(d.est, resolution))
    verdict = INCONCLUSIVE if (floor and abs(gap) <= floor) or coarse else str(decide(d.low, d.high, sign))
    effect, ci = _effect(d.est, d.low, d.high, scale)
    delta = max(detectable(d.se, d.df, alpha), floor if scale == "difference" else 0.0, resolution or 0.0)
    v = Verdict(verdict, "", mean, spread, n, effect, ci, **kept, power_effect=_power_effect(delta, scale, sign))
    why = (f"{effect_text(v)}; {_text(side_a)} vs {_text(side_b)}, {how}{_floor_text(gap, floor)}"
           f"{_lattice_text(d.est, resolution)}{_ties_text(d.low, d.high)}{_failed_text(side_a, side_b)}")
    return replace(v, why=why)


def equivalent(a: pd.Series, b: pd.Series, margin: float, scale: str = "ratio",
               paper: tuple[float, float] | float | None = None, alpha: float = ALPHA) -> Verdict:
    """The verdict on "a and b are comparable" (indexed by seed) against the registered `margin` (a
    ratio above 1: within [1 / margin, margin]; a positive difference: within [-margin, margin]):
    two one-sided tests at level alpha, i.e. the (1 - 2 alpha) interval of the paired (else Welch)
    difference, reproduced when it lies inside the margin, not reproduced when it lies wholly
    outside it, inconclusive otherwise (and with an interval of zero width)."""
    _check_scale(scale)
    if not (margin > 1 if scale == "ratio" else margin > 0):
        raise ValueError(f"margin={margin!r} is not allowed on scale {scale!r}: "
                         f"{'a ratio above 1' if scale == 'ratio' else 'a positive difference'}")
    side_a, side_b, paired, n = _sides(a, b)
    mean, spread, _ = _stats(side_a)
    kept = dict(scale=scale, level=1 - 2 * alpha, paper_effect=_paper_effect(paper, scale), margin=float(margin))
    if n < 2:
        return Verdict(INCONCLUSIVE, f"too few seeds for the rule: n={n}", mean, spread, n, **kept)
    if not np.isfinite(pd.concat([side_a, side_b])).any():
        return Verdict(INCONCLUSIVE, "no finite value: every run failed", mean, spread, n, **kept)
    d = _difference(side_a, side_b, paired, scale, 2 * alpha)
    bound = math.log(margin) if scale == "ratio" else margin
    if zero_width(d.low, d.high):
        verdict = INCONCLUSIVE
    elif -bound < d.low and d.high < bound:
        verdict = REPRODUCED
    elif d.low > bound or d.high < -bound:
        verdict = NOT_REPRODUCED
    else:
        verdict = INCONCLUSIVE
    effect, ci = _effect(d.est, d.low, d.high, scale)
    shown = equivalence_detectable(d.se, d.df, alpha)
    power_effect = None if not math.isfinite(shown) else (math.exp(shown) if scale == "ratio" else shown)
    v = Verdict(verdict, "", mean, spread, n, effect, ci, **kept, power_effect=power_effect)
    where = {REPRODUCED: "inside", NOT_REPRODUCED: "wholly outside"}.get(verdict, "across the edge of")
    how = "paired seeds" if paired else "Welch's interval, unpaired seeds"
    why = (f"{effect_text(v)}; {_text(side_a)} vs {_text(side_b)} over {n} {how}; two one-sided tests at "
           f"{alpha:.0%}: the interval lies {where} the margin{_ties_text(d.low, d.high)}"
           f"{_failed_text(side_a, side_b)}")
    return replace(v, why=why)


def one_sample(values: pd.Series, null: float | None = None, higher_is_better: bool = True,
               scale: str = "difference", paper: float | None = None, why: str = "",
               alpha: float = ALPHA, resolution: float | None = None) -> Verdict:
    """The verdict on "the per-seed statistic `values` lies above (higher_is_better) / below
    `null`" (default 0, or 1 on the ratio scale): the one-sample t interval of its mean (of its
    log on the ratio scale); `paper` is the paper's value of the statistic; `resolution` its
    lattice step (a mean within one step of the null is inconclusive)."""
    _check_scale(scale)
    _check_resolution(resolution, scale)
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
    logged = _on_scale(clipped, scale).to_numpy() - shift
    est, low, high = t_interval(logged, alpha)
    effect, ci = _effect(est, low, high, scale)
    sign = 1 if higher_is_better else -1
    verdict = INCONCLUSIVE if below_resolution(est, resolution) else str(decide(low, high, sign))
    delta = max(detectable(logged.std(ddof=1) / math.sqrt(n), n - 1, alpha), resolution or 0.0)
    v = Verdict(verdict, "", mean, spread, n, effect, ci, **kept, power_effect=_power_effect(delta, scale, sign))
    side = int(((clipped > null) if higher_is_better else (clipped < null)).sum())
    name = f"ratio to {null:g}" if scale == "ratio" else f"difference from {null:g}"
    text = (f"{effect_text(v, name)}; {_text(values)}, {'above' if higher_is_better else 'below'} {null:g} in "
            f"{side}/{n} seeds{_lattice_text(float(est), resolution)}{_ties_text(low, high)}"
            f"{_failed_text(values)}{suffix}")
    return replace(v, why=text)


def _paper_per_rung(paper: Sequence[float] | float | None, scale: str) -> float | None:
    """The paper's per-rung effect: the slope of its values per rung (as `monotone`), or as given."""
    if paper is None or np.isscalar(paper):
        return None if paper is None else float(paper)
    slope = float(ladder_slopes(_on_scale(np.asarray(paper, float)[:, None], scale))[0])
    return math.exp(slope) if scale == "ratio" else slope


def monotone(values: pd.DataFrame, sign: int, floor: float = 0.0, scale: str = "ratio",
             paper: Sequence[float] | float | None = None, alpha: float = ALPHA,
             resolution: float | None = None) -> Verdict:
    """The verdict on "the value rises (sign +1) / falls (-1) along an ordered ladder": `values`
    has the rungs as rows, in order, and seeds as columns (a seed counts when present on every
    rung). Per seed, the least-squares slope of the value (log value on the ratio scale) against
    the rung index; the one-sample t interval of the mean slope against 0, reported per rung (a
    ratio or a difference); `floor` on the gap of the last and first rungs' means, and
    `resolution` (a lattice statistic's step) too: a gap smaller than one step is inconclusive;
    `paper` is the paper's value per rung (its slope computed alike) or its per-rung effect."""
    if sign not in (1, -1):
        raise ValueError(f"sign={sign} is not allowed; allowed: 1, -1")
    _check_scale(scale)
    _check_resolution(resolution, scale)
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
    slopes = ladder_slopes(_on_scale(clipped, scale).to_numpy())
    est, low, high = t_interval(slopes, alpha)
    gap = float(clipped.iloc[-1].mean() - clipped.iloc[0].mean())
    coarse = bool(below_resolution(gap, resolution))
    verdict = INCONCLUSIVE if (floor and abs(gap) <= floor) or coarse else str(decide(low, high, sign))
    effect, ci = _effect(est, low, high, scale)
    steps = len(clipped) - 1  # a gap between the ends, per rung of a straight line
    delta = max(detectable(slopes.std(ddof=1) / math.sqrt(n), n - 1, alpha),
                (floor if scale == "difference" else 0.0) / steps, (resolution or 0.0) / steps)
    v = Verdict(verdict, "", mean, spread, n, effect, ci, **kept, power_effect=_power_effect(delta, scale, sign))
    order = pd.Series(np.arange(len(clipped)), index=clipped.index, dtype=float)
    with warnings.catch_warnings(action="ignore"):  # a constant seed has no rank correlation: NaN
        rho = [clipped[seed].rank().corr(order) for seed in clipped.columns]
    why = (f"{effect_text(v, f'{scale} per rung')} over {n} seeds; Spearman rho with the order "
           f"{' < '.join(map(str, values.index))} per seed {', '.join(f'{r:+.2f}' for r in rho)}; "
           f"{values.index[-1]} {_text(paired.iloc[-1])} vs {values.index[0]} {_text(paired.iloc[0])}"
           f"{_floor_text(gap, floor)}{_lattice_text(gap, resolution)}{_ties_text(low, high)}{_failed_text(paired)}")
    return replace(v, why=why)


def _clearance(v: Verdict, sign: int) -> float:
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
            paper: dict[str, Any] | pd.Series | None = None, resolution: float | None = None) -> Verdict:
    """The verdict on "`best` beats every other entry": reproduced when it beats each by `compare`
    (with `floors[name]` as that comparison's floor), not reproduced when one beats it by `compare`
    at level ALPHA / (number of others), inconclusive otherwise; the effect, its interval, n and
    power reported are the deciding comparison's, against the closest rival (`paper`: the paper's
    value by name)."""
    floors = floors or {}
    papers = pd.to_numeric(pd.Series(paper if paper is not None else {}, dtype=object), errors="coerce").dropna()
    others = [name for name in values if name != best and values[name].notna().any()]  # those with runs
    if not others:
        raise ValueError(f"best_of needs entries with runs other than {best!r}")
    sign = 1 if higher_is_better else -1

    def against(name: str, alpha: float) -> Verdict:
        given = (papers[best], papers[name]) if best in papers and name in papers else None
        return compare(values[best], values[name], higher_is_better, floors.get(name, 0.0), scale, given, alpha,
                       resolution)

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
    closest = min(names, key=lambda name: _clearance(shown[name], sign))
    v = shown[closest]
    return replace(v, verdict=head, why=f"{text}; against {closest} (n={v.n}): {v.why}")


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


USEFULNESS_FIT = ("under the paper's written fit (x W + b, fitted on other tokens than it is scored on; the authors' "
                  "script applies W transposed, fitted and scored on the same tokens: registry definition "
                  "'usefulness')")


def usefulness_at_floor(max_loss_rise: dict[str, float | pd.Series], tau: float | None,
                        fit: str = USEFULNESS_FIT) -> Verdict | None:
    """Beyond reach when no block of any compared model is useful: each model's largest relative
    loss rise from an affine replacement (per seed or one number) at most `tau`; with tau None,
    the values are usefulness fractions, and beyond reach means all zero. `fit` names the
    definition of the replacement the values come from (the floor is the definition's as much as
    the scale's)."""
    largest = {name: float(np.nanmax(np.asarray(v, float))) for name, v in max_loss_rise.items()}
    if not all(value <= (tau or 0.0) for value in largest.values()):
        return None
    what = (f"largest loss rise from an affine replacement {_named(largest)}, none above tau = {tau:g}"
            if tau is not None else f"usefulness {_named(largest)}")
    return Verdict(BEYOND_REACH, f"no block useful {fit}: {what}", n=len(largest))


def attention_near_uniform(entropy_ratio: dict[str, float | pd.Series], margin: float = 0.01) -> Verdict | None:
    """Beyond reach when every compared model's attention entropy (as a fraction of the uniform
    distribution's, mean over seeds) is within `margin` of 1: attention too flat to show sparsity."""
    ratios = {name: float(np.nanmean(np.asarray(v, float))) for name, v in entropy_ratio.items()}
    if not all(r >= 1 - margin for r in ratios.values()):
        return None
    return Verdict(BEYOND_REACH, f"attention near uniform: entropy / uniform entropy {_named(ratios)}, all within "
                                 f"{margin:.0%} of 1", n=len(ratios))


def diverged(final: pd.DataFrame) -> Verdict | None:
    """Beyond reach when the trainer stopped every run of `final` (`cod.records.results.load_final`) as
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




def behind_premise(premise: str, shown: Verdict, verdict: Verdict | str) -> Verdict | str:
    """`verdict` if the baseline shows the claim's `premise` (its test, judged by this rule, is
    reproduced: `shown`), else beyond reach naming the premise and its measured value."""
    if isinstance(verdict, str) or shown.verdict == REPRODUCED:
        return verdict
    return Verdict(BEYOND_REACH, f"premise not shown: {premise}; measured: {shown.verdict}, {shown.why}",
                   shown.mean, shown.spread, shown.n)


Judge = Callable[..., Verdict | str]  # a claim's verdict as a function of its free choices (keyword arguments)


def _choice_text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def robustness(verdict: str, neighbours: Mapping[str, Sequence[tuple[Any, str]]], used: Mapping[str, Any],
               registered_values: Mapping[str, Any]) -> str:
    """'robust to deep_layers (3, 5)' or 'depends on deep_layers (3: reproduced)': the verdicts at
    each free choice's neighbouring values (`neighbours`: name -> [(value, verdict), ...]) against
    `verdict`; a choice used at a value other than the registered one is named."""
    moved = {name: [(value, other) for value, other in at if other != verdict] for name, at in neighbours.items()}
    moved = {name: at for name, at in moved.items() if at}
    if moved:
        text = "depends on " + "; ".join(
            f"{name} ({', '.join(f'{_choice_text(value)}: {other}' for value, other in at)})"
            for name, at in moved.items())
    else:
        text = "robust to " + " and ".join(
            f"{name} ({', '.join(_choice_text(value) for value, _ in at)})" for name, at in neighbours.items())
    off = [f"{name}={_choice_text(value)} (registered {_choice_text(registered_values[name])})"
           for name, value in used.items() if value != registered_values[name]]
    return text + (f"; judged at {', '.join(off)}" if off else "")


class Claims:
    """The claims one notebook judges: `add` each, then `save` writes figures_dir/claims.json
    (checked by `cod.records.results.save_claims`) and returns the table for display.

    A claim is the paper's, as the registry (`cod/claims/registry.yaml`) states it: a row takes its item,
    paraphrase, paper numbers and source (the paper's claim, or a reading of ours) from the
    registry entry of its id, and keeps the notebook's own wording as `test` (how the claim is
    measured here). An id the registry lacks is refused. A claim whose `verdict` is a string
    instead (why it cannot be judged here, e.g. `cod.claims.ladder.Ladder.lacks`) is not judged: `save`
    prints it in its line of skipped claims.

    What the registry fixes before any comparison is enforced here: a claim with a `premise` needs
    the premise's verdict (`premise=`) and is beyond reach unless it is reproduced
    (`behind_premise`); an equivalence claim (`margin`) needs a verdict of `equivalent` at that
    margin; a claim with `free_choices` needs its verdict as a function of them, which is judged
    at the registered values (or those the notebook was run with, `choices`) and again at each
    neighbouring value, one choice at a time, for its row's `robustness`. Each row also carries
    the design's detectable effect at 80% power (`power_effect`, stated in an inconclusive row's
    text) and whether it reaches the paper's effect (`powered`)."""

    def __init__(self, paper: str, profile: str, seeds: list[int] | None = None,
                 choices: Mapping[str, Any] | None = None):
        self.paper, self.profile, self.seeds, self.rows = paper, profile, seeds, []
        self.choices = {name: value for name, value in (choices or {}).items() if value is not None}
        self.skipped: dict[str, str] = {}

    def entry(self, id_: str) -> ClaimEntry:
        """The registry entry of claim `id_` (KeyError naming the registry when it has none)."""
        entry = registered(id_, self.profile)
        if entry is None:
            raise KeyError(f"claim {id_!r} is not in cod/claims/registry.yaml: register it from the paper's text first")
        return entry

    def choice(self, id_: str, name: str) -> Any:
        """The value of free choice `name` claim `id_` is judged at: the notebook's (`choices`), else the registry's."""
        choices = self.entry(id_).free_choices or {}
        if name not in choices:
            registered_names = ", ".join(choices) or "none"
            raise KeyError(f"claim {id_!r} registers no free choice {name!r}; registered: {registered_names}")
        return self.choices.get(name, choices[name].value)

    def _judge(self, entry: ClaimEntry, verdict: Verdict | str | Judge, premise: Verdict | str | Judge | None,
               values: Mapping[str, Any]) -> Verdict | str:
        """The claim's verdict at the free choices `values`, behind its premise."""
        def at(given):
            return given(**values) if callable(given) else given

        judged = at(verdict)
        if entry.premise is None:
            return judged
        shown = at(premise)
        return shown if isinstance(shown, str) else behind_premise(entry.premise, shown, judged)

    def _check(self, id_: str, entry: ClaimEntry, verdict, premise) -> None:
        if entry.paper != self.paper:
            raise ValueError(f"claim {id_!r}: paper {self.paper!r} here, {entry.paper!r} in cod/claims/registry.yaml")
        if (entry.premise is None) != (premise is None):
            raise ValueError(f"claim {id_!r}: the registry {'states a' if entry.premise else 'states no'} premise; "
                             f"pass premise= {'its verdict' if entry.premise else 'only with one'}")
        if not isinstance(verdict, str) and bool(entry.free_choices) != callable(verdict):
            names = ", ".join(entry.free_choices or {}) or "none"
            raise ValueError(f"claim {id_!r}: registered free choices: {names}; pass its verdict as a function of "
                             f"them exactly when it has some")

    def _check_margin(self, id_: str, entry: ClaimEntry, verdict: Verdict) -> None:
        if verdict.verdict == BEYOND_REACH or (entry.margin is None and verdict.margin is None):
            return
        if entry.margin is None or verdict.margin is None or not math.isclose(entry.margin, verdict.margin):
            raise ValueError(f"claim {id_!r}: registered margin {entry.margin}, judged with margin {verdict.margin}: "
                             "an equivalence claim is judged by `equivalent` at its registered margin")

    def add(self, id_: str, item: str, claim: str, paper_value: Any, verdict: Verdict | str | Judge,
            premise: Verdict | str | Judge | None = None) -> Verdict:
        """Record the claim; one given a reason instead of a verdict, or with no runs on one side at
        this profile (n = 0), is only named, as not run (the returned verdict says why). `verdict`
        (and `premise`) are functions of the registered free choices where the registry names some."""
        entry = self.entry(id_)
        self._check(id_, entry, verdict, premise)
        registered_values = {name: choice.value for name, choice in (entry.free_choices or {}).items()}
        used = {name: self.choices.get(name, value) for name, value in registered_values.items()}
        result = self._judge(entry, verdict, premise, used)
        if isinstance(result, Verdict) and result.n == 0:
            result = f"no runs at the {self.profile} profile"
        if isinstance(result, str):
            self.skipped[id_] = result
            return Verdict(NOT_RUN, result)
        self._check_margin(id_, entry, result)
        extra: dict[str, Any] = {}
        if entry.free_choices:
            neighbours = {}
            for name, choice in entry.free_choices.items():  # the registered value and its neighbours, but the one used
                others = [value for value in (choice.value, *choice.neighbours) if value != used[name]]
                at = [(value, self._judge(entry, verdict, premise, {**used, name: value})) for value in others]
                neighbours[name] = [(value, v.verdict if isinstance(v, Verdict) else NOT_RUN) for value, v in at]
            extra["robustness"] = robustness(result.verdict, neighbours, used, registered_values)
        shown = premise(**used) if callable(premise) else premise
        if entry.premise is not None and isinstance(shown, Verdict):
            extra["premise"] = f"{entry.premise}: {shown.verdict}, {effect_text(shown)}"
        if result.power_effect is not None:
            extra["powered"] = powered(result)
        why = result.why
        if result.verdict == INCONCLUSIVE and result.effect is not None:
            why = f"{why}; {power_text(result)}"
        row = {key: value for key, value in asdict(result).items()
               if key not in ("power_effect", "margin") or value is not None}
        ci = row.pop("ci") or (None, None)
        row.pop("why")
        numbers = dict(entry.paper_numbers) if entry.paper_numbers else paper_value
        self.rows.append({"id": id_, "paper": entry.paper, "item": entry.item, "claim": entry.claim,
                          "source": "ours" if entry.ours else "paper", "test": f"{item}: {claim}",
                          "paper_value": numbers, "ours": why, **row, "ci_low": ci[0], "ci_high": ci[1],
                          **extra, "profile": self.profile,
                          **({"seeds": self.seeds} if self.seeds is not None else {})})
        return result

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

    def add(self, size: str, key: str, text: str, paper_value: str, ours: str | Callable[..., str],
            verdict: Verdict | Judge) -> Verdict:
        """Record claim KEY at `size`; `ours` (its per-seed summary) goes before the rule's numbers;
        both may be functions of the claim's registered free choices."""
        marked = ""
        if size != self.paper_size:
            paper_value = f"no {size} figure in the paper; {paper_value}"
            marked = "(ours) "

        def prefixed(**values) -> Verdict:
            judged = verdict(**values) if callable(verdict) else verdict
            summary = ours(**values) if callable(ours) else ours
            return replace(judged, why=f"{summary}; {judged.why}")

        id_ = self.id_of(size, key)
        added = self.claims.add(id_, self.item, f"{marked}{size}: {text}", paper_value,
                                prefixed if callable(verdict) else prefixed())
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
