"""The documentation: a short README, pages written by hand or generated whole by one stage, and
nothing that points outside the repository."""

import re
import subprocess
from pathlib import Path

import yaml

from cod.report import docs

ROOT = Path(__file__).resolve().parents[1]
README_LIMIT = 10 * 1024  # bytes: the README says what and why, the answer, the first five minutes
OUTSIDE = ("PAPER_NUMBERS.md", "OFFLINE_RESOURCES.md", "REPLICATION_MAP.md", "../shared")  # notes the package never ships


def tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    keep = (".py", ".md", ".yaml", ".yml", ".cff", ".txt", ".toml", ".ipynb", ".json", ".csv", "Makefile")
    return [ROOT / n for n in names if n.endswith(keep) and (ROOT / n).is_file()]


def test_the_readme_is_short():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size:,} bytes; the limit is {README_LIMIT:,}: move detail into docs/"


def test_each_generated_page_is_the_output_of_exactly_one_stage():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    writers = {}
    for name, stage in stages.items():
        for out in stage.get("do", stage).get("outs", []):
            path = next(iter(out)) if isinstance(out, dict) else out
            writers.setdefault(path, []).append(name)
    for page in [*docs.PAGES, "README.md"]:
        assert writers.get(page) == ["docs"], f"{page}: written by {writers.get(page)}, not the docs stage alone"


def test_only_the_docs_writer_writes_the_readme():
    """No notebook or module but cod/report/docs.py rewrites README.md (each used to write a block of it)."""
    for path in [*ROOT.glob("notebooks/*.py"), *ROOT.glob("cod/**/*.py"), *ROOT.glob("tests/timing.py")]:
        if path.relative_to(ROOT).as_posix() == "cod/report/docs.py":
            continue
        source = path.read_text()
        assert "update_readme(" not in source or path.name == "scoreboard.py", f"{path} still writes README.md"


def test_the_generated_pages_are_what_the_committed_files_give():
    for path, text in docs.written().items():
        assert path.read_text() == text, f"{path.relative_to(ROOT)} is stale: run `python -m cod.report`"


def test_nothing_points_outside_the_repository():
    for path in tracked_text_files():
        if path == Path(__file__).resolve():  # the names it looks for
            continue
        text = path.read_text(errors="ignore")
        for name in OUTSIDE:
            assert name not in text, f"{path.relative_to(ROOT)} cites {name}, which the repository does not hold"


def test_every_relative_link_of_the_docs_resolves():
    for page in [ROOT / "README.md", *ROOT.glob("docs/*.md")]:
        text = page.read_text()  # inline links, and reference links' definitions ("[name]: target")
        for target in [*re.findall(r"\]\(([^)\s]+)\)", text), *re.findall(r"^\[[^\]]+\]:\s*(\S+)", text, re.M)]:
            if target.startswith(("http://", "https://", "#", "mailto:")):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            assert path.exists(), f"{page.relative_to(ROOT)} links to {target}, which does not exist"


def test_a_departure_test_reads_in_its_claims_units_beside_cods_and_the_papers():
    row = {"departure": "embedding std 0.632 alone", "claim": "Table 1: LNS beats Pre-LN (130M)",
           "statistic": "perplexity, LNS / Pre-LN", "paper": "0.964", "cod": "0.987 [0.98, 0.995] (n=5)",
           "released": "1.14 [1.13, 1.15] (n=3)", "moved toward the paper": "not reproduced"}
    away = docs.pd.Series(row)
    assert docs.moved(away) == ("perplexity, LNS / Pre-LN 1.14 [1.13, 1.15] (n=3) with it, 0.987 [0.98, 0.995] (n=5) "
                                "under cod's recipe, the paper's 0.964: **away from it**")
    assert docs._moved_short(away) == "Table 1: LNS beats Pre-LN (130M) 1.14 (cod 0.987, paper 0.964) **away**"
    direction = docs.pd.Series({**row, "paper": "a direction", "moved toward the paper": "reproduced"})
    assert docs.moved(direction).endswith("the paper states the direction only: **toward the paper**")
    assert docs._moved_short(direction).endswith("(cod 0.987) **toward**")
    assert docs.moved(docs.pd.Series({**row, "moved toward the paper": "not run"})) == "perplexity, LNS / Pre-LN: not run yet"


def test_departure_tests_are_the_rows_that_ran(tmp_path):
    """What the report and the README read of h2's table: the tests that ran, by claim id."""
    path = tmp_path / docs.DEPARTURE_TESTS
    path.parent.mkdir(parents=True)
    path.write_text("id,departure,moved toward the paper\nh2-a,x,reproduced\nh2-b,y,not run\nh2-c,z,inconclusive\n")
    assert list(docs.departure_tests(tmp_path).index) == ["h2-a", "h2-c"]
    assert docs.departure_tests(tmp_path / "nowhere").empty
