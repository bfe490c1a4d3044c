"""Experiments, the plan and the stored analyses: what runs, what it costs, what notebooks read."""

import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from conftest import tiny_run
from cod.runs.analysis import analyse, analysed_runs, analysis_settings
from cod.records.analyses import load_analyses, load_attention, load_complete, load_layers, save_attention, save_layers
from cod.config import ConfigError, ModelConfig, run_config
from cod.model.flops import flops_per_token
from cod.metrics.attention_sparsity import attention_at_lengths
from cod.runs.params import ROOT, Run, all_runs, load_params, profile_settings, resolve_runs, section_of
from cod.pipeline import experiments, forks
from cod.runs.plan import (CPU_PROFILES, measured_core_hours, plan, record_block, run_seconds, shape_key,
                      tokens_per_parameter)
from cod.metrics.effectiveness import analyse_layers
from cod.model import Transformer
from cod.train.run import main as train_main


def smoke_params() -> dict:
    params = load_params()
    params["profile"] = "smoke"
    return params


def test_runs_are_stored_per_profile():
    params = smoke_params()
    run = resolve_runs("a_130m", params)[0]
    assert run.out.relative_to(ROOT).parts[:3] == ("runs", "smoke", "a_130m")
    assert run.weights.relative_to(ROOT).parts[:3] == ("checkpoints", "smoke", "a_130m")
    params["profile"] = "default"
    assert resolve_runs("a_130m", params)[0].out.parts[-3] == "default"


def test_variant_seeds_and_the_profiles_seed_cap():
    params = load_params()
    params["profile"] = "default"
    sweep = {run.name for run in resolve_runs("a_250m", params)}
    assert {"pre_ln_s2", "layerscale_s1"} <= sweep and "layerscale_s2" not in sweep
    params["profile"] = "smoke"
    assert {run.seed for run in resolve_runs("a_250m", params)} == {0}


def with_planned_moe(params: dict) -> dict:
    """params with a planned copy of b_recipe (the MoE ladder of issue 10), as a later issue would declare it."""
    params["planned"] = {"b_planned": {**params["experiments"]["b_recipe"], "issue": 10}}
    return params


def test_planned_runs_are_costed_by_shape_but_never_trained():
    params = with_planned_moe(smoke_params())
    planned = resolve_runs("b_planned", params, section="planned")
    moe = next(run for run in planned if run.variant == "moe")
    assert moe.status() == "planned" and moe.planned == "#10"
    assert moe.config.model.ffn == "moe"  # a valid run of the MoE code, planned: the pipeline does not train it
    assert moe.shape_config.model.n_layers == params["profiles"]["smoke"]["sizes"]["b_d32_narrow"]["model.n_layers"]
    assert all(run.planned is None for run in all_runs(params, planned=False))


def test_a_variants_own_profile_entry_applies_last_and_can_drop_the_rung():
    params = load_params()
    params["profile"] = "paper"
    gqa = next(run for run in resolve_runs("b_recipe", params) if run.variant == "gqa")
    assert (gqa.config.data.seq_len, gqa.config.model.n_kv_heads, gqa.config.model.n_heads) == (4096, 8, 16)
    params["profile"] = "default"
    gqa = next(run for run in resolve_runs("b_recipe", params) if run.variant == "gqa")
    assert (gqa.config.data.seq_len, gqa.config.model.n_kv_heads) == (256, 2)  # the default's own values
    spec = params["experiments"]["b_recipe"]["variants"]
    spec["gqa"] = {**spec["gqa"], "profiles": {"default": {"seeds": []}}}
    assert "gqa" not in {run.variant for run in resolve_runs("b_recipe", params)}
    spec["gqa"]["profiles"] = {"gpu": {}}
    with pytest.raises(ConfigError, match="b_recipe \\(gqa\\): profiles \\['gpu'\\] are not profiles; "
                                          "allowed: smoke, default, headline, paper"):
        resolve_runs("b_recipe", params)


def test_plan_prints_every_experiment_and_the_totals():
    printed = io.StringIO()
    hours = plan(with_planned_moe(smoke_params()), out=printed)
    text = printed.getvalue()
    for name in ("a0_miniature", "a_130m", "b_depth", "a_350m", "b_moe", "b_recipe"):
        assert name in text
    assert "make repro trains" in text and "complete profile from scratch" in text
    assert 0 < hours["to_train"] <= hours["all"] and hours["planned"] > 0


