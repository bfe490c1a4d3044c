"""Where the pipeline's files live, in one place: a run's folder
runs/<profile>/<experiment>/<variant>_s<seed> and its weights under checkpoints/ (the same path),
an analysis's analyses/<profile>/<analysis>, a notebook's figures/<profile>/<notebook>, and the
executed notebooks under notebooks/executed/. `root` is the repository (a test may pass another)."""

from __future__ import annotations

from pathlib import Path

from cod import ROOT

NOTEBOOKS = ROOT / "notebooks"  # the jupytext sources
EXECUTED = NOTEBOOKS / "executed"  # <profile>/<notebook>.ipynb: what the notebook stages executed


def run_name(variant: str, seed: int) -> str:
    """A run's folder name: `<variant>_s<seed>`."""
    return f"{variant}_s{seed}"


def split_run_name(name: str) -> tuple[str, str]:
    """(variant, seed as written) of a run's folder name `<variant>_s<seed>`."""
    variant, seed = name.rsplit("_s", 1)
    return variant, seed


def profile_runs(profile: str, root: Path = ROOT) -> Path:
    """runs/<profile>: a folder per experiment, a folder per run in it."""
    return root / "runs" / profile


def run_dir(profile: str, experiment: str, variant: str, seed: int, root: Path = ROOT) -> Path:
    """runs/<profile>/<experiment>/<variant>_s<seed>: a run's settings, history and final metrics."""
    return profile_runs(profile, root) / experiment / run_name(variant, seed)


def weights_dir(profile: str, experiment: str, variant: str, seed: int, root: Path = ROOT) -> Path:
    """checkpoints/<profile>/<experiment>/<variant>_s<seed>: a run's checkpoint and weights (DVC's cache)."""
    return root / "checkpoints" / profile / experiment / run_name(variant, seed)


def analysis_dir(profile: str, analysis: str, root: Path = ROOT) -> Path:
    """analyses/<profile>/<analysis>: one analysis stage's files."""
    return root / "analyses" / profile / analysis


def figures_dir(profile: str, notebook: str, root: Path = ROOT) -> Path:
    """figures/<profile>/<notebook>: a notebook stage's figures, tables and claims.json."""
    return root / "figures" / profile / notebook
