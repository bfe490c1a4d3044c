"""Training: schedule, weight-decay groups, exact resume, divergence as data, DDP equivalence."""

import json
import math
import os
import shlex
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch

from conftest import tiny_run, torchrun
from cod.config import ConfigError, run_config
from cod.data.loader import TokenBatches
from cod.model import Transformer
from cod.train.fingerprint import TIMINGS, describe
from cod.train.run import main
from cod.train.trainer import (Callback, Dist, DivergenceWatch, FineTuning, Interrupted, Pretraining, Reading,
                               Trainer, lr_at, param_groups, task_of)


def test_schedule_warms_up_then_decays_to_the_floor():
    cfg = run_config(["train.steps=100", "optim.lr=1.0", "optim.warmup_frac=0.1", "optim.min_lr_ratio=0.1"])
    lrs = [lr_at(s, cfg) for s in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:]))
    assert lrs[-1] == pytest.approx(0.1, abs=1e-3)


def test_weight_decay_skips_norms_and_embeddings_by_default():
    model = Transformer(run_config(["model.n_layers=2"]).model)
    decay, no_decay = param_groups(model, 0.1, decay_all=False)
    decayed = {id(p) for p in decay["params"]}
    assert id(model.embed_tokens.weight) not in decayed
    assert id(model.blocks[0].attn.norm.weight) not in decayed
    assert id(model.blocks[0].mlp.branch.down_proj.weight) in decayed
    everything, nothing = param_groups(model, 0.1, decay_all=True)
    assert len(nothing["params"]) == 0


