"""The one verdict rule (cod.claims.verdicts) and the claims ledger: its false-decisive rate under no effect, by
simulation (normal and heavy-tailed noise, lattice statistics with ties), two one-sided tests at their margin,
the power figure against closed forms, the premise floor, best_of's n, the sensitivity pass over free
choices, and hand-made cases with known answers."""

import json
import math
from dataclasses import replace
from types import MappingProxyType

import numpy as np
import pandas as pd
import pytest

from cod.claims import verdicts
from cod.claims.registry import ClaimEntry, FreeChoice
from cod.records.results import save_claims
from cod.claims.verdicts import (ALPHA, BEYOND_REACH, INCONCLUSIVE, NOT_REPRODUCED, NOT_RUN, REPRODUCED, Claims, Verdict,
                          accuracy_at_chance, accuracy_floor, accuracy_se, attention_near_uniform, best_of,
                          below_resolution, beyond_reach, compare, decide, detectable, diverged, effect_text,
                          equivalence_detectable, equivalence_power, equivalent, ladder_slopes, monotone, one_sample,
                          power_text, powered, robustness, t_interval, too_few_rivals, usefulness_at_floor,
                          welch_interval)

N_SIM = 20_000  # simulated claims per case: Monte-Carlo standard error of a 5% rate 0.0015
RUNGS = 4


def seeds(*values) -> pd.Series:
    return pd.Series(values, index=range(len(values)), dtype=float)


def simulate(kind: str, n: int, rng: np.random.Generator, noise: str = "normal", shift: float = 0.0):
    """N_SIM claims of one kind with `n` seeds and no effect (plus `shift` SD): the data each one gets."""
    draw = (lambda *shape: rng.standard_normal(shape)) if noise == "normal" else (
        lambda *shape: rng.standard_t(3, shape))
    if kind in ("paired", "unpaired"):
        return draw(N_SIM, n) + shift, draw(N_SIM, n)
    if kind == "one_sample":
        return (draw(N_SIM, n) + shift,)
    return (draw(N_SIM, RUNGS, n) + shift * np.arange(RUNGS)[:, None],)  # monotone: rungs x seeds


def rule(kind: str, data: tuple) -> np.ndarray:
    """The verdicts of the rule on simulated claims, vectorised (claim: "higher", i.e. sign +1)."""
    if kind == "paired":
        _, low, high = t_interval(data[0] - data[1])
    elif kind == "unpaired":
        _, low, high = welch_interval(*data)
    elif kind == "one_sample":
        _, low, high = t_interval(data[0])
    else:
        _, low, high = t_interval(ladder_slopes(data[0]))
    return decide(low, high, +1)


def public(kind: str, data: tuple, i: int) -> Verdict:
    """The same claim i judged by the public function, on the difference scale."""
    if kind == "paired":
        return compare(pd.Series(data[0][i]), pd.Series(data[1][i]), higher_is_better=True, scale="difference")
    if kind == "unpaired":
        a, b = data[0][i], data[1][i]
        return compare(pd.Series(a), pd.Series(b, index=range(len(a), 2 * len(a))), higher_is_better=True,
                       scale="difference")
    if kind == "one_sample":
        return one_sample(pd.Series(data[0][i]))
    return monotone(pd.DataFrame(data[0][i]), +1, scale="difference")


KINDS = ("paired", "unpaired", "one_sample", "monotone")


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("kind", KINDS)
def test_false_decisive_rate_under_no_effect_is_at_most_alpha(kind, n):
    verdicts = rule(kind, simulate(kind, n, np.random.default_rng(27)))
    rate = float(np.mean(verdicts != INCONCLUSIVE))
    print(f"\nfalse-decisive rate, {kind}, n={n}, normal noise: {rate:.4f}")
    assert rate <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / N_SIM)


@pytest.mark.parametrize("kind", KINDS)
def test_false_decisive_rate_with_heavy_tailed_noise(kind):
    verdicts = rule(kind, simulate(kind, 3, np.random.default_rng(28), noise="t3"))
    rate = float(np.mean(verdicts != INCONCLUSIVE))
    print(f"\nfalse-decisive rate, {kind}, n=3, Student t (3 dof) noise: {rate:.4f}")
    assert rate <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / N_SIM)


@pytest.mark.parametrize("shift", [1.0, -1.0])
@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("kind", KINDS)
def test_the_public_functions_are_the_simulated_rule(kind, n, shift):
    # with an effect of one SD either way the verdicts are mixed: the public function must agree case by case
    data = simulate(kind, n, np.random.default_rng(29), shift=shift)
    expected = rule(kind, data)[:40]
    assert len(set(expected)) >= 2
    assert [public(kind, data, i).verdict for i in range(40)] == list(expected)


def test_a_large_effect_is_reproduced_and_its_opposite_not():
    low, high = seeds(10.0, 11.0, 9.0), seeds(20.2, 20.9, 19.1)  # 10 seed SDs apart, differences not all equal
    assert compare(low, high, scale="difference").verdict == REPRODUCED
    assert compare(high, low, scale="difference").verdict == NOT_REPRODUCED
    assert compare(low, high).verdict == REPRODUCED  # on the ratio scale too
    assert one_sample(low).verdict == REPRODUCED
    assert one_sample(-low).verdict == NOT_REPRODUCED
    ladder = pd.DataFrame({0: [1.0, 11.0, 21.0, 31.0], 1: [0.0, 10.0, 20.0, 30.0], 2: [2.0, 12.5, 22.0, 33.0]})
    assert monotone(ladder, +1, scale="difference").verdict == REPRODUCED
    assert monotone(ladder, -1, scale="difference").verdict == NOT_REPRODUCED


def test_one_seed_is_inconclusive():
    v = compare(seeds(10.0), seeds(20.0))
    assert v == Verdict(INCONCLUSIVE, "too few seeds for the rule: n=1", 10.0, None, 1, scale="ratio", level=0.95)
    assert one_sample(seeds(5.0)).verdict == INCONCLUSIVE
    assert monotone(pd.DataFrame({0: [1.0, 2.0, 3.0]}), +1).verdict == INCONCLUSIVE
    assert compare(seeds(1.0, 2.0), seeds(5.0, math.nan)).verdict == INCONCLUSIVE  # one paired seed, one value of b


