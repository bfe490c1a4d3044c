"""Experiments of params.yaml (`cod.runs.params`) planned, costed and trained side by side.

    python -m cod.pipeline.experiments plan                          # every run of the profile: done, to train, cost (cod.runs.plan)
    python -m cod.pipeline.experiments plan --record                 # keep the CPU profiles' cost table (runs/plan.md)
    python -m cod.pipeline.experiments list a_130m                   # one experiment's runs and their settings
    python -m cod.pipeline.experiments train a_130m                  # what DVC's train@NAME stage runs
    python -m cod.pipeline.experiments train a_130m --variants pre_ln,lns   # only these variants, every seed
    python -m cod.pipeline.experiments train a_130m --seeds 0,1            # only these seeds
    python -m cod.pipeline.experiments train a_130m --new            # only runs with no result (not those whose weights are gone)
    python -m cod.pipeline.experiments prepare                       # token arrays the profile needs

Each run is a separate process with one thread: on a CPU two single-threaded runs side by side
train about twice as fast as one run on two threads. On the CPU each is forked from a server that
imported torch and `cod.train.run` once (`FORKS`), which saves seconds of start-up a run; on GPUs each
is `python -m cod.train.run`, or torchrun.
Where GPUs are visible (those of CUDA_VISIBLE_DEVICES when it is set), every run gets GPUs of
its own: `gpus_per_run` of them (the profile's, default 1), through CUDA_VISIBLE_DEVICES, and a
run on more than one is launched with torchrun (DDP or FSDP, `train.parallel`). Runs never share
a GPU: `jobs` is capped at the visible GPUs divided by `gpus_per_run`.
A run is trained again only when its weights are missing or it no longer matches its settings
and code (`cod.train.fingerprint`); an interrupted run resumes from its checkpoint.

Ctrl-C (or SIGTERM) while runs train: each run under way ends its step and writes its checkpoint,
no further run starts, and one line names the command that resumes them all (`Launcher`).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

import torch
# not lazily: every command but `prepare` checks runs against their fingerprint, whose probe's first optimiser
# imports it (seconds), and a server that preloads this module (cod.pipeline.runner.Warm) then holds it too
import torch._dynamo  # noqa: F401

import cod.train.run
from cod.config import ConfigError, DataSource, ImageSet, RunConfig
from cod.pipeline.forks import FORKS, Fork
from cod.runs.params import PROFILES, ROOT, SECTIONS, Run, all_runs, load_params, pick, profile_settings, resolve_runs


RECORD = ROOT / "runs" / "plan.md"  # the CPU profiles' cost table, which docs/measurements.md shows (cod.report)

def datasets_needed(params: dict[str, Any]) -> dict[str, RunConfig]:
    """One config per distinct token dataset that the active profile's runs read."""
    needed: dict[str, RunConfig] = {}
    for run in all_runs(params, planned=False):
        cfg = run.config
        if cfg.vision.dataset == ImageSet.NONE:  # image runs read no tokens
            needed.setdefault(cfg.data.dataset_dir, cfg)
    return needed


def training_tokens(params: dict[str, Any], dataset_dir: str) -> int:
    """The most tokens any run of the active profile trains on from `dataset_dir`."""
    configs = [run.config for run in all_runs(params, planned=False)]
    return max(c.train.steps * c.data.batch_size * c.data.seq_len for c in configs
               if c.vision.dataset == ImageSet.NONE and c.data.dataset_dir == dataset_dir)


def prepare(params: dict[str, Any]) -> None:
    """Tokenise the corpus of every dataset the profile needs (skips ready ones). A streamed
    source (FineWeb-Edu) is read up to the tokens its longest run trains on, so none repeats data."""
    for dataset_dir, cfg in datasets_needed(params).items():
        if (ROOT / dataset_dir / "meta.json").exists() and not (ROOT / dataset_dir / "progress.json").exists():
            print(f"[prepare] {dataset_dir} ready", flush=True)
            continue
        command = [sys.executable, "-m", "cod.data.prepare", "--tokenizer", str(cfg.data.tokenizer),
                   "--vocab-size", str(cfg.data.vocab_size), "--source", str(cfg.data.source),
                   "--raw", str(ROOT / "data" / "raw"), "--out", str(ROOT / dataset_dir)]
        if cfg.data.source == DataSource.FINEWEB_EDU:
            command += ["--max-tokens", str(training_tokens(params, dataset_dir))]
        subprocess.run(command, check=True, cwd=ROOT)


def visible_gpus() -> list[str]:
    """Ids of the GPUs that runs may use: CUDA_VISIBLE_DEVICES's entries when it is set, else 0 .. n-1."""
    count = torch.cuda.device_count()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = visible.split(",") if visible is not None else map(str, range(count))
    return [i.strip() for i in ids][:count]

