"""Every run's training loss and final metrics in files DVC reads (the `curves` stage of dvc.yaml).

    python -m cod.runs.curves PROFILE [PROFILE ...]   # figures/PROFILE/curves/ from runs/PROFILE/

DVC reads neither a run's history.jsonl (one JSON object a line, loss rows mixed with layer
statistics) nor a folder of runs as one table, so each profile gets, in figures/PROFILE/curves/:

    EXPERIMENT.csv   run,step,loss of every logged step of every run of the experiment: one graph
                     of dvc.yaml's top-level `plots:`, a line per run (.dvc/plots/loss_by_run.json);
                     the header alone for an experiment params.yaml declares that has no run yet,
                     so that its graph is empty rather than missing
    finals.json      {EXPERIMENT/RUN: the numbers and status of its final.json}, in `metrics:`

    python -m cod.runs.curves --failure-lines PROFILE  # figures/PROFILE/failure_lines.json

writes {EXPERIMENT: the unigram perplexity its runs' failures are marked against
(cod.claims.tables.mark_failed)}, counted from the token arrays, which git does not keep, so that a
notebook re-run on a fresh clone reads committed files only (the `failure_lines` stages: one a
profile, so that no stage of one profile waits on the other's training).

A file per experiment rather than per run keeps the folder small (no 4 KiB block per run).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Sequence

from cod import ROOT
from cod.records.baselines import FAILURE_LINES, failure_lines, failure_lines_file
from cod.runs.params import all_runs, load_params

RUNS = ROOT / "runs"
FOLDER = "figures/{profile}/curves"  # repository-relative; dvc.yaml's lists fill in ${profile}
FINALS = "finals.json"
LOSS_DECIMALS = 4  # a plot needs no more; it halves the files
TEXT_METRICS = ("status",)  # final.json's other strings name the run, its device and its code


def folder(profile: str) -> Path:
    """Where the curves of `profile` go: figures/PROFILE/curves."""
    return ROOT / FOLDER.format(profile=profile)


def loss_rows(history: Path) -> list[tuple[int, float]]:
    """(step, loss) of every row of `history` that logs the training loss, the loss rounded."""
    rows = (json.loads(line) for line in history.read_text().splitlines() if line.strip())
    return [(row["step"], round(row["loss"], LOSS_DECIMALS)) for row in rows if "loss" in row]


def declared(profile: str) -> list[str]:
    """The experiments params.yaml declares with runs under `profile` (planned ones aside)."""
    params = {**load_params(), "profile": profile}
    return list(dict.fromkeys(run.experiment for run in all_runs(params, planned=False)))


def loss_tables(runs: Path, experiments: Sequence[str] = ()) -> dict[str, str]:
    """{experiment: its CSV of run,step,loss} for the runs of one profile (`runs` is runs/PROFILE),
    and the header alone for each of `experiments` without a run."""
    tables: dict[str, list[str]] = {experiment: ["run,step,loss"] for experiment in experiments}
    for history in sorted(runs.glob("*/*/history.jsonl")):
        lines = tables.setdefault(history.parent.parent.name, ["run,step,loss"])
        lines += [f"{history.parent.name},{step},{loss}" for step, loss in loss_rows(history)]
    return {experiment: "\n".join(lines) + "\n" for experiment, lines in tables.items()}


def final_metrics(final: Path) -> dict[str, float | str]:
    """The numbers of a run's final.json and its status."""
    values = json.loads(final.read_text())
    return {key: value for key, value in values.items()
            if key in TEXT_METRICS or isinstance(value, (int, float))}


def finals(runs: Path) -> dict[str, dict[str, float | str]]:
    """{EXPERIMENT/RUN: `final_metrics`} for the finished runs of one profile (`runs` is runs/PROFILE)."""
    return {final.parent.relative_to(runs).as_posix(): final_metrics(final)
            for final in sorted(runs.glob("*/*/final.json"))}


def finals_json(runs: Path) -> str:
    """`finals` as JSON, a run a line."""
    lines = [f"{json.dumps(run)}: {json.dumps(values)}" for run, values in finals(runs).items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_curves(runs: Path, out: Path, experiments: Sequence[str] = ()) -> list[Path]:
    """Write the curves and finals of the runs under `runs` to `out`, emptied first, with an empty
    table for each of `experiments` without a run; the files written."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    files = {f"{experiment}.csv": table for experiment, table in loss_tables(runs, experiments).items()}
    files[FINALS] = finals_json(runs)
    for name, text in files.items():
        (out / name).write_text(text)
    return [out / name for name in files]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cod.runs.curves", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profiles", nargs="+", help="the profiles whose runs/PROFILE/ to read (repeats are ignored)")
    parser.add_argument("--failure-lines", action="store_true",
                        help=f"write figures/PROFILE/{FAILURE_LINES} only (reads the token arrays)")
    args = parser.parse_args(argv)
    for profile in dict.fromkeys(args.profiles):
        if args.failure_lines:
            record = failure_lines_file(RUNS / profile)
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(json.dumps(failure_lines(RUNS / profile), indent=1, sort_keys=True) + "\n")
            print(f"[curves] {profile}: the failure lines written to {record.relative_to(ROOT)}")
            continue
        written = write_curves(RUNS / profile, folder(profile), declared(profile))
        print(f"[curves] {profile}: {len(written) - 1} experiments' training loss and {FINALS} "
              f"written to {FOLDER.format(profile=profile)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
