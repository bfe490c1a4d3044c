"""Experiments: named groups of runs declared in params.yaml, trained side by side.

    python -m cod.experiments list a4_variance_dynamics     # the runs and their settings
    python -m cod.experiments train a4_variance_dynamics    # what DVC's train@NAME stage runs
    python -m cod.experiments prepare                       # token arrays the profile needs

Each run is a separate `python -m cod.train` process with one thread: on a CPU two
single-threaded runs side by side train about twice as fast as one run on two threads.
A run whose folder already holds a finished run of identical settings is skipped, and an
interrupted run resumes from its checkpoint. Every run's settings are validated before
any of them starts.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cod.config import ConfigError, RunConfig, run_config
from cod.train import is_complete

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ("smoke", "default", "paper")


@dataclass
class Run:
    experiment: str
    variant: str
    seed: int
    overrides: dict[str, Any]

    @property
    def name(self) -> str:
        return f"{self.variant}_s{self.seed}"

    @property
    def out(self) -> Path:
        return ROOT / "runs" / self.experiment / self.name

    @property
    def weights(self) -> Path:
        return ROOT / "checkpoints" / self.experiment / self.name

    @property
    def config(self) -> RunConfig:
        return run_config(self.overrides)

    def command(self) -> list[str]:
        settings = [f"{k}={json.dumps(v)}" for k, v in self.overrides.items()]
        return [sys.executable, "-m", "cod.train", "--out", str(self.out), "--weights", str(self.weights),
                "--name", f"{self.experiment}/{self.name}", *settings]


def load_params(path: Path = ROOT / "params.yaml") -> dict[str, Any]:
    params = yaml.safe_load(Path(path).read_text())
    if params.get("profile") not in PROFILES:
        raise ConfigError(f"profile={params.get('profile')!r} is not allowed; allowed: {', '.join(PROFILES)}")
    return params


def profile_settings(params: dict[str, Any]) -> dict[str, Any]:
    return params["profiles"][params["profile"]]


def resolve_runs(experiment: str, params: dict[str, Any]) -> list[Run]:
    """Every run of `experiment` under the active profile, settings validated."""
    experiments = params.get("experiments", {})
    if experiment not in experiments:
        raise ConfigError(f"experiment={experiment!r} is not declared; allowed: {', '.join(experiments)}")
    spec, profile = experiments[experiment], profile_settings(params)
    seeds = spec.get("seeds", profile["seeds"])
    runs = []
    for seed in seeds:  # seed-major: an interrupted sweep leaves whole seeds finished
        for variant, changes in spec["variants"].items():
            changes = dict(changes or {})
            size = changes.pop("size", spec.get("size"))
            if size not in profile.get("sizes", {}):
                raise ConfigError(f"experiments.{experiment} ({variant}): size={size!r} is not a size of profile "
                                  f"{params['profile']!r}; allowed: {', '.join(profile.get('sizes', {}))}")
            shared = {**profile.get("base", {}), **profile["sizes"][size], **spec.get("overrides", {}),
                      **spec.get("profiles", {}).get(params["profile"], {})}
            runs.append(Run(experiment, variant, seed, {**shared, **changes, "seed": seed}))
    for run in runs:
        try:
            run.config
        except ConfigError as error:
            raise ConfigError(f"{experiment}/{run.name}: {error}") from None
    return runs


def datasets_needed(params: dict[str, Any]) -> dict[str, RunConfig]:
    """One config per distinct token dataset that the active profile's runs read."""
    needed: dict[str, RunConfig] = {}
    for experiment in params.get("experiments", {}):
        for run in resolve_runs(experiment, params):
            cfg = run.config
            needed.setdefault(cfg.data.dataset_dir, cfg)
    return needed


def prepare(params: dict[str, Any]) -> None:
    """Tokenise the raw corpus for every dataset the profile needs (skips ready ones)."""
    for dataset_dir, cfg in datasets_needed(params).items():
        if (ROOT / dataset_dir / "meta.json").exists():
            print(f"[prepare] {dataset_dir} ready", flush=True)
            continue
        command = [sys.executable, "-m", "cod.data.prepare", "--tokenizer", str(cfg.data.tokenizer),
                   "--vocab-size", str(cfg.data.vocab_size), "--source", str(cfg.data.source),
                   "--raw", str(ROOT / "data" / "raw"), "--out", str(ROOT / dataset_dir)]
        subprocess.run(command, check=True, cwd=ROOT)


def train(experiment: str, params: dict[str, Any], jobs: int | None = None) -> None:
    """Train every run of `experiment`, `jobs` at a time; raise if any run crashed."""
    runs = resolve_runs(experiment, params)
    for run in runs:
        dataset = ROOT / run.config.data.dataset_dir / "train.bin"
        if not dataset.exists():
            raise ConfigError(f"{dataset} not found (data.tokens_dir={run.config.data.tokens_dir}); "
                              "run `python -m cod.experiments prepare` or `dvc repro prepare`")
    jobs = jobs or profile_settings(params).get("jobs", 1)
    todo = [run for run in runs if not is_complete(run.out, run.config)]
    print(f"[{experiment}] {len(runs)} runs, {len(runs) - len(todo)} already complete, "
          f"{len(todo)} to train, {jobs} at a time", flush=True)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        codes = list(pool.map(lambda run: subprocess.run(run.command(), cwd=ROOT).returncode, todo))
    failed = [run.name for run, code in zip(todo, codes) if code != 0]
    if failed:
        raise RuntimeError(f"[{experiment}] runs crashed (not diverged; see their output above): {failed}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["list", "train", "prepare"])
    parser.add_argument("experiment", nargs="?", help="experiment name from params.yaml")
    parser.add_argument("--jobs", type=int, help="runs side by side (default: the profile's jobs)")
    parser.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    args = parser.parse_args(argv)
    params = load_params(args.params)
    if args.action == "prepare":
        prepare(params)
    elif args.experiment is None:
        parser.error(f"{args.action} needs an experiment; allowed: {', '.join(params.get('experiments', {}))}")
    elif args.action == "list":
        for run in resolve_runs(args.experiment, params):
            print(run.name, json.dumps(run.overrides))
    else:
        train(args.experiment, params, args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