def test_an_unmeasured_shape_takes_a_measured_speed_of_its_width_scaled_by_flops(monkeypatch):
    monkeypatch.setattr("cod.runs.plan.time_steps", lambda cfg: pytest.fail("timed although a shape of its width was measured"))
    shallow, deep = (Run("smoke", "e", "v", 0, {"model.d_model": 32, "model.n_heads": 2, "model.n_layers": layers,
                                                "train.stats_every": 0})
                     for layers in (4, 8))
    speeds = {shape_key(shallow.config): 1000.0}
    sources = {}
    seconds = run_seconds(deep, speeds, set(speeds), sources)
    seq = deep.config.data.seq_len
    ratio = flops_per_token(shallow.config.model, seq) / flops_per_token(deep.config.model, seq)
    assert speeds[shape_key(deep.config)] == pytest.approx(1000.0 * ratio) and 0.5 < ratio < 0.75
    assert sources[shape_key(deep.config)] == "scaled by FLOPs"
    t = deep.config.train
    tokens = t.steps * seq * deep.config.data.batch_size + 2 * t.eval_tokens / 3
    assert seconds == pytest.approx(tokens / (1000.0 * ratio) + 5.0)


def test_the_plan_table_counts_each_profiles_runs_and_measured_hours(tmp_path, monkeypatch):
    for module in ("cod.runs.plan", "cod.runs.params"):
        monkeypatch.setattr(f"{module}.ROOT", tmp_path)
    monkeypatch.setattr("cod.runs.plan.time_steps", lambda cfg: 1000.0)
    for name, wall in (("a/x_s0", 1800.0), ("b/y_s1", 5400.0)):
        (tmp_path / "runs" / "smoke" / name).mkdir(parents=True)
        (tmp_path / "runs" / "smoke" / name / "final.json").write_text(json.dumps({"wall_s": wall}))
    assert measured_core_hours("smoke") == 2.0
    params = smoke_params()
    block = record_block(params, profiles=("smoke",))
    row = next(line for line in block.splitlines() if line.startswith("| `smoke`"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1:3] == [str(len(all_runs(params))), "0"] and cells[-1] == "2.0"
    committed = (ROOT / "runs" / "plan.md").read_text()  # python -m cod.pipeline.experiments plan --record
    assert all(f"| `{profile}` |" in committed for profile in CPU_PROFILES)


def test_default_profile_meets_the_miniatures_criterion():
    """The token criterion of notebooks/a0_miniature.py, checked on the declared runs."""
    params = load_params()
    params["profile"] = "default"
    for run in all_runs(params):
        ratio = tokens_per_parameter(run)
        if run.experiment.startswith("a_") and run.experiment != "a0_miniature":
            assert ratio >= 10, run
        if run.experiment == "b_depth":
            assert 4 <= ratio <= 11.5, run


def test_status_distinguishes_result_weights_and_nothing(tiny_tokens, tmp_path, monkeypatch):
    monkeypatch.setattr("cod.runs.params.ROOT", tmp_path)
    overrides = dict(o.split("=", 1) for o in tiny_run(tiny_tokens, "train.steps=4", "train.ckpt_every=0"))
    overrides = {k: json.loads(v) if v[0].isdigit() or v[0] == "-" else v for k, v in overrides.items()}
    run = Run("smoke", "demo", "v", 0, overrides)
    assert run.status() == "to train"
    train_main(["--out", str(run.out), "--weights", str(run.weights), *tiny_run(tiny_tokens, "train.steps=4",
                                                                                 "train.ckpt_every=0")])
    assert run.status() == "done"
    (run.weights / "model.pt").unlink()
    assert run.status() == "result only"
    changed = Run("smoke", "demo", "v", 0, {**overrides, "optim.lr": 0.5})
    assert changed.status() == "to train"


def test_analysis_settings_are_checked():
    params = load_params()
    with pytest.raises(ConfigError, match="allowed: b_depth"):
        analysis_settings("b_dept", params)
    params["analyses"]["b_depth"] = {**params["analyses"]["b_depth"], "tua": 0.1}
    with pytest.raises(ConfigError, match="unknown \\['tua'\\]"):
        analysis_settings("b_depth", params)


def test_an_analysis_measures_the_variants_it_names():
    params = smoke_params()
    spec = analysis_settings("a_130m", params)
    assert [run.variant for run in analysed_runs(spec, params)] == ["pre_ln", "lns", "post_ln"]
    assert analysis_settings("b_depth", params)["variants"] is None  # not given: every variant
    assert len(analysed_runs(analysis_settings("b_depth", params), params)) == len(resolve_runs("b_depth", params))
    with pytest.raises(ConfigError, match="variants=\\['pre-ln'\\] are not variants of experiments.a_130m"):
        analysed_runs({**spec, "variants": ["pre-ln"]}, params)


def test_an_analysis_can_measure_only_some_runs(tmp_path, monkeypatch):
    monkeypatch.setattr("cod.runs.params.ROOT", tmp_path)  # no weights anywhere
    params = smoke_params()
    with pytest.raises(FileNotFoundError, match=r"no weights for \['lns_s0'\]"):  # the others are not asked for
        analyse("a_130m", params, only=["lns_s0"])
    with pytest.raises(ConfigError, match="--runs lns_s9: not runs of analysis a_130m under profile 'smoke'; "
                                          "allowed: pre_ln_s0, lns_s0, post_ln_s0"):
        analyse("a_130m", params, only=["lns_s9"])


def test_fine_tuning_runs_start_from_their_base_runs():
    params = load_params()
    params["profile"] = "default"
    assert section_of("a6_sft", params) == "finetunes"
    runs = resolve_runs("a6_sft", params)
    base = {run.name: run for run in resolve_runs("a_250m", params)}
    assert {run.name for run in runs} == {f"{v}_s{s}" for v in ("pre_ln", "lns", "post_ln", "deepnorm", "mix_ln")
                                          for s in (0, 1, 2)}
    for run in runs:
        cfg, parent = run.config, base[run.name]
        assert cfg.finetune.base == f"checkpoints/default/a_250m/{run.name}/model.pt"
        assert cfg.model == parent.config.model and cfg.seed == parent.seed
        assert cfg.optim.lr == params["finetunes"]["a6_sft"]["overrides"]["optim.lr"]
    params["finetunes"]["a6_sft"]["variants"]["pre-ln"] = {}
    with pytest.raises(ConfigError, match="variant 'pre-ln' has no run in experiments.a_250m; allowed: .*pre_ln"):
        resolve_runs("a6_sft", params)
    with pytest.raises(ConfigError, match="experiment 'a6' is not declared; allowed: .*a6_sft"):
        resolve_runs("a6", params)


def test_a_zero_shot_only_analysis_needs_no_layer_settings():
    params = smoke_params()
    spec = analysis_settings("a6_sft", params)
    assert spec["layers"] is False and spec["zero_shot_part"] == "eval" and "tau" not in spec
    assert {run.variant for run in analysed_runs(spec, params)} == {"pre_ln", "lns", "post_ln", "deepnorm", "mix_ln"}
    params["analyses"]["a6_sft"] = {k: v for k, v in params["analyses"]["a6_sft"].items() if k != "layers"}
    with pytest.raises(ConfigError, match="missing \\['eval_tokens'"):
        analysis_settings("a6_sft", params)  # measuring layers needs their settings


def test_stored_layer_analysis_reads_back_as_the_same_objects(tmp_path):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=61, d_model=16, n_layers=3, n_heads=2, max_seq_len=16)).eval()
    ids = torch.randint(0, 61, (8, 9))  # 4 windows to score, 4 (32 tokens > width 16 + 1) to fit
    x, y = ids[:4, :-1], ids[:4, 1:]
    with torch.no_grad():
        result = analyse_layers(model, x, y, ids[4:, :-1], x[:2])
    save_layers(result, tmp_path / "run")
    back = load_layers(tmp_path / "run")
    assert back.usefulness.score == result.usefulness.score and back.usefulness.effective == result.usefulness.effective
    assert back.causal.global_score == result.causal.global_score
    np.testing.assert_array_equal(back.permutation.matrix, result.permutation.matrix)  # NaNs included
    np.testing.assert_array_equal(back.removal.loss_increase, result.removal.loss_increase)
    np.testing.assert_allclose(back.jacobians.mean, result.jacobians.mean, atol=2e-3)  # stored as float16
    np.testing.assert_array_equal(back.kurtosis.layer, result.kurtosis.layer)
    assert back.seconds == result.seconds and back.attention is None
    (tmp_path / "other_s1").mkdir()
    save_layers(result, tmp_path / "run_s3")
    found = load_analyses(tmp_path, ["run", "absent"])
    assert list(found) == [("run", 3)] and found["run", 3].causal.global_score == result.causal.global_score
    (tmp_path / "size").mkdir()
    save_layers(result, tmp_path / "size" / "run_s0")
    assert list(load_complete(tmp_path, ["size", "missing"], ["run"])) == ["size"]
    assert load_complete(tmp_path, ["size"], ["run", "absent"]) == {}  # a variant missing: left out


