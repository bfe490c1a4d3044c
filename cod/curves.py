"""Every run's training loss in a file `dvc plots show` reads (the `curves` stage of dvc.yaml).

    python -m cod.curves   # curves/PROFILE/EXPERIMENT/RUN.json from runs/PROFILE/EXPERIMENT/RUN/history.jsonl

DVC's plots read JSON, YAML or CSV files, not the runs' history.jsonl (one JSON object a line,
mixing loss rows with layer-statistics rows). This copies each run's loss rows as a JSON list
of {step, loss}, a row a line; dvc.yaml's top-level `plots:` (written by `python -m cod.stages
--write`) draws one graph per experiment, a line per run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cod import ROOT

RUNS = ROOT / "runs"
CURVES = ROOT / "curves"


def histories(runs: Path = RUNS) -> list[Path]:
    """The history.jsonl of every run under `runs` (runs/PROFILE/EXPERIMENT/RUN/)."""
    return sorted(runs.glob("*/*/*/history.jsonl"))


def curve_path(history: Path, runs: Path = RUNS, curves: Path = CURVES) -> Path:
    """Where the curve of the run whose history is `history` goes: curves/PROFILE/EXPERIMENT/RUN.json."""
    run = history.parent.relative_to(runs)
    return curves / run.parent / f"{run.name}.json"  # not with_suffix: a run may be named wd0.1_s0


def loss_rows(history: Path) -> list[dict[str, float]]:
    """The {step, loss} of every row of `history` that logs the training loss."""
    rows = (json.loads(line) for line in history.read_text().splitlines() if line.strip())
    return [{"step": row["step"], "loss": row["loss"]} for row in rows if "loss" in row]


def write_curves(runs: Path = RUNS, curves: Path = CURVES) -> list[Path]:
    """Write the curve of every run under `runs` to `curves`; the paths written."""
    written = []
    for history in histories(runs):
        path = curve_path(history, runs, curves)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("[\n" + ",\n".join(json.dumps(row) for row in loss_rows(history)) + "\n]\n")
        written.append(path)
    return written


def main() -> int:
    print(f"[curves] {len(write_curves())} runs' training loss written to {CURVES.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
