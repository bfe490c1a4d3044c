"""The GPU path's code, run on the CPU: micro-batches, recomputation, compilation, sharded
evaluation and FSDP under torchrun (gloo standing in for NCCL), collectives on the model's device."""

import functools
import json
import os
import subprocess
import sys

import pytest
import torch

from conftest import tiny_run
from cod import train
from cod.config import run_config
from cod.loss import IGNORE_INDEX
from cod.train import Dist, Trainer


def _trained(tokens, tmp_path, name, *extra, steps=3, batches=None):
    """A Trainer after `steps` optimiser steps (no files but its folder), its (loss, grad norm)
    per step and the gradients of its first step; `batches` replaces its data."""
    cfg = run_config(tiny_run(tokens, "train.stats_every=0", *extra))
    trainer = Trainer(cfg, tmp_path / name, quiet=True, identify=False)
    if batches is not None:
        trainer.batches.batch = batches
    losses = []
    for _ in range(steps):
        losses.append(trainer.train_step())
        if trainer.step == 0:
            trainer.first_gradients = {n: p.grad.clone() for n, p in trainer.model.named_parameters()}
        trainer.step += 1
    return trainer, losses


def _assert_same(a: dict, b: dict, **tolerance):
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], **tolerance, msg=name)


def test_share_gives_every_process_equally_many_items_and_counts_each_once():
    for n in (0, 1, 5, 8):
        shares = []
        for rank in range(3):
            d = Dist("cpu", distributed=False)
            d.rank, d.world_size = rank, 3
            shares.append(d.share(n))
        assert len({len(s) for s in shares}) == 1
        assert sorted(i for s in shares for i, counted in s if counted) == list(range(n))


def test_collectives_run_on_the_model_device(monkeypatch):
    d = Dist("cpu", distributed=False)
    d.world_size, d.device = 2, torch.device("meta")  # as if a GPU process of two
    seen = []

    def all_reduce(t):
        seen.append(t.device)
        raise RuntimeError("stop")

    monkeypatch.setattr(train.dist, "all_reduce", all_reduce)
    for call in (lambda: d.sum([1.0, 2.0]), lambda: d.mean(1.0)):
        with pytest.raises(RuntimeError, match="stop"):
            call()
    assert seen == [torch.device("meta")] * 2


def test_micro_batches_give_the_gradients_of_one_batch(tiny_tokens, tmp_path):
    """Uneven micro-batches (3 + 3 + 2 sequences) and ignored targets spread unevenly over them."""
    reference = Trainer(run_config(tiny_run(tiny_tokens)), tmp_path / "data", quiet=True, identify=False).batches

    def masked(step):
        x, y = reference.batch(step)
        y = y.clone()
        y[:3, : 20 + step] = IGNORE_INDEX  # the first micro-batch counts far fewer targets
        return x, y

    whole, whole_losses = _trained(tiny_tokens, tmp_path, "whole", batches=masked)
    micro, micro_losses = _trained(tiny_tokens, tmp_path, "micro", "train.micro_batch=3", batches=masked)
    for (loss_a, norm_a), (loss_b, norm_b) in zip(whole_losses, micro_losses):
        assert loss_b == pytest.approx(loss_a, rel=1e-6)
        assert norm_b == pytest.approx(norm_a, rel=1e-5)
    _assert_same(whole.first_gradients, micro.first_gradients, rtol=1e-5, atol=1e-8)


def test_recomputed_blocks_train_exactly_like_stored_ones(tiny_tokens, tmp_path):
    stored, losses_a = _trained(tiny_tokens, tmp_path, "stored")
    recomputed, losses_b = _trained(tiny_tokens, tmp_path, "recomputed", "train.recompute=true")
    assert losses_b == losses_a
    _assert_same(stored.model.state_dict(), recomputed.model.state_dict(), rtol=0, atol=0)


def test_compiled_model_trains_like_eager(tiny_tokens, tmp_path, monkeypatch):
    """Graph capture and autograd through torch.compile; AOT-eager stands in for inductor's
    code generation, which would take a minute on this CPU."""
    monkeypatch.setattr(train.torch, "compile", functools.partial(torch.compile, backend="aot_eager"))
    eager, losses_a = _trained(tiny_tokens, tmp_path, "eager", "train.recompute=true")
    compiled, losses_b = _trained(tiny_tokens, tmp_path, "compiled", "train.recompute=true", "train.compile=true")
    assert compiled.net is not compiled.model
    for (loss_a, _), (loss_b, _) in zip(losses_a, losses_b):
        assert loss_b == pytest.approx(loss_a, rel=1e-5)
    _assert_same(eager.first_gradients, compiled.first_gradients, rtol=1e-4, atol=1e-7)


INTERRUPTED = """
import sys
from pathlib import Path
from cod.config import run_config
from cod.train import Trainer

out, *overrides = sys.argv[1:]
trainer = Trainer(run_config(overrides), Path(out), device="cpu", quiet=True)
trainer.out.mkdir(parents=True, exist_ok=True)
while trainer.step < 3:
    trainer.train_step()
    trainer.step += 1
trainer.record_stats()
trainer.save_checkpoint()  # then "crash"
trainer.dist.close()
"""


