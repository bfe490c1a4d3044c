"""The failure line and perplexity cells of paper A's tables (cod.claims.tables), on hand-made cases; the verdict
rule itself is tested in test_verdicts.py."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from cod.claims.tables import by_seed, cell, failure_line, mark_failed, ppl_table
from cod.data.loader import unigram_perplexity


def seeds(*values) -> pd.Series:
    return pd.Series(values, index=range(len(values)), dtype=float)


def test_failed_runs_are_marked_and_counted_apart():
    final = pd.DataFrame({"variant": ["x"] * 4, "seed": [0, 1, 2, 3],
                          "status": ["completed", "completed", "diverged", "completed"],
                          "val_ppl": [100.0, 600.0, None, 499.0]})
    marked = mark_failed(final, chance_ppl=500.0)
    assert marked["failed"].tolist() == [False, True, True, False]
    assert marked["ppl"].tolist() == [100.0, 600.0, 500.0, 499.0]  # a failed run: no better than the unigram model
    assert cell(marked["ppl"], failed=marked["failed"]) == "299.5 ± 282.1 (n=2), failed 2/4"
    assert (cell(marked["ppl"], marked["val_ppl"], failed=marked["failed"])
            == "299.5 ± 282.1 (n=2), failed 2/4: 600.0, diverged")
    assert cell(seeds(math.inf)) == "failed 1/1" and cell(pd.Series([], dtype=float)) == "not trained"


def test_unigram_perplexity_of_a_known_distribution(tmp_path):
    # train: token 0 three times, token 1 once (vocab 2; add-one counts 4 and 2); val: 0 then 1
    (tmp_path / "meta.json").write_text(json.dumps({"dtype": "uint16", "vocab_size": 2}))
    np.array([0, 0, 0, 1], dtype=np.uint16).tofile(tmp_path / "train.bin")
    np.array([0, 1], dtype=np.uint16).tofile(tmp_path / "val.bin")
    expected = math.exp(-(math.log(4 / 6) + math.log(2 / 6)) / 2)
    assert unigram_perplexity(tmp_path) == pytest.approx(expected)
    assert unigram_perplexity(tmp_path, eval_tokens=1) == pytest.approx(6 / 4)


def test_ppl_table_puts_ours_beside_the_papers():
    sweep = pd.DataFrame({"size": ["130M"] * 4, "variant": ["pre", "pre", "lns", "lns"], "seed": [1, 0, 0, 1],
                          "ppl": [12.0, 10.0, 9.0, 600.0], "val_ppl": [12.0, 10.0, 9.0, 600.0],
                          "failed": [False, False, False, True]})
    assert by_seed(sweep, "pre").tolist() == [10.0, 12.0]  # sorted by seed
    paper = pd.DataFrame({"130M": [26.73, 25.76]}, index=["Pre-LN", "LNS"])
    table = ppl_table(sweep, {"Pre-LN": "pre", "LNS": "lns"}, paper)
    assert table.loc["Pre-LN", ("130M", "ours")] == "11.0 ± 1.4 (n=2)"
    assert table.loc["LNS", ("130M", "ours")] == "9.0 (n=1), failed 1/2: 600.0"
    assert table.loc["LNS", ("130M", "paper")] == 25.76


def test_the_failure_line_without_token_arrays_names_the_stage_that_makes_them(tmp_path):
    with pytest.raises(FileNotFoundError) as missing:
        unigram_perplexity(tmp_path / "bpe2048")
    assert "\n" not in str(missing.value) and "`dvc repro prepare` makes them" in str(missing.value)


def test_the_failure_line_is_read_from_the_curves_stage_record_without_token_arrays(tmp_path):
    record = tmp_path / "figures" / "default" / "failure_lines.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"a_130m": 512.5}))
    assert failure_line(tmp_path / "runs" / "default", "a_130m") == 512.5
    with pytest.raises(FileNotFoundError, match="trains them"):  # not recorded, and no run to count for
        failure_line(tmp_path / "runs" / "default", "a_250m")
