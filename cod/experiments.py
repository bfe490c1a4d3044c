"""Experiments: named groups of runs declared in params.yaml, planned, costed and trained side by side.

    python -m cod.experiments plan                          # every run of the profile: done, to train, cost
    python -m cod.experiments list a_130m                   # one experiment's runs and their settings
    python -m cod.experiments train a_130m                  # what DVC's train@NAME stage runs
    python -m cod.experiments prepare                       # token arrays the profile needs

Each run is a separate `python -m cod.train` process with one thread: on a CPU two
single-threaded runs side by side train about twice as fast as one run on two threads.
A run is stored per profile: results in runs/<profile>/<experiment>/<variant>_s<seed>/ (small,
in git), weights in checkpoints/<profile>/... (DVC's cache). It is trained again only when its
weights are missing or it no longer matches its settings and code (`cod.fingerprint`); an
interrupted run resumes from its checkpoint. Every run's settings are validated before any
of them starts.

`planned:` in params.yaml lists the runs that later notebooks will add (variants the code does
not have yet); the plan costs them by their shape so that the whole profile's budget is known.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cod.config import ConfigError, RunConfig, apply_overrides, run_config
from cod.train import is_complete

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ("smoke", "default", "paper")
RUN_KEYS = ("size", "seeds", "cost_factor")  # keys of a variant that are not settings


@dataclass
class Run:
    profile: str
    experiment: str
    variant: str
    seed: int
    overrides: dict[str, Any]
    cost_factor: float = 1.0  # planned runs whose code does not exist yet: cost relative to their dense shape
    planned: str | None = None  # the issue that will add this run, for runs not yet in the pipeline

    @property
    def name(self) -> str:
        return f"{self.variant}_s{self.seed}"

    @property
    def out(self) -> Path:
        return ROOT / "runs" / self.profile / self.experiment / self.name

    @property
    def weights(self) -> Path:
        return ROOT / "checkpoints" / self.profile / self.experiment / self.name

    @property
    def config(self) -> RunConfig:
        return run_config(self.overrides)

    @property
    def shape_config(self) -> RunConfig:
        """The run's config, or for a planned run the settings this code knows (its shape)."""
        if self.planned is None:
            return self.config
        def known(key: str, value: Any) -> bool:
            try:
                apply_overrides(RunConfig(), {key: value})
                return True
            except ConfigError:
                return False

        return run_config({k: v for k, v in self.overrides.items() if known(k, v)})

    def status(self) -> str:
        """'done' (result and weights), 'result only' (weights missing), 'to train' or 'planned'."""
        if self.planned is not None:
            return "planned"
        if not is_complete(self.out, self.config):
            return "to train"
        return "done" if (self.weights / "model.pt").exists() else "result only"

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


def resolve_runs(experiment: str, params: dict[str, Any], section: str = "experiments") -> list[Run]:
    """Every run of `experiment` under the active profile (settings validated unless planned)."""
    experiments = params.get(section) or {}
    if experiment not in experiments:
        raise ConfigError(f"{section}.{experiment} is not declared; allowed: {', '.join(experiments)}")
    spec, profile, name = experiments[experiment], profile_settings(params), params["profile"]
    planned = f"#{spec.get('issue', '?')}" if section == "planned" else None
    runs = []
    for variant, changes in spec["variants"].items():
        changes = dict(changes or {})
        size = changes.pop("size", spec.get("size"))
        seeds = changes.pop("seeds", spec.get("seeds", profile["seeds"]))
        cost_factor = float(changes.pop("cost_factor", 1.0))
        if size not in profile.get("sizes", {}):
            raise ConfigError(f"{section}.{experiment} ({variant}): size={size!r} is not a size of profile "
                              f"{name!r}; allowed: {', '.join(profile.get('sizes', {}))}")
        shared = {**profile.get("base", {}), **profile["sizes"][size], **spec.get("overrides", {}),
                  **spec.get("profiles", {}).get(name, {})}
        for seed in seeds[: profile.get("max_seeds", len(seeds))]:
            runs.append(Run(name, experiment, variant, seed, {**shared, **changes, "seed": seed}, cost_factor, planned))
    runs.sort(key=lambda run: run.seed)  # seed-major: an interrupted sweep leaves whole seeds finished
    for run in runs:
        try:
            run.shape_config
            if planned is None:
                run.config
        except ConfigError as error:
            raise ConfigError(f"{section}.{experiment}/{run.name}: {error}") from None
    return runs


