"""The whole pipeline at the smoke profile, in a throwaway copy of the repository: every stage that
trains or measures, run by `cod.pipeline` (dvc.yaml's commands two at a time, recorded in dvc.lock
as `dvc repro` records them), then what a fresh clone does: with the weights moved away,
`cod.pipeline.notebook --all` (`make notebooks`) executes every notebook stage from the small result files
alone, and nothing trains. The weights then come back and `dvc status` is clean.

Every notebook is executed once, as a fresh clone would: that one execution is what the tests of
figures and claims read (executing all of them twice cost half of the suite's time)."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # the whole smoke pipeline: most of `make test` (README, "Tests")

ROOT = Path(__file__).resolve().parent.parent
COPIED = ["cod", "notebooks", "params.yaml", "dvc.yaml", "data.dvc", ".dvcignore", "pyproject.toml"]
WEIGHT_STAGES = ("train@", "finetune@", "analyse@", "train_headline@", "analyse_headline@")
# the docs stage documents the committed CPU profiles (README.md, docs/, tests/test_docs.py), not the smoke copy
NOT_AT_SMOKE = ("docs",)


def _env() -> dict:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1",
            "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}


def _run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=2400)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def _stages(repo: Path) -> dict:
    return yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]


def _notebook_stages(repo: Path) -> list[str]:
    return [name for name, stage in _stages(repo).items() if "cod.pipeline.notebook" in stage.get("cmd", "")]


@pytest.fixture(scope="module")
def smoke_repo(tmp_path_factory) -> Path:
    """A copy of the repository at the smoke profile whose every training and measuring stage has run
    and is recorded in dvc.lock (all but the notebook stages, which `fresh_clone` executes)."""
    repo = tmp_path_factory.mktemp("smoke")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__", "executed"))
        else:
            shutil.copy(source, repo / name)
    (repo / ".dvc").mkdir()
    shutil.copy(ROOT / ".dvc" / "config", repo / ".dvc" / "config")
    (ROOT / ".cache").mkdir(exist_ok=True)  # converted open-weight models: made once, shared with test_pretrained
    (repo / ".cache").symlink_to(ROOT / ".cache", target_is_directory=True)
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["profile"] = params["headline_profile"] = "smoke"
    for notebook in params["notebooks"].values():  # those bound to a profile of their own (h0_pilot, h1_depth_map)
        if "profile" in notebook:
            notebook["profile"] = "smoke"
    # one decoder, the adapted one (Gemma-3): a Jacobian costs width x depth backward passes at any token count,
    # and the converted decoders run the code of tests/test_open_weights.py
    params["open_weights"]["models"] = ["gemma3-270m"]
    # under smoke both profiles are one, so a headline_NAME stage would be stage NAME with the same outputs
    pipeline = yaml.safe_load((repo / "dvc.yaml").read_text())
    pipeline["stages"] = {name: stage for name, stage in pipeline["stages"].items() if not name.startswith("headline_")}
    (repo / "dvc.yaml").write_text(yaml.safe_dump(pipeline, sort_keys=False))
    # and the headline experiments that only those stages read (b3-b6's rungs) would train for no notebook:
    # the experiments left run the same train_headline@ and analyse_headline@ commands
    read = {dep for stage in pipeline["stages"].values() if "cod.pipeline.notebook" in stage.get("cmd", "")
            for dep in stage.get("deps", [])}
    params["headline_experiments"] = {name: experiment for name, experiment in params["headline_experiments"].items()
                                      if f"runs/${{headline_profile}}/{name}" in read}
    params["headline_analyses"] = {name: analysis for name, analysis in params["headline_analyses"].items()
                                   if analysis["experiment"] in params["headline_experiments"]}
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    _run(["git", "init", "-q"], repo)
    _run([sys.executable, "-m", "cod.data.snapshot"], repo)
    notebooks = set(_notebook_stages(repo)) | set(NOT_AT_SMOKE)
    # the stages' own commands 2 at a time, each once what it reads exists, then one write of dvc.lock (cod.pipeline):
    # what `dvc repro` of them one by one leaves, with both cores busy (each `python -m cod...` command forked from one
    # process that imported its modules: cod.pipeline.runner.Warm)
    _run([sys.executable, "-m", "cod.pipeline", *(name for name in _stages(repo) if name not in notebooks)], repo)
    assert not (repo / "notebooks" / "executed").exists(), "a stage that is no notebook executed one"
    return repo


@pytest.fixture(scope="module")
def fresh_clone(smoke_repo, tmp_path_factory) -> dict:
    """`make notebooks` as on a fresh clone, which has no weights: the trained smoke repository's
    weights are moved away, every notebook stage is executed by `cod.pipeline.notebook --all`, and what
    that touched is recorded; then the weights come back."""
    weights, aside = smoke_repo / "checkpoints", tmp_path_factory.mktemp("weights") / "checkpoints"
    shutil.move(weights, aside)
    results = {p: p.stat().st_mtime_ns for p in (smoke_repo / "runs").rglob("*.json*")}
    results.update({p: p.stat().st_mtime_ns for p in (smoke_repo / "analyses").rglob("*.json")})
    started = time.time_ns()
    try:
        _run([sys.executable, "-m", "cod.pipeline.notebook", "--all"], smoke_repo)
        record = {"trained": weights.exists(), "results": results, "started": started,
                  "rewritten": {p for p, mtime in results.items() if p.stat().st_mtime_ns != mtime},
                  "stale": json.loads(_run(["dvc", "status", "--json"], smoke_repo))}
    finally:
        if weights.exists():  # something trained (recorded above): the trained weights win
            shutil.rmtree(weights)
        shutil.move(aside, weights)
    return record


def test_a_fresh_clone_regenerates_every_notebook_without_training(smoke_repo, fresh_clone):
    """No weights (a fresh clone has none): `make notebooks` executes every notebook stage from the
    committed runs and analyses, trains nothing, and `dvc status` then names only the weights (the
    stages that train or fine-tune them, and the analyses that read them)."""
    assert not fresh_clone["trained"], "something trained"
    assert fresh_clone["results"] and not fresh_clone["rewritten"], "a run or analysis was rewritten"
    for name in _notebook_stages(smoke_repo):
        executed = smoke_repo / "notebooks" / "executed" / "smoke" / f"{name}.ipynb"
        assert executed.exists() and executed.stat().st_mtime_ns > fresh_clone["started"], name
    stale = fresh_clone["stale"]
    assert stale and all(name.startswith(WEIGHT_STAGES) or name in NOT_AT_SMOKE for name in stale), stale
    assert all("checkpoints/smoke" in json.dumps(changes) for name, changes in stale.items() if name not in NOT_AT_SMOKE)


def test_every_notebook_stage_writes_its_figures_and_claims(smoke_repo, fresh_clone):
    notebooks = _notebook_stages(smoke_repo)
    assert {"a0_miniature", "a4_variance_dynamics", "b1_depth_scaling", "claims"} <= set(notebooks)
    for name in notebooks:
        executed = smoke_repo / "notebooks" / "executed" / "smoke" / f"{name}.ipynb"
        assert executed.exists() and executed.with_suffix(".html").exists()
        figures = smoke_repo / "figures" / "smoke" / name
        assert list(figures.glob("*.png")), f"{name} wrote no figure"
        for claim in json.loads((figures / "claims.json").read_text()):
            assert claim["verdict"] and claim["profile"] == "smoke"


def test_results_are_stored_per_profile(smoke_repo):
    assert not (smoke_repo / "runs" / "default").exists()
    assert (smoke_repo / "analyses" / "smoke" / "b_depth" / "d12_s0" / "layers.json").exists()
    assert (smoke_repo / "checkpoints" / "smoke" / "b_depth" / "d12_s0" / "model.pt").exists()


def test_runs_record_seed_and_settings(smoke_repo):
    finals = list((smoke_repo / "runs" / "smoke" / "a_130m").glob("*/final.json"))
    variants = yaml.safe_load((smoke_repo / "params.yaml").read_text())["experiments"]["a_130m"]["variants"]
    assert len(finals) == len(variants)  # the smoke profile trains one seed of each
    for path in finals:
        final = json.loads(path.read_text())
        assert final["status"] in ("completed", "diverged") and final["seed"] == 0
        assert json.loads((path.parent / "config.json").read_text())["model"]["n_layers"] == 4


def test_changing_a_plot_parameter_does_not_retrain(smoke_repo, fresh_clone):
    """With the weights back, everything is up to date; a plot parameter makes only its notebook stale."""
    params_path = smoke_repo / "params.yaml"
    original = params_path.read_text()
    assert set(json.loads(_run(["dvc", "status", "--json"], smoke_repo))) <= set(NOT_AT_SMOKE)
    params = yaml.safe_load(original)
    params["notebooks"]["a4_variance_dynamics"]["shallow_layers"] = 2
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    try:
        status = _run(["dvc", "status", "--json"], smoke_repo)
        assert set(json.loads(status)) - set(NOT_AT_SMOKE) == {"a4_variance_dynamics"}
    finally:
        params_path.write_text(original)


def test_notebook_runner_refuses_unknown_parameters(smoke_repo):
    done = subprocess.run([sys.executable, "-m", "cod.pipeline.notebook", "a4_variance_dynamics", "-p", "shalow_layers=2"],
                          cwd=smoke_repo, env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "has no parameter 'shalow_layers'" in done.stderr and "shallow_layers" in done.stderr
