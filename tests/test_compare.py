"""The verdict rule and the failure line of paper A's tables (cod.compare), on hand-made cases."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from cod.compare import cell, every_seed, judge, judge_best, mark_failed, unigram_perplexity


def seeds(*values) -> pd.Series:
    return pd.Series(values, index=range(len(values)), dtype=float)


def test_a_clear_win_in_every_seed_is_reproduced():
    verdict, why = judge(seeds(10.0, 10.5, 11.0), seeds(12.0, 12.5, 13.0))
    assert verdict == "reproduced" and "3/3" in why
    assert judge(seeds(12.0, 12.5, 13.0), seeds(10.0, 10.5, 11.0))[0] == "not reproduced"


def test_a_win_inside_the_seed_spread_is_inconclusive():
    # a beats b in every seed, but the gap of the means (0.2) is below the seeds' spread (std 2)
    assert judge(seeds(8.0, 10.0, 12.0), seeds(8.2, 10.2, 12.2))[0] == "inconclusive"
    # clear gap, but one seed disagrees
    assert judge(seeds(10.0, 10.0, 14.0), seeds(13.0, 13.0, 13.5))[0] == "inconclusive"


def test_higher_is_better_and_unpaired_seeds():
    assert judge(seeds(0.9, 0.8), seeds(0.5, 0.4), lower_is_better=False)[0] == "reproduced"
    a, b = pd.Series([10.0, 11.0], index=[0, 1]), pd.Series([20.0, 21.0], index=[1, 2])
    assert judge(a, b) == ("inconclusive", "1 paired seed(s)")  # only seed 1 is in both


def test_failed_runs_lose_every_comparison():
    final = pd.DataFrame({"variant": ["x"] * 4, "seed": [0, 1, 2, 3],
                          "status": ["completed", "completed", "diverged", "completed"],
                          "val_ppl": [100.0, 600.0, None, 499.0]})
    marked = mark_failed(final, chance_ppl=500.0)
    assert marked["failed"].tolist() == [False, True, True, False]
    assert marked["ppl"].tolist() == [100.0, math.inf, math.inf, 499.0]
    assert judge(seeds(300.0, 310.0), seeds(math.inf, math.inf))[0] == "reproduced"
    assert cell(marked["ppl"]) == "299.5 ± 282.1 (n=2), failed 2/4"
    assert cell(marked["ppl"], marked["val_ppl"]) == "299.5 ± 282.1 (n=2), failed 2/4: 600.0, diverged"
    assert cell(seeds(math.inf)) == "failed 1/1" and cell(pd.Series([], dtype=float)) == "not trained"


def test_the_best_must_beat_every_other_clearly():
    values = {"lns": seeds(10.0, 10.1, 10.2), "pre": seeds(12.0, 12.1, 12.2), "mix": seeds(10.1, 10.2, 10.3)}
    assert judge_best(values, "lns")[0] == "inconclusive"  # ahead of mix in every seed, not by the spread
    values["mix"] = seeds(9.0, 9.1, 9.2)
    assert judge_best(values, "lns") == ("not reproduced", "beaten clearly by mix")
    assert judge_best({"lns": values["lns"], "pre": values["pre"]}, "lns")[0] == "reproduced"


def test_unigram_perplexity_of_a_known_distribution(tmp_path):
    # train: token 0 three times, token 1 once (vocab 2; add-one counts 4 and 2); val: 0 then 1
    (tmp_path / "meta.json").write_text(json.dumps({"dtype": "uint16", "vocab_size": 2}))
    np.array([0, 0, 0, 1], dtype=np.uint16).tofile(tmp_path / "train.bin")
    np.array([0, 1], dtype=np.uint16).tofile(tmp_path / "val.bin")
    expected = math.exp(-(math.log(4 / 6) + math.log(2 / 6)) / 2)
    assert unigram_perplexity(tmp_path) == pytest.approx(expected)
    assert unigram_perplexity(tmp_path, eval_tokens=1) == pytest.approx(6 / 4)


def test_every_seed_verdicts():
    assert every_seed(pd.Series([True, True, True])) == "reproduced"
    assert every_seed(pd.Series([False, False])) == "not reproduced"
    assert every_seed(pd.Series([True, False])) == "inconclusive"
    assert every_seed(pd.Series([], dtype=bool)) == "inconclusive"
