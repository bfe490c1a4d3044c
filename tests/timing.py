"""How long the test suite takes on this machine: `make test` and `make test-fast` run as the
Makefile runs them, timed and recorded in tests/timings.json, whose table docs/measurements.md
shows (`cod.report.docs.suite_table`: its numbers are measured here, never typed).

    .venv/bin/python tests/timing.py            # time both (minutes) and record them
    .venv/bin/python tests/timing.py --only "make notebooks"   # one of them: `make notebooks` on a fresh clone
    .venv/bin/python tests/timing.py --only "make install"     # a fresh install, nothing cached (CI's first step)

`make install` is timed as CI meets it: a fresh clone into a new virtual environment, with pip's and
uv's caches off, so that every package is fetched from the registry.

`make notebooks` is timed as a fresh clone runs it: a `git clone` of this checkout's HEAD into a
temporary folder, with this checkout's virtual environment (the install is not timed), rebuilding
the corpus and its token arrays and executing every notebook stage.

Wall seconds are what a user waits; CPU seconds (user + system, of every process the suite
starts) change less with the machine's load, which the record keeps beside them (the load
average over the minute before the run began), with the slowest test phases (pytest's
--durations): where the next saving lies.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "tests" / "timings.json"
SUITES = {  # the Makefile's targets, and the pytest arguments they run
    "make test": ["-q", "-n", "auto", "--dist", "loadfile", "--no-loadscope-reorder"],
    "make test-fast": ["-q", "-n", "auto", "--dist", "loadfile", "--no-loadscope-reorder", "-m", "not slow"],
}
NOTEBOOKS = "make notebooks"  # timed on a fresh clone (`time_notebooks`)
INSTALL = "make install"  # timed on a fresh clone, into a new environment, caches off (`time_install`)
DONE = re.compile(r"^\[notebooks\] \S+: done in", re.MULTILINE)  # a notebook stage that ran (cod.pipeline.runner)
SUMMARY = re.compile(r"^=* ?(\d+ \w+(?:, \d+ \w+)*) in [\d.]+s", re.MULTILINE)
DURATIONS = 20  # the slowest test phases kept in the record: where the next saving lies
SLOWEST = re.compile(r"^([\d.]+)s (setup|call|teardown) +(\S+)$", re.MULTILINE)
FAILURES = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)  # pytest's short summary: which tests did not pass


def counts(output: str) -> dict[str, int]:
    """pytest's closing line ('3 failed, 660 passed, 1 skipped in 900.1s (0:15:00)') as {'failed': 3, ...}."""
    found = SUMMARY.findall(output)
    if not found:
        raise ValueError("no pytest summary line in the output")
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", found[-1])}


def slowest(output: str) -> list[dict]:
    """pytest's --durations lines ('964.12s setup    tests/test_pipeline.py::test_x') as records."""
    return [{"seconds": float(seconds), "phase": phase, "test": test} for seconds, phase, test in SLOWEST.findall(output)]


def failures(output: str) -> list[str]:
    """The tests pytest's short summary names as failed or in error ('FAILED tests/test_x.py::test_y - ...')."""
    return FAILURES.findall(output)


def children_cpu() -> float:
    """CPU seconds of every finished descendant: with `adopt_orphans`, those whose parent ended first too."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def adopt_orphans() -> None:
    """Make this process the reaper of its orphaned descendants (Linux's PR_SET_CHILD_SUBREAPER), so that the
    processes a fork server starts count in `children_cpu` once `reap_orphans` waits for them."""
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(36, 1)  # 36: PR_SET_CHILD_SUBREAPER


def reap_orphans(patience: float = 10.0) -> None:
    """Wait for the adopted descendants still running (a server's last moments), at most `patience` seconds."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.1)


def time_suite(name: str) -> dict:
    """Run suite `name` once; its record."""
    load, cpu, started = os.getloadavg()[0], children_cpu(), time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", *SUITES[name], f"--durations={DURATIONS}"], cwd=ROOT,
                          capture_output=True, text=True)
    reap_orphans()
    return {"suite": name, "date": date.today().isoformat(), "wall_s": round(time.monotonic() - started, 1),
            "cpu_s": round(children_cpu() - cpu, 1), "cores": os.cpu_count(), "load_before": round(load, 2),
            "exit": done.returncode, "tests": counts(done.stdout), "failures": failures(done.stdout),
            "slowest": slowest(done.stdout)}


def time_notebooks() -> dict:
    """`make notebooks` on a fresh clone of HEAD, with this checkout's environment; its record."""
    with tempfile.TemporaryDirectory() as folder:
        clone = Path(folder) / "clone"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        load, cpu, started = os.getloadavg()[0], children_cpu(), time.monotonic()
        venv = ROOT / ".venv"  # -o: its install counts as done (a newer clone would reinstall, pointing it there)
        done = subprocess.run(["make", "notebooks", f"VENV={venv}", "-o", str(venv / ".installed")], cwd=clone,
                              capture_output=True, text=True)
        reap_orphans()
        wall = time.monotonic() - started
    output = done.stdout + done.stderr
    return {"suite": NOTEBOOKS, "date": date.today().isoformat(), "wall_s": round(wall, 1),
            "cpu_s": round(children_cpu() - cpu, 1), "cores": os.cpu_count(), "load_before": round(load, 2),
            "exit": done.returncode, "tests": {}, "notebooks": len(DONE.findall(output)),
            "failures": [] if done.returncode == 0 else output.splitlines()[-20:], "slowest": []}


def time_install() -> dict:
    """`make install` on a fresh clone of HEAD into a new virtual environment, nothing cached; its record."""
    with tempfile.TemporaryDirectory() as folder:
        clone = Path(folder) / "clone"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        environment = {**os.environ, "PIP_NO_CACHE_DIR": "1", "UV_NO_CACHE": "1"}
        load, cpu, started = os.getloadavg()[0], children_cpu(), time.monotonic()
        done = subprocess.run(["make", "install", f"VENV={Path(folder) / 'venv'}"], cwd=clone, env=environment,
                              capture_output=True, text=True)
        wall = time.monotonic() - started
    return {"suite": INSTALL, "date": date.today().isoformat(), "wall_s": round(wall, 1),
            "cpu_s": round(children_cpu() - cpu, 1), "cores": os.cpu_count(), "load_before": round(load, 2),
            "exit": done.returncode, "tests": {}, "packages": "every package fetched",
            "failures": [] if done.returncode == 0 else (done.stdout + done.stderr).splitlines()[-20:], "slowest": []}


TIMERS = {NOTEBOOKS: time_notebooks, INSTALL: time_install}  # the commands that are not pytest suites


def recorded() -> list[dict]:
    """The records of tests/timings.json; none before the first timing."""
    return json.loads(RECORD.read_text()) if RECORD.exists() else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    names = [INSTALL, *SUITES, NOTEBOOKS]
    parser.add_argument("--only", choices=names, action="append", help="time only this one (repeatable); "
                        "the others' records are kept")
    args = parser.parse_args(argv)
    adopt_orphans()
    records = {r["suite"]: r for r in recorded()}
    for name in args.only or names:
        records[name] = TIMERS[name]() if name in TIMERS else time_suite(name)
        print(json.dumps(records[name]), flush=True)
    RECORD.write_text(json.dumps([records[n] for n in names if n in records], indent=1) + "\n")
    print(f"{RECORD.relative_to(ROOT)} written: `python -m cod.report` shows it in docs/measurements.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
