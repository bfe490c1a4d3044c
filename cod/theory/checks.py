"""The verdict rules of the theory notebooks (a3_theory, b2_theory), and their results.json writer.

A theory verdict is "holds", "holds loosely" or "fails", computed from numbers by one of the rules
below and recorded with `cod.claims.verdicts.Claims.add(..., Verdict(verdict, why))`. "Holds loosely"
always means *within a stated tolerance of what the statement claims*, never merely "goes the
claimed way"; each rule names its tolerance:

- `exponent_verdict` (a claimed exponent or law): "holds" when the claimed value lies in the 95%
  interval of the estimate, "holds loosely" when the estimate is within `tol` (default 0.1,
  absolute) of it, "fails" otherwise. An exact evaluation is an estimate with a zero-width interval.
- `value_verdict` (a claimed value, e.g. a fixed point): as above with a relative tolerance
  `rel_tol` (default 5%).
- `at_least_verdict` (a lower bound on an exponent): "holds" when the whole interval is at or
  above `claimed - tol`, "fails" when the whole interval is below it, "holds loosely" when the
  interval straddles it (default tol 0.1).
- `bound_verdict` / `bound_verdict_ci` (an upper bound on a measured quantity): "fails" when any
  sample (any 95% interval, for Monte-Carlo estimates) lies above the bound, "holds loosely" when
  the bound holds but overshoots the median sample by more than `loose_factor` (default 10x),
  "holds" otherwise. A bound below the quantity it bounds fails.
- `law_preference_verdict` (a named growth law against the alternatives, by the RMS log-error of
  each law's best fit, all fitted in the same log space): "holds" when the claimed law fits best,
  "holds loosely" when another fits better by at most `factor` (default 2x), "fails" otherwise.
- `upper_law_verdict` (an upper bound stated as a growth law, e.g. O(exp L)): "fails" when the best
  law grows faster than the bound's law, "holds" when the bound's law fits within `factor` (2x) of
  the best (the bound is approached), "holds loosely" when the data grow more slowly (it holds but
  is not approached).
- `gaussian_independent_verdict` (Assumption 3.1 over several settings): "holds" when every setting
  has max |branch-residual correlation| <= `rho_tol` (0.1) and max |excess kurtosis| <= `kurt_tol`
  (0.5), "holds loosely" when every setting is within twice those tolerances, "fails" otherwise.
- `bounded_verdict` (a product claimed bounded, or claimed to keep growing): the product counts
  as bounded when its logarithm changes by less than `tol` (default 0.01) over the stated stretch
  of depth; "holds" when that agrees with the claim, "fails" otherwise.
- `below_verdict` (a quantity or exponent claimed below a limit, e.g. "-> 0"): "holds" when the
  95% interval lies below the limit, "fails" otherwise.
- `increasing_verdict` (a claimed monotone dependence): "holds" when each consecutive 95% interval
  lies wholly above the previous one, "fails" when any lies wholly below, "holds loosely" when the
  estimates are in order but some consecutive intervals overlap.
- `reduction_verdict` (a claimed reduction, as a ratio new/old): "holds" when the ratio is below
  1 - `tol` (default 10%), "fails" otherwise.

A statement made of several parts gets the verdict of its weakest part (`weakest`).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

from cod.theory.fits import Estimate

VERDICTS = ("holds", "holds loosely", "fails")
GROWTH_ORDER = ("log", "power", "exponential")  # slowest to fastest


def exponent_verdict(est: Estimate, claimed: float, tol: float = 0.1) -> str:
    if est.contains(claimed):
        return "holds"
    return "holds loosely" if abs(est.value - claimed) <= tol else "fails"


def value_verdict(est: Estimate, claimed: float, rel_tol: float = 0.05) -> str:
    if est.contains(claimed):
        return "holds"
    return "holds loosely" if abs(est.value / claimed - 1) <= rel_tol else "fails"


def exact(value: float) -> Estimate:
    """An exactly evaluated number, as an estimate with a zero-width interval."""
    return Estimate(float(value), float(value), float(value))


def bound_verdict(measured, bound, loose_factor: float = 10.0) -> str:
    """measured, bound: arrays of the same shape (or bound broadcastable)."""
    measured, bound = np.broadcast_arrays(np.asarray(measured, float), np.asarray(bound, float))
    if np.any(measured > bound * (1 + 1e-9)):
        return "fails"
    slack = np.median(bound / measured)
    return "holds loosely" if slack > loose_factor else "holds"


def bound_verdict_ci(estimates: list[Estimate], bound, loose_factor: float = 10.0) -> str:
    """Bounds on an expectation, checked against Monte-Carlo estimates with intervals: "fails" when an
    interval lies wholly above its bound, "holds loosely" when the bound overshoots the median estimate
    by more than `loose_factor`, "holds" otherwise (a bound met with equality holds)."""
    bound = np.broadcast_to(np.asarray(bound, float), (len(estimates),))
    if any(e.lo > b for e, b in zip(estimates, bound)):
        return "fails"
    return "holds loosely" if np.median(bound / np.array([e.value for e in estimates])) > loose_factor else "holds"


def at_least_verdict(est: Estimate, claimed: float, tol: float = 0.1) -> str:
    """For lower bounds on an exponent (growth at least x^claimed)."""
    if est.lo >= claimed - tol:
        return "holds"
    return "fails" if est.hi < claimed - tol else "holds loosely"


def law_preference_verdict(rms: dict[str, float], claimed: str, factor: float = 2.0) -> str:
    best = min(rms, key=rms.get)
    if best == claimed:
        return "holds"
    return "fails" if rms[best] * factor < rms[claimed] else "holds loosely"


def upper_law_verdict(rms: dict[str, float], bound_law: str, factor: float = 2.0) -> str:
    """An upper bound stated as the growth law `bound_law` (one of GROWTH_ORDER)."""
    best = min(rms, key=rms.get)
    if GROWTH_ORDER.index(best) > GROWTH_ORDER.index(bound_law):
        return "fails"
    return "holds" if rms[bound_law] <= factor * rms[best] else "holds loosely"


def gaussian_independent_verdict(checks: list[tuple[float, float]], rho_tol: float = 0.1,
                                 kurt_tol: float = 0.5) -> str:
    """checks: (max |branch correlation|, max |excess kurtosis|) per setting."""
    def within(scale):
        return all(abs(r) <= scale * rho_tol and abs(k) <= scale * kurt_tol for r, k in checks)
    return "holds" if within(1.0) else "holds loosely" if within(2.0) else "fails"


def bounded_verdict(log_change: float, claimed_bounded: bool, tol: float = 0.01) -> str:
    """log_change: change of ln(product) over the stated stretch of depth."""
    return "holds" if (abs(log_change) < tol) == claimed_bounded else "fails"


def below_verdict(est: Estimate, limit: float = 0.0) -> str:
    return "holds" if est.hi < limit else "fails"


def increasing_verdict(estimates: list[Estimate]) -> str:
    pairs = list(zip(estimates[:-1], estimates[1:]))
    if any(b.hi < a.lo for a, b in pairs):
        return "fails"
    if all(b.lo > a.hi for a, b in pairs):
        return "holds"
    return "holds loosely" if all(b.value > a.value for a, b in pairs) else "fails"


def reduction_verdict(ratio: float, tol: float = 0.1) -> str:
    return "holds" if ratio < 1 - tol else "fails"


def weakest(*verdicts: str) -> str:
    """The verdict of a statement made of several parts is that of its weakest part."""
    return max(verdicts, key=VERDICTS.index)


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, Estimate):
        return obj.as_dict()
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        return None if not math.isfinite(float(obj)) else float(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    return obj


class Results(dict):
    """A theory notebook's numbers (a dict: its profile, seed, `settings` and what the cells add),
    with its output folder `out` (made) and the clock started; `save` writes them with the run time
    to out/results.json and returns that time in seconds."""

    def __init__(self, figures_dir: str | Path, profile: str, seed: int, settings: dict):
        super().__init__(profile=profile, seed=seed, settings=settings)
        self.out = Path(figures_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.started = time.time()

    def save(self) -> float:
        self["runtime_s"] = time.time() - self.started
        write_json(self.out / "results.json", self)
        return self["runtime_s"]


def write_json(path, obj) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_jsonable(obj), indent=1))
    return path