def _torchrun(*args, port):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port),
               *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_fsdp_with_two_processes_matches_one_process_and_resumes(tiny_tokens, tmp_path):
    """FSDP over two processes, with micro-batches and recomputation, interrupted after 3 of 6
    steps and resumed, ends where one process does; statistics are split over the processes."""
    overrides = tiny_run(tiny_tokens, "train.steps=6", "train.stats_every=3", "train.ckpt_every=3")
    train.main(["--out", str(tmp_path / "single"), *overrides])
    sharded = [*overrides, "train.parallel=fsdp", "train.micro_batch=2", "train.recompute=true"]
    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED)
    _torchrun(str(script), str(tmp_path / "fsdp"), *sharded, port=29541)
    assert (tmp_path / "fsdp" / "ckpt.pt").exists()
    _torchrun("-m", "cod.train", "--out", str(tmp_path / "fsdp"), "--device", "cpu", *sharded, port=29542)

    single = json.loads((tmp_path / "single" / "final.json").read_text())
    fsdp = json.loads((tmp_path / "fsdp" / "final.json").read_text())
    assert fsdp["world_size"] == 2 and fsdp["steps"] == 6
    assert fsdp["val_loss"] == pytest.approx(single["val_loss"], rel=1e-5)
    wa = torch.load(tmp_path / "single" / "model.pt")["model"]
    wb = torch.load(tmp_path / "fsdp" / "model.pt")["model"]
    assert wa.keys() == wb.keys()
    for k in wa:  # Adam amplifies rounding in near-zero gradients: compare whole tensors
        assert torch.linalg.norm(wa[k] - wb[k]) <= 1e-5 * torch.linalg.norm(wa[k]), k
    rows = [[json.loads(r) for r in (tmp_path / run / "history.jsonl").read_text().splitlines()]
            for run in ("single", "fsdp")]
    stats = [[r for r in history if "resid_var" in r] for history in rows]
    assert [r["step"] for r in stats[0]] == [0, 3, 6] and [r["step"] for r in stats[1]] == [3, 6]
    for a, b in zip(stats[0][1:], stats[1]):
        assert b["resid_var"] == pytest.approx(a["resid_var"], rel=1e-4)


def test_live_storages_track_the_peak_of_what_is_alive():
    from cod.memory import BLOCK, LiveStorages

    live = LiveStorages()
    with live:
        a = torch.empty(1000)  # 4,000 bytes: 8 blocks of 512
        b = torch.empty(100)  # 400 bytes: one block
        view = a[:10]  # shares a's storage: nothing new
        del a, b  # b's block is freed; a's storage lives on through its view
        assert live.now == 8 * BLOCK and live.peak == 9 * BLOCK
        c = torch.empty(300)  # 1,200 bytes: 3 blocks
    assert live.peak == live.now == 11 * BLOCK and view.numel() == 10
    del c
    assert live.now == 8 * BLOCK


def test_sizing_counts_weights_gradients_and_adamw_state():
    """A step's peak holds at least the fp32 weights, gradients and two AdamW moments."""
    from cod.memory import training_peak
    from cod.model import Transformer

    cfg = run_config(["model.d_model=64", "model.n_layers=2", "model.n_heads=2", "data.batch_size=2",
                      "data.seq_len=16"])
    n = Transformer(cfg.model).num_params()
    peak = training_peak(cfg)
    assert 16 * n <= peak <= 16 * n + 2 * 10**6
    small, whole, accumulated = (training_peak(run_config(o)) for o in (
        ["data.batch_size=2"], ["data.batch_size=16"], ["data.batch_size=16", "train.micro_batch=2"]))
    n = Transformer(run_config([]).model).num_params()
    # one micro-batch's activations, plus the gradients summed so far (4n bytes) and the loss's saved ones
    assert small < accumulated <= small + 5 * n < whole


def test_fsdp_estimate_holds_a_shard_and_never_more_than_a_replica():
    from cod.memory import sharded_peak, training_peak
    from cod.model import Transformer

    cfg = run_config(["model.d_model=64", "model.n_layers=2", "model.n_heads=2", "data.batch_size=8",
                      "data.seq_len=16"])
    n = Transformer(cfg.model).num_params()
    four = sharded_peak(cfg, 4)
    assert 16 * n / 4 < four < training_peak(cfg, 4)  # a quarter of the states, plus activations and a gather
    assert sharded_peak(cfg, 8) < four


def test_every_paper_run_fits_one_80gb_gpu_or_eight_with_fsdp():
    """Every dense paper run fits one GPU; the paper's two large MoE models (6-8B parameters in
    all) fit only sharded, by the FSDP estimate over one node's 8 GPUs."""
    from cod.experiments import load_params
    from cod.memory import SHARDS, distinct_shapes, fits, sharded_peak, state_bytes, training_peak

    shapes = distinct_shapes({**load_params(), "profile": "paper"})
    assert {"b_depth/d32", "a_350m/pre_ln", "a_130m/sandwich_ln", "b_recipe/moe"} <= shapes.keys()
    too_big = {label: cfg for label, cfg in shapes.items()  # the states alone exceed a GPU, or the traced peak
               if not fits(state_bytes(cfg)) or not fits(training_peak(cfg))}
    assert set(too_big) == {"b_moe/moe", "b_recipe/moe"}
    assert SHARDS == 8 and all(fits(sharded_peak(cfg)) for cfg in too_big.values())