def test_an_analysis_stores_the_jacobian_matrices_of_its_jacobian_seeds_only(tmp_path):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=61, d_model=16, n_layers=2, n_heads=2, max_seq_len=16)).eval()
    ids = torch.randint(0, 61, (8, 9))
    with torch.no_grad():
        result = analyse_layers(model, ids[:4, :-1], ids[:4, 1:], ids[4:, :-1], ids[:2, :-1])
    save_layers(result, tmp_path / "run_s0")
    save_layers(result, tmp_path / "run_s0", matrices=False)  # settings changed: the stale matrices go
    back = load_layers(tmp_path / "run_s0")
    assert not (tmp_path / "run_s0" / "jacobians.npz").exists() and back.jacobians.mean is None
    np.testing.assert_array_equal(back.jacobians.deviation, result.jacobians.deviation)  # kept in layers.json
    params = load_params()
    params["profile"] = "headline"
    assert analysis_settings("h_130m", params)["jacobian_seeds"] == [0]  # b1 draws seed 0's matrices
    assert analysis_settings("a_130m", params)["jacobian_seeds"] is None  # a3 draws every seed's


def test_attention_lengths_beyond_a_models_positions_are_refused_before_any_run():
    from cod.runs.analysis import analyse

    params = smoke_params()
    params["analyses"]["b_depth"] = {**params["analyses"]["b_depth"], "attention_lengths": [16, 4096]}
    with pytest.raises(ConfigError, match="attention_lengths up to 4096 exceed the max_seq_len of .*allowed: 1..64"):
        analyse("b_depth", params)