def test_unpaired_seeds_use_welch():
    a, b = pd.Series([10.0, 11.0], index=[0, 1]), pd.Series([20.0, 21.0], index=[1, 2])  # only seed 1 in both
    v = compare(a, b, scale="difference")
    # difference -10, SE sqrt(0.25 + 0.25), Welch df 2: t(0.975, 2) = 4.303
    assert v.verdict == REPRODUCED and "Welch" in v.why and v.effect == pytest.approx(-10.0)
    assert v.ci == pytest.approx((-10.0 - 4.3027 * math.sqrt(0.5), -10.0 + 4.3027 * math.sqrt(0.5)), abs=1e-3)


def test_a_gap_with_seeds_disagreeing_is_inconclusive():
    assert compare(seeds(10.0, 10.0, 14.0), seeds(13.0, 13.0, 13.5)).verdict == INCONCLUSIVE


def test_a_zero_width_interval_is_never_decisive():
    assert compare(seeds(5.0, 7.0, 9.0), seeds(5.0, 7.0, 9.0)).verdict == INCONCLUSIVE
    assert one_sample(seeds(0.0, 0.0, 0.0)).verdict == INCONCLUSIVE
    # the same nonzero difference in every seed: the seeds tie, and a tie says nothing of the noise
    v = compare(seeds(5.0, 7.0, 9.0), seeds(6.0, 8.0, 10.0), scale="difference")
    assert v.verdict == INCONCLUSIVE and v.ci == pytest.approx((-1.0, -1.0)) and "tie exactly" in v.why
    assert v.power_effect is None  # no spread to size the design's power
    assert one_sample(seeds(0.25, 0.25, 0.25), resolution=0.125).verdict == INCONCLUSIVE
    assert monotone(pd.DataFrame({0: [0.5, 0.625], 1: [0.5, 0.625]}), +1, scale="difference").verdict == INCONCLUSIVE
    # ratios whose logs differ only by float rounding still tie
    assert compare(seeds(3.0, 0.3, 30.0), seeds(1.0, 0.1, 10.0)).verdict == INCONCLUSIVE
    assert list(decide(np.array([1.0, 1.0, -2.0]), np.array([1.0, 1.5, -2.0]), +1)) == [
        INCONCLUSIVE, REPRODUCED, INCONCLUSIVE]


def test_higher_is_better():
    assert compare(seeds(0.9, 0.8), seeds(0.5, 0.42), higher_is_better=True, scale="difference").verdict == REPRODUCED
    assert compare(seeds(0.9, 0.8), seeds(0.5, 0.42), scale="difference").verdict == NOT_REPRODUCED
    assert "higher in 2/2" in compare(seeds(0.9, 0.8), seeds(0.5, 0.42), higher_is_better=True).why


def test_the_ratio_scale_needs_positive_values():
    with pytest.raises(ValueError, match="scale='difference'"):
        compare(seeds(0.0, 1.0), seeds(1.0, 2.0))
    with pytest.raises(ValueError, match="scale='linear' is not allowed"):
        compare(seeds(1.0, 2.0), seeds(1.0, 2.0), scale="linear")


def test_failed_runs_are_clipped_to_the_worst_finite_value():
    # b failed in both seeds: clipped to the largest finite value, 310; differences -10, 0: inconclusive
    v = compare(seeds(300.0, 310.0), seeds(math.inf, math.inf))
    assert v.verdict == INCONCLUSIVE and "2 infinite value(s)" in v.why
    # a failed run clipped to 322 when every other seed says so
    v = compare(seeds(300.0, 301.0, 302.0, 303.0), seeds(320.0, 321.0, 322.0, math.inf), scale="difference")
    assert v.verdict == REPRODUCED and v.effect == pytest.approx(-(20 + 20 + 20 + 19) / 4)
    v = compare(seeds(300.0, math.inf), seeds(310.0, 320.0))
    assert v.verdict == INCONCLUSIVE and "1 failed" in v.why
    assert v.mean == 300.0 and v.n == 2  # the mean is over the seeds that did not fail
    assert compare(seeds(math.inf, math.inf), seeds(math.inf, math.inf)).verdict == INCONCLUSIVE


def test_the_noise_floor_must_be_exceeded_too():
    a, b = seeds(10.0, 10.5, 11.0), seeds(11.5, 12.1, 12.4)  # gap of the means 1.5
    assert compare(a, b, scale="difference").verdict == REPRODUCED
    assert compare(a, b, scale="difference", floor=1.4).verdict == REPRODUCED
    v = compare(a, b, scale="difference", floor=2.0)
    assert v.verdict == INCONCLUSIVE and "noise floor 2" in v.why
    assert compare(b, a, scale="difference", floor=2.0).verdict == INCONCLUSIVE  # the floor guards both directions


def test_effect_and_paper_effect_are_reported():
    lns, pre = seeds(25.0, 25.5, 26.0), seeds(26.0, 26.4, 27.1)
    v = compare(lns, pre, paper=(25.76, 26.73))
    ratios = np.log(lns / pre)
    assert v.effect == pytest.approx(math.exp(ratios.mean()))
    assert v.paper_effect == pytest.approx(25.76 / 26.73)
    assert (v.scale, v.level, v.n) == ("ratio", 0.95, 3)
    assert v.ci[0] < v.effect < v.ci[1]
    assert v.why.startswith(f"ratio {v.effect:.4g} [{v.ci[0]:.4g}, {v.ci[1]:.4g}] (paper 0.9637); ")
    assert "the first lower in 3/3 paired seeds" in v.why
    d = compare(lns, pre, scale="difference", paper=(25.76, 26.73))
    assert d.effect == pytest.approx(lns.mean() - pre.mean()) and d.paper_effect == pytest.approx(-0.97)
    assert effect_text(d).startswith("difference -1 [")
    assert compare(lns, pre, paper=0.5).paper_effect == 0.5  # a precomputed paper effect
    one = one_sample(seeds(2.0, 2.2, 1.8), null=1.0, scale="ratio", paper=3.0)
    assert one.paper_effect == 3.0 and one.why.startswith("ratio to 1 ")
    ladder = monotone(pd.DataFrame({0: [1.0, 2.0, 4.0], 1: [1.1, 2.0, 4.1]}), +1, paper=[1.0, 3.0, 9.0])
    assert ladder.paper_effect == pytest.approx(3.0) and "ratio per rung" in ladder.why


