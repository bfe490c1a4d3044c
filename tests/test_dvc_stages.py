"""dvc.yaml's notebook stages against what each notebook imports (cod.pipeline.stages): a stage depends on
every `cod` module its notebook reaches, so changing a module marks exactly its notebooks stale.
dvc.yaml's metrics and plots and README.md's pipeline graph are what cod.pipeline.stages derives now."""

import json
import math
import os
import re
import subprocess
import sys
from dataclasses import asdict
from fnmatch import fnmatch
from pathlib import Path

import numpy as np
import pytest
import yaml

from cod import ROOT

from cod.runs import curves
from cod.records import baselines
from cod.config import ConfigError, run_config
from cod.pipeline import runner, stages
from cod.report import pipeline_graph

NOTEBOOK_STAGES = stages.notebook_stages()


@pytest.fixture(scope="module")
def stale():
    return stages.stale_deps()


@pytest.mark.parametrize("name", sorted(NOTEBOOK_STAGES))
def test_a_notebook_stage_depends_on_every_cod_module_it_reaches(name, stale):
    assert f"notebooks/{stages.notebook_of(NOTEBOOK_STAGES[name])}.py" in NOTEBOOK_STAGES[name]["deps"]
    assert name not in stale, f"`python -m cod.pipeline.stages --write` updates dvc.yaml's deps of {name}: {stale.get(name)}"


def test_the_import_walk_follows_modules_through_cod():
    modules = stages.reached("from cod.claims.verdicts import compare\nfrom cod import plots\n")
    assert {"cod.claims.verdicts", "cod.claims.registry", "cod.records.results", "cod.plots"} <= modules
    assert "cod.train.trainer" not in stages.reached("from cod.claims.registry import load_registry\n")
    assert "cod/claims/registry.yaml" in stages.notebook_deps("a4_variance_dynamics")  # the registry's data


def test_a_notebook_reads_the_records_and_reaches_no_stage_that_writes_them():
    """Notebooks read the files of runs and analyses through `cod.records`, so editing the trainer, the
    analysis stage or the zero-shot task list leaves them fresh; only the two that plan runs from
    params.yaml (a0's plan, h0's pilot rounds) reach `cod.runs.params` and, through its fingerprint, the trainer."""
    writers = ("cod/train", "cod/eval", "cod/data/tasks.py", "cod/runs/analysis.py", "cod/runs/params.py",
               "cod/pipeline", "cod/tools")
    reaching = {path.stem for path in (ROOT / "notebooks").glob("*.py")
                if any(dep.startswith(writers) for dep in stages.notebook_deps(path.stem))}
    assert reaching == {"a0_miniature", "h0_pilot"}
    assert "cod/runs/analysis.py" not in stages.notebook_deps("b8_block_statistics")  # reads layers.json


def test_relative_imports_resolve_against_their_package():
    assert stages.cod_imports("from .loader import open_tokens\n", "cod.data") == {"cod.data.loader"}
    assert stages.cod_imports("def f():\n    import cod.train.trainer\n") == set()  # inside a function: not followed


def test_write_replaces_only_the_cod_deps(tmp_path, monkeypatch):
    dvc = tmp_path / "dvc.yaml"
    dvc.write_text("stages:\n  a4_variance_dynamics:  # Fig. 4\n    cmd: python -m cod.pipeline.notebook a4_variance_dynamics\n"
                   "    deps:\n      - notebooks/a4_variance_dynamics.py\n      - runs/${profile}/a_130m\n"
                   "      - cod/plots.py\n    params:\n      - profile\n")
    assert stages.write_deps(dvc) == ["a4_variance_dynamics"]
    text = dvc.read_text()
    assert "# Fig. 4" in text and "runs/${profile}/a_130m" in text and "params:\n      - profile" in text
    assert stages.stale_deps(dvc) == {}


# ---------------------------------------------------------------- metrics, plots, the README's graph

A_RUN = "a_130m/admin_s0"  # under runs/default


def dvc_json(*command: str) -> dict:
    done = subprocess.run([str(Path(sys.executable).with_name("dvc")), *command, "--json"], cwd=stages.ROOT,
                          capture_output=True, text=True, timeout=300, check=True,
                          env={**os.environ, "DVC_NO_ANALYTICS": "1"})
    return json.loads(done.stdout)