def test_attention_at_several_lengths_reads_back(tmp_path):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=61, d_model=16, n_layers=2, n_heads=2, max_seq_len=16)).eval()
    stats = attention_at_lengths(model, torch.randint(0, 61, (3, 12)), [4, 12], [0.1, 0.01])
    save_attention(stats, tmp_path)
    back = load_attention(tmp_path)
    assert list(back) == [4, 12] and back[12].thresholds == [0.1, 0.01]
    for length in (4, 12):
        np.testing.assert_array_equal(back[length].sparsity, stats[length].sparsity)
        np.testing.assert_array_equal(back[length].entropy, stats[length].entropy)


def test_an_unknown_override_in_a_run_still_names_the_setting():
    with pytest.raises(ConfigError, match="unknown setting 'model.nrom'"):
        run_config({"model.nrom": "lns"})


# ----------------------------------------------------------------------------- runs on GPUs


def gpu_experiment(tmp_path, monkeypatch, gpus: int, **profile) -> dict:
    """Params of a four-run experiment trained under tmp_path, with `gpus` GPUs visible."""
    monkeypatch.setattr(experiments, "ROOT", tmp_path)
    monkeypatch.setattr("cod.runs.params.ROOT", tmp_path)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    size = {"model.d_model": 16, "model.n_layers": 2, "model.n_heads": 2}
    params = {"profile": "smoke", "profiles": {"smoke": {"jobs": 2, "seeds": [0], "sizes": {"s": size}, **profile}},
              "experiments": {"demo": {"size": "s", "variants": {v: {} for v in "abcd"}}}}
    dataset = tmp_path / resolve_runs("demo", params)[0].config.data.dataset_dir
    dataset.mkdir(parents=True)
    (dataset / "train.bin").touch()
    return params


