"""The one verdict rule (cod.verdicts) and the claims ledger, on hand-made cases with known answers."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from cod.results import save_claims
from cod.verdicts import (INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Claims, Verdict, accuracy_floor, best_of,
                          beyond_reach, compare, every_seed, monotone)


def seeds(*values) -> pd.Series:
    return pd.Series(values, index=range(len(values)), dtype=float)


def test_a_clear_win_in_every_seed_is_reproduced():
    v = compare(seeds(10.0, 10.5, 11.0), seeds(12.0, 12.5, 13.0))
    assert v.verdict == REPRODUCED and "3/3" in v.why
    assert compare(seeds(12.0, 12.5, 13.0), seeds(10.0, 10.5, 11.0)).verdict == NOT_REPRODUCED


def test_a_win_inside_the_seed_spread_is_inconclusive():
    # a beats b in every seed, but the gap of the means (0.2) is below the seeds' spread (std 2)
    assert compare(seeds(8.0, 10.0, 12.0), seeds(8.2, 10.2, 12.2)).verdict == INCONCLUSIVE
    # clear gap, but one seed disagrees
    assert compare(seeds(10.0, 10.0, 14.0), seeds(13.0, 13.0, 13.5)).verdict == INCONCLUSIVE


def test_higher_is_better():
    assert compare(seeds(0.9, 0.8), seeds(0.5, 0.4), higher_is_better=True).verdict == REPRODUCED
    assert compare(seeds(0.9, 0.8), seeds(0.5, 0.4)).verdict == NOT_REPRODUCED  # lower is better by default
    assert "higher in 2/2" in compare(seeds(0.9, 0.8), seeds(0.5, 0.4), higher_is_better=True).why


def test_unpaired_seeds_count_for_nothing():
    a, b = pd.Series([10.0, 11.0], index=[0, 1]), pd.Series([20.0, 21.0], index=[1, 2])
    assert compare(a, b) == Verdict(INCONCLUSIVE, "1 paired seed(s)", 11.0, None, 1)  # only seed 1 is in both
    assert compare(seeds(1.0, 2.0), seeds(5.0, math.nan)).verdict == INCONCLUSIVE  # a missing value unpairs a seed


def test_failed_runs_lose_every_comparison():
    assert compare(seeds(300.0, 310.0), seeds(math.inf, math.inf)).verdict == REPRODUCED
    assert compare(seeds(math.inf, math.inf), seeds(300.0, 310.0)).verdict == NOT_REPRODUCED
    v = compare(seeds(300.0, math.inf), seeds(310.0, 320.0))  # one seed failed on the first side
    assert v.verdict == INCONCLUSIVE and "1 failed" in v.why and "infinitely bad" in v.why
    assert v.mean == 300.0 and v.n == 2  # the mean is over the seeds that did not fail


def test_the_noise_floor_must_be_exceeded_too():
    a, b = seeds(10.0, 10.5, 11.0), seeds(11.5, 12.0, 12.5)  # gap 1.5, seed std 0.5
    assert compare(a, b).verdict == REPRODUCED
    assert compare(a, b, floor=1.4).verdict == REPRODUCED
    v = compare(a, b, floor=2.0)
    assert v.verdict == INCONCLUSIVE and "noise floor 2" in v.why
    assert compare(b, a, floor=2.0).verdict == INCONCLUSIVE  # the floor guards both directions


def test_accuracy_floor_known_value():
    # fractions: SE^2 of a seed mean = p(1-p)/n / seeds; 0.5: 0.0025/2, 0.3: 0.0021/2 -> 2 * sqrt(0.0023)
    a, b = seeds(0.5, 0.5), seeds(0.3, 0.3)
    assert accuracy_floor(a, b, 100) == pytest.approx(2 * math.sqrt(0.0023))
    assert accuracy_floor(a * 100, b * 100, 100) == pytest.approx(200 * math.sqrt(0.0023))  # percents
    assert accuracy_floor(a, b, pd.Series([100, 100])) == pytest.approx(0.0959166, abs=1e-7)


def test_verdict_fields_mean_spread_n():
    v = compare(seeds(10.0, 12.0, 14.0), seeds(20.0, 21.0, 22.0))
    assert (v.mean, v.spread, v.n) == (12.0, 2.0, 3)  # of the first side, over seeds
    assert v.verdict == REPRODUCED and "12 vs 21" in v.why and "gap 9" in v.why


def test_beyond_reach_is_inconclusive_and_says_why():
    v = beyond_reach("diverges only from 350M parameters", mean=1.5, n=3)
    assert v == Verdict(INCONCLUSIVE, "beyond this scale: diverges only from 350M parameters", 1.5, None, 3)


def test_the_best_must_beat_every_other_clearly():
    values = {"lns": seeds(10.0, 10.1, 10.2), "pre": seeds(12.0, 12.1, 12.2), "mix": seeds(10.1, 10.2, 10.3)}
    assert best_of(values, "lns").verdict == INCONCLUSIVE  # ahead of mix in every seed, not by the spread
    assert best_of(values, "lns").why == "not clearly ahead of mix"
    values["mix"] = seeds(9.0, 9.1, 9.2)
    v = best_of(values, "lns")
    assert (v.verdict, v.why) == (NOT_REPRODUCED, "beaten clearly by mix")
    assert v.mean == pytest.approx(10.1) and v.n == 3
    assert best_of({"lns": values["lns"], "pre": values["pre"]}, "lns").verdict == REPRODUCED
    # a floor per rival: the 2.0 gap to pre no longer counts
    assert best_of({"lns": values["lns"], "pre": values["pre"]}, "lns", floors={"pre": 2.5}).verdict == INCONCLUSIVE
    higher = {"a": seeds(0.9, 0.8), "b": seeds(0.5, 0.4)}
    assert best_of(higher, "a", higher_is_better=True).verdict == REPRODUCED


def test_every_seed_verdicts():
    assert every_seed(pd.Series([True, True, True])).verdict == REPRODUCED
    assert every_seed(pd.Series([False, False])).verdict == NOT_REPRODUCED
    assert every_seed(pd.Series([True, False])).verdict == INCONCLUSIVE
    assert every_seed(pd.Series([], dtype=bool)) == Verdict(INCONCLUSIVE, "holds in 0/0 seeds", None, None, 0)
    v = every_seed(pd.Series([True, True, False]), "slope below 0", values=seeds(-1.0, -3.0, 1.0))
    assert v.why == "holds in 2/3 seeds; slope below 0" and (v.mean, v.spread, v.n) == (-1.0, 2.0, 3)


def test_claims_save_writes_a_ledger_that_save_claims_accepts(tmp_path):
    claims = Claims("A", "default", seeds=[0, 1])
    returned = claims.add("x-win", "Table 1", "a beats b", "1 vs 2", compare(seeds(1.0, 1.1), seeds(2.0, 2.1)))
    assert returned.verdict == REPRODUCED
    claims.add("x-theory", "Eq. 3", "a bound holds", "<= 1", Verdict("holds loosely", "ratio 1.3"))
    shown = claims.save(tmp_path)
    assert list(shown.columns) == ["id", "paper_value", "ours", "verdict"]
    assert shown["verdict"].tolist() == [REPRODUCED, "holds loosely"]
    rows = json.loads((tmp_path / "claims.json").read_text())
    assert rows[0]["id"] == "x-win" and rows[0]["paper"] == "A" and rows[0]["profile"] == "default"
    assert rows[0]["seeds"] == [0, 1] and rows[0]["n"] == 2 and rows[0]["mean"] == pytest.approx(1.05)
    assert "1.05 vs 2.05" in rows[0]["ours"]
    save_claims(tmp_path / "again", rows)  # what it wrote passes the checker as it stands

    bad = Claims("A", "default")
    bad.add("x-bad", "Table 1", "a beats b", "1 vs 2", Verdict("probably", "a hunch"))
    with pytest.raises(ValueError, match="probably"):
        bad.save(tmp_path / "bad")
    assert not (tmp_path / "bad" / "claims.json").exists()


def test_monotone_needs_the_order_in_every_seed_and_clear_ends():
    rising = pd.DataFrame({0: [1.0, 2.0, 3.0, 4.0], 1: [1.1, 2.1, 3.2, 4.2]}, index=["a", "b", "c", "d"])
    assert monotone(rising, +1).verdict == REPRODUCED
    assert monotone(rising, -1).verdict == NOT_REPRODUCED
    swapped = rising.copy()
    swapped.loc["b", 1], swapped.loc["c", 1] = 3.2, 2.1  # one adjacent swap: rho 0.8, still in order
    assert monotone(swapped, +1).verdict == REPRODUCED
    swapped.loc["a", 1], swapped.loc["d", 1] = 4.2, 1.1  # the ends reversed in one seed
    assert monotone(swapped, +1).verdict == INCONCLUSIVE
    flat = pd.DataFrame({0: [1.0, 1.0, 1.0], 1: [2.0, 2.0, 2.0]})
    assert monotone(flat, +1).verdict == INCONCLUSIVE


def test_monotone_pairs_seeds_and_ranks_failed_runs_last():
    values = pd.DataFrame({0: [1.0, 2.0, math.inf], 1: [1.0, 2.5, math.inf], 2: [1.0, np.nan, 9.0]})
    verdict = monotone(values, +1)
    assert verdict.verdict == REPRODUCED and verdict.n == 2  # seed 2 misses a rung: not paired
    with pytest.raises(ValueError, match="sign=0"):
        monotone(values, 0)