def test_dvc_yaml_lists_the_metrics_and_plots_of_params_yaml():
    assert stages.top_level_now() == stages.top_level_text(), "`python -m cod.pipeline.stages --write` updates them"


def test_the_lists_name_a_file_per_profile_and_experiment_never_a_run():
    lists = stages.top_level()
    assert lists["metrics"] == ["figures/${profile}/curves/finals.json",
                                "figures/${headline_profile}/curves/finals.json", stages.CLAIMS_SUMMARY]
    plots = [next(iter(plot)) for plot in lists["plots"]]
    assert "figures/${profile}/curves/a_130m.csv" in plots and "figures/${profile}/curves/a6_sft.csv" in plots
    assert "figures/${headline_profile}/curves/h0_pilot.csv" in plots
    assert len(plots) == len(set(plots)) == len(stages.experiments())


def test_dvc_shows_both_profiles_finals_the_claims_summary_and_a_curve():
    metrics = dvc_json("metrics", "show")[""]["data"]
    final = json.loads((curves.RUNS / "default" / A_RUN / "final.json").read_text())
    assert metrics["figures/default/curves/finals.json"]["data"][A_RUN]["val_loss"] == final["val_loss"]
    assert metrics["figures/headline/curves/finals.json"]["data"], "no headline run"
    summary = json.loads((stages.ROOT / "figures/default/claims/summary.json").read_text())
    assert metrics["figures/default/claims/summary.json"]["data"] == summary
    assert summary["papers"]["all"]["total"] > 0
    plot_id = "figures/default/curves/a_130m.csv"
    [plot] = dvc_json("plots", "show")["data"][plot_id]  # not `show PATH`: DVC then numbers the rows as steps
    points = [(int(p["step"]), float(p["loss"])) for p in plot["content"]["data"]["values"] if p["run"] == "admin_s0"]
    assert points == curves.loss_rows(curves.RUNS / "default" / A_RUN / "history.jsonl")
    assert plot["content"]["encoding"]["color"] == {"field": "run", "type": "nominal"}  # .dvc/plots/loss_by_run.json


def test_curves_are_a_table_per_experiment_and_the_finals_of_each_run(tmp_path):
    runs = tmp_path / "runs"
    for run, loss in (("wd0.01_s0", 7.123456), ("wd0_s0", 6.5)):
        (runs / "b_weight_decay" / run).mkdir(parents=True)
        (runs / "b_weight_decay" / run / "history.jsonl").write_text(
            f'{{"step": 0, "resid_var": [1.0]}}\n{{"step": 10, "loss": {loss}, "lr": 0.1}}\n')
    (runs / "b_weight_decay" / "wd0_s0" / "final.json").write_text(json.dumps(
        {"name": "b_weight_decay/wd0_s0", "status": "completed", "diverged_at": None, "val_loss": 6.4, "seed": 0,
         "behaviour": "84d2f38fa37fc6e2", "device": "cpu"}))
    # the failure line: train tokens 0,0,0,1 (add-one counts 4 and 2 of 6), val 0,1: exp(-(ln 4/6 + ln 2/6) / 2)
    tokens = tmp_path / "tokens" / "bpe2048"
    tokens.mkdir(parents=True)
    (tokens / "meta.json").write_text(json.dumps({"dtype": "uint16", "vocab_size": 2}))
    np.array([0, 0, 0, 1], dtype=np.uint16).tofile(tokens / "train.bin")
    np.array([0, 1], dtype=np.uint16).tofile(tokens / "val.bin")
    cfg = run_config({"data.tokens_dir": str(tmp_path / "tokens"), "train.eval_tokens": 2})
    (runs / "b_weight_decay" / "wd0_s0" / "config.json").write_text(json.dumps(asdict(cfg)))
    out = tmp_path / "figures" / "default" / "curves"
    (out / "gone").mkdir(parents=True)  # what an earlier run wrote goes
    written = curves.write_curves(runs, out, ["b_weight_decay", "b_moe"])  # b_moe: declared, not trained yet
    assert sorted(written) == sorted(out.iterdir()) == [out / "b_moe.csv", out / "b_weight_decay.csv",
                                                        out / "finals.json"]
    assert baselines.failure_lines(runs) == {  # the run with a config.json stands for its experiment
        "b_weight_decay": pytest.approx(math.exp(-(math.log(4 / 6) + math.log(2 / 6)) / 2))}
    assert baselines.failure_lines_file(tmp_path / "runs" / "default") == tmp_path / "figures" / "default" / \
        "failure_lines.json"
    assert (out / "b_weight_decay.csv").read_text() == "run,step,loss\nwd0.01_s0,10,7.1235\nwd0_s0,10,6.5\n"
    assert (out / "b_moe.csv").read_text() == "run,step,loss\n"
    assert json.loads((out / "finals.json").read_text()) == {
        "b_weight_decay/wd0_s0": {"status": "completed", "val_loss": 6.4, "seed": 0}}