class Finished:
    """A process that has ended with `status` by the time it is waited for (`wait` runs `then` first)."""

    def __init__(self, status: int = 0, then=lambda: None):
        self.status, self.then = status, then

    def send_signal(self, signum):
        pass

    def wait(self):
        self.then()
        return self.status


def record_runs(monkeypatch) -> list[tuple[list[str], dict | None]]:
    """(command, environment) of every training process started, which all succeed: on GPUs a
    `python -m cod.train.run` or torchrun command, in a process group of its own; on the CPU the
    arguments of `cod.train.run` forked."""
    started = []

    def popen(command, cwd, env=None, process_group=None):
        assert process_group == 0
        started.append((command, env))
        return Finished()

    def forked(arguments, launcher):
        started.append((arguments, None))
        return launcher.run(Finished)

    monkeypatch.setattr(subprocess, "Popen", popen)
    monkeypatch.setattr(experiments, "train_on_cpu", forked)
    return started


@pytest.mark.parametrize("visible, ids", [(None, {"0", "1"}), ("3,5", {"3", "5"})])
def test_runs_side_by_side_get_a_gpu_each(tmp_path, monkeypatch, capsys, visible, ids):
    params = gpu_experiment(tmp_path, monkeypatch, gpus=2, jobs=3)
    if visible:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    lock, busy, seen = threading.Lock(), set(), []
    pair = threading.Barrier(2, timeout=20)  # two runs hold their GPUs at once

    def popen(command, cwd, env=None, process_group=None):
        gpu = env["CUDA_VISIBLE_DEVICES"]
        with lock:
            assert gpu not in busy, f"GPU {gpu} given to two runs at once"
            busy.add(gpu)
            seen.append(gpu)
        assert command[1:3] == ["-m", "cod.train.run"]

        def run():  # the process runs until both GPUs are busy
            pair.wait()
            with lock:
                busy.remove(gpu)

        return Finished(then=run)

    monkeypatch.setattr(subprocess, "Popen", popen)
    experiments.train("demo", params)
    assert sorted(seen) == sorted([*ids, *ids])
    assert "4 to train, 2 at a time on 1 of GPUs" in capsys.readouterr().out  # jobs=3 capped at the 2 GPUs


def test_a_run_on_several_gpus_goes_through_torchrun(tmp_path, monkeypatch):
    params = gpu_experiment(tmp_path, monkeypatch, gpus=2, gpus_per_run=2)
    started = record_runs(monkeypatch)
    experiments.train("demo", params)
    assert len(started) == 4 and all(env["CUDA_VISIBLE_DEVICES"] == "0,1" for _, env in started)
    command = started[0][0]
    assert command[:8] == [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           "-m", "cod.train.run"]
    params["profiles"]["smoke"]["gpus_per_run"] = 3
    with pytest.raises(ConfigError, match="profiles.smoke.gpus_per_run=3: more than the 2 GPUs visible; "
                                          "allowed: 1 to 2"):
        experiments.train("demo", params)


def test_without_gpus_runs_train_as_before(tmp_path, monkeypatch):
    params = gpu_experiment(tmp_path, monkeypatch, gpus=0)
    started = record_runs(monkeypatch)
    experiments.train("demo", params)
    runs = {run.name: run for run in resolve_runs("demo", params)}
    assert sorted(arguments for arguments, _ in started) == sorted([*run.arguments(), "--force", "--no-resume-hint"]
                                                                   for run in runs.values())
    assert all(env is None for _, env in started)
    params["profiles"]["smoke"]["gpus_per_run"] = 2
    with pytest.raises(ConfigError, match="gpus_per_run=2: more than the 0 GPUs visible; allowed: 1 to 1"):
        experiments.train("demo", params)


