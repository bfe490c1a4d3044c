"""`dvc exp run` as the README shows it: params.yaml survives DVC's own YAML writer (which `-S`
rewrites it with), and the README's experiment runs one notebook in a temporary copy, leaving the
workspace and every other stage alone."""

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from dvc.utils.hydra import apply_overrides
from dvc.utils.serialize import modify_yaml

from conftest import documentation

ROOT = Path(__file__).resolve().parents[1]
README = documentation()  # README.md and the docs pages it leads to


EXPERIMENT = "PATH=$PWD/.venv/bin:$PATH dvc exp run"  # how the docs' experiment line starts


def readme_experiment() -> list[str]:
    """The docs' `dvc exp run` line, split into words (its comment dropped), the PATH assignment first."""
    return readme_line(EXPERIMENT)


def readme_line(start: str) -> list[str]:
    """The one README line starting with `start`, split into words (its comment dropped)."""
    [line] = [line.split("#")[0].strip() for line in README.splitlines() if line.lstrip().startswith(start)]
    return shlex.split(line)


def nested(data: dict, dotted: str):
    for key in dotted.split("."):
        data = data[key]
    return data


def test_params_yaml_survives_dvcs_writer(tmp_path):
    """DVC rewrites params.yaml with ruamel.yaml, wrapping long flow-style lines at 80 columns: a key
    with a space ("MQA (G=4)") split over two lines no longer parses. Read back, the rewritten file
    holds the same data, and `-S KEY=VALUE` (hydra's overrides, as `dvc exp run -S` applies them)
    changes that key alone."""
    original = yaml.safe_load((ROOT / "params.yaml").read_text())
    copy = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", copy)
    with modify_yaml(copy):
        pass  # what `dvc exp run` does to a file it sets nothing in: parse and write back
    assert yaml.safe_load(copy.read_text()) == original
    overrides = [word for flag, word in zip(readme_experiment(), readme_experiment()[1:]) if flag == "-S"]
    assert overrides, "the README's experiment sets no parameter"
    apply_overrides(copy, [*overrides, "profile=smoke"])
    changed = yaml.safe_load(copy.read_text())
    for override in overrides:
        key, value = override.split("=", 1)
        assert nested(changed, key) == yaml.safe_load(value)
        parent, name = key.rsplit(".", 1)
        nested(changed, parent).pop(name)
        if name in nested(original, parent):
            nested(changed, parent)[name] = nested(original, parent)[name]
    assert changed == {**original, "profile": "smoke"}


# what the README's experiment (one notebook stage, -s) reads and writes, and what DVC needs to resolve dvc.yaml
EXPERIMENT_FILES = ["cod", "params.yaml", "dvc.yaml", "dvc.lock", "data.dvc", ".dvcignore", ".gitignore", ".dvc/config",
                    ".dvc/plots", "notebooks/a4_variance_dynamics.py", "runs/default/a_130m",
                    "figures/default/a4_variance_dynamics", "notebooks/executed/default/a4_variance_dynamics.ipynb"]


@pytest.mark.slow
def test_the_readme_experiment_runs_one_notebook_in_a_temporary_copy(tmp_path):
    """The README's `dvc exp run --temp -s NOTEBOOK -S ...` in a git repository holding what that
    stage reads: the experiment's commit changes the parameter, that notebook's outputs and dvc.lock,
    nothing else; the workspace is left as it was."""
    repo = tmp_path / "repo"
    for name in EXPERIMENT_FILES:
        source, target = ROOT / name, repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, target)
    venv_bin = Path(sys.executable).parent
    others = ":".join(p for p in os.environ["PATH"].split(":") if Path(p) != venv_bin)  # as a fresh shell has it
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": others,
           "GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.org", "GIT_COMMITTER_NAME": "test",
           "GIT_COMMITTER_EMAIL": "test@example.org"}

    def run(*command: str) -> str:
        done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    run("git", "init", "-q")
    run("git", "add", ".")
    run("git", "commit", "-q", "-m", "the files of one notebook stage")
    (repo / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)  # untracked, as in a clone
    words = readme_experiment()
    line = next(line.split("#")[0].strip() for line in README.splitlines() if line.lstrip().startswith(EXPERIMENT))
    started = time.time()
    run("bash", "-c", line)  # the line as written: the stages' `python` is the environment's
    words = words[1:]  # the command after the PATH assignment
    print(f"the README's experiment took {time.time() - started:.0f} s")  # the README states this time
    assert run("git", "status", "--porcelain", "--untracked-files=no") == ""
    [ref] = run("git", "for-each-ref", "--format=%(refname)", "refs/exps").split()
    changed = run("git", "diff", "--name-only", "HEAD", ref).split()
    stage = [w for flag, w in zip(words, words[1:]) if flag == "-s"][0]
    assert "params.yaml" in changed and "dvc.lock" in changed
    assert all(path in ("params.yaml", "dvc.lock") or stage in path for path in changed), changed
    params = yaml.safe_load(run("git", "show", f"{ref}:params.yaml"))
    table = run(str(venv_bin / "dvc"), *readme_line(".venv/bin/dvc exp show")[1:])
    assert max(map(len, table.splitlines())) <= 120 and "shallow_layers" in table, table
    for override in (w for flag, w in zip(words, words[1:]) if flag == "-S"):
        key, value = override.split("=", 1)
        assert nested(params, key) == yaml.safe_load(value)
