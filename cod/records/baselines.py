"""The failure line of each experiment: the unigram perplexity of its token arrays at its
evaluation length, the level a run that learnt nothing reaches (`cod.claims.tables.mark_failed`
marks a run at or above it as failed). The `failure_lines` stages record them in
figures/PROFILE/failure_lines.json (`python -m cod.runs.curves --failure-lines PROFILE`), counted from
the token arrays, which git does not keep, so that a notebook on a fresh clone reads committed files only."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from cod import ROOT
from cod.config import ImageSet, run_config_from_dict
from cod.data.loader import unigram_perplexity

FAILURE_LINES = "failure_lines.json"


def failure_lines_file(runs: Path) -> Path:
    """Where the failure lines of the runs under `runs` (ROOT/runs/PROFILE) are recorded:
    ROOT/figures/PROFILE/failure_lines.json."""
    return runs.parent.parent / "figures" / runs.name / FAILURE_LINES


def failure_lines(runs: Path) -> dict[str, float]:
    """{experiment: the unigram perplexity of the token arrays and evaluation length of its first
    run} for every language-model experiment with a run under `runs` (runs/PROFILE)."""
    lines = {}
    for config in sorted(runs.glob("*/*/config.json")):
        experiment = config.parent.parent.name
        if experiment not in lines and (line := failure_line_of(config)) is not None:
            lines[experiment] = line
    return lines


def failure_line_of(config: Path) -> float | None:
    """The unigram perplexity of the token arrays and evaluation length of the run whose config.json is
    `config`: the failure line of its experiment; None for a vision run, which has none."""
    cfg = run_config_from_dict(json.loads(config.read_text()))
    if cfg.vision.dataset != ImageSet.NONE:
        return None
    return _unigram(str(cfg.data.dataset_dir), cfg.train.eval_tokens)


@functools.cache
def _unigram(dataset_dir: str, eval_tokens: int | None) -> float:
    return unigram_perplexity(ROOT / dataset_dir, eval_tokens)