def test_the_curves_stage_writes_every_graph_dvc_yaml_declares():
    """Each plot of dvc.yaml (an experiment params.yaml declares, under its profile's variable) is a
    file the curves stage writes, an empty graph until the experiment has a run."""
    for profile, variable in (("default", "${profile}"), ("headline", "${headline_profile}")):
        plotted = {experiment for experiment, under in stages.experiments().items() if under == variable}
        assert set(curves.declared(profile)) == plotted, profile


def test_stages_of_the_same_neighbours_are_one_node_and_groups_one_each():
    edges = {("prepare", "train@*"), ("train@*", "a0"), ("train@*", "a4"), ("train@*", "b1"),
             ("a0", "claims"), ("a4", "claims"), ("b1", "claims"), ("prepare", "b1")}
    assert pipeline_graph.group("train@a_130m") == "train@*" and pipeline_graph.group("claims") == "claims"
    text = pipeline_graph.mermaid(edges)
    assert '["a0<br/>a4"]' in text and '["b1"]' in text
    assert text.count("-->") == 6 and text.startswith("```mermaid\nflowchart LR\n")


def test_the_pipeline_page_shows_dvcs_graph_now():
    assert pipeline_graph.graph_block() in (ROOT / "docs" / "pipeline.md").read_text(), "`python -m cod.report` redraws it"


def stage_names() -> list[str]:
    """Every stage of dvc.yaml as DVC names it, a foreach stage once per key of its params.yaml section."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    names = []
    for name, stage in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].items():
        if "foreach" in stage:
            section = params
            for key in stage["foreach"].strip("${}").split("."):  # ${open_weights.models}: a nested list
                section = section[key]
            names += [f"{name}@{key}" for key in section]
        else:
            names.append(name)
    return names


def test_make_repro_reproduces_one_profile_and_curves_alone():
    """The Makefile's globs split dvc.yaml's stages: each stage is one profile's, never both's, and
    only `curves` and `docs`, which read both profiles' committed files, are left to run alone
    (--single-item)."""
    makefile = (ROOT / "Makefile").read_text()
    globs = {target: re.search(rf"^{target} := (.*)$", makefile, flags=re.M).group(1).replace("'", "").split()
             for target in ("DEFAULT_STAGES", "HEADLINE_STAGES")}
    for name in stage_names():
        matched = [t for t, patterns in globs.items() if any(fnmatch(name, p) for p in patterns if p != "prepare")]
        headline = name.startswith(("train_headline@", "analyse_headline@", "headline_")) or re.match(r"h\d+_", name)
        expected = [] if name in ("prepare", "curves", "docs") else ["HEADLINE_STAGES"] if headline else \
            ["DEFAULT_STAGES"]
        assert matched == expected, name
    assert "dvc repro --single-item curves" in makefile and "dvc repro --single-item docs" in makefile


def test_a_headline_stage_runs_its_notebook_on_the_headline_profiles_experiments():
    """headline_NAME runs notebook NAME, which has a stage of its own, with -p profile=${headline_profile};
    every experiment its params.yaml block names (`profiles.headline`) is a headline experiment, and
    its runs are the stage's deps."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    twins = {name: stage for name, stage in NOTEBOOK_STAGES.items() if name.startswith("headline_")}
    assert {"headline_a5_norm_comparison", "headline_claims"} <= set(twins)
    for name, stage in twins.items():
        notebook = stages.notebook_of(stage)
        assert name == f"headline_{notebook}" and notebook in NOTEBOOK_STAGES
        assert stage["cmd"].endswith("-p profile=${headline_profile}")
        assert stage["outs"][0] == {f"figures/${{headline_profile}}/{notebook}": {"cache": False}}
        block = (params["notebooks"][notebook].get("profiles") or {}).get("headline", {})
        named = [value for key, value in block.items() if key in ("experiment", "experiments", "analyses", "ladder")]
        experiments = {text.split("/")[0] for value in named
                       for text in (value.values() if isinstance(value, dict) else [value] if isinstance(value, str) else value)}
        assert experiments <= set(params["headline_experiments"]), name
        for experiment in experiments:
            assert f"runs/${{headline_profile}}/{experiment}" in stage["deps"], (name, experiment)