def test_a_forked_cpu_run_trains_from_the_repository_and_returns_its_status(tiny_tokens, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out, launcher = tmp_path / "run", experiments.Launcher()
    assert experiments.train_on_cpu(["--out", str(out), *tiny_run(tiny_tokens, "train.steps=4")], launcher) == 0
    assert json.loads((out / "final.json").read_text())["status"] == "completed"
    assert experiments.train_on_cpu(["--out", str(out), "model.norm=pre_lm"], launcher) == 2  # a setting refused


def test_a_fork_server_never_preloads_the_main_module(monkeypatch):
    """A forked process runs its parent's main module again; imported beforehand, runpy would warn."""
    main = type(sys)("__main__")
    main.__spec__ = type("Spec", (), {"name": "cod.pipeline.notebook"})()
    monkeypatch.setitem(sys.modules, "__main__", main)
    assert forks.main_module() == "cod.pipeline.notebook"
    assert forks.preloadable(["torch", "cod.pipeline.notebook", "papermill", "torch"]) == ["papermill", "torch"]
    main.__spec__ = None  # a script or `python -c`
    assert forks.main_module() is None and forks.preloadable(["b", "a"]) == ["a", "b"]


def test_forked_processes_ended_side_by_side_report_their_own_exit_status():
    """Starts and joins from four threads at once (as `train` does with `jobs` > 1): without the
    lock, a start's poll of the other live processes read a status that a join was reading, and the
    join reported 255 for a process that exited 0 (about 1 in 30 here)."""
    with ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(lambda _: forks.exit_status_of_fork(time.sleep, (0.005,)), range(240)))
    assert statuses == [0] * 240
    assert forks.exit_status_of_fork(sys.exit, (3,)) == 3


def test_a_signal_reaches_each_run_once_and_no_run_starts_after_it():
    """SIGINT within `listening`: each run alive gets it once, a run not started yet never starts,
    and the handlers are given back."""
    class Waiting:  # a run that ends at its first signal
        def __init__(self):
            self.signals, self.ended = [], threading.Event()

        def send_signal(self, signum):
            self.signals.append(signum)
            self.ended.set()

        def wait(self):
            assert self.ended.wait(30)
            return 128 + self.signals[0]

    launcher, runs = experiments.Launcher(), [Waiting(), Waiting()]
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    with launcher.listening(), ThreadPoolExecutor(2) as pool:
        statuses = [pool.submit(launcher.run, lambda run=run: run) for run in runs]
        while len(launcher.alive) < 2:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)  # as a terminal's Ctrl-C
        late = launcher.run(lambda: pytest.fail("a run started after the signal"))
    assert [status.result() for status in statuses] == [130, 130] and late is None
    assert [run.signals for run in runs] == [[signal.SIGINT], [signal.SIGINT]] and launcher.signum == signal.SIGINT
    assert {signum: signal.getsignal(signum) for signum in handlers} == handlers


