"""The scoreboard: every notebook's claims in one table, its summary, and the README block."""

import json
from pathlib import Path

import pandas as pd

from cod.claims import scoreboard

ROOT = Path(__file__).resolve().parent.parent


def write_claims(root: Path, notebook: str, claims: list[dict]) -> None:
    folder = root / "default" / notebook
    folder.mkdir(parents=True)
    (folder / "claims.json").write_text(json.dumps(claims))


def claim(id_, paper, verdict, **extra):
    return {"id": id_, "paper": paper, "item": "Table 1", "claim": "x | y", "paper_value": 1.0, "ours": "why",
            "verdict": verdict, "profile": "default", **extra}


def test_collect_and_summarise_every_notebooks_claims(tmp_path):
    write_claims(tmp_path, "a5_norm_comparison", [claim("a5-1", "A", "reproduced", seeds=[0, 1, 2]),
                                                  claim("a5-2", "A", "not reproduced", mean=2.5, spread=0.1, n=3)])
    write_claims(tmp_path, "b2_theory", [claim("B-thm1", "B", "holds loosely", seed=0)])
    write_claims(tmp_path, "claims", [claim("ignored", "A", "reproduced")])  # the scoreboard's own folder
    table = scoreboard.collect(tmp_path, "default")
    assert list(table["id"]) == ["a5-1", "a5-2", "B-thm1"]
    assert list(table["n"]) == [3, 3, 1] and table.loc[1, "mean"] == 2.5
    assert table.loc[2, "command"] == "dvc repro --single-item b2_theory"
    counts = scoreboard.summary(table)
    assert counts.loc["A", "reproduced"] == 1 and counts.loc["B", "holds loosely"] == 1
    assert counts.loc["all", "total"] == 3
    assert list(counts.columns) == ["reproduced", "not reproduced", "holds loosely", "total"]  # in verdict order


def test_markdown_escapes_pipes_and_formats_numbers():
    text = scoreboard.markdown(pd.DataFrame({"claim": ["a | b"], "mean": [0.123456]}), index=False)
    assert text.splitlines() == ["| claim | mean |", "|---|---|", "| a \\| b | 0.1235 |"]


def test_the_results_page_shows_the_generated_summary_and_headline_table():
    results = (ROOT / "docs" / "results.md").read_text()
    summary = (ROOT / "figures" / "default" / "claims" / "summary.md").read_text().strip()
    headline = (ROOT / "figures" / "headline" / "claims" / "headline.md").read_text().strip()
    assert headline.splitlines()[0] in results and summary.splitlines()[0] in results
    assert results.index(headline.splitlines()[0]) < results.index(summary.splitlines()[0])


def test_findings_list_each_notebooks_decisive_claims_with_their_effect():
    table = pd.DataFrame([
        {"notebook": "a10_x", "id": "a10-1", "source": "paper", "verdict": "inconclusive", "effect": None},
        {"notebook": "a5_x", "id": "a5-1", "source": "paper", "verdict": "reproduced", "effect": 0.945,
         "ci_low": 0.895, "ci_high": 0.998, "paper_effect": 0.975, "scale": "ratio"},
        {"notebook": "a5_x", "id": "a5-2", "source": "ours", "verdict": "beyond reach", "effect": None},
    ])
    text = scoreboard.findings(table)
    assert text.index("a5_x") < text.index("a10_x")  # paper order, not string order
    assert "`a5-1` reproduced, ratio 0.945 [0.895, 0.998] (paper 0.975)" in text
    assert "the papers' claims: 1 reproduced; our own readings: 1 beyond reach" in text
    assert "Decisive" not in text.split("a10_x")[1]