def test_stages_run_side_by_side_as_dvc_resolves_them():
    """cod.pipeline reads a `foreach` stage as DVC resolves it (its group's name stands for all its
    items), orders stages by what they read, and refuses a stage dvc.yaml lacks before running anything."""
    found = runner.resolved_stages(["prepare", "train@a_130m", "analyse@a_130m"])
    assert found["train@a_130m"].cmd == "python -m cod.pipeline.experiments train a_130m"
    assert "data/tokens" in found["train@a_130m"].deps and "data/tokens" in found["prepare"].outs
    order = runner.waves({name: stage.outs for name, stage in found.items()},
                           {name: stage.deps for name, stage in found.items()})
    assert order == [["prepare"], ["train@a_130m"], ["analyse@a_130m"]]
    group = runner.resolved_stages(["train"])
    assert "train@a_130m" in group and "train_headline@h_130m" not in group and "prepare" not in group
    with pytest.raises(ConfigError, match="stage train@nothing: not in dvc.yaml; allowed: .*prepare"):
        runner.resolved_stages(["train@nothing", "train"])
    with pytest.raises(ConfigError, match="jobs=0: allowed: a positive integer"):
        runner.run_stages(found, jobs=0)


def test_a_module_command_is_one_without_shell_syntax():
    assert runner.module_command("python -m cod.runs.analysis a_130m --profile smoke") == \
        ("cod.runs.analysis", ["a_130m", "--profile", "smoke"])
    assert runner.module_command("python -m cod.pipeline.notebook a4 -p 'k=v w'") == ("cod.pipeline.notebook", ["a4", "-p", "k=v w"])
    for command in ("python -m cod.x a && python -m cod.y", "python -m cod.x > out", "python -m cod.x $HOME",
                    "python -c 1", "python -m dvc status", "python -m cod.x *.json"):
        assert runner.module_command(command) is None, command


def test_a_forked_stage_command_does_what_the_command_does(tmp_path):
    """`Warm` runs `python -m cod.MODULE ...` as MODULE.main in a forked process, from the repository,
    in the stage's environment: the same exit status and output as the command in a shell, and no
    runpy warning; another repository's commands, or a shell command, run in a shell."""
    commands = ["python -m cod.runs.curves --help", "python -m cod.runs.curves --no-such-option",
                f"python -m cod.runs.curves smoke smoke --params {tmp_path / 'absent.yaml'}",
                "python -m cod.pipeline --help", "python -m cod.pipeline --jobs"]  # a package: its __main__.py
    warm = runner.Warm(commands, ROOT)
    forked = {command: warm.execute(command)[:2] for command in commands}
    for command, (code, output) in forked.items():
        assert (code, output) == runner.execute_stage(command)[:2], command
        assert "RuntimeWarning" not in output
    assert forked[commands[0]][0] == 0 and "usage: python -m cod.runs.curves" in forked[commands[0]][1]
    assert forked[commands[1]][0] == 2
    assert warm.execute("echo $PWD")[1].strip() == str(ROOT)
    elsewhere = runner.Warm(["echo $PWD"], tmp_path)
    assert not elsewhere.forking and elsewhere.execute("echo $PWD")[1].strip() == str(tmp_path)