def test_accuracy_floor_known_value():
    # fractions: SE^2 of a seed mean = p(1-p)/n / seeds; 0.5: 0.0025/2, 0.3: 0.0021/2 -> 2 * sqrt(0.0023)
    a, b = seeds(0.5, 0.5), seeds(0.3, 0.3)
    assert accuracy_floor(a, b, 100) == pytest.approx(2 * math.sqrt(0.0023))
    assert accuracy_floor(a * 100, b * 100, 100) == pytest.approx(200 * math.sqrt(0.0023))  # percents
    assert accuracy_floor(a, b, pd.Series([100, 100])) == pytest.approx(0.0959166, abs=1e-7)


def test_verdict_fields_mean_spread_n():
    v = compare(seeds(10.0, 12.0, 14.0), seeds(20.0, 21.0, 22.0))
    assert (v.mean, v.spread, v.n) == (12.0, 2.0, 3)  # of the first side, over seeds
    assert v.verdict == REPRODUCED and "12 vs 21" in v.why


def test_the_best_must_beat_every_other():
    values = {"lns": seeds(10.0, 10.1, 10.2), "pre": seeds(12.0, 12.1, 12.25), "mix": seeds(10.3, 10.2, 10.3)}
    v = best_of(values, "lns")
    assert v.verdict == INCONCLUSIVE and v.why.startswith("not clearly ahead of mix; against mix (n=3): ratio")
    values["mix"] = seeds(9.0, 9.1, 9.25)
    v = best_of(values, "lns", paper={"lns": 25.76, "pre": 26.73, "mix": "26.07"})
    assert v.verdict == NOT_REPRODUCED and v.why.startswith("beaten clearly by mix; against mix (n=3): ratio")
    assert v.level == pytest.approx(1 - ALPHA / 2)  # Bonferroni over the two others
    assert v.paper_effect == pytest.approx(25.76 / 26.07)
    assert v.mean == pytest.approx(10.1) and v.n == 3
    v = best_of({"lns": values["lns"], "pre": values["pre"], "far": values["pre"] * 2}, "lns")
    assert v.verdict == REPRODUCED and v.why.startswith("clearly ahead of all 2; against pre (n=3): ")  # the closest
    # a floor per rival: the 2.0 gap to pre no longer counts
    assert best_of({"lns": values["lns"], "pre": values["pre"]}, "lns", floors={"pre": 2.5}).verdict == INCONCLUSIVE
    higher = {"a": seeds(0.9, 0.8), "b": seeds(0.5, 0.42)}
    assert best_of(higher, "a", higher_is_better=True, scale="difference").verdict == REPRODUCED


def test_best_of_is_not_reproduced_only_at_the_bonferroni_level():
    # b beats best at 5% (paired t = 6.06 at 2 df: p = 0.026) but not at 5% / 2
    best, b = seeds(1.0, 1.0, 1.0), seeds(1.0, 1.0, 1.0) + seeds(0.5, 0.7, 0.9)
    assert compare(b, best, higher_is_better=True, scale="difference").verdict == REPRODUCED
    values = {"best": best, "b": b, "c": best - 1.0}
    v = best_of(values, "best", higher_is_better=True, scale="difference")
    assert v.verdict == INCONCLUSIVE
    values["b"] = best + seeds(0.5, 0.6, 0.55)  # now by far
    assert best_of(values, "best", higher_is_better=True, scale="difference").verdict == NOT_REPRODUCED


def test_best_of_compares_only_the_entries_with_runs():
    best, rival, untrained = seeds(1.0, 1.1, 0.9), seeds(2.0, 2.1, 1.9), pd.Series([np.nan] * 3, index=[0, 1, 2])
    v = best_of({"best": best, "rival": rival, "untrained": untrained}, "best")
    assert v.verdict == REPRODUCED and "clearly ahead of all 1" in v.why
    with pytest.raises(ValueError, match="entries with runs other than 'best'"):
        best_of({"best": best, "untrained": untrained}, "best")


def test_one_sample_against_its_null():
    v = one_sample(seeds(-1.5, -2.5, -2.0), higher_is_better=False, why="slope below 0")
    assert v.verdict == REPRODUCED and v.why.endswith("below 0 in 3/3 seeds; slope below 0")
    assert (v.mean, v.spread, v.n) == (-2.0, 0.5, 3) and v.effect == pytest.approx(-2.0)
    half = 4.3027 * 0.5 / math.sqrt(3)  # t(0.975, 2) * SE
    assert v.ci == pytest.approx((-2.0 - half, -2.0 + half), abs=1e-3)
    assert one_sample(seeds(-1.0, -3.0, 1.0)).verdict == INCONCLUSIVE
    assert one_sample(seeds(0.58, 0.6, 0.62), null=0.5).verdict == REPRODUCED
    assert one_sample(seeds(4.0, 5.0, 6.0), scale="ratio", null=2.0).effect == pytest.approx(120 ** (1 / 3) / 2)


def test_monotone_fits_a_slope_per_seed():
    rising = pd.DataFrame({0: [1.0, 2.0, 3.0, 4.0], 1: [1.1, 2.1, 3.2, 4.2]}, index=["a", "b", "c", "d"])
    assert monotone(rising, +1).verdict == REPRODUCED
    assert monotone(rising, -1).verdict == NOT_REPRODUCED
    assert "Spearman rho with the order a < b < c < d per seed +1.00, +1.00" in monotone(rising, +1).why
    v = monotone(rising, +1, scale="difference")
    assert v.effect == pytest.approx((1.0 + 1.04) / 2) and v.scale == "difference"  # slopes 1.0 and 1.04 per rung
    noisy = pd.DataFrame({0: [1.0, 2.0, 3.0, 4.0], 1: [4.0, 1.0, 2.0, 1.5]})
    assert monotone(noisy, +1).verdict == INCONCLUSIVE
    flat = pd.DataFrame({0: [1.0, 1.0, 1.0], 1: [2.0, 2.0, 2.0]})
    assert monotone(flat, +1).verdict == INCONCLUSIVE
    assert monotone(rising, +1, floor=5.0).verdict == INCONCLUSIVE  # the ends are 3.05 apart
    with pytest.raises(ValueError, match="sign=0"):
        monotone(rising, 0)


