"""The headline profile's criterion (cod.claims.pilot): each test at its threshold, the bigram model, the choice."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from cod.claims.pilot import Criterion, bigram_perplexity, choose, judge

L = 12
CURSED = {  # a run that passes every test: variance rising with depth and, in deep blocks, over training
    "variance_start": np.linspace(1.0, 2.0, L),
    "variance_end": np.linspace(1.0, 2.0, L) * np.linspace(1.0, 8.0, L),
    "removal_rise": np.r_[5.0, np.full(4, 1.0), np.full(3, 0.6), np.full(4, 0.2)],
}


def test_a_cursed_real_language_model_meets_every_test():
    result = judge(val_loss=math.log(500) - 2.5, unigram_ppl=500, **CURSED)
    assert result["margin_nats"] == pytest.approx(2.5)
    assert result["rho_depth"] == pytest.approx(1.0)
    assert result["depth_ratio"] == pytest.approx(16.0)
    assert result["removal_ratio"] == pytest.approx(0.2)
    assert result["meets"]


@pytest.mark.parametrize("change, failing", [
    ({"val_loss": math.log(500) - 2.0}, "real_lm"),
    ({"variance_end": np.linspace(1.0, 2.0, L)}, "grows_with_depth"),  # 2x from first to last: below 4x
    ({"variance_start": CURSED["variance_end"] / 4}, "grows_in_training"),  # every block grew alike, 4x
    ({"removal_rise": np.r_[5.0, np.full(11, 1.0)]}, "deep_less_effective"),
])
def test_each_test_fails_on_its_own(change, failing):
    run = {"val_loss": math.log(500) - 2.5, "unigram_ppl": 500, **CURSED, **change}
    result = judge(**run)
    assert not result[failing] and not result["meets"]
    others = {"real_lm", "grows_with_depth", "grows_in_training", "deep_less_effective"} - {failing}
    if failing != "grows_with_depth":  # flattening the end profile also removes the deep layers' growth
        assert all(result[name] for name in others)


def test_thresholds_come_from_the_criterion():
    strict = Criterion(margin_nats=3.0)
    assert not judge(math.log(500) - 2.5, 500, **CURSED, criterion=strict)["real_lm"]


def test_bigram_perplexity_of_a_deterministic_corpus(tmp_path):
    cycle = np.tile(np.arange(4, dtype=np.uint16), 1000)  # 0 1 2 3 0 1 2 3 ...: the next token is certain
    (tmp_path / "meta.json").write_text(json.dumps({"vocab_size": 8, "dtype": "uint16"}))
    cycle.tofile(tmp_path / "train.bin")
    cycle[:400].tofile(tmp_path / "val.bin")
    unigram = np.full(8, 1.0)
    unigram[:4] += 1000
    expected = 1 / (0.9 + 0.1 * unigram[0] / unigram.sum())
    assert bigram_perplexity(tmp_path, weight=0.9) == pytest.approx(expected, rel=1e-6)


def test_the_cheapest_candidate_meeting_all_four_tests_is_chosen_else_the_stopping_rule():
    tests = {"real_lm": [True, True, True, False], "grows_with_depth": [True, True, True, True],
             "deep_less_effective": [True, True, False, True]}
    table = pd.DataFrame({**tests, "meets": [False, True, True, False], "core_hours": [0.1, 0.5, 0.3, 0.05]},
                         index=["a", "b", "c", "d"])
    assert choose(table, complete=False) == ("c", "all four tests")
    none_meets = table.assign(meets=False)
    assert choose(none_meets, complete=False)[0] is None  # candidates remain: no choice yet
    chosen, rule = choose(none_meets, complete=True)  # a (0.1) is the cheapest passing tests 1, 2 and 4
    assert chosen == "a" and "test 3 unmet" in rule
    assert choose(none_meets.assign(real_lm=False), complete=True)[0] is None
