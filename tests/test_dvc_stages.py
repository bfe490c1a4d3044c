"""dvc.yaml's notebook stages against what each notebook imports (cod.stages): a stage depends on
every `cod` module its notebook reaches, so changing a module marks exactly its notebooks stale.
dvc.yaml's metrics and plots and README.md's pipeline graph are what cod.stages derives now."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cod import curves, stages

NOTEBOOK_STAGES = stages.notebook_stages()


@pytest.fixture(scope="module")
def stale():
    return stages.stale_deps()


@pytest.mark.parametrize("name", sorted(NOTEBOOK_STAGES))
def test_a_notebook_stage_depends_on_every_cod_module_it_reaches(name, stale):
    assert f"notebooks/{name}.py" in NOTEBOOK_STAGES[name]["deps"]
    assert name not in stale, f"`python -m cod.stages --write` updates dvc.yaml's deps of {name}: {stale.get(name)}"


def test_the_import_walk_follows_modules_through_cod():
    modules = stages.reached("from cod.verdicts import compare\nfrom cod import plots\n")
    assert {"cod.verdicts", "cod.registry", "cod.results", "cod.plots"} <= modules
    assert "cod.train" not in stages.reached("from cod.registry import load_registry\n")
    assert "cod/registry.yaml" in stages.notebook_deps("a4_variance_dynamics")  # the registry's data


def test_relative_imports_resolve_against_their_package():
    assert stages.cod_imports("from .loader import open_tokens\n", "cod.data") == {"cod.data.loader"}
    assert stages.cod_imports("def f():\n    import cod.train\n") == set()  # inside a function: not followed


def test_write_replaces_only_the_cod_deps(tmp_path, monkeypatch):
    dvc = tmp_path / "dvc.yaml"
    dvc.write_text("stages:\n  a4_variance_dynamics:  # Fig. 4\n    cmd: python -m cod.notebook a4_variance_dynamics\n"
                   "    deps:\n      - notebooks/a4_variance_dynamics.py\n      - runs/${profile}/a_130m\n"
                   "      - cod/plots.py\n    params:\n      - profile\n")
    assert stages.write_deps(dvc) == ["a4_variance_dynamics"]
    text = dvc.read_text()
    assert "# Fig. 4" in text and "runs/${profile}/a_130m" in text and "params:\n      - profile" in text
    assert stages.stale_deps(dvc) == {}


# ---------------------------------------------------------------- metrics, plots, the README's graph

A_RUN = "runs/default/a_130m/admin_s0"


def dvc_json(*command: str) -> dict:
    done = subprocess.run([str(Path(sys.executable).with_name("dvc")), *command, "--json"], cwd=stages.ROOT,
                          capture_output=True, text=True, timeout=300, check=True,
                          env={**os.environ, "DVC_NO_ANALYTICS": "1"})
    return json.loads(done.stdout)


def test_dvc_yaml_lists_the_metrics_and_plots_of_the_runs_on_disk():
    assert stages.top_level_now() == stages.top_level_text(), "`python -m cod.stages --write` updates them"


def test_dvc_shows_a_runs_final_metrics_the_claims_summary_and_its_curve():
    metrics = dvc_json("metrics", "show")[""]["data"]
    final = json.loads((stages.ROOT / A_RUN / "final.json").read_text())
    assert metrics[f"{A_RUN}/final.json"]["data"]["val_loss"] == final["val_loss"]
    summary = json.loads((stages.ROOT / "figures/default/claims/summary.json").read_text())
    assert metrics["figures/default/claims/summary.json"]["data"] == summary
    assert summary["papers"]["all"]["total"] > 0
    [plot] = dvc_json("plots", "show", "training loss default/a_130m")["data"]["training loss default/a_130m"]
    points = [p for p in plot["content"]["data"]["values"] if p["filename"] == "admin_s0.json"]
    history = [json.loads(line) for line in (stages.ROOT / A_RUN / "history.jsonl").read_text().splitlines()]
    assert [(p["step"], p["loss"]) for p in points] == [(r["step"], r["loss"]) for r in history if "loss" in r]


def test_a_curve_keeps_the_loss_rows_under_the_runs_full_name(tmp_path):
    run = tmp_path / "runs" / "default" / "b_weight_decay" / "wd0.01_s0"
    run.mkdir(parents=True)
    (run / "history.jsonl").write_text('{"step": 0, "resid_var": [1.0]}\n{"step": 10, "loss": 7.5, "lr": 0.1}\n')
    [written] = curves.write_curves(tmp_path / "runs", tmp_path / "curves")
    assert written == tmp_path / "curves" / "default" / "b_weight_decay" / "wd0.01_s0.json"
    assert json.loads(written.read_text()) == [{"step": 10, "loss": 7.5}]


def test_stages_of_the_same_neighbours_are_one_node_and_groups_one_each():
    edges = {("prepare", "train@*"), ("train@*", "a0"), ("train@*", "a4"), ("train@*", "b1"),
             ("a0", "claims"), ("a4", "claims"), ("b1", "claims"), ("prepare", "b1")}
    assert stages.group("train@a_130m") == "train@*" and stages.group("claims") == "claims"
    text = stages.mermaid(edges)
    assert '["a0<br/>a4"]' in text and '["b1"]' in text
    assert text.count("-->") == 6 and text.startswith("```mermaid\nflowchart LR\n")


def test_the_readme_graph_is_dvcs_graph_now():
    assert stages.readme_graph() == stages.graph_block(), "`python -m cod.stages --write` redraws it"