def test_monotone_pairs_seeds_and_clips_failed_runs():
    values = pd.DataFrame({0: [1.0, 2.0, math.inf], 1: [1.1, 2.5, math.inf], 2: [1.0, np.nan, 9.0]})
    v = monotone(values, +1)  # inf clipped to 2.5, the largest finite value of the paired seeds
    assert v.n == 2 and "2 infinite value(s)" in v.why  # seed 2 misses a rung: not paired
    assert v.verdict == REPRODUCED


def test_accuracy_at_chance_at_its_threshold():
    se = accuracy_se(0.5, 100)  # 0.05: two SE = 0.1
    assert se == pytest.approx(0.05)
    v = accuracy_at_chance({"a": seeds(0.6, 0.6), "b": seeds(0.4, 0.4)}, 0.5, 100)
    assert v.verdict == BEYOND_REACH and "within 2 binomial SE (0.1)" in v.why and "chance 0.5" in v.why
    assert accuracy_at_chance({"a": seeds(0.6, 0.61), "b": seeds(0.5, 0.5)}, 0.5, 100) is None
    assert accuracy_at_chance({"a": seeds(60.0, 60.0), "b": seeds(40.0, 40.0)}, 50.0, 100).verdict == BEYOND_REACH
    assert accuracy_at_chance({"a": seeds(60.0, 61.0)}, 50.0, 100) is None


def test_usefulness_at_floor_at_its_threshold():
    v = usefulness_at_floor({"dense": 0.1, "moe": seeds(0.05, 0.1)}, tau=0.1)
    assert v.verdict == BEYOND_REACH and "none above tau = 0.1" in v.why
    assert usefulness_at_floor({"dense": 0.1, "moe": seeds(0.05, 0.11)}, tau=0.1) is None
    assert usefulness_at_floor({"dense": 0.0, "moe": seeds(0.0, 0.0)}, tau=None).verdict == BEYOND_REACH
    assert usefulness_at_floor({"dense": 0.0, "moe": seeds(0.0, 0.25)}, tau=None) is None


def test_attention_near_uniform_at_its_threshold():
    v = attention_near_uniform({"T=64": 0.99, "T=256": seeds(0.995, 1.0)})
    assert v.verdict == BEYOND_REACH and "within 1% of 1" in v.why
    assert attention_near_uniform({"T=64": 0.989, "T=256": 1.0}) is None
    assert attention_near_uniform({"T=64": 0.95}, margin=0.05).verdict == BEYOND_REACH


def test_diverged_only_when_the_trainer_says_so():
    final = pd.DataFrame({"variant": ["x", "x"], "seed": [0, 1], "status": ["diverged", "diverged"]})
    v = diverged(final)
    assert v.verdict == BEYOND_REACH and "x s0, x s1" in v.why and v.n == 2
    assert diverged(final.assign(status=["diverged", "completed"])) is None  # above the failure line is not diverged
    assert diverged(final.iloc[:0]) is None


def test_beyond_reach_says_why():
    v = beyond_reach("diverges only from 350M parameters", mean=1.5, n=3)
    assert v == Verdict(BEYOND_REACH, "beyond this scale: diverges only from 350M parameters", 1.5, None, 3)


def entry(id_: str, ours: bool = False, numbers: dict | None = None, **fixed) -> ClaimEntry:
    return ClaimEntry(id_, "a5_norm_comparison", "A", "Table 1", f"the paper's claim {id_}", "§5.1", numbers,
                      "validation perplexity", "lower", ("a_130m/lns",), ours, "§5.1",
                      why_ours="an extra size" if ours else None, **fixed)


@pytest.fixture
def registered(monkeypatch):
    """A registry of the claims these tests add."""
    choice = FreeChoice(4, (3, 5), "a third of 12 layers")
    entries = {"x-win": entry("x-win", numbers={"LNS": 1.0, "Pre-LN": 2.0}), "x-theory": entry("x-theory"),
               "x-far": entry("x-far", ours=True), "x-bad": entry("x-bad"),
               "x-treat": entry("x-treat", premise="the baseline grows (its ratio above 1)"),
               "x-same": entry("x-same", margin=1.04),
               "x-choice": entry("x-choice", free_choices=MappingProxyType({"k": choice}))}
    monkeypatch.setattr(verdicts, "registry", lambda: entries)


def test_a_claim_takes_its_wording_from_the_registry_and_an_unknown_one_is_refused(registered):
    claims = Claims("A", "default")
    claims.add("x-far", "Fig. 9", "at 7B", "7B", beyond_reach("7B parameters"))
    row = claims.rows[0]
    assert row["claim"] == "the paper's claim x-far" and row["source"] == "ours" and row["test"] == "Fig. 9: at 7B"
    with pytest.raises(KeyError, match="x-new.*cod/claims/registry.yaml"):
        claims.add("x-new", "Fig. 9", "at 7B", "7B", beyond_reach("7B parameters"))
    entries = verdicts.registry()
    entries["x-len:eval64"] = entry("x-len:eval64")
    with pytest.raises(KeyError, match="x-len:eval16"):  # the default profile's settings are the registry's
        claims.add("x-len:eval16", "Fig. 5", "at 16", "", beyond_reach("x"))
    smoke = Claims("A", "smoke")  # another profile measures at its own settings
    smoke.add("x-len:eval16", "Fig. 5", "at 16", "", beyond_reach("x"))
    assert smoke.rows[0]["claim"] == "the paper's claim x-len:eval64"
    with pytest.raises(ValueError, match="paper 'B' here, 'A'"):
        Claims("B", "default").add("x-win", "Table 1", "a beats b", "", beyond_reach("x"))


