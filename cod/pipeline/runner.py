"""DVC stages side by side. `dvc repro` runs one stage at a time, and most of a small stage's time
is Python starting; this runs the stages' own commands (as DVC resolves them) `jobs` at a time,
each as soon as the stages whose outputs it reads have run, then records them all in dvc.lock at
once (`record`): what `dvc repro` of the same stages, one after another, would leave.

    python -m cod.pipeline train@a_130m analyse@a_130m --jobs 2
    python -m cod.pipeline prepare train analyse          # a foreach stage's name: all its items

`cod.pipeline.notebook --all` (`make notebooks`) runs the notebook stages this way; the smoke pipeline test
runs the others.

A command `python -m cod.MODULE ARGUMENTS` (no shell syntax) runs as `MODULE.main(ARGUMENTS)` (a
package: its `__main__`) in a process forked from one server that imported those modules once (`Warm`,
`cod.pipeline.forks`):
the same work without the 2-4 CPU-seconds of imports (torch, pandas, papermill) that each command
of a small stage otherwise spends starting Python. Any other command runs in a shell.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import runpy
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import chdir
from dataclasses import dataclass
from pathlib import Path

from cod import ROOT
from cod.config import ConfigError
from cod.pipeline.forks import FORKS, Fork, main_module, preloadable


@dataclass
class Stage:
    """A stage as DVC resolves it (`foreach` items and `${...}` variables filled in)."""

    cmd: str  # the shell command
    deps: list[str]  # paths it reads, relative to the repository
    outs: list[str]  # paths it writes


def resolved_stages(names: list[str] | None = None, repo: Path = ROOT) -> dict[str, Stage]:
    """The named stages of dvc.yaml in file order (all when `names` is None), as DVC resolves them; a
    `foreach` stage's name stands for all its items (`train` for `train@a_130m`, ...)."""
    from dvc.repo import Repo  # lazy: DVC's import costs ~1 s, and only this function needs it

    with Repo(str(repo)) as dvc_repo:
        found = {stage.name: Stage(" && ".join([stage.cmd] if isinstance(stage.cmd, str) else stage.cmd),
                                         [d.def_path for d in stage.deps], [o.def_path for o in stage.outs])
                 for stage in dvc_repo.index.stages if getattr(stage, "cmd", None)}
    if names is None:
        return found
    chosen = {address: stage for address, stage in found.items() if {address, address.split("@")[0]} & set(names)}
    unknown = sorted(set(names) - {part for address in chosen for part in (address, address.split("@")[0])})
    if unknown:
        groups = sorted({address.split("@")[0] for address in found if "@" in address})
        raise ConfigError(f"stage {', '.join(unknown)}: not in dvc.yaml; allowed: a stage's name "
                          f"({', '.join(found)}) or a foreach group's ({', '.join(groups)})")
    return chosen


def prerequisites(outputs: dict[str, list[str]], inputs: dict[str, list[str]]) -> dict[str, set[str]]:
    """For each stage, the stages one of whose `outputs` (paths) holds one of its `inputs` or lies
    inside one (a folder it reads whole); never itself."""
    def inside(path: str, folder: str) -> bool:
        return path == folder or path.startswith(folder.rstrip("/") + "/")

    return {name: {other for other, outs in outputs.items() if other != name
                   and any(inside(dep, out) or inside(out, dep) for dep in inputs[name] for out in outs)}
            for name in outputs}


def waves(outputs: dict[str, list[str]], inputs: dict[str, list[str]]) -> list[list[str]]:
    """The stages in waves: each stage after all its `prerequisites`. Raises ConfigError on a circle."""
    after = prerequisites(outputs, inputs)
    done, order = set(), []
    while len(done) < len(after):
        ready = [name for name, needs in after.items() if name not in done and needs <= done]
        if not ready:
            raise ConfigError(f"stages read each other's outputs in a circle: {sorted(set(after) - done)}")
        order.append(ready)
        done.update(ready)
    return order


def stage_environment() -> dict[str, str]:
    """This process's environment with this interpreter's folder first on PATH: what a stage's command runs in."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def execute_stage(command: str, repo: Path = ROOT) -> tuple[int, str, float]:
    """A stage's shell command run from `repo` with this interpreter first on PATH: its exit status,
    its output and its seconds."""
    started = time.time()
    done = subprocess.run(command, shell=True, cwd=repo, env=stage_environment(), capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr, time.time() - started


SHELL_SYNTAX = re.compile(r"[&|;<>$`*?(){}\[\]~\\\n]")  # a command holding one of these runs in a shell


def module_command(command: str) -> tuple[str, list[str]] | None:
    """(MODULE, ARGUMENTS) of a command `python -m cod.MODULE ARGUMENTS` with no shell syntax; else None."""
    if SHELL_SYNTAX.search(command):
        return None
    words = shlex.split(command)
    if words[:2] != ["python", "-m"] or len(words) < 3 or not words[2].startswith("cod."):
        return None
    return words[2], words[3:]


def _run_module(module: str, arguments: list[str], repo: str, environment: dict, log: str, parent: str | None) -> None:
    """In a forked process: what `python -m MODULE ARGUMENTS` does from `repo` with `environment`,
    its output written to `log`. The parent's main module (`parent`) is already here, as `__main__`."""
    os.chdir(repo)
    os.environ.clear()
    os.environ.update(environment)
    descriptor = os.open(log, os.O_WRONLY)
    os.dup2(descriptor, 1)
    os.dup2(descriptor, 2)
    os.close(descriptor)
    sys.argv = [module, *arguments]
    entry = sys.modules["__main__"] if module == parent else importlib.import_module(module)
    if not hasattr(entry, "main"):  # a package's __main__.py, run as `python -m` runs it
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        sys.exit(0)
    sys.exit(entry.main(arguments))


