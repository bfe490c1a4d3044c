"""Verdicts and the claims / results JSON files the theory notebooks write.

A verdict is decided from numbers by the rules below, never typed by hand:
- exponent laws: "holds" when the claimed exponent lies in the 95% interval, "holds loosely" when it
  is within `tol` of the estimate, "fails" otherwise;
- bounds: "fails" when any sample exceeds the bound, "holds loosely" when the bound holds but
  overshoots the median sample by more than `loose_factor`, "holds" otherwise;
- growth laws: the claimed law against the alternatives by the RMS log-error of their best fits.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from cod.theory.fits import Estimate

VERDICTS = ("holds", "holds loosely", "fails")


def exponent_verdict(est: Estimate, claimed: float, tol: float = 0.1) -> str:
    if est.contains(claimed):
        return "holds"
    return "holds loosely" if abs(est.value - claimed) <= tol else "fails"


def bound_verdict(measured, bound, loose_factor: float = 10.0) -> str:
    """measured, bound: arrays of the same shape (or bound broadcastable); compares in log space."""
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
    """A growth law the paper names against the alternatives, by RMS log-error of the best fit of each:
    "fails" when another law fits more than `factor` times better, "holds" when the claimed law fits best."""
    best = min(rms, key=rms.get)
    if best == claimed:
        return "holds"
    return "fails" if rms[best] * factor < rms[claimed] else "holds loosely"


def gaussian_independent_verdict(checks: list[tuple[float, float]], rho_tol: float = 0.1, kurt_tol: float = 0.5) -> str:
    """Assumption 3.1 over a sequence of settings (max |branch correlation|, max |excess kurtosis|), the
    first being the one the lemma is about (random initialisation): "holds" if every setting passes,
    "holds loosely" if the first passes and a later one does not, "fails" if the first fails."""
    ok = [abs(r) <= rho_tol and abs(k) <= kurt_tol for r, k in checks]
    return "holds" if all(ok) else ("holds loosely" if ok[0] else "fails")


def decay_verdict(estimates: list[Estimate], claimed: float = -1.0) -> str:
    """A decay law carried beyond its assumptions: "holds" if every fitted exponent is consistent with
    `claimed`, "holds loosely" if each still decays (interval below 0), "fails" otherwise."""
    if all(e.contains(claimed) for e in estimates):
        return "holds"
    return "holds loosely" if all(e.hi < 0 for e in estimates) else "fails"


def weakest(*verdicts: str) -> str:
    """The verdict of a statement made of several parts is that of its weakest part."""
    return max(verdicts, key=VERDICTS.index)


def claim(id: str, paper: str, item: str, claim: str, paper_value: str, ours: str, verdict: str, seed: int,
          profile: str) -> dict:
    if verdict not in VERDICTS:
        raise ValueError(f"verdict {verdict!r} not in {VERDICTS}")
    if paper not in ("A", "B"):
        raise ValueError(f"paper {paper!r} must be 'A' or 'B'")
    return dict(id=id, paper=paper, item=item, claim=claim, paper_value=paper_value, ours=ours, verdict=verdict, seed=seed,
                profile=profile)


class Ledger:
    """A notebook's claims of one paper, each printed with its verdict as it is judged."""

    def __init__(self, paper: str, seed: int, profile: str):
        self.paper, self.seed, self.profile, self.claims = paper, seed, profile, []

    def add(self, id: str, item: str, claim_text: str, paper_value: str, ours: str, verdict: str) -> None:
        self.claims.append(claim(id, self.paper, item, claim_text, paper_value, ours, verdict, self.seed, self.profile))
        print(f"[{verdict}] {item}: {ours}")


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


def write_json(path, obj) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_jsonable(obj), indent=1))
    return path