def all_runs(params: dict[str, Any], planned: bool = True) -> list[Run]:
    """The runs of every experiment (and, with `planned`, of every planned one) of the profile."""
    sections = ("experiments", "planned") if planned else ("experiments",)
    return [run for section in sections for experiment in (params.get(section) or {})
            for run in resolve_runs(experiment, params, section)]


def datasets_needed(params: dict[str, Any]) -> dict[str, RunConfig]:
    """One config per distinct token dataset that the active profile's runs read."""
    needed: dict[str, RunConfig] = {}
    for run in all_runs(params, planned=False):
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
    """Train every run of `experiment` that lacks a matching result or its weights; raise if any crashed."""
    runs = resolve_runs(experiment, params)
    for run in runs:
        dataset = ROOT / run.config.data.dataset_dir / "train.bin"
        if not dataset.exists():
            raise ConfigError(f"{dataset} not found (data.tokens_dir={run.config.data.tokens_dir}); "
                              "run `python -m cod.experiments prepare` or `dvc repro prepare`")
    jobs = jobs or profile_settings(params).get("jobs", 1)
    todo = [run for run in runs if run.status() != "done"]
    print(f"[{experiment}] {len(runs)} runs, {len(runs) - len(todo)} already complete, "
          f"{len(todo)} to train, {jobs} at a time", flush=True)
    for run in runs:
        run.weights.mkdir(parents=True, exist_ok=True)  # a stage output even when nothing trains
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        codes = list(pool.map(lambda run: subprocess.run([*run.command(), "--force"], cwd=ROOT).returncode, todo))
    failed = [run.name for run, code in zip(todo, codes) if code != 0]
    if failed:
        raise RuntimeError(f"[{experiment}] runs crashed (not diverged; see their output above): {failed}")


# ----------------------------------------------------------------------------- cost


def shape_key(cfg: RunConfig) -> tuple:
    """What a run's speed depends on."""
    m, d = cfg.model, cfg.data
    return (m.d_model, m.n_layers, m.n_heads, m.kv_heads, m.ffn_width, m.vocab_size, str(m.ffn),
            d.seq_len, d.batch_size)


def measured_speeds(profile: str) -> dict[tuple, float]:
    """Median training tokens/s of the profile's finished runs, per shape (they ran side by side)."""
    from cod.config import run_config_from_dict

    speeds: dict[tuple, list[float]] = {}
    for final in (ROOT / "runs" / profile).glob("*/*/final.json"):
        result = json.loads(final.read_text())
        if result.get("tokens_per_s") and result.get("device") == "cpu":
            cfg = run_config_from_dict(json.loads((final.parent / "config.json").read_text()))
            speeds.setdefault(shape_key(cfg), []).append(result["tokens_per_s"])
    return {key: statistics.median(values) for key, values in speeds.items()}


def time_steps(cfg: RunConfig, steps: int = 4, rounds: int = 2) -> float:
    """Training tokens/s of `cfg`'s shape, one thread: the faster of `rounds` timings of `steps`
    steps after one warm-up step (other load on the machine only slows a round down)."""
    import torch

    from cod.model import Transformer

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = Transformer(cfg.model)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        x = torch.randint(0, cfg.model.vocab_size, (cfg.data.batch_size, cfg.data.seq_len))

        def step() -> None:
            loss = model(x, x).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        step()
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(steps):
                step()
            best = min(best, time.perf_counter() - start)
        return steps * x.numel() / best
    finally:
        torch.set_num_threads(threads)


MAX_TIMED_PARAMS = 5e7  # larger shapes are not timed on a CPU (the paper profile): cost unknown here


STARTUP_S = 5.0  # a run process: imports, data, fingerprint probe
SIDE_BY_SIDE = 0.94  # a shape timed alone runs this much slower beside another run (measured on the pilot)
FORWARD_SHARE = 1 / 3  # a forward pass costs about a third of a training step per token


def run_seconds(run: Run, speeds: dict[tuple, float], measured: set[tuple] = frozenset()) -> float | None:
    """Estimated single-core seconds to train `run` from scratch, start-up and final evaluation
    included; None when the shape is too large to time here.

    `speeds` holds tokens/s per shape (`measured_speeds`, which already include the per-layer
    statistics logged during training); a shape missing from it is timed now and its statistics
    passes are added."""
    cfg = run.shape_config
    key = shape_key(cfg)
    if key not in speeds:
        import torch

        from cod.model import Transformer

        with torch.device("meta"):
            size = Transformer(cfg.model).num_params()
        speeds[key] = SIDE_BY_SIDE * time_steps(cfg) if size <= MAX_TIMED_PARAMS else float("nan")
    speed, t = speeds[key], cfg.train
    if speed != speed:
        return None
    tokens = t.steps * cfg.data.batch_size * cfg.data.seq_len
    forward_tokens = 2 * t.eval_tokens  # the final validation losses (two splits)
    if key not in measured and t.stats_every:
        forward_tokens += t.steps // t.stats_every * t.stats_tokens
    return (tokens + FORWARD_SHARE * forward_tokens) / speed * run.cost_factor + STARTUP_S