class Warm:
    """Runs the stage commands `python -m cod.MODULE ...` of `commands` (`module_command`) in
    processes forked from one server, which imports their modules and `preload` when the first one
    starts; the others as `execute_stage` does. Only for the `cod` this process imported (`ROOT`)."""

    def __init__(self, commands: list[str], repo: Path = ROOT, preload: tuple[str, ...] = ()):
        self.repo = repo
        modules = {found[0] for command in commands if (found := module_command(command))}
        self.forking = bool(modules) and Path(repo).resolve() == ROOT
        if self.forking:
            FORKS.set_forkserver_preload(preloadable([*modules, *preload]))

    def execute(self, command: str) -> tuple[int, str, float]:
        """As `execute_stage`: the exit status, output and seconds of `command` run from the repository."""
        found = module_command(command)
        if found is None or not self.forking:
            return execute_stage(command, self.repo)
        started = time.time()
        with tempfile.NamedTemporaryFile("r", prefix="stage-", suffix=".log") as log:
            code = Fork(_run_module, (*found, str(self.repo), stage_environment(), log.name, main_module())).wait()
            return code, log.read(), time.time() - started


def run_stages(stages: dict[str, Stage], jobs: int = 2, label: str = "stages", repo: Path = ROOT,
               preload: tuple[str, ...] = ()) -> None:
    """Run `stages`, `jobs` at a time, each as soon as its prerequisites have run (a `python -m cod...`
    command forked from a server that imported its module and `preload`: `Warm`), and record those
    that succeeded in dvc.lock; after a failure no further stage starts. Raises SystemExit naming
    what failed."""
    if jobs < 1:
        raise ConfigError(f"jobs={jobs}: allowed: a positive integer")
    outputs, inputs = {n: s.outs for n, s in stages.items()}, {n: s.deps for n, s in stages.items()}
    waves(outputs, inputs)  # refuses a circle before anything runs
    waiting = prerequisites(outputs, inputs)
    print(f"[{label}] running {len(stages)} stages, {jobs} at a time: {', '.join(stages)}", flush=True)
    execute = Warm([stage.cmd for stage in stages.values()], repo, preload).execute
    executed, failed, running = [], [], {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        while running or (waiting and not failed):
            ready = [n for n, needs in waiting.items() if needs <= set(executed)] if not failed else []
            for name in ready[:jobs - len(running)]:  # started only when a job is free: a failure stops the rest
                running[pool.submit(execute, stages[name].cmd)] = name
                del waiting[name]
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                name, (code, output, seconds) = running.pop(future), future.result()
                print(f"[{label}] {name}: {'done' if code == 0 else f'failed (exit {code})'} in {seconds:.0f} s",
                      flush=True)
                if code == 0:
                    executed.append(name)
                else:
                    print("\n".join(output.splitlines()[-60:]), file=sys.stderr, flush=True)
                    failed.append(name)
    if executed:
        record(executed, repo)
    if failed or waiting:
        raise SystemExit(f"[{label}] failed: {', '.join(failed)} (output above); not run: {', '.join(waiting) or 'none'}; "
                         f"the {len(executed)} others are recorded in dvc.lock")


def record(names: list[str], repo: Path = ROOT) -> None:
    """Record the stages `names` in dvc.lock as `dvc commit --force NAME ...` does, writing dvc.lock
    once: the command rewrites it for each stage, a round-trip YAML parse of the whole file (10,000
    lines here) and a write, about a second a stage."""
    from dvc.repo import Repo, lock_repo  # lazy: as in resolved_stages

    # from the repository: DVC resolves stage names and output paths against the working directory
    with chdir(repo), Repo() as dvc_repo, lock_repo(dvc_repo), dvc_repo.scm_context(quiet=True):
        stages = [info.stage for name in names for info in dvc_repo.stage.collect_granular(name)]
        for stage in stages:
            stage.save()
            stage.commit()
        stages[0].dvcfile.dump_stages(stages, update_pipeline=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cod.pipeline", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stages", nargs="+", help="stage names as `dvc stage list` prints them, or foreach groups")
    parser.add_argument("--jobs", type=int, default=2, help="stages run side by side (default 2)")
    args = parser.parse_args(argv)
    try:
        run_stages(resolved_stages(args.stages), args.jobs)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