def test_ctrl_c_stops_the_runs_at_their_checkpoints_and_prints_one_line(tiny_tokens, tmp_path):
    """Ctrl-C (SIGINT to the terminal's process group) while two runs of three train: each writes
    its checkpoint, the third never starts, and `python -m cod.pipeline.experiments train` prints one line
    besides the runs' progress, the command that resumes them all, with no traceback. No forked run
    prints runpy's warning of a main module run again after its import."""
    repo = tmp_path / "repo"  # a throwaway repository: the package's ROOT is where its copy lies
    shutil.copytree(ROOT / "cod", repo / "cod", ignore=shutil.ignore_patterns("__pycache__"))
    base = {"data.tokens_dir": str(tiny_tokens), "data.vocab_size": 300, "model.vocab_size": 300,
            "data.seq_len": 32, "data.batch_size": 8, "model.max_seq_len": 32, "train.steps": 100_000,
            "train.log_every": 4, "train.stats_every": 0, "train.ckpt_every": 0, "train.eval_tokens": 2048}
    size = {"model.d_model": 32, "model.n_layers": 3, "model.n_heads": 2}
    params = {"profile": "smoke", "profiles": {"smoke": {"jobs": 2, "seeds": [0], "base": base, "sizes": {"s": size}}},
              "experiments": {"demo": {"size": "s", "variants": {"a": {}, "b": {}, "c": {}}}}}
    (repo / "params.yaml").write_text(json.dumps(params))  # JSON is YAML
    command = [sys.executable, "-m", "cod.pipeline.experiments", "train", "demo", "--params", str(repo / "params.yaml")]
    env = {**os.environ, "PYTHONPATH": str(repo), "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(command, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    watchdog = threading.Timer(300, process.kill)  # the runs are long: never let them hang the suite
    watchdog.start()
    try:
        before, training = [], set()
        while training != {"a_s0", "b_s0"}:  # both runs in their steps
            line = process.stdout.readline()
            assert line, f"the runs ended before training: {before}"
            before.append(line)
            training.update(re.findall(r"^\[demo/(\w+)\] step ", line))
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the orchestrator and its fork server
        after = process.communicate()[0].splitlines()
    finally:
        watchdog.cancel()
    said = [line for line in after if not re.match(r"\[demo/\w+\] step ", line)]  # the step under way may log
    assert process.returncode == 130 and len(said) == 1, after
    assert said[0].startswith("[demo] SIGINT: the runs under way stopped at a checkpoint each; resume them all with: ")
    assert shlex.split(said[0].split("with: ")[1]) == ["python", *command[1:], "--profile", "smoke"]
    output = "".join(before) + "\n".join(after)
    assert "Traceback" not in output and "RuntimeWarning" not in output and "found in sys.modules" not in output
    weights = repo / "checkpoints" / "smoke" / "demo"
    assert all(torch.load(weights / f"{v}_s0" / "ckpt.pt", weights_only=False)["step"] >= 4 for v in "ab")
    assert not (weights / "c_s0" / "ckpt.pt").exists()


def test_what_is_not_found_is_named_with_the_command_that_makes_it_for_its_profile(tmp_path, monkeypatch):
    """Tokens, runs, weights, analyses, claims and tokenizers not found: each error names the command
    that makes them, for the profile their folder belongs to."""
    from cod.records.analyses import load_layers, stored_settings
    from cod.claims.sizes import load_sizes
    from cod.claims.tables import failure_line
    from cod.data.loader import open_tokens
    from cod.eval.lm import load_tokenizer
    from cod.records.results import load_model, run_dirs
    from cod.claims.scoreboard import collect

    params = gpu_experiment(tmp_path, monkeypatch, gpus=0)
    (tmp_path / resolve_runs("demo", params)[0].config.data.dataset_dir / "train.bin").unlink()
    params["profile"], params["profiles"]["headline"] = "headline", params["profiles"]["smoke"]
    with pytest.raises(ConfigError, match="run `python -m cod.pipeline.experiments prepare --profile headline`"):
        experiments.train("demo", params)
    expected = {
        lambda: open_tokens(tmp_path / "bpe512_fineweb_edu" / "val.bin"):
            f"`python -m cod.data.prepare --tokenizer bpe --vocab-size 512 --source fineweb_edu "
            f"--out {tmp_path / 'bpe512_fineweb_edu'}`",
        lambda: load_tokenizer(tmp_path / "gpt_neox"): f"`python -m cod.data.prepare --tokenizer gpt_neox "
                                                       f"--out {tmp_path / 'gpt_neox'}` makes it",
        lambda: run_dirs("a_130m", tmp_path / "runs" / "paper"):
            "`python -m cod.pipeline.experiments train a_130m --profile paper`",
        lambda: failure_line(tmp_path / "runs" / "paper", "a_130m"):
            "`python -m cod.pipeline.experiments train a_130m --profile paper` trains them",
        lambda: load_model(tmp_path / "checkpoints" / "paper" / "a_130m" / "lns_s2" / "model.pt"):
            "`python -m cod.pipeline.experiments train a_130m --profile paper --variants lns --seeds 2` trains it",
        lambda: load_layers(tmp_path / "analyses" / "paper" / "a_130m" / "lns_s2"):
            "`python -m cod.runs.analysis a_130m --profile paper` makes it",
        lambda: stored_settings(tmp_path / "analyses" / "paper" / "b_depth"):
            "`python -m cod.runs.analysis b_depth --profile paper`",
        lambda: load_sizes(tmp_path / "analyses" / "paper", ["a_130m"], {"Pre-LN": "pre_ln"}):
            "`python -m cod.runs.analysis a_130m --profile paper` make them",
        lambda: collect(tmp_path / "figures", "paper"): "`python -m cod.pipeline.notebook NAME -p profile=paper`",
    }
    for call, command in expected.items():
        with pytest.raises(FileNotFoundError) as error:
            call()
        assert command in str(error.value)


def test_profile_settings_are_checked(tmp_path, monkeypatch):
    params = gpu_experiment(tmp_path, monkeypatch, gpus=0)
    params["profiles"]["smoke"]["gpus_per_run"] = 0
    with pytest.raises(ConfigError, match="profiles.smoke.gpus_per_run=0 is not allowed; allowed: a positive integer"):
        resolve_runs("demo", params)
    params["profiles"]["smoke"] = {**params["profiles"]["smoke"], "gpus_per_run": 1, "gpus": 2}
    with pytest.raises(ConfigError, match="profiles.smoke: unknown \\['gpus'\\]; allowed: jobs, .*gpus_per_run"):
        resolve_runs("demo", params)
    for name in ("smoke", "default", "paper"):
        profile_settings({**load_params(), "profile": name})  # params.yaml's profiles pass


def test_a_profile_trains_only_the_experiments_it_names_and_that_name_it():
    params = load_params()
    params["profile"] = "headline"
    assert resolve_runs("a_130m", params) == []  # not in the headline profile's experiments
    assert {run.variant for run in resolve_runs("h0_pilot", params)} >= {"w64_t2m", "w128_t8m"}
    params["profile"] = "default"
    assert resolve_runs("h0_pilot", params) == []  # profiles_only: [headline, smoke]
    assert all(run.experiment != "h0_pilot" for run in all_runs(params))
    params["profile"] = "smoke"
    assert {run.config.train.steps for run in resolve_runs("h0_pilot", params)} == {6}
    params["headline_experiments"]["h0_pilot"]["profiles_only"] = ["headlines"]
    with pytest.raises(ConfigError, match="profiles_only.*allowed: smoke, default, headline, paper"):
        resolve_runs("h0_pilot", params)


def test_training_can_be_limited_to_some_variants(tmp_path, monkeypatch):
    params = gpu_experiment(tmp_path, monkeypatch, gpus=0)
    started = record_runs(monkeypatch)
    experiments.train("demo", params, variants=["b", "d"])
    names = sorted(command[command.index("--name") + 1] for command, _ in started)
    assert names == ["demo/b_s0", "demo/d_s0"]
    with pytest.raises(ConfigError, match="--variants e: not variants of demo under profile 'smoke'; allowed: a, b, c, d"):
        experiments.train("demo", params, variants=["a", "e"])


def test_training_can_be_limited_to_some_seeds_and_goes_seed_by_seed(tmp_path, monkeypatch):
    params = gpu_experiment(tmp_path, monkeypatch, gpus=0, jobs=1)
    params["profiles"]["smoke"]["seeds"] = [0, 1, 2]
    started = record_runs(monkeypatch)
    experiments.train("demo", params, variants=["a", "b"], seeds=["2", "0"])
    names = [command[command.index("--name") + 1] for command, _ in started]
    assert names == ["demo/a_s0", "demo/b_s0", "demo/a_s2", "demo/b_s2"]  # a seed's variants train together
    with pytest.raises(ConfigError, match="--seeds 7: not seeds of demo under profile 'smoke'; allowed: 0, 1, 2"):
        experiments.train("demo", params, seeds=["7"])


def test_new_only_keeps_runs_whose_result_stands_without_weights(tmp_path, monkeypatch):
    params = gpu_experiment(tmp_path, monkeypatch, gpus=0)
    started = record_runs(monkeypatch)
    status = {"a": "result only", "b": "done", "c": "to train", "d": "result only"}
    monkeypatch.setattr(Run, "status", lambda run: status[run.variant])
    experiments.train("demo", params, new_only=True)
    assert [command[command.index("--name") + 1] for command, _ in started] == ["demo/c_s0"]
    started.clear()
    experiments.train("demo", params)  # weights gone: trained again, so that its stage has its outputs
    assert sorted(command[command.index("--name") + 1] for command, _ in started) == ["demo/a_s0", "demo/c_s0", "demo/d_s0"]