def test_the_headline_table_puts_each_claim_beside_its_verdict_at_both_profiles():
    row = {"paper": "A", "item": "Table 1", "claim": "LNS beats Pre-LN.", "paper_value": {"LNS": 25.76},
           "ours": "ppl 43 vs 44", "effect": 0.98, "ci_low": 0.97, "ci_high": 0.99, "paper_effect": 0.96, "scale": "ratio"}
    first = pd.DataFrame([{**row, "id": "a5-x", "verdict": "inconclusive"}, {**row, "id": "b6-y:large", "verdict": "reproduced"}])
    second = pd.DataFrame([{**row, "id": "a5-x", "verdict": "reproduced"}, {**row, "id": "b6-y:wide", "verdict": "not reproduced"}])
    text = scoreboard.headline_markdown(first, second, ["a5-x", "b6-y:large", "b7-z"], ("default", "headline"))
    lines = text.splitlines()
    assert lines[0] == "| claim | paper | today's miniature (default) | headline profile (headline) |"
    assert lines[2] == ("| `a5-x` A Table 1: LNS beats Pre-LN. | LNS: 25.76 | **inconclusive** (ratio 0.98 [0.97, 0.99] "
                        "(paper 0.96)) | **reproduced** (ratio 0.98 [0.97, 0.99] (paper 0.96)) |")
    assert "**not reproduced**" in lines[3]  # matched by its stem, b6-y
    assert lines[4] == "| `b7-z` |  | not yet run | not yet run |"


def test_scoring_times_divide_each_measure_by_the_items_it_loops_over():
    seconds = {"removal": 60.0, "causal": 30.0, "permutation": 40.0, "usefulness": 45.0, "jacobian": 15.0, "stream": 2.0}
    settings = {"eval_tokens": 256, "permutation_tokens": 128, "permutation_pairs": 40, "fit_tokens": 2048,
                "jacobian_tokens": 1, "jacobian_context": 16}
    times = scoreboard.scoring_times(seconds, settings, n_layers=30)
    assert times.loc["removal", "seconds per item"] == 2.0 and times.loc["permutation", "seconds per item"] == 1.0
    assert times.loc["usefulness", "tokens"] == "2048 fitted, 256 scored" and "stream" not in times.index
    every_pair = scoreboard.scoring_times(seconds, {**settings, "permutation_pairs": None}, n_layers=30)
    assert every_pair.loc["permutation", "items"] == "435 pairs"


def test_summary_by_notebook_lists_notebooks_in_paper_order():
    table = pd.DataFrame({"notebook": ["b1_y", "a10_x", "a1_x", "a0_x", "h0_pilot", "a2_x"],
                          "verdict": ["reproduced"] * 6})
    counts = scoreboard.summary(table, "notebook")
    assert list(counts.index) == ["a0_x", "a1_x", "a2_x", "a10_x", "b1_y", "h0_pilot", "all"]


def shown_markdown(name: str) -> list[str]:
    """The Markdown a committed executed notebook of the default profile displayed, output by output."""
    notebook = json.loads((ROOT / f"notebooks/executed/default/{name}.ipynb").read_text())
    return ["".join(out["data"]["text/markdown"]).strip() for cell in notebook["cells"]
            for out in cell.get("outputs", []) if "text/markdown" in out.get("data", {})]


def test_the_paragraph_on_public_models_is_the_one_the_executed_b9_wrote():
    block = (ROOT / "figures" / "default" / "b9_open_weight_scores" / "public_models.md").read_text().strip()
    assert block and block in shown_markdown("b9_open_weight_scores")


def test_the_account_of_the_default_pilot_is_the_one_the_executed_a0_wrote():
    block = (ROOT / "figures" / "default" / "a0_miniature" / "pilot.md").read_text().strip()
    shown = shown_markdown("a0_miniature")
    assert block and any(block == f"{pilot}\n\n{closing}" for pilot in shown for closing in shown)
    assert "language-model runs have" in block


