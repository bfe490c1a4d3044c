"""The one verdict rule (cod.verdicts) and the claims ledger: its false-decisive rate under no effect, by
simulation, and hand-made cases with known answers."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from cod import verdicts
from cod.registry import ClaimEntry
from cod.results import save_claims
from cod.verdicts import (ALPHA, BEYOND_REACH, INCONCLUSIVE, NOT_REPRODUCED, NOT_RUN, REPRODUCED, Claims, Verdict,
                          accuracy_at_chance, accuracy_floor, accuracy_se, attention_near_uniform, best_of,
                          beyond_reach, compare, decide, diverged, effect_text, ladder_slopes, monotone, one_sample,
                          t_interval, too_few_rivals, usefulness_at_floor, welch_interval)

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
    low, high = seeds(10.0, 11.0, 9.0), seeds(20.0, 21.0, 19.0)  # 10 seed SDs apart
    assert compare(low, high, scale="difference").verdict == REPRODUCED
    assert compare(high, low, scale="difference").verdict == NOT_REPRODUCED
    assert compare(low, high).verdict == REPRODUCED  # on the ratio scale too
    assert one_sample(low).verdict == REPRODUCED
    assert one_sample(-low).verdict == NOT_REPRODUCED
    ladder = pd.DataFrame({0: [1.0, 11.0, 21.0, 31.0], 1: [0.0, 10.0, 20.0, 30.0], 2: [2.0, 12.0, 22.0, 32.0]})
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


def test_a_zero_width_interval_at_zero_is_inconclusive():
    assert compare(seeds(5.0, 7.0, 9.0), seeds(5.0, 7.0, 9.0)).verdict == INCONCLUSIVE
    assert one_sample(seeds(0.0, 0.0, 0.0)).verdict == INCONCLUSIVE
    # the same nonzero difference in every seed is a deterministic effect
    assert compare(seeds(5.0, 7.0, 9.0), seeds(6.0, 8.0, 10.0), scale="difference").verdict == REPRODUCED


def test_higher_is_better():
    assert compare(seeds(0.9, 0.8), seeds(0.5, 0.4), higher_is_better=True, scale="difference").verdict == REPRODUCED
    assert compare(seeds(0.9, 0.8), seeds(0.5, 0.4), scale="difference").verdict == NOT_REPRODUCED
    assert "higher in 2/2" in compare(seeds(0.9, 0.8), seeds(0.5, 0.4), higher_is_better=True).why


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
    assert v.verdict == INCONCLUSIVE and v.why.startswith("not clearly ahead of mix; against mix: ratio")
    values["mix"] = seeds(9.0, 9.1, 9.25)
    v = best_of(values, "lns", paper={"lns": 25.76, "pre": 26.73, "mix": "26.07"})
    assert v.verdict == NOT_REPRODUCED and v.why.startswith("beaten clearly by mix; against mix: ratio")
    assert v.level == pytest.approx(1 - ALPHA / 2)  # Bonferroni over the two others
    assert v.paper_effect == pytest.approx(25.76 / 26.07)
    assert v.mean == pytest.approx(10.1) and v.n == 3
    v = best_of({"lns": values["lns"], "pre": values["pre"], "far": values["pre"] * 2}, "lns")
    assert v.verdict == REPRODUCED and v.why.startswith("clearly ahead of all 2; against pre: ")  # the closest
    # a floor per rival: the 2.0 gap to pre no longer counts
    assert best_of({"lns": values["lns"], "pre": values["pre"]}, "lns", floors={"pre": 2.5}).verdict == INCONCLUSIVE
    higher = {"a": seeds(0.9, 0.8), "b": seeds(0.5, 0.4)}
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
    values = pd.DataFrame({0: [1.0, 2.0, math.inf], 1: [1.0, 2.5, math.inf], 2: [1.0, np.nan, 9.0]})
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


def entry(id_: str, ours: bool = False, numbers: dict | None = None) -> ClaimEntry:
    return ClaimEntry(id_, "a5_norm_comparison", "A", "Table 1", f"the paper's claim {id_}", "§5.1", numbers,
                      "validation perplexity", "lower", ("a_130m/lns",), ours, "§5.1",
                      why_ours="an extra size" if ours else None)


@pytest.fixture
def registered(monkeypatch):
    """A registry of the claims these tests add."""
    entries = {"x-win": entry("x-win", numbers={"LNS": 1.0, "Pre-LN": 2.0}), "x-theory": entry("x-theory"),
               "x-far": entry("x-far", ours=True), "x-bad": entry("x-bad")}
    monkeypatch.setattr(verdicts, "registry", lambda: entries)


def test_a_claim_takes_its_wording_from_the_registry_and_an_unknown_one_is_refused(registered):
    claims = Claims("A", "default")
    claims.add("x-far", "Fig. 9", "at 7B", "7B", beyond_reach("7B parameters"))
    row = claims.rows[0]
    assert row["claim"] == "the paper's claim x-far" and row["source"] == "ours" and row["test"] == "Fig. 9: at 7B"
    with pytest.raises(KeyError, match="x-new.*cod/registry.yaml"):
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