def test_notebooks_that_read_others_outputs_wait_for_them():
    outputs = {"a4": ["figures/default/a4", "notebooks/executed/default/a4.ipynb"], "b1": ["figures/default/b1"],
               "claims": ["figures/default/claims"], "site": ["figures/site"]}
    inputs = {"a4": ["runs/default/a_130m", "cod/plots.py"], "b1": ["analyses/default/b_depth"],
              "claims": ["figures/default/a4/claims.json", "figures/default/b1/claims.json"],
              "site": ["figures/default/claims/summary.json", "figures/default/a4"]}
    assert runner.waves(outputs, inputs) == [["a4", "b1"], ["claims"], ["site"]]
    assert runner.waves({"a": ["figures/a"]}, {"a": ["figures/a/claims.json"]}) == [["a"]]  # its own outputs
    assert runner.waves({"a": ["runs/x/a"], "all": ["curves"]}, {"a": [], "all": ["runs/x"]}) == [["a"], ["all"]]
    assert runner.waves({"a": ["figures/ab"], "b": ["figures/a"]}, {"a": [], "b": ["figures/ab/x"]}) == [["a"], ["b"]]
    assert runner.waves({"a": ["figures/ab"], "b": ["figures/a"]}, {"a": [], "b": ["figures/abc"]}) == [["a", "b"]]
    with pytest.raises(ConfigError, match="in a circle: \\['a', 'b'\\]"):
        runner.waves({"a": ["x"], "b": ["y"]}, {"a": ["y/1"], "b": ["x"]})


def test_stages_run_as_soon_as_what_they_read_exists_and_a_failure_stops_the_rest(tmp_path, capsys):
    """In a throwaway DVC repository: `slow` does not hold back `second`, which reads only `first`;
    the stages that ran are recorded in dvc.lock (`dvc status` clean for them); after `broken`
    fails, `after_broken` never starts."""
    stages_yaml = {"first": {"cmd": "echo 1 > a", "outs": ["a"]},
                   "slow": {"cmd": "sleep 3 && echo 3 > s", "outs": ["s"]},
                   "second": {"cmd": "cat a > b", "deps": ["a"], "outs": ["b"]},
                   "broken": {"cmd": "cat b > c && exit 3", "deps": ["b"], "outs": ["c"]},
                   "after_broken": {"cmd": "cat c > d", "deps": ["c"], "outs": ["d"]}}
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages_yaml}))
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    for command in (["git", "init", "-q"], [sys.executable, "-m", "dvc", "init", "-q"]):
        subprocess.run(command, cwd=tmp_path, check=True, env=env)
    found = runner.resolved_stages(None, tmp_path)
    with pytest.raises(SystemExit, match="failed: broken .*not run: after_broken; the 3 others"):
        runner.run_stages(found, jobs=2, repo=tmp_path)
    finished = [line.split(":")[0].removeprefix("[stages] ") for line in capsys.readouterr().out.splitlines()[1:]]
    assert finished.index("second") < finished.index("slow") and finished.index("broken") < finished.index("slow")
    assert not (tmp_path / "d").exists()
    status = json.loads(subprocess.run([sys.executable, "-m", "dvc", "status", "--json"], cwd=tmp_path, env=env,
                                       capture_output=True, text=True, check=True).stdout)
    assert set(status) == {"broken", "after_broken"}
    recorded = (tmp_path / "dvc.lock").read_text()  # what `dvc commit --force` of the same stages writes
    ran = list(yaml.safe_load(recorded)["stages"])
    (tmp_path / "dvc.lock").unlink()
    subprocess.run([sys.executable, "-m", "dvc", "commit", "--force", "-q", *ran], cwd=tmp_path, env=env, check=True)
    assert (tmp_path / "dvc.lock").read_text() == recorded and sorted(ran) == ["first", "second", "slow"]


def test_no_default_profile_stage_reads_what_a_headline_stage_writes():
    """`make repro` and an experiment on default-profile stages (`dvc exp run` without -s) reproduce
    what is upstream of them: never a headline training or measuring stage, whose runs take the
    headline profile's hours (a0 reads the profile's runs, not the curves stage, which reads both)."""
    makefile = (ROOT / "Makefile").read_text()
    patterns = re.search(r"^DEFAULT_STAGES := (.*)$", makefile, flags=re.M).group(1).replace("'", "").split()
    found = runner.resolved_stages()
    after = runner.prerequisites({n: s.outs for n, s in found.items()}, {n: s.deps for n, s in found.items()})
    reached, frontier = set(), {name for name in found if any(fnmatch(name, p) for p in patterns)}
    while frontier:
        reached |= frontier
        frontier = {before for name in frontier for before in after[name]} - reached
    assert not {name for name in reached if name.startswith(("train_headline@", "analyse_headline@"))}
    assert "train@a_130m" in reached and "a0_miniature" in reached
