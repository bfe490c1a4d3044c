"""The test suite's own bookkeeping: the `slow` mark that `make test-fast` leaves out, and the
record of how long the suite takes (tests/timing.py)."""

import ast
import json
from pathlib import Path

import timing
from conftest import SLOW

from cod.report import docs

TESTS = Path(__file__).resolve().parent


def test_every_test_named_slow_exists():
    """conftest.SLOW names tests by file and function: a renamed or removed test must leave the list too."""
    for entry in SLOW:
        file, name = entry.split("::")
        tree = ast.parse((TESTS / file).read_text())
        functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert name in functions and name.startswith("test_"), f"conftest.SLOW: {entry} is no test"
    assert len(set(SLOW)) == len(SLOW)


def test_the_timing_record_reads_pytests_summary_and_fills_the_measurements_table(tmp_path):
    assert timing.counts("....\n3 failed, 660 passed, 1 skipped, 19 warnings in 900.12s (0:15:00)\n") == {
        "failed": 3, "passed": 660, "skipped": 1, "warnings": 19}
    assert timing.counts("===== 12 passed in 3.01s =====") == {"passed": 12}
    record = {"suite": "make test", "date": "2026-11-27", "wall_s": 600.0, "cpu_s": 1020.0, "cores": 2,
              "load_before": 0.1, "exit": 0, "tests": {"passed": 660, "skipped": 1}}
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "timings.json").write_text(json.dumps([record]))
    row = docs.suite_table(tmp_path).splitlines()[-1]
    assert row == "| `make test` | 660 passed, 1 skipped | 10.0 min | 17.0 min | 2 | 0.1 | 2026-11-27 |"
    notebooks = {**record, "suite": "make notebooks", "wall_s": 480.0, "cpu_s": 840.0, "tests": {}, "notebooks": 35}
    (tmp_path / "tests" / "timings.json").write_text(json.dumps([record, notebooks]))
    row = docs.suite_table(tmp_path).splitlines()[-1]
    assert row == "| `make notebooks` | 35 notebooks | 8.0 min | 14.0 min | 2 | 0.1 | 2026-11-27 |"
    install = {**record, "suite": "make install", "wall_s": 66.0, "cpu_s": 45.0, "tests": {},
               "packages": "every package fetched"}
    (tmp_path / "tests" / "timings.json").write_text(json.dumps([install]))
    row = docs.suite_table(tmp_path).splitlines()[-1]
    assert row == "| `make install` | every package fetched | 1.1 min | 0.8 min | 2 | 0.1 | 2026-11-27 |"
    assert set(timing.TIMERS) == {"make install", "make notebooks"}
    assert timing.DONE.findall("[notebooks] a4: done in 12 s\n[notebooks] b1: failed (exit 1) in 3 s\n") == [
        "[notebooks] a4: done in"]
    assert set(timing.SUITES) == {"make test", "make test-fast"}
    makefile = (TESTS.parent / "Makefile").read_text()
    for name, arguments in timing.SUITES.items():  # the Makefile's commands, as timed
        target = makefile.split(f"\n{name.split()[1]}: install\n", 1)[1].splitlines()[0]
        assert target.split("pytest ", 1)[1].startswith(" ".join(a if " " not in a else f'"{a}"' for a in arguments))


def test_the_timing_record_keeps_the_slowest_test_phases():
    output = ("============ slowest 20 durations ============\n"
              "964.12s setup    tests/test_pipeline.py::test_notebooks_run\n"
              "12.50s call     tests/test_train.py::test_resume[cpu]\n"
              "(3 durations < 0.005s hidden.)\n3 passed in 980.00s\n")
    assert timing.slowest(output) == [
        {"seconds": 964.12, "phase": "setup", "test": "tests/test_pipeline.py::test_notebooks_run"},
        {"seconds": 12.5, "phase": "call", "test": "tests/test_train.py::test_resume[cpu]"}]


def test_the_timing_record_names_the_tests_that_did_not_pass():
    output = ("=========== short test summary info ===========\n"
              "FAILED tests/test_a.py::test_one - AssertionError: no\n"
              "ERROR tests/test_b.py::test_two - RuntimeError\n"
              "1 failed, 1 error, 5 passed in 3.0s\n")
    assert timing.failures(output) == ["tests/test_a.py::test_one", "tests/test_b.py::test_two"]
    assert timing.failures("5 passed in 3.0s\n") == []