def test_claims_save_writes_a_ledger_that_save_claims_accepts(tmp_path, registered):
    claims = Claims("A", "default", seeds=[0, 1])
    returned = claims.add("x-win", "Table 1", "a beats b", "1 vs 2",
                          compare(seeds(1.0, 1.1), seeds(2.0, 2.1), paper=(1.0, 2.0)))
    assert returned.verdict == REPRODUCED
    claims.add("x-theory", "Eq. 3", "a bound holds", "<= 1", Verdict("holds loosely", "ratio 1.3"))
    claims.add("x-far", "Fig. 9", "at 7B", "7B", beyond_reach("7B parameters"))
    shown = claims.save(tmp_path)
    assert list(shown.columns) == ["id", "source", "paper_value", "ours", "verdict"]
    assert shown["verdict"].tolist() == [REPRODUCED, "holds loosely", BEYOND_REACH]
    rows = json.loads((tmp_path / "claims.json").read_text())
    assert rows[0]["id"] == "x-win" and rows[0]["paper"] == "A" and rows[0]["profile"] == "default"
    assert rows[0]["paper_value"] == {"LNS": 1.0, "Pre-LN": 2.0} and rows[2]["source"] == "ours"
    assert rows[0]["seeds"] == [0, 1] and rows[0]["n"] == 2 and rows[0]["mean"] == pytest.approx(1.05)
    assert rows[0]["scale"] == "ratio" and rows[0]["paper_effect"] == 0.5 and "ci" not in rows[0]
    assert rows[0]["ci_low"] < rows[0]["effect"] < rows[0]["ci_high"] < 1.0
    assert rows[1]["effect"] is None and rows[1]["ci_low"] is None
    assert "1.05 vs 2.05" in rows[0]["ours"]
    save_claims(tmp_path / "again", rows)  # what it wrote passes the checker as it stands

    unrun = Claims("A", "headline")  # a profile that trains only some of the paper's settings
    v = unrun.add("x-win", "Table 1", "a beats b", "", compare(seeds(1.0, 1.1), pd.Series(dtype=float)))
    assert v.verdict == NOT_RUN and v.why == "no runs at the headline profile"
    assert unrun.rows == [] and unrun.skipped == {"x-win": "no runs at the headline profile"}

    bad = Claims("A", "default")
    bad.add("x-bad", "Table 1", "a beats b", "1 vs 2", Verdict("probably", "a hunch"))
    with pytest.raises(ValueError, match="probably"):
        bad.save(tmp_path / "bad")
    assert not (tmp_path / "bad" / "claims.json").exists()


def test_a_best_of_claim_waits_for_two_rivals_with_runs():
    ran, empty = pd.Series({0: 1.0, 1: 2.0}), pd.Series({0: np.nan, 1: np.nan})
    assert too_few_rivals({"LNS": ran, "Pre-LN": ran, "Post-LN": ran}, "LNS") is None
    reason = too_few_rivals({"LNS": ran, "Pre-LN": ran, "Post-LN": empty, "DeepNorm": pd.Series(dtype=float)}, "LNS")
    assert reason.startswith("only Pre-LN trained beside LNS") and "2 rivals" in reason
    assert too_few_rivals({"LNS": ran}, "LNS", least=1).startswith("only no other entry")


def test_claims_keep_twelve_significant_digits_so_reexecution_does_not_churn(tmp_path):
    row = {"id": "x", "paper": "A", "item": "i", "claim": "c", "source": "paper", "paper_value": 1.0, "ours": "o",
           "verdict": REPRODUCED, "profile": "default", "mean": 0.1 + 0.2, "ci_low": -0.009401426227778412,
           "seeds": [0, 1], "paper_effect": None}
    saved = json.loads(save_claims(tmp_path, [row]).read_text())[0]
    assert saved["mean"] == 0.3 and saved["ci_low"] == -0.00940142622778 and saved["seeds"] == [0, 1]
    assert saved["paper_effect"] is None and saved["ours"] == "o"


# Lattice statistics: a share of L layers moves in steps of 1/L, so seeds often tie exactly.
LATTICES = [(8, 0.5), (12, 0.75), (16, 0.875)]  # (L, the chance a layer counts): L x p on the lattice


def lattice(kind: str, n: int, size: int, p: float, rng: np.random.Generator) -> tuple:
    """N_SIM claims with `n` seeds of a share of `size` layers and no effect."""
    def share(*shape):
        return rng.binomial(size, p, shape) / size

    if kind == "paired":
        return share(N_SIM, n), share(N_SIM, n)
    if kind == "one_sample":
        return (share(N_SIM, n) - p,)  # against its expected value, a lattice point
    return (share(N_SIM, RUNGS, n),)


def lattice_rule(kind: str, data: tuple, step: float | None) -> np.ndarray:
    """The rule's verdicts on simulated lattice claims, vectorised, with the lattice step (None: without it)."""
    if kind in ("paired", "one_sample"):
        diffs = data[0] - data[1] if kind == "paired" else data[0]
        gap, low, high = t_interval(diffs)
    else:
        _, low, high = t_interval(ladder_slopes(data[0]))
        gap = data[0][:, -1].mean(axis=-1) - data[0][:, 0].mean(axis=-1)
    return np.where(below_resolution(gap, step), INCONCLUSIVE, decide(low, high, +1))


LATTICE_KINDS = ("paired", "one_sample", "monotone")


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("kind", LATTICE_KINDS)
def test_lattice_statistics_with_ties_hold_the_false_decisive_rate(kind, n):
    rng = np.random.default_rng(31)
    for size, p in LATTICES:
        rate = float(np.mean(lattice_rule(kind, lattice(kind, n, size, p, rng), 1 / size) != INCONCLUSIVE))
        print(f"\nfalse-decisive rate, lattice 1/{size} (p={p}), {kind}, n={n}: {rate:.4f}")
        assert rate <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / N_SIM)


