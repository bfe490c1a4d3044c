"""Train one run from the command line, under its identity (`cod.train.fingerprint`).

    python -m cod.train.run --out runs/demo/pre_ln_s0 model.norm=lns train.steps=200
    torchrun --nproc_per_node 2 -m cod.train.run --out runs/demo/ddp ...   # DDP, same global batch

A run whose --out already holds its finished result under the same identity (settings and
behaviour of the code) is not trained again unless --force; an interrupted one resumes from a
checkpoint written under the same identity. --help adds the trainer's description (`cod.train.trainer`)
and every setting. --no-resume-hint: a run stopped by a signal says nothing (`cod.pipeline.experiments`
passes it, and names one command that resumes all its runs).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import io
import os
import shlex
import sys
import tokenize
from pathlib import Path

from cod.config import ConfigError, RunConfig, choices, field_types, run_config
from cod.data.tasks import check_fine_tuning
from cod.train import fingerprint, trainer


def field_docs(cls: type) -> dict[str, str]:
    """The trailing `# comment` of each field in the source of dataclass `cls`, by field name."""
    source = inspect.getsource(cls)
    comments = {token.start[0]: token.string.lstrip("#").strip()
                for token in tokenize.generate_tokens(io.StringIO(source).readline)
                if token.type == tokenize.COMMENT}
    fields = [node for node in ast.parse(source).body[0].body if isinstance(node, ast.AnnAssign)]
    return {node.target.id: comments.get(node.end_lineno, "") for node in fields}


def describe_settings(cls: type = RunConfig, prefix: str = "") -> list[str]:
    """Help lines for every setting under dataclass `cls`: its path, type (or choices), default and doc."""
    hints, docs = field_types(cls), field_docs(cls)
    leaves, sections = [], []
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        if dataclasses.is_dataclass(kind):
            sections += ["", f"{prefix}{f.name}: {kind.__doc__}", *describe_settings(kind, f"{prefix}{f.name}.")]
            continue
        allowed = choices(kind)
        shown = "{" + ", ".join(allowed) + "}" if allowed else f.type
        leaves += [f"  {prefix}{f.name}: {shown} = {f.default}", f"      {docs[f.name]}"]
    return leaves + sections


def settings_help() -> str:
    return "\n".join(["settings (key.path=value; values are read as YAML):", *describe_settings()])


class SettingsParser(argparse.ArgumentParser):
    """An argument parser whose help ends with every setting (built only for --help: it parses source)."""

    def format_help(self) -> str:
        return f"{super().format_help()}\n{settings_help()}\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = SettingsParser(prog="python -m cod.train.run", description=f"{__doc__}\n{trainer.__doc__}",
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for config, history and final metrics")
    parser.add_argument("--weights", help="folder for checkpoints and final weights (default: --out)")
    parser.add_argument("--name", help="label of the progress lines (default: the folder name)")
    parser.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda when available")
    parser.add_argument("--force", action="store_true", help="train even if --out holds this finished run")
    parser.add_argument("--no-resume-hint", action="store_true",
                        help="stopped by a signal, print nothing (the caller names the command that resumes)")
    parser.add_argument("overrides", nargs="*", help="settings as key.path=value, e.g. model.norm=lns (listed below)")
    args = parser.parse_args(argv)
    name, command = args.name or Path(args.out).name, shlex.join([*parser.prog.split(), *argv])
    try:
        return run(args)
    except trainer.Interrupted as stop:
        if not args.no_resume_hint:
            print(f"[{name}] {stop}; resume with: {command}", file=sys.stderr, flush=True)
        return 128 + stop.signum
    except KeyboardInterrupt:  # before the steps began, or a second Ctrl-C
        if not args.no_resume_hint:
            print(f"[{name}] stopped; `{command}` resumes from the last checkpoint, if any", file=sys.stderr,
                  flush=True)
        return 130


def run(args: argparse.Namespace) -> int:
    """Train the run of `main`'s arguments under its identity, stopping with a checkpoint on SIGINT
    or SIGTERM in one process (`cod.train.trainer.SignalStop`); the command's exit status."""
    try:
        cfg = run_config(args.overrides)
        check_fine_tuning(cfg.finetune)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not args.force and fingerprint.is_complete(Path(args.out), cfg):
        print(f"[{args.name or Path(args.out).name}] already complete with these settings", flush=True)
        return 0
    try:
        training = trainer.Trainer(cfg, Path(args.out), args.weights and Path(args.weights), args.name, args.device,
                                   identity=fingerprint.describe(cfg), stop_on_signals=True)
    except (FileNotFoundError, ConfigError) as e:  # no prepared tokens (say which command makes them), no task fits
        print(f"error: {e}", file=sys.stderr)
        return 2
    training.fit()
    training.dist.close()
    return 0


def forked(argv: list[str], cwd: str) -> None:
    """`main(argv)` from `cwd` as the body of a forked process (`cod.pipeline.experiments` on the CPU), in a
    process group of its own (a terminal's Ctrl-C reaches `cod.pipeline.experiments`, which passes it on
    once): its return value becomes the process's exit status."""
    os.setpgid(0, 0)
    os.chdir(cwd)
    sys.exit(main(argv))


if __name__ == "__main__":
    sys.exit(main())