def tokens_per_parameter(run: Run) -> float:
    import torch

    from cod.model import Transformer

    cfg = run.shape_config
    with torch.device("meta"):
        params = Transformer(cfg.model).num_params(embeddings=False)
    return cfg.train.steps * cfg.data.batch_size * cfg.data.seq_len / params


def plan(params: dict[str, Any], show_runs: str | None = None, out=sys.stdout) -> dict[str, float]:
    """Print every experiment's runs, what is done and the estimated cost; returns the totals in hours.

    `show_runs`: None (one line per experiment), "todo" (also every run `make repro` will train)
    or "all" (also every run)."""
    profile, jobs = params["profile"], profile_settings(params).get("jobs", 1)
    speeds = measured_speeds(profile)
    measured = set(speeds)
    runs = all_runs(params)
    rows: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        rows.setdefault((run.planned or "now", run.experiment), []).append(run)
    print(f"profile {profile}: {len(runs)} runs, {jobs} side by side. Cost = tokens / tokens per second of one "
          "process (from this profile's finished runs of the same shape, else timed here now), plus start-up "
          "and evaluation.", file=out)
    header = f"{'experiment':<24} {'when':>5} {'runs':>5} {'done':>5} {'no weights':>10} {'to train':>9} " \
             f"{'tok/param':>10} {'core-min':>9} {'to train':>9}"
    print(header, file=out)
    totals = {"all": 0.0, "to_train": 0.0, "planned": 0.0}
    unknown = 0
    for (when, experiment), group in rows.items():
        statuses = [run.status() for run in group]
        seconds = [run_seconds(run, speeds, measured) for run in group]
        unknown += sum(s is None for s in seconds)
        cost = sum(s or 0.0 for s in seconds)
        pending = sum(s or 0.0 for s, st in zip(seconds, statuses) if st != "done")
        ratios = [tokens_per_parameter(run) for run in group]
        totals["all"] += cost
        totals["planned" if when != "now" else "to_train"] += pending
        print(f"{experiment:<24} {when:>5} {len(group):>5} {statuses.count('done'):>5} "
              f"{statuses.count('result only'):>10} {statuses.count('to train'):>9} "
              f"{min(ratios):>4.1f}-{max(ratios):<5.1f} {cost / 60:>9.1f} {pending / 60:>9.1f}", file=out)
        if show_runs:
            for run, status, s in zip(group, statuses, seconds):
                if show_runs == "todo" and status not in ("to train", "result only"):
                    continue
                speed = "measured" if shape_key(run.shape_config) in measured else "timed now"
                print(f"    {run.name:<28} {status:<12} {'?' if s is None else f'{s / 60:.1f}'} core-min ({speed})",
                      file=out)
    hours = {k: v / 3600 / jobs for k, v in totals.items()}
    print(f"\nmake repro trains the runs marked 'no weights' or 'to train': about {hours['to_train']:.2f} h on "
          f"{jobs} core(s).", file=out)
    print(f"The complete profile from scratch, planned runs included: about {hours['all']:.2f} h on {jobs} core(s) "
          f"({totals['all'] / 3600:.2f} core-hours; planned runs not yet in the pipeline: {hours['planned']:.2f} h).",
          file=out)
    if unknown:
        print(f"{unknown} runs are too large to time on this machine: their cost is not included.", file=out)
    return hours


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["plan", "list", "train", "prepare"])
    parser.add_argument("experiment", nargs="?", help="experiment name from params.yaml")
    parser.add_argument("--jobs", type=int, help="runs side by side (default: the profile's jobs)")
    parser.add_argument("--runs", choices=["todo", "all"], help="plan: also one line per run to train, or per run")
    parser.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    args = parser.parse_args(argv)
    params = load_params(args.params)
    if args.action == "prepare":
        prepare(params)
    elif args.action == "plan":
        plan(params, args.runs)
    elif args.experiment is None:
        parser.error(f"{args.action} needs an experiment; allowed: {', '.join(params.get('experiments', {}))}")
    elif args.action == "list":
        for run in resolve_runs(args.experiment, params):
            print(run.name, run.status(), json.dumps(run.overrides))
    else:
        train(args.experiment, params, args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