def test_ties_alone_break_the_rate_without_the_zero_width_rule():
    # the audit's finding: two seeds of a share tie often; an interval that ignores it is decisive 8-12% of the time
    diffs = np.subtract(*lattice("paired", 2, 16, 0.875, np.random.default_rng(32)))
    mean, low, high = t_interval(diffs)
    assert float(np.mean((low > 0) | (high < 0))) > 2 * ALPHA
    assert float(np.mean(decide(low, high, +1) != INCONCLUSIVE)) <= ALPHA


@pytest.mark.parametrize("kind", LATTICE_KINDS)
def test_the_public_functions_judge_lattices_as_simulated(kind):
    data = lattice(kind, 3, 8, 0.5, np.random.default_rng(33))
    if kind != "monotone":  # shift some claims so that decisive verdicts occur too
        data = (data[0] + np.where(np.arange(N_SIM) % 2, 0.25, 0.0)[:, None], *data[1:])
    expected = lattice_rule(kind, data, 1 / 8)[:60]
    if kind == "paired":
        got = [compare(pd.Series(data[0][i]), pd.Series(data[1][i]), higher_is_better=True, scale="difference",
                       resolution=1 / 8).verdict for i in range(60)]
    elif kind == "one_sample":
        got = [one_sample(pd.Series(data[0][i]), resolution=1 / 8).verdict for i in range(60)]
    else:
        got = [monotone(pd.DataFrame(data[0][i]), +1, scale="difference", resolution=1 / 8).verdict
               for i in range(60)]
    assert got == list(expected)


def test_a_difference_smaller_than_one_lattice_step_is_inconclusive():
    # shares of 8 layers: the 2/3-layer mean difference stays within one step, however tight the seeds
    a, b = seeds(0.5, 0.625, 0.5), seeds(0.375, 0.5, 0.5)
    assert compare(a, b, higher_is_better=True, scale="difference").verdict == INCONCLUSIVE
    v = compare(a + 0.125, b, higher_is_better=True, scale="difference", resolution=0.125)
    assert v.effect == pytest.approx(0.2083, abs=1e-4)
    tight = compare(seeds(0.625, 0.75, 0.625), seeds(0.5, 0.5, 0.5), higher_is_better=True, scale="difference",
                    resolution=0.125)
    assert tight.effect == pytest.approx(0.1667, abs=1e-4)  # more than one step: the interval decides
    small = compare(seeds(0.5, 0.625, 0.5, 0.5), seeds(0.5, 0.5, 0.5, 0.5), higher_is_better=True,
                    scale="difference", resolution=0.125)
    assert small.verdict == INCONCLUSIVE and "smaller than one step of the statistic (0.125)" in small.why
    assert one_sample(seeds(0.06, 0.05, 0.07), resolution=0.125).verdict == INCONCLUSIVE
    assert one_sample(seeds(0.06, 0.05, 0.07)).verdict == REPRODUCED
    ladder = pd.DataFrame({0: [0.5, 0.55], 1: [0.5, 0.54], 2: [0.5, 0.56]})  # the ends 0.05 apart, steps of 1/8
    assert monotone(ladder, +1, scale="difference").verdict == REPRODUCED
    assert monotone(ladder, +1, scale="difference", resolution=0.125).verdict == INCONCLUSIVE
    with pytest.raises(ValueError, match="lattice step must be positive and judged on scale='difference'"):
        compare(a, b, resolution=0.125)


# Two one-sided tests (equivalence) at the margin.
MARGIN = 1.05  # a ratio: comparable within [1 / 1.05, 1.05]


def tost(diffs: np.ndarray, bound: float) -> np.ndarray:
    """Equivalence verdicts of paired log differences, vectorised: the 90% interval inside (-bound, bound)."""
    _, low, high = t_interval(diffs, 2 * ALPHA)
    inside, outside = (low > -bound) & (high < bound), (low > bound) | (high < -bound)
    return np.where(inside, REPRODUCED, np.where(outside, NOT_REPRODUCED, INCONCLUSIVE))


@pytest.mark.parametrize("n", [2, 3, 5])
def test_equivalence_is_shown_at_most_alpha_of_the_time_at_the_margin(n):
    rng = np.random.default_rng(34)
    bound, sd = math.log(MARGIN), 0.03
    for edge in (bound, -bound):
        verdicts_ = tost(edge + sd * rng.standard_normal((N_SIM, n)), bound)
        rate = float(np.mean(verdicts_ == REPRODUCED))
        print(f"\nequivalence shown at the margin {edge:+.4f}, n={n}: {rate:.4f}")
        assert rate <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / N_SIM)
    # and non-equivalence is shown at most alpha of the time just inside the margin
    rate = float(np.mean(tost(bound + sd * rng.standard_normal((N_SIM, n)), bound) == NOT_REPRODUCED))
    assert rate <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / N_SIM)


def test_equivalent_judges_the_interval_against_the_margin():
    a = seeds(100.0, 104.0, 98.0, 101.0)
    same = equivalent(a, a * seeds(1.01, 0.995, 1.0, 1.004), MARGIN, paper=(27.17, 26.73))
    assert same.verdict == REPRODUCED and same.level == pytest.approx(0.9) and same.margin == MARGIN
    assert "two one-sided tests at 5%: the interval lies inside the margin" in same.why
    assert "(90.0% CI)" in same.why and "margin [0.9524, 1.05]" in same.why
    assert same.paper_effect == pytest.approx(27.17 / 26.73)
    far = equivalent(a, a * seeds(0.9, 0.91, 0.89, 0.905), MARGIN)
    assert far.verdict == NOT_REPRODUCED and "wholly outside" in far.why
    across = equivalent(a, a * seeds(0.96, 0.93, 0.97, 0.94), MARGIN)
    assert across.verdict == INCONCLUSIVE and "across the edge of" in across.why
    assert equivalent(a, a * 1.01, MARGIN).verdict == INCONCLUSIVE  # zero width: never decisive
    assert equivalent(a, a, 0.5, scale="difference").verdict == INCONCLUSIVE
    assert equivalent(seeds(1.0), seeds(1.0), MARGIN).verdict == INCONCLUSIVE  # one seed
    with pytest.raises(ValueError, match="a ratio above 1"):
        equivalent(a, a, 0.95)
    with pytest.raises(ValueError, match="a positive difference"):
        equivalent(a, a, -1.0, scale="difference")