def test_training_learns_and_writes_its_files(tiny_tokens, tmp_path):
    out = tmp_path / "run"
    main(["--out", str(out), *tiny_run(tiny_tokens)])
    final = json.loads((out / "final.json").read_text())
    history = [json.loads(r) for r in (out / "history.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in history if "loss" in r]
    assert final["status"] == "completed" and final["steps"] == 24
    assert losses[-1] < losses[0] - 0.5
    variance_rows = [r for r in history if "resid_var" in r]
    assert [r["step"] for r in variance_rows] == [0, 8, 16, 24]
    assert all(len(r["resid_var"]) == 3 and min(r["resid_var"]) > 0 for r in variance_rows)
    assert (out / "model.pt").exists() and not (out / "ckpt.pt").exists()
    assert math.isclose(final["val_ppl"], math.exp(final["val_loss"]))


def test_interrupted_run_resumes_to_the_same_result(tiny_tokens, tmp_path):
    overrides = tiny_run(tiny_tokens)
    main(["--out", str(tmp_path / "straight"), *overrides])

    cfg = run_config(overrides)
    t = Trainer(cfg, tmp_path / "resumed", identity=describe(cfg))
    t.out.mkdir(parents=True)  # run 12 steps by hand, checkpoint, then "crash"
    while t.step < 12:
        t.train_step()
    t.save_checkpoint()
    main(["--out", str(tmp_path / "resumed"), *overrides])

    a = json.loads((tmp_path / "straight" / "final.json").read_text())
    b = json.loads((tmp_path / "resumed" / "final.json").read_text())
    assert b["final_train_loss"] == a["final_train_loss"]
    assert b["val_loss"] == a["val_loss"]
    wa = torch.load(tmp_path / "straight" / "model.pt")["model"]
    wb = torch.load(tmp_path / "resumed" / "model.pt")["model"]
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_checkpoint_of_other_settings_is_not_resumed(tiny_tokens, tmp_path, capsys):
    main(["--out", str(tmp_path / "r"), *tiny_run(tiny_tokens, "train.steps=8", "train.ckpt_every=4")])
    torch.save({"fingerprint": "other"}, tmp_path / "r" / "ckpt.pt")
    main(["--out", str(tmp_path / "r"), "--force", *tiny_run(tiny_tokens, "train.steps=8")])
    assert "starting afresh" in capsys.readouterr().out


def test_finished_run_is_skipped(tiny_tokens, tmp_path, capsys):
    args = ["--out", str(tmp_path / "r"), *tiny_run(tiny_tokens, "train.steps=4")]
    main(args)
    main(args)
    assert "already complete" in capsys.readouterr().out


def test_divergence_is_recorded_not_raised(tiny_tokens, tmp_path):
    out = tmp_path / "boom"
    main(["--out", str(out), *tiny_run(tiny_tokens, "optim.lr=1e30", "optim.warmup_frac=0", "optim.grad_clip=0",
                                      "train.diverge_loss=6", "train.diverge_patience=1")])
    final = json.loads((out / "final.json").read_text())
    assert final["status"] == "diverged"
    assert final["diverged_at"] is not None and final["diverged_at"] < 24
    assert final["val_ppl"] is None


def test_missing_corpus_is_named_before_training(tmp_path, capsys):
    assert main(["--out", str(tmp_path / "r"), f"data.tokens_dir={tmp_path}/nothing"]) == 2
    command = f"python -m cod.data.prepare --tokenizer bpe --vocab-size 2048 --out {tmp_path}/nothing/bpe2048"
    assert command in capsys.readouterr().err
    assert main(["--out", str(tmp_path / "r"), "model.n_kv_heads=3"]) == 2
    assert capsys.readouterr().err.startswith("error: model.n_kv_heads=3 must divide")


def test_ddp_with_two_processes_matches_one_process(tiny_tokens, tmp_path):
    overrides = tiny_run(tiny_tokens, "train.steps=6", "train.stats_every=0", "train.ckpt_every=0")
    main(["--out", str(tmp_path / "single"), *overrides])
    torchrun("--nproc_per_node", "2", "-m", "cod.train.run", "--out", str(tmp_path / "ddp"), "--device", "cpu", *overrides)
    single = json.loads((tmp_path / "single" / "final.json").read_text())
    ddp = json.loads((tmp_path / "ddp" / "final.json").read_text())
    assert ddp["world_size"] == 2
    assert ddp["val_loss"] == pytest.approx(single["val_loss"], rel=1e-4)
    wa = torch.load(tmp_path / "single" / "model.pt")["model"]
    wb = torch.load(tmp_path / "ddp" / "model.pt")["model"]
    for k in wa:  # float32 all-reduce sums in another order; after 6 AdamW steps of lr 1e-2 a weight
        # near zero moves by up to ~1e-5 (1.2e-5 on this project's Xeon machines): atol 3e-5, 3e-3 of lr
        torch.testing.assert_close(wa[k], wb[k], rtol=1e-4, atol=3e-5)


def test_resume_reads_the_checkpoint_on_the_cpu_whatever_the_device(tiny_tokens, tmp_path):
    """A GPU run mapped its checkpoint onto the GPU, RNG state included, which torch.set_rng_state
    refuses (it takes a CPU ByteTensor): every resume on a GPU died. 'meta' stands in for the GPU,
    a device other than the CPU the checkpoint must not be mapped to."""
    cfg = run_config(tiny_run(tiny_tokens, "train.stats_every=0"))
    t = Trainer(cfg, tmp_path / "r", quiet=True, identity=describe(cfg))
    t.out.mkdir(parents=True)
    for _ in range(2):
        t.train_step()
    t.save_checkpoint()
    saved_rng = torch.get_rng_state()
    torch.manual_seed(123)
    resumed = Trainer(cfg, tmp_path / "r", quiet=True, identity=describe(cfg))
    resumed.dist.device = torch.device("meta")
    assert resumed.try_resume()
    assert resumed.step == 2 and torch.equal(torch.get_rng_state(), saved_rng)
    for name, value in t.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[name], value), name


def test_finish_gathers_the_weights_alone(tiny_tokens, tmp_path):
    """finish() gathered the AdamW state (under FSDP, from every process) only to discard it."""
    cfg = run_config(tiny_run(tiny_tokens, "train.steps=2", "train.stats_every=0", "train.ckpt_every=0"))
    t = Trainer(cfg, tmp_path / "r", quiet=True)

    def refuse():
        raise AssertionError("finish() asked for the optimiser state")

    t.optimizer.state_dict = refuse
    assert t.fit()["status"] == "completed"
    assert (tmp_path / "r" / "model.pt").exists()


def test_warmup_in_absolute_steps_where_the_settings_give_them():
    """Paper B warms up for 1,000 iterations, not a share of the run: `optim.warmup_steps` wins
    over warmup_frac; 0 (the default) changes nothing; a negative count is refused."""
    from cod.train.trainer import warmup_steps

    cfg = run_config(["train.steps=100", "optim.lr=1.0", "optim.warmup_frac=0.1"])
    assert warmup_steps(cfg) == 10 and cfg.optim.warmup_steps == 0
    with pytest.raises(ConfigError, match="warmup_steps"):
        run_config(["optim.warmup_steps=-1"])
    cfg.optim.warmup_steps = 4
    assert warmup_steps(cfg) == 4
    assert lr_at(0, cfg) == pytest.approx(0.25) and lr_at(3, cfg) == pytest.approx(1.0)
    assert lr_at(5, cfg) < 1.0


def test_a_run_stops_early_inside_a_longer_schedule(tiny_tokens, tmp_path):
    """`optim.schedule_steps` above `train.steps` trains the first steps of a longer run (paper A's
    Fig. 4 on a lent GPU: 2,400 of 20,000): its learning rates are the longer run's, its warmup a share
    of the schedule; 0 (the default) is train.steps, and a schedule shorter than the run is refused."""
    from cod.train.trainer import warmup_steps

    long = run_config(tiny_run(tiny_tokens, "train.steps=20", "optim.warmup_frac=0.2", "train.ckpt_every=0"))
    early = run_config(tiny_run(tiny_tokens, "train.steps=8", "optim.schedule_steps=20", "optim.warmup_frac=0.2",
                                "train.ckpt_every=0", "train.log_every=1"))
    assert warmup_steps(early) == warmup_steps(long) == 4 and long.optim.schedule_steps == 0
    final = Trainer(early, tmp_path / "early", quiet=True).fit()
    rows = [json.loads(r) for r in (tmp_path / "early" / "history.jsonl").read_text().splitlines() if '"lr"' in r]
    assert final["status"] == "completed" and final["steps"] == 8
    assert [r["lr"] for r in rows] == pytest.approx([lr_at(r["step"] - 1, long) for r in rows])
    assert rows[-1]["lr"] > lr_at(7, run_config(tiny_run(tiny_tokens, "train.steps=8", "optim.warmup_frac=0.2")))
    with pytest.raises(ConfigError, match="optim.schedule_steps=5 is below train.steps=8; allowed: 0"):
        run_config(tiny_run(tiny_tokens, "train.steps=8", "optim.schedule_steps=5"))


def test_reading_losses_back_per_logged_step_keeps_the_history(tiny_tokens, tmp_path):
    """On a GPU the losses are read back once per logged step; the history is the same, and a
    divergence is still recorded at the step it happened."""
    histories = {}
    for every_step in (True, False):
        for name, extra in (("plain", ()), ("boom", ("optim.lr=1e30", "optim.warmup_frac=0", "optim.grad_clip=0",
                                                     "train.diverge_loss=6", "train.diverge_patience=1"))):
            cfg = run_config(tiny_run(tiny_tokens, "train.steps=12", "train.ckpt_every=0", *extra))
            out = tmp_path / f"{name}_{every_step}"
            final = Trainer(cfg, out, quiet=True, read_back_every_step=every_step).fit()
            rows = [json.loads(r) for r in (out / "history.jsonl").read_text().splitlines()]
            histories[name, every_step] = ([{k: v for k, v in r.items() if k not in TIMINGS} for r in rows],
                                           final["status"], final["diverged_at"])
    assert histories["plain", True] == histories["plain", False]
    assert histories["plain", True][1] == "completed"
    (_, status_a, at_a), (_, status_b, at_b) = histories["boom", True], histories["boom", False]
    assert status_a == status_b == "diverged" and at_a == at_b


def _read_until(process: subprocess.Popen, text: str) -> list[str]:
    """The lines `process` prints up to and including the first that contains `text`."""
    lines = []
    while not lines or text not in lines[-1]:
        line = process.stdout.readline()
        assert line, f"the run ended before printing {text!r}: {lines}"
        lines.append(line)
    return lines


def _stopped(process: subprocess.Popen, signum: int, after: str) -> tuple[list[str], str]:
    """Send `signum` once `process` printed a line containing `after`; its stdout lines and the
    one line of its stderr."""
    watchdog = threading.Timer(300, process.kill)  # the run is long: never let it hang the suite
    watchdog.start()
    try:
        lines = _read_until(process, after)
        time.sleep(0.5)  # some wall time to accumulate
        process.send_signal(signum)
        rest, err = process.communicate()
    finally:
        watchdog.cancel()
    assert process.returncode == 128 + signum, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return lines + rest.splitlines(), err.strip()


def test_a_signal_checkpoints_and_names_the_command_that_resumes(tiny_tokens, tmp_path):
    """Ctrl-C (then SIGTERM) ends the step under way, writes ckpt.pt even with no periodic
    checkpoints, and prints one line with the command that resumes; the resumed run goes on from
    the saved step and its wall time adds to the earlier session's."""
    out = tmp_path / "r"
    settings = tiny_run(tiny_tokens, "train.steps=100000", "train.ckpt_every=0", "train.stats_every=0")
    command = [sys.executable, "-m", "cod.train.run", "--out", str(out), *settings]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    start = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    lines, hint = _stopped(subprocess.Popen(command, **start), signal.SIGINT, after="step      4/")
    assert f"starting from step 0 (no checkpoint at {out / 'ckpt.pt'})" in lines[0]
    first = torch.load(out / "ckpt.pt", weights_only=False)
    assert hint.startswith(f"[r] SIGINT at step {first['step']} of 100000: checkpoint in {out / 'ckpt.pt'}")
    resume = shlex.split(hint.split("resume with: ")[1])
    assert resume[:3] == ["python", "-m", "cod.train.run"] and resume[3:] == command[3:]
    assert first["step"] >= 4 and first["wall_s"] >= 0.5

    lines, hint = _stopped(subprocess.Popen([sys.executable, *resume[1:]], **start), signal.SIGTERM,
                           after=f"step {first['step'] // 4 * 4 + 4:>6}/")  # its next logged step
    assert f"resumed from step {first['step']} of 100000" in "".join(lines)
    second = torch.load(out / "ckpt.pt", weights_only=False)
    assert hint.startswith(f"[r] SIGTERM at step {second['step']} of 100000")
    assert second["step"] > first["step"] and second["wall_s"] >= first["wall_s"] + 0.5
    rows = [json.loads(r) for r in (out / "history.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == sorted({r["step"] for r in rows})  # no step twice
    # history rows keep wall time to 0.1 s: a step logged just after the resume may round below the checkpoint's
    assert all(r["wall_s"] >= round(first["wall_s"], 1) for r in rows if r["step"] > first["step"])


def test_wall_time_adds_up_over_resumes(tiny_tokens, tmp_path):
    overrides = tiny_run(tiny_tokens, "train.steps=4", "train.stats_every=0")
    cfg = run_config(overrides)
    t = Trainer(cfg, tmp_path / "r", quiet=True, identity=describe(cfg))
    t.out.mkdir(parents=True)
    t.train_step()
    t.save_checkpoint()
    state = torch.load(tmp_path / "r" / "ckpt.pt", weights_only=False)
    torch.save({**state, "wall_s": 1000.0}, tmp_path / "r" / "ckpt.pt")  # as if an earlier session had trained so long
    main(["--out", str(tmp_path / "r"), *overrides])
    final = json.loads((tmp_path / "r" / "final.json").read_text())
    rows = [json.loads(r) for r in (tmp_path / "r" / "history.jsonl").read_text().splitlines()]
    assert 1000 <= final["wall_s"] < 1300 and all(r["wall_s"] >= 1000 for r in rows if "loss" in r)


def test_the_settings_pick_the_kind_of_run(tiny_tokens, tmp_path):
    dist = Dist("cpu", distributed=False)
    task = task_of(run_config(tiny_run(tiny_tokens)), dist)
    assert type(task) is Pretraining and isinstance(task.train_batches(), TokenBatches)
    assert type(task.build_model()) is Transformer and task.stats_input().shape == (2, 32)  # 64 tokens of 32
    base = tmp_path / "model.pt"
    base.touch()
    assert type(task_of(run_config(tiny_run(tiny_tokens, f"finetune.base={base}")), dist)) is FineTuning
    vit = run_config({"vision.dataset": "fashion_mnist", "model.causal": False, "model.rope": False,
                      "data.seq_len": 50, "finetune.base": str(base)})
    with pytest.raises(ConfigError, match="fine-tuning starts from a language model; allowed: finetune.base=''"):
        task_of(vit, dist)


def test_the_loop_takes_what_differs_from_the_task(tiny_tokens, tmp_path, monkeypatch):
    """Tokens, validation, scores and the closing line of a run come from its task alone: a task
    of its own changes them without a change to the loop."""
    class Counted(Pretraining):
        def tokens(self, x):
            return 2 * x.numel()

        def evaluate(self, model, split):
            return 1.5

        def scores(self, model, diverged):
            return {"counted_score": 42.0}

        def summary(self, final):
            return f"counted {final['counted_score']}"

    monkeypatch.setattr("cod.train.trainer.task_of", Counted)
    cfg = run_config(tiny_run(tiny_tokens, "train.steps=4", "train.eval_every=2", "train.stats_every=0",
                              "train.ckpt_every=0"))
    final = Trainer(cfg, tmp_path / "r", quiet=True).fit()
    rows = [json.loads(r) for r in (tmp_path / "r" / "history.jsonl").read_text().splitlines()]
    assert final["counted_score"] == 42.0 and "val_loss" not in final
    assert final["tokens"] == 2 * 4 * 8 * 32
    assert [r["val_loss"] for r in rows if "val_loss" in r] == [1.5, 1.5]


# ----------------------------------------------------------------------------- side jobs (callbacks)


class Spy(Callback):
    """Records every hook the loop calls: (hook, the trainer's step, what it was given)."""

    def __init__(self, due_at=()):
        self.due_at, self.calls = set(due_at), []

    def start(self, trainer):
        self.calls.append(("start", trainer.step, None))

    def read(self, trainer, reading):
        self.calls.append(("read", trainer.step, reading.step))

    def due(self, trainer):
        return trainer.step in self.due_at

    def run(self, trainer):
        self.calls.append(("run", trainer.step, trainer.checkpoint_step))

    def end(self, trainer):
        self.calls.append(("end", trainer.step, None))

    def hooks(self, name: str) -> list:
        return [(step, given) for hook, step, given in self.calls if hook == name]


def test_each_side_job_runs_when_due_and_reads_every_step(tiny_tokens, tmp_path):
    """History rows every log_every steps, statistics every stats_every (and at step 0), validation
    every eval_every and checkpoints every ckpt_every; a callback of the caller's runs after them at
    its own steps, having read every step's loss once, in order, between one start and one end."""
    cfg = run_config(tiny_run(tiny_tokens, "train.steps=12", "train.log_every=4", "train.stats_every=8",
                              "train.eval_every=6", "train.ckpt_every=5"))
    spy = Spy(due_at=(3, 5, 11))
    final = Trainer(cfg, tmp_path / "r", quiet=True, callbacks=[spy]).fit()
    rows = [json.loads(r) for r in (tmp_path / "r" / "history.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "loss" in r] == [4, 8, 12]
    assert [r["step"] for r in rows if "resid_var" in r] == [0, 8]
    assert [r["step"] for r in rows if "val_loss" in r] == [6, 12]
    assert spy.hooks("start") == [(0, None)] and spy.hooks("end") == [(12, None)]
    assert spy.hooks("read") == [(step, step) for step in range(1, 13)]  # the CPU reads every step back at once
    assert spy.hooks("run") == [(3, None), (5, 5), (11, 10)]  # (its step, the last checkpoint's step)
    assert final["status"] == "completed" and not (tmp_path / "r" / "ckpt.pt").exists()


def test_on_a_gpu_the_losses_are_read_back_only_where_a_job_is_due(tiny_tokens, tmp_path):
    """As on a GPU: the pending steps are read back, in order, at steps where some job is due (the
    history's, the checkpoints', the caller's) and at the last."""
    cfg = run_config(tiny_run(tiny_tokens, "train.steps=10", "train.log_every=4", "train.stats_every=0",
                              "train.ckpt_every=0"))
    spy = Spy(due_at=(6,))
    Trainer(cfg, tmp_path / "r", quiet=True, callbacks=[spy], read_back_every_step=False).fit()
    assert spy.hooks("read") == [(4, 1), (4, 2), (4, 3), (4, 4), (6, 5), (6, 6), (8, 7), (8, 8), (10, 9), (10, 10)]


def test_the_divergence_watch_counts_losses_above_the_limit_in_a_row():
    class Fake:
        def __init__(self):
            self.stopped = None

        def say(self, text):
            pass

        def stop(self, status, step):
            self.stopped = (status, step)

    def first_divergence(losses, patience=2):
        watch, trainer = DivergenceWatch(limit=6.0, patience=patience), Fake()
        for step, loss in enumerate(losses, 1):
            watch.read(trainer, Reading(step, 0, loss, 1.0))
            if trainer.stopped:
                return trainer.stopped
        return None

    assert first_divergence([7.0, 5.0, 7.0, 5.0]) is None  # a good loss resets the count
    assert first_divergence([5.0, 7.0, 7.0, 5.0]) == ("diverged", 3)
    assert first_divergence([5.0, float("nan")], patience=3) == ("diverged", 2)  # not finite: at once
    assert first_divergence([7.0, 7.0], patience=3) is None


def test_the_deadline_stops_a_run_with_a_checkpoint_it_resumes_from(tiny_tokens, tmp_path):
    """A deadline already passed stops the run after its first step, as stopped, with its weights
    (final.json, model.pt) and a checkpoint (with no periodic ones); the run started again resumes
    there and completes, the checkpoint gone."""
    cfg = run_config(tiny_run(tiny_tokens, "train.steps=6", "train.ckpt_every=0", "train.stats_every=0"))
    stopped = Trainer(cfg, tmp_path / "r", quiet=True, identity=describe(cfg), deadline=time.monotonic()).fit()
    assert (stopped["status"], stopped["steps"], stopped["diverged_at"]) == ("stopped", 1, None)
    assert stopped["val_loss"] is not None and (tmp_path / "r" / "model.pt").exists()
    assert torch.load(tmp_path / "r" / "ckpt.pt", weights_only=False)["step"] == 1
    resumed = Trainer(cfg, tmp_path / "r", quiet=True, identity=describe(cfg))
    final = resumed.fit()
    assert not resumed.fresh and (final["status"], final["steps"]) == ("completed", 6)
    assert not (tmp_path / "r" / "ckpt.pt").exists()


def test_a_signal_ends_the_step_under_way_with_a_checkpoint_and_gives_the_handlers_back(tiny_tokens, tmp_path):
    class Signal(Callback):  # a Ctrl-C during step 3 (after it, as it is due at 3)
        def due(self, trainer):
            return trainer.step == 3

        def run(self, trainer):
            os.kill(os.getpid(), signal.SIGINT)

    cfg = run_config(tiny_run(tiny_tokens, "train.steps=12", "train.ckpt_every=0", "train.stats_every=0"))
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    trainer = Trainer(cfg, tmp_path / "r", quiet=True, callbacks=[Signal()], stop_on_signals=True)
    with pytest.raises(Interrupted, match="SIGINT at step 4 of 12: checkpoint in"):
        trainer.fit()
    assert torch.load(tmp_path / "r" / "ckpt.pt", weights_only=False)["step"] == 4
    assert {signum: signal.getsignal(signum) for signum in handlers} == handlers


def test_train_step_advances_the_step_count(tiny_tokens, tmp_path):
    t = Trainer(run_config(tiny_run(tiny_tokens, "train.stats_every=0")), tmp_path / "r", quiet=True)
    loss, grad_norm = t.train_step()
    t.step_on_device()
    assert t.step == 2 and t.tokens == 2 * 8 * 32 and math.isfinite(loss) and grad_norm > 0