# CPU runs: forked from one server process (`cod.pipeline.forks`) that imported cod.train.run (and so
# torch), cod.runs.params and torch._dynamo, which torch imports at a process's first optimiser: about a
# second of start-up a run, paid once here. Not this module itself: it may be the main module.
FORKS.set_forkserver_preload(["cod.train.run", "cod.runs.params", "torch._dynamo"])


class Process(Protocol):
    """A run's process, as `Launcher` starts it: a `Fork` or a `subprocess.Popen`."""

    def send_signal(self, signum: int) -> None: ...

    def wait(self) -> int: ...


class Launcher:
    """Starts the runs' processes, each in a process group of its own (`cod.train.run.forked`, or
    `process_group=0`), so that a terminal's Ctrl-C, sent to its foreground process group, reaches
    this process alone. While `listening`, a SIGINT or SIGTERM is passed on to every run alive,
    once (a run's second signal stops it at once, without its checkpoint), and no further run
    starts; `signum` is then the signal."""

    def __init__(self):
        # re-entrant: the handler runs in the main thread, between any two of its instructions,
        # even within a handler running already (a second Ctrl-C)
        self.lock = threading.RLock()
        self.alive: set[Process] = set()
        self.signum: int | None = None

    @contextmanager
    def listening(self) -> Iterator[None]:
        previous = {signum: signal.signal(signum, self._pass_on) for signum in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _pass_on(self, signum: int, frame: Any) -> None:
        with self.lock:
            self.signum = signum
            for process in self.alive:
                process.send_signal(signum)

    def run(self, start: Callable[[], Process]) -> int | None:
        """The exit status of the process `start()` starts, once it has ended; None when a signal
        came first and it never started. Safe to call from several threads at once."""
        with self.lock:
            if self.signum is not None:
                return None
            process = start()
            self.alive.add(process)
        try:
            return process.wait()
        finally:
            with self.lock:
                self.alive.discard(process)


class RunsInterrupted(Exception):
    """A signal stopped the runs under way (each at a checkpoint) before all of them had trained."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def train_on_cpu(arguments: list[str], launcher: Launcher) -> int | None:
    """`python -m cod.train.run ARGUMENTS` from the repository, in a process forked from `FORKS`' server
    and started by `launcher`; its exit status (None: not started)."""
    return launcher.run(lambda: Fork(cod.train.run.forked, (arguments, str(ROOT))))


class GPUs:
    """The visible GPUs, lent to runs `per_run` at a time so that runs side by side never share
    one; none where no GPU is visible, and runs train on the CPU."""

    def __init__(self, per_run: int, profile: str, launcher: Launcher):
        self.ids, self.per_run, self.launcher = visible_gpus(), per_run, launcher
        if per_run > max(1, len(self.ids)):
            raise ConfigError(f"profiles.{profile}.gpus_per_run={per_run}: more than the {len(self.ids)} GPUs "
                              f"visible; allowed: 1 to {max(1, len(self.ids))}")
        self.free = queue.Queue()
        for gpu in self.ids:
            self.free.put(gpu)

    @property
    def slots(self) -> int:
        """How many runs fit side by side (0 without GPUs)."""
        return len(self.ids) // self.per_run

    def train(self, run: Run) -> int | None:
        """Train `run` in its own process, on `per_run` free GPUs when there are GPUs; its exit
        code (None: a signal came before it started). A run stopped by a signal prints nothing:
        `main` names the command that resumes them all."""
        if not self.ids:
            return train_on_cpu([*run.arguments(), "--force", "--no-resume-hint"], self.launcher)
        ids = [self.free.get() for _ in range(self.per_run)]
        try:
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": ",".join(ids)}
            command = [*run.command(self.per_run), "--force", "--no-resume-hint"]
            return self.launcher.run(lambda: subprocess.Popen(command, cwd=ROOT, env=env, process_group=0))
        finally:
            for gpu in ids:
                self.free.put(gpu)


def train(experiment: str, params: dict[str, Any], jobs: int | None = None, variants: list[str] | None = None,
          new_only: bool = False, seeds: list[str] | None = None) -> None:
    """Train every run of `experiment` (of `variants` and `seeds` only, when given) that lacks a
    matching result or, unless `new_only`, its weights, `jobs` at a time (on GPUs: at most one run
    per `gpus_per_run` visible GPUs), seed by seed, so that a seed's variants finish together;
    raise RunsInterrupted after a SIGINT or SIGTERM (the runs under way stopped at a checkpoint),
    else RuntimeError if any crashed."""
    runs = resolve_runs(experiment, params)
    if variants is not None:
        runs = pick(runs, variants, lambda run: run.variant, "--variants",
                    f"variants of {experiment} under profile {params['profile']!r}")
    if seeds is not None:
        runs = pick(runs, seeds, lambda run: str(run.seed), "--seeds",
                    f"seeds of {experiment} under profile {params['profile']!r}")
    runs = sorted(runs, key=lambda run: run.seed)  # stable: variants keep their declared order within a seed
    for run in runs:
        dataset = ROOT / run.config.data.dataset_dir / "train.bin"
        if run.config.vision.dataset == ImageSet.NONE and not dataset.exists():
            raise ConfigError(f"{dataset} not found (data.tokens_dir={run.config.data.tokens_dir}); "
                              f"run `python -m cod.pipeline.experiments prepare --profile {params['profile']}`")
    profile, launcher = profile_settings(params), Launcher()
    jobs, gpus = jobs or profile.get("jobs", 1), GPUs(profile.get("gpus_per_run", 1), params["profile"], launcher)
    if gpus.ids:
        jobs = min(jobs, gpus.slots)
    todo = [run for run in runs if run.status() not in ({"done", "result only"} if new_only else {"done"})]
    place = f" on {gpus.per_run} of GPUs {','.join(gpus.ids)} each" if gpus.ids else ""
    print(f"[{experiment}] {len(runs)} runs, {len(runs) - len(todo)} already complete, "
          f"{len(todo)} to train, {jobs} at a time{place}", flush=True)
    for run in runs:
        run.weights.mkdir(parents=True, exist_ok=True)  # a stage output even when nothing trains
    with launcher.listening(), ThreadPoolExecutor(max_workers=jobs) as pool:
        codes = list(pool.map(gpus.train, todo))
    if launcher.signum is not None:
        raise RunsInterrupted(launcher.signum)
    failed = [run.name for run, code in zip(todo, codes) if code != 0]
    if failed:
        raise RuntimeError(f"[{experiment}] runs crashed (not diverged; see their output above): {failed}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["plan", "list", "train", "prepare"])
    parser.add_argument("experiment", nargs="?", help="experiment name from params.yaml")
    parser.add_argument("--jobs", type=int, help="runs side by side (default: the profile's jobs)")
    parser.add_argument("--variants", type=lambda text: text.split(","),
                        help="train: only these variants (comma-separated), every seed of each")
    parser.add_argument("--seeds", type=lambda text: text.split(","),
                        help="train: only these seeds (comma-separated) of the chosen variants")
    parser.add_argument("--new", action="store_true",
                        help="train: only runs with no result, not those whose result stands but whose weights are gone")
    parser.add_argument("--runs", choices=["todo", "all"], help="plan: also one line per run to train, or per run")
    parser.add_argument("--record", action="store_true",
                        help=f"plan: keep the CPU profiles' cost table in {RECORD.relative_to(ROOT)} (docs/measurements.md)")
    parser.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    parser.add_argument("--profile", choices=PROFILES, help="the profile to use (default: params.yaml's)")
    args = parser.parse_args(argv)
    params = load_params(args.params)
    params["profile"] = args.profile or params["profile"]
    if args.action == "prepare":
        prepare(params)
    elif args.action == "plan":
        # lazy: the plan's modules (benchmark, scoreboard, pandas) would cost every train stage and its fork server
        from cod.runs.plan import plan, record_block

        if not args.record:
            plan(params, args.runs)
        else:
            RECORD.write_text(record_block(params) + "\n")
            print(f"{RECORD.relative_to(ROOT)}: the CPU profiles' cost table kept")
    elif args.experiment is None:
        known = [name for section in SECTIONS for name in (params.get(section) or {})]
        parser.error(f"{args.action} needs an experiment; allowed: {', '.join(known)}")
    elif args.action == "list":
        for run in resolve_runs(args.experiment, params):
            print(run.name, run.status(), json.dumps(run.overrides))
    else:
        try:
            train(args.experiment, params, args.jobs, args.variants, args.new, args.seeds)
        except (RunsInterrupted, KeyboardInterrupt) as stop:  # KeyboardInterrupt: before any run started
            signum = stop.signum if isinstance(stop, RunsInterrupted) else signal.SIGINT
            print(f"[{args.experiment}] {signal.Signals(signum).name}: the runs under way stopped at a checkpoint "
                  f"each; resume them all with: {resume_command(argv, params['profile'])}", file=sys.stderr,
                  flush=True)
            return 128 + signum
    return 0


def resume_command(argv: list[str], profile: str) -> str:
    """The command of `argv` (`python -m cod.pipeline.experiments ARGV`), which trains the runs again, each
    from its checkpoint, with the profile in use named."""
    named = any(word == "--profile" or word.startswith("--profile=") for word in argv)
    return shlex.join(["python", "-m", "cod.pipeline.experiments", *argv, *([] if named else ["--profile", profile])])


if __name__ == "__main__":
    sys.exit(main())