def test_equivalence_power_against_simulation():
    # the margin shown with 80% power at no effect, for n = 3 seeds of SD 1: TOST shows it 80% of the time
    rng = np.random.default_rng(35)
    for n in (3, 5):
        margin = equivalence_detectable(1 / math.sqrt(n), n - 1)
        assert equivalence_power(margin, 1 / math.sqrt(n), n - 1) == pytest.approx(0.8, abs=1e-6)
        rate = float(np.mean(tost(rng.standard_normal((N_SIM, n)), margin) == REPRODUCED))
        assert rate == pytest.approx(0.8, abs=4 * math.sqrt(0.16 / N_SIM))
    assert equivalence_detectable(0.0, 2) != equivalence_detectable(0.0, 2)  # NaN without a spread


# The power figure: the smallest effect detected with 80% power, against closed forms.
def power_by_integration(nc: float, df: int) -> float:
    """P(noncentral t(df, nc) > t(0.975, df)) as an integral over the chi-square of the SD estimate:
    P(Z + nc > c sqrt(V / df)), independent of scipy's noncentral t."""
    from scipy import integrate, stats

    c = stats.t.ppf(1 - ALPHA / 2, df)
    value, _ = integrate.quad(lambda v: stats.norm.cdf(nc - c * math.sqrt(v / df)) * stats.chi2.pdf(v, df),
                              0, np.inf)
    return value


def test_power_figures_against_the_noncentral_t():
    # the audit's figures: one seed-SD of the paired difference is detected 18% / 40% of the time at n = 3 / 5,
    # two SDs 47% / 91%
    for n, sds, expected in ((3, 1, 0.18), (5, 1, 0.40), (3, 2, 0.47), (5, 2, 0.91)):
        assert power_by_integration(sds * math.sqrt(n), n - 1) == pytest.approx(expected, abs=0.005)
    for n in (2, 3, 5):  # the detectable effect is where that power reaches 80%
        delta = detectable(1 / math.sqrt(n), n - 1)
        assert power_by_integration(delta * math.sqrt(n), n - 1) == pytest.approx(0.8, abs=1e-6)
    # with many degrees of freedom, the normal closed form (z(0.975) + z(0.8)) x se
    assert detectable(0.1, 1e7) == pytest.approx(0.1 * (1.959964 + 0.841621), rel=1e-5)
    assert math.isnan(detectable(0.0, 2)) and math.isnan(detectable(0.1, 0))


def test_the_rule_detects_the_detectable_effect_80_percent_of_the_time():
    rng = np.random.default_rng(36)
    for n in (3, 5):
        delta = detectable(1 / math.sqrt(n), n - 1)  # true SD 1
        _, low, high = t_interval(delta + rng.standard_normal((N_SIM, n)))
        rate = float(np.mean(decide(low, high, +1) == REPRODUCED))
        assert rate == pytest.approx(0.8, abs=4 * math.sqrt(0.16 / N_SIM))


def test_each_verdict_states_its_power_in_the_claims_units():
    lns, pre = seeds(25.0, 25.5, 26.0), seeds(26.0, 26.4, 27.1)
    v = compare(lns, pre, paper=(25.76, 26.73))
    logs = np.log(lns / pre)
    expected = math.exp(-detectable(logs.std(ddof=1) / math.sqrt(3), 2))
    assert v.power_effect == pytest.approx(expected) and v.power_effect < 1  # on the paper's side: lower
    assert powered(v) is (abs(math.log(25.76 / 26.73)) >= abs(math.log(expected)))
    assert power_text(v) == f"80% power at ratio {expected:.4g}, the paper's 0.9637"
    d = compare(seeds(0.5, 0.625, 0.5), seeds(0.5, 0.5, 0.5), higher_is_better=True, scale="difference",
                resolution=0.125)
    assert d.power_effect >= 0.125  # never below one lattice step
    up = one_sample(seeds(1.0, 1.2, 0.9), paper=3.0)
    assert up.power_effect == pytest.approx(detectable(seeds(1.0, 1.2, 0.9).std() / math.sqrt(3), 2))
    assert powered(up) is True and "no paper effect" in power_text(one_sample(seeds(1.0, 1.2, 0.9)))
    assert powered(one_sample(seeds(1.0, 1.2, 0.9))) is None
    slope = monotone(pd.DataFrame({0: [1.0, 2.0, 4.0], 1: [1.1, 2.0, 4.1]}), +1)
    assert slope.power_effect > 1
    assert power_text(compare(seeds(1.0), seeds(2.0))).startswith("too few seeds")
    same = equivalent(seeds(100.0, 104.0, 98.0), seeds(101.0, 103.0, 97.0), MARGIN)
    assert same.power_effect > 1 and power_text(same).startswith("80% power to show equivalence within [")
    assert powered(same) is (same.power_effect <= MARGIN)
    assert powered(replace(v, paper_effect=1.1)) is False  # the paper's effect on the other side


def test_best_of_reports_the_deciding_comparisons_n():
    # LNS has 5 seeds, the rivals 3: the comparison that decides pairs 3
    lns = pd.Series([10.0, 10.1, 10.2, 10.15, 10.05], index=range(5))
    rivals = {"pre": seeds(12.0, 12.1, 12.25), "mix": seeds(10.3, 10.15, 10.35)}
    v = best_of({"lns": lns, **rivals}, "lns")
    assert v.n == 3 and "against mix (n=3)" in v.why
    assert v.mean == pytest.approx(lns.iloc[:3].mean())  # LNS over the paired seeds
    assert v.power_effect == compare(lns, rivals["mix"]).power_effect