def test_inconclusive_claims_are_counted_by_the_power_of_their_design(tmp_path):
    write_claims(tmp_path, "a5_norm_comparison", [
        claim("a5-1", "A", "inconclusive", source="paper", powered=True, power_effect=0.98, paper_effect=0.96),
        claim("a5-2", "A", "inconclusive", source="paper", powered=False, power_effect=0.9, paper_effect=0.96),
        claim("a5-3", "A", "inconclusive", source="paper"),  # no paper effect or no spread: unknown
        claim("a5-4", "A", "inconclusive", source="ours", powered=False),
        claim("a5-5", "A", "reproduced", source="paper", powered=True,
              robustness="depends on deep_layers (3: inconclusive)"),
        claim("a5-6", "A", "reproduced", source="paper", robustness="robust to deep_layers (3, 5)")])
    table = scoreboard.collect(tmp_path, "default")
    counts = scoreboard.power_summary(table)
    assert list(counts.columns) == [*scoreboard.POWER_CLASSES, "inconclusive"]
    assert counts.loc["the papers' claims"].tolist() == [1, 1, 1, 3]
    assert counts.loc["our own readings"].tolist() == [0, 1, 0, 1]  # decisive claims are not counted
    assert scoreboard.robustness_summary(table) == {"with free choices": 2, "depends on one": 1}
    empty = scoreboard.power_summary(table[table["verdict"] == "reproduced"])
    assert empty["inconclusive"].tolist() == [0, 0]


def test_a_ratio_names_which_way_it_runs():
    """The paper's two values whose ratio is its effect name ours too (the headline table's ratios);
    a test against a fixed value names its statistic and the value; a ladder's runs per rung."""
    row = {"scale": "ratio", "effect": 1.06, "ci_low": 1.0, "ci_high": 1.11, "paper_effect": 26.73 / 26.95,
           "paper_value": {"Post-LN @130M": 26.95, "Pre-LN @130M": 26.73}, "ours": "ratio 1.06 [1, 1.11]; 236.1 vs 223.3"}
    assert scoreboard.effect(pd.Series(row), named=True) == "ratio Pre-LN @130M / Post-LN @130M 1.06 [1, 1.11] (paper 0.992)"
    one = {**row, "paper_effect": None, "paper_value": "grows",
           "ours": "ratio to 1 0.2544 [0.17, 0.38]; 0.2566, above 1 in 0/3 seeds; deep σ² end / first step after warmup"}
    assert scoreboard.direction(pd.Series(one)) == "(deep σ² end / first step after warmup) to 1"
    assert scoreboard.direction(pd.Series({**one, "ours": "ratio to 2 0.657 [0.6, 0.7]; 1.3, above 2 in 0/2 seeds"})) == "to 2"
    assert scoreboard.direction(pd.Series({**one, "ours": "ratio per rung 1.08 [1.07, 1.08] over 2 seeds"})) == \
        "per rung, along the ladder"
    assert scoreboard.direction(pd.Series({**one, "ours": "ratio 1.007 [0.98, 1.04]; 237.8 vs 236.1, the first lower"})) == \
        "237.8 / 236.1"


def test_a_notebooks_closing_paragraph_is_generated_from_its_claims(tmp_path):
    claims = [{"id": "a5-1", "claim": "LNS beats Pre-LN.", "verdict": "reproduced", "scale": "ratio", "effect": 0.95,
               "ci_low": 0.9, "ci_high": 0.99, "paper_effect": 0.96, "paper_value": {"LNS": 24.0, "Pre-LN": 25.0},
               "ours": ""},
              {"id": "a5-2", "claim": "Post-LN diverges.", "verdict": "inconclusive", "effect": None, "ours": ""}]
    (tmp_path / "claims.json").write_text(json.dumps(claims))
    text = scoreboard.closing_of(tmp_path)
    assert text == ("What the figures above show, read from the 2 claims judged on them: 1 reproduced, 1 inconclusive. "
                    "Decisive: LNS beats Pre-LN: **reproduced**, ratio LNS / Pre-LN 0.95 [0.9, 0.99] (paper 0.96). "
                    "The others: inconclusive: `a5-2`.")
    assert scoreboard.closing(pd.DataFrame(claims).iloc[:0]) == "No claim is judged on the figures above."