def test_the_premise_floor(registered):
    claims = Claims("A", "default")
    treated, base = seeds(1.0, 1.1, 0.9), seeds(2.0, 2.1, 1.95)
    falls = one_sample(seeds(0.5, 0.6, 0.55), null=1.0, scale="ratio")  # the baseline shrinks: premise not shown
    v = claims.add("x-treat", "Fig. 4", "the treatment suppresses the growth", "", compare(treated, base),
                   premise=falls)
    assert v.verdict == BEYOND_REACH
    row = claims.rows[-1]
    assert row["ours"].startswith("premise not shown: the baseline grows (its ratio above 1); measured: not "
                                  "reproduced, ratio to 1 0.5")
    assert row["premise"].startswith("the baseline grows (its ratio above 1): not reproduced, ratio 0.5")
    grows = one_sample(seeds(1.5, 1.6, 1.55), null=1.0, scale="ratio")
    assert claims.add("x-treat", "Fig. 4", "", "", compare(treated, base), premise=grows).verdict == REPRODUCED
    unclear = one_sample(seeds(0.8, 1.3, 1.1), null=1.0, scale="ratio")  # not shown either way: still a floor
    assert claims.add("x-treat", "Fig. 4", "", "", compare(treated, base), premise=unclear).verdict == BEYOND_REACH
    with pytest.raises(ValueError, match="x-treat.*states a premise"):
        claims.add("x-treat", "Fig. 4", "", "", compare(treated, base))
    with pytest.raises(ValueError, match="x-win.*states no premise"):
        claims.add("x-win", "Table 1", "", "", compare(treated, base), premise=grows)


def test_an_equivalence_claim_needs_its_registered_margin(registered):
    claims = Claims("A", "default")
    a = seeds(100.0, 104.0, 98.0)
    with pytest.raises(ValueError, match="registered margin 1.04, judged with margin None"):
        claims.add("x-same", "Table 1", "comparable", "", compare(a, a * 1.01))
    with pytest.raises(ValueError, match="registered margin 1.04, judged with margin 1.05"):
        claims.add("x-same", "Table 1", "comparable", "", equivalent(a, a * seeds(1.0, 1.01, 0.99), 1.05))
    with pytest.raises(ValueError, match="registered margin None, judged with margin 1.04"):
        claims.add("x-win", "Table 1", "", "", equivalent(a, a * seeds(1.0, 1.01, 0.99), 1.04))
    v = claims.add("x-same", "Table 1", "comparable", "", equivalent(a, a * seeds(1.0, 1.01, 0.99), 1.04))
    assert v.verdict == REPRODUCED and claims.rows[-1]["margin"] == 1.04 and claims.rows[-1]["level"] == 0.9


def test_free_choices_are_judged_at_their_neighbours(registered):
    def judge(k: int) -> Verdict:  # reproduced at 4 and 5 layers, not at 3
        return compare(seeds(1.0, 1.1, 0.9), seeds(2.0, 2.1, 1.95) if k > 3 else seeds(1.0, 1.3, 0.8))

    claims = Claims("A", "default")
    assert claims.add("x-choice", "Fig. 4", "at k layers", "", judge).verdict == REPRODUCED
    assert claims.rows[-1]["robustness"] == "depends on k (3: inconclusive)"
    assert claims.add("x-choice", "Fig. 4", "", "", lambda k: judge(5)).verdict == REPRODUCED
    assert claims.rows[-1]["robustness"] == "robust to k (3, 5)"
    claims.add("x-win", "Table 1", "", "", judge(4))
    assert "robustness" not in claims.rows[-1]  # a claim without free choices carries none
    moved = Claims("A", "default", choices={"k": 3})  # a notebook run at another value says so
    assert moved.add("x-choice", "Fig. 4", "", "", judge).verdict == INCONCLUSIVE
    assert moved.rows[-1]["robustness"] == "depends on k (4: reproduced, 5: reproduced); judged at k=3 (registered 4)"
    assert moved.choice("x-choice", "k") == 3 and claims.choice("x-choice", "k") == 4
    with pytest.raises(ValueError, match="registered free choices: k; pass its verdict as a function"):
        claims.add("x-choice", "Fig. 4", "", "", judge(4))
    with pytest.raises(ValueError, match="registered free choices: none"):
        claims.add("x-win", "Table 1", "", "", judge)
    with pytest.raises(KeyError, match="registers no free choice 'j'"):
        claims.choice("x-choice", "j")
    assert robustness("reproduced", {"a": [(1, "reproduced")], "b": [(0.5, "inconclusive")]}, {"a": 2, "b": 1.0},
                      {"a": 2, "b": 1.0}) == "depends on b (0.5: inconclusive)"
    windows = [([0.05, 0.25], "reproduced"), ([0.15, 0.35], "reproduced")]  # a choice may be a list (a window)
    assert robustness("reproduced", {"w": windows}, {"w": [0.1, 0.3]}, {"w": [0.1, 0.3]}) == (
        "robust to w ([0.05, 0.25], [0.15, 0.35])")


def test_an_inconclusive_row_states_its_power(registered):
    claims = Claims("A", "default")
    claims.add("x-win", "Table 1", "a beats b", "", compare(seeds(1.0, 1.3, 0.9), seeds(1.1, 1.2, 1.0),
                                                           paper=(1.0, 2.0)))
    row = claims.rows[-1]
    assert row["verdict"] == INCONCLUSIVE and "; 80% power at ratio " in row["ours"]
    assert row["ours"].endswith(", the paper's 0.5") and row["powered"] is True
    assert row["power_effect"] < 1 and "margin" not in row
    claims.add("x-far", "Fig. 9", "at 7B", "7B", beyond_reach("7B parameters"))
    assert "power_effect" not in claims.rows[-1] and "powered" not in claims.rows[-1]


def test_usefulness_at_floor_names_the_fit_it_measured():
    v = usefulness_at_floor({"dense": 0.05}, tau=0.1)
    assert "under the paper's written fit" in v.why and "registry definition 'usefulness'" in v.why
    assert "under the authors' fit" in usefulness_at_floor({"dense": 0.05}, tau=0.1, fit="under the authors' fit").why


def test_the_rule_notebooks_print_is_the_modules_docstring_less_its_first_line():
    import cod.claims.verdicts

    text = cod.claims.verdicts.rule()
    assert text.startswith("The rule, stated in every notebook") and cod.claims.verdicts.__doc__.endswith(text)
    short = cod.claims.verdicts.rule(ledger=False)
    assert text.startswith(short) and "Every verdict" in text and "Every verdict" not in short
