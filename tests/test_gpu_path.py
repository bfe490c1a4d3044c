"""The GPU path's code, run on the CPU: micro-batches, recomputation, compilation, sharded
evaluation and FSDP under torchrun (gloo standing in for NCCL), collectives on the model's device,
what a GPU step must not wait for, the GPU's MoE dispatch and loss chunks, and the lease command
(`cod.tools.gpu_lease --dry`)."""

import functools
import json
import os
import subprocess
import sys

import pytest
import torch

from conftest import tiny_run, torchrun
from cod.config import run_config
from cod.model.loss import IGNORE_INDEX
from cod.model import MoE, Transformer
from cod.train import run, trainer
from cod.train.trainer import Dist, Trainer


def _trained(tokens, tmp_path, name, *extra, steps=3, batches=None):
    """A Trainer after `steps` optimiser steps (no files but its folder), its (loss, grad norm)
    per step and the gradients of its first step; `batches` replaces its data."""
    cfg = run_config(tiny_run(tokens, "train.stats_every=0", *extra))
    trainer = Trainer(cfg, tmp_path / name, quiet=True)
    if batches is not None:
        trainer.batches.batch = batches
    losses = []
    for _ in range(steps):
        losses.append(trainer.train_step())
        if trainer.step == 1:
            trainer.first_gradients = {n: p.grad.clone() for n, p in trainer.model.named_parameters()}
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

    monkeypatch.setattr(trainer.dist, "all_reduce", all_reduce)
    for call in (lambda: d.sum([1.0, 2.0]), lambda: d.mean(1.0)):
        with pytest.raises(RuntimeError, match="stop"):
            call()
    assert seen == [torch.device("meta")] * 2


def test_micro_batches_give_the_gradients_of_one_batch(tiny_tokens, tmp_path):
    """Uneven micro-batches (3 + 3 + 2 sequences) and ignored targets spread unevenly over them."""
    reference = Trainer(run_config(tiny_run(tiny_tokens)), tmp_path / "data", quiet=True).batches

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
    monkeypatch.setattr(trainer.torch, "compile", functools.partial(torch.compile, backend="aot_eager"))
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
from cod.train.fingerprint import describe
from cod.train.trainer import Callback, Trainer


class Crash(Callback):  # after the statistics and the checkpoint of step 3
    def due(self, trainer):
        return trainer.step == 3

    def run(self, trainer):
        raise InterruptedError


out, *overrides = sys.argv[1:]
cfg = run_config(overrides)
trainer = Trainer(cfg, Path(out), device="cpu", quiet=True, identity=describe(cfg), callbacks=[Crash()])
try:
    trainer.fit()
except InterruptedError:
    pass
trainer.dist.close()
"""


RESUMED = """
import os
import sys
import torch
from cod.train import run, trainer

real_load = torch.load


def load(path, *args, **kwargs):  # FSDP: process 0 alone reads a checkpoint and broadcasts it
    assert os.environ["RANK"] == "0" or not str(path).endswith("ckpt.pt"), "process 1 read the checkpoint"
    return real_load(path, *args, **kwargs)


trainer.torch.load = load
sys.exit(run.main(sys.argv[1:]))
"""


def test_fsdp_with_two_processes_matches_one_process_and_resumes(tiny_tokens, tmp_path):
    """FSDP over two processes, with micro-batches and recomputation, interrupted after 3 of 6
    steps and resumed, ends where one process does; statistics are split over the processes. The
    resume reads the checkpoint on process 0 alone (the other gets its shards by broadcast: no
    process holds a second whole copy of model and AdamW state)."""
    overrides = tiny_run(tiny_tokens, "train.steps=6", "train.stats_every=3", "train.ckpt_every=3")
    run.main(["--out", str(tmp_path / "single"), *overrides])
    sharded = [*overrides, "train.parallel=fsdp", "train.micro_batch=2", "train.recompute=true"]
    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED)
    torchrun("--nproc_per_node", "2", str(script), str(tmp_path / "fsdp"), *sharded)
    assert (tmp_path / "fsdp" / "ckpt.pt").exists()
    resumed = tmp_path / "resumed.py"
    resumed.write_text(RESUMED)
    torchrun("--nproc_per_node", "2", str(resumed), "--out", str(tmp_path / "fsdp"), "--device", "cpu", *sharded)

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
    assert [r["step"] for r in stats[0]] == [r["step"] for r in stats[1]] == [0, 3, 6]
    for a, b in zip(stats[0], stats[1]):
        assert b["resid_var"] == pytest.approx(a["resid_var"], rel=1e-4)


def test_live_storages_track_the_peak_of_what_is_alive():
    from cod.tools.memory import BLOCK, LiveStorages

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
    from cod.model import Transformer
    from cod.tools.memory import training_peak

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
    from cod.model import Transformer
    from cod.tools.memory import sharded_peak, training_peak

    cfg = run_config(["model.d_model=64", "model.n_layers=2", "model.n_heads=2", "data.batch_size=8",
                      "data.seq_len=16"])
    n = Transformer(cfg.model).num_params()
    four = sharded_peak(cfg, 4)
    assert 16 * n / 4 < four < training_peak(cfg, 4)  # a quarter of the states, plus activations and a gather
    assert sharded_peak(cfg, 8) < four


def test_a_peak_carried_along_depth_is_the_traced_peak():
    from cod.tools.memory import depth_period, extrapolated_peak, training_peak

    for overrides in ({"model.norm": "mix_ln", "model.n_layers": 16}, {"train.recompute": True, "model.n_layers": 5},
                      {"model.ffn": "moe", "model.moe_experts": 4, "model.moe_top_k": 2, "model.n_layers": 5}):
        cfg = run_config({"model.d_model": 32, "model.n_heads": 2, "data.seq_len": 16,
                          "data.batch_size": 4, "model.vocab_size": 272, "data.vocab_size": 272, **overrides})
        assert extrapolated_peak(cfg, check=True) == training_peak(cfg), overrides
    assert depth_period(run_config({"model.norm": "mix_ln", "model.mix_ln_fraction": 1 / 3})) == 3
    assert depth_period(run_config({"model.norm": "lns"})) == 1


# ----------------------------------------------------------------------------- what a GPU step waits for


class _ReadBacks(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts the ops that make the host wait for the device: reading a number back (.item() of a
    float, as a loss; counts of targets are integers the host holds) and nonzero()."""

    def __init__(self):
        super().__init__()
        self.floats = self.nonzeros = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default and args[0].is_floating_point():
            self.floats += 1
        if func in (torch.ops.aten.nonzero.default, torch.ops.aten.nonzero_static.default):
            self.nonzeros += 1
        return func(*args, **(kwargs or {}))


MOE = ("model.ffn=moe", "model.moe_experts=4", "model.moe_top_k=2", "model.moe_d_ff=24")


def test_a_step_reads_nothing_back_per_micro_batch(tiny_tokens, tmp_path):
    """Loss, routing losses and gradient norm stay on the device through a step of three
    micro-batches (an MoE's): `fit` reads them back once per logged step."""
    cfg = run_config(tiny_run(tiny_tokens, "train.stats_every=0", "train.micro_batch=3", *MOE))
    trainer = Trainer(cfg, tmp_path / "moe", quiet=True)
    reads = _ReadBacks()
    with reads:
        loss, grad_norm = trainer.step_on_device()
    assert reads.floats == 0
    assert loss.dtype == torch.float64 and trainer.routing["moe_load"].shape == (3, 4)
    assert torch.isfinite(loss) and torch.isfinite(grad_norm)


def test_ddp_broadcasts_no_buffers_and_fsdp_gathers_bf16(tiny_tokens, tmp_path, monkeypatch):
    """DDP re-sent the rotary tables (its only buffers, the same everywhere) on every forward; FSDP
    gathered fp32 weights under bf16. Constructors are recorded, not run (one process)."""
    import torch.distributed.fsdp as fsdp

    seen = {"ddp": [], "fsdp": []}

    def ddp(model, **options):
        seen["ddp"].append(options)
        return model

    def fully_shard(module, **options):
        seen["fsdp"].append(options)
        return module

    monkeypatch.setattr(trainer.nn.parallel, "DistributedDataParallel", ddp)
    monkeypatch.setattr(fsdp, "fully_shard", fully_shard)
    for precision in ("bf16", "fp32"):
        t = Trainer(run_config(tiny_run(tiny_tokens, f"train.precision={precision}")), tmp_path / precision,
                    quiet=True)
        t.dist.world_size = 2
        t.fsdp = False
        t._distributed(t.model)
        t.fsdp = True
        t._distributed(t.model)
    assert [o["broadcast_buffers"] for o in seen["ddp"]] == [False, False]
    bf16, fp32 = seen["fsdp"][:4], seen["fsdp"][4:]
    assert len(bf16) == len(fp32) == 4  # 3 blocks and the root
    for options in bf16:
        policy = options["mp_policy"]
        assert policy.param_dtype == torch.bfloat16 and policy.reduce_dtype == torch.float32
    assert all("mp_policy" not in options for options in fp32)


def test_bf16_queries_and_keys_stay_bf16():
    """fp32 rotary tables promoted bf16 q and k to fp32 under autocast; fp32 and float64 models
    keep their tables (the CPU's numbers are unchanged)."""
    torch.manual_seed(0)
    model = Transformer(run_config(["model.d_model=32", "model.n_heads=2", "model.n_layers=1"]).model)
    attention, x = model.blocks[0].attn.branch, torch.randn(2, 8, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        q, k, v = attention.qkv(x, model.rotary(8))
    assert q.dtype == k.dtype == v.dtype == torch.bfloat16
    q32, k32, _ = attention.qkv(x, model.rotary(8))
    assert q32.dtype == torch.float32
    torch.testing.assert_close(q.float(), q32, rtol=0.02, atol=0.02)
    torch.testing.assert_close(k.float(), k32, rtol=0.02, atol=0.02)


@pytest.mark.parametrize("dispatch", ["sorted", "grouped"])
def test_moe_dispatch_of_the_gpu_equals_expert_by_expert(dispatch, monkeypatch):
    """The GPU's dispatches (the assignments sorted by expert; and through grouped products, which
    read nothing back) give the expert-by-expert outputs, losses, loads and gradients."""
    torch.manual_seed(0)
    cfg = run_config(["model.d_model=32", "model.n_heads=4", "model.n_layers=2", "model.vocab_size=300",
                      "data.vocab_size=300", "model.moe_shared_expert=true", *MOE])
    model = Transformer(cfg.model)
    idx = torch.randint(0, 300, (3, 16))
    assert MoE.dispatch == "auto" and model.blocks[0].mlp.branch.dispatch_for(torch.zeros(1, 32)) == "each"
    results = {}
    for way in ("each", dispatch):
        monkeypatch.setattr(MoE, "dispatch", way)
        model.zero_grad(set_to_none=True)
        reads = _ReadBacks()
        with reads:
            out = model(idx, idx)
            (out.loss + out.aux_loss).backward()
        grads = {name: p.grad.clone() for name, p in model.named_parameters()}
        results[way] = (out.loss, out.aux_loss, out.routing["counts"], grads, reads.nonzeros + reads.floats)
    (loss_a, aux_a, counts_a, grads_a, reads_a), (loss_b, aux_b, counts_b, grads_b, reads_b) = results.values()
    assert reads_a >= 8  # a nonzero() per expert and layer
    if dispatch == "grouped":
        assert reads_b == 0
    torch.testing.assert_close(loss_b, loss_a, rtol=1e-6, atol=0)
    torch.testing.assert_close(aux_b, aux_a, rtol=1e-6, atol=0)
    assert torch.equal(counts_a, counts_b)
    _assert_same(grads_a, grads_b, rtol=1e-5, atol=1e-7)


def test_loss_chunks_grow_on_a_gpu_and_stay_as_they_were_on_the_cpu(monkeypatch):
    """At a 50K vocabulary the loss took 256-row chunks everywhere: 128 per 32K-token micro-batch."""
    from cod.model import loss

    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    assert loss.chunk_rows(50304, cpu) == 256 and loss.chunk_rows(2048, cpu) == 256 and loss.chunk_rows(300, cpu) == 436
    rows = loss.chunk_rows(50304, gpu)
    assert -(-32768 // rows) <= 16 and rows * 50304 * 4 <= 2**30  # a chunk's fp32 logits: at most 1 GiB
    asked = []
    real = loss.chunk_rows
    monkeypatch.setattr(loss, "chunk_rows", lambda vocab, device: asked.append((vocab, device)) or real(vocab, device))
    loss.linear_cross_entropy(torch.randn(10, 8), torch.randn(300, 8), torch.randint(0, 300, (10,)))
    assert asked == [(300, cpu)]


PADDED = """
import sys
import torch
from pathlib import Path
from cod.config import run_config
from cod.model.loss import IGNORE_INDEX
from cod.train.trainer import Trainer

out, *overrides = sys.argv[1:]
trainer = Trainer(run_config(overrides), Path(out), device="cpu", quiet=True)
batch = trainer.batches.batch


def padded(step):  # the first three rows of the global batch keep 4 of their 32 targets
    x, y = batch(step)
    y = y.clone()
    for i in range(len(y)):
        if trainer.batches.rows.start + i < 3:
            y[i, 4:] = IGNORE_INDEX
    return x, y


trainer.batches.batch = padded
losses = []
for _ in range(2):
    losses.append(trainer.dist.mean(trainer.train_step()[0]))
if trainer.dist.main:
    torch.save({"losses": losses, "model": trainer.model.state_dict()}, Path(out) / "result.pt")
trainer.dist.close()
"""


def test_padded_targets_are_averaged_over_the_global_batch(tiny_tokens, tmp_path):
    """With padding unevenly spread, each process averaged over its own counted targets, so two
    processes optimised another objective than one: the targets are now counted over all of them."""
    overrides = tiny_run(tiny_tokens, "train.stats_every=0")
    script = tmp_path / "padded.py"
    script.write_text(PADDED)
    for name in ("single", "ddp"):
        (tmp_path / name).mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, str(script), str(tmp_path / "single"), *overrides], check=True, env=env,
                   capture_output=True, timeout=300)
    torchrun("--nproc_per_node", "2", str(script), str(tmp_path / "ddp"), *overrides)
    single, ddp = (torch.load(tmp_path / name / "result.pt") for name in ("single", "ddp"))
    assert ddp["losses"] == pytest.approx(single["losses"], rel=1e-5)
    for k, value in single["model"].items():
        assert torch.linalg.norm(ddp["model"][k] - value) <= 1e-5 * torch.linalg.norm(value), k


COMPILED_FSDP = """
import functools
import sys
import torch
from cod.train import run, trainer

trainer.torch.compile = functools.partial(torch.compile, backend="aot_eager")  # inductor: minutes on a CPU
sys.exit(run.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("precision, tolerance", [("fp32", 1e-4), ("bf16", 2e-3)])
def test_compiled_model_under_fsdp_trains_like_one_eager_process(tiny_tokens, tmp_path, precision, tolerance):
    """torch.compile around FSDP's sharded model (aot_eager standing in for inductor), with
    recomputed blocks and micro-batches, trains like one eager process; under bf16 with weights
    gathered in bf16 (FSDP's MixedPrecisionPolicy), within bf16's rounding."""
    overrides = tiny_run(tiny_tokens, "train.steps=4", "train.stats_every=0", "train.ckpt_every=0",
                         f"train.precision={precision}")
    run.main(["--out", str(tmp_path / "single"), *overrides])
    script = tmp_path / "compiled.py"
    script.write_text(COMPILED_FSDP)
    torchrun("--nproc_per_node", "2", str(script), "--out", str(tmp_path / "fsdp"), "--device", "cpu", *overrides,
             "train.parallel=fsdp", "train.compile=true", "train.recompute=true", "train.micro_batch=2")
    single = json.loads((tmp_path / "single" / "final.json").read_text())
    fsdp = json.loads((tmp_path / "fsdp" / "final.json").read_text())
    assert fsdp["world_size"] == 2 and fsdp["val_loss"] == pytest.approx(single["val_loss"], rel=tolerance)


# ----------------------------------------------------------------------------- the lease command

BLOCKED = """
import sys


class Absent:  # the lent GPU machine has none of these: importing one fails there
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("dvc", "papermill", "jupytext"):
            raise ImportError(f"{name} is not installed on the lent machine")


sys.meta_path.insert(0, Absent())
from cod.tools import gpu_lease

sys.exit(gpu_lease.main(sys.argv[1:]))
"""


def _lease(mode: str, out, *extra: str):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", BLOCKED, mode, "--dry", "--out", str(out), *extra], cwd=root,
                          env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((out / f"{mode}.json").read_text())
    assert result["environment"]["imported_absent_packages"] == [] and result["stopped_by_watchdog"] is False
    return result


def test_the_lease_runs_dry_end_to_end_without_dvc_papermill_or_jupytext(tmp_path):
    """Every mode of `python -m cod.tools.gpu_lease` at tiny shapes on the CPU, with dvc, papermill and
    jupytext made unimportable: a killed run resumes exactly, compiled equals eager, the MoE
    dispatches agree; the benchmark measures every paper shape; science trains Pre-LN and LNS at
    two depths and summarises them."""
    check = _lease("check", tmp_path)["items"]
    assert all(check[name]["ok"] for name in ("environment", "bf16_step", "resume", "compile", "moe_dispatch"))
    resume = check["resume"]
    assert resume["return_codes"] == {"straight": 0, "killed": -9, "resumed": 0} and resume["exact"]
    assert check["bf16_step"]["query_dtype"] == "torch.bfloat16"

    bench = _lease("bench", tmp_path)["items"]
    from cod.tools.gpu_lease import BENCH

    for experiment, variant in BENCH:
        assert bench[f"{experiment}/{variant} eager"]["tokens_per_s"] > 0
        assert bench[f"{experiment}/{variant} estimate"]["estimated_gb"] > 0
    assert bench[f"{BENCH[0][0]}/{BENCH[0][1]} compiled"]["ok"]

    science = _lease("science", tmp_path)["items"]
    summary = science["summary"]
    assert len(summary) == 4 and {key.rsplit(", ", 1)[1] for key in summary} == {"pre_ln", "lns"}
    for name in ("a_130m_pre_ln_s0", "a_250m_lns_s0"):
        assert science[name]["status"] == "completed"
        for file in ("config.json", "history.jsonl", "final.json"):
            assert (tmp_path / "science" / name / file).exists()


def test_the_lease_skips_what_its_budget_cannot_hold(tmp_path):
    result = _lease("check", tmp_path, "--budget", "5")
    items = result["items"]
    assert items["environment"]["ok"] and items["resume"]["ok"] is None and "skipped" in items["resume"]
    assert result["elapsed_s"] < 5 + 30


def test_lease_results_are_named_by_date_device_and_torch():
    import datetime

    from cod.tools.gpu_lease import default_folder

    folder = default_folder("cpu", dry=True)
    assert folder.parts[-3:-1] == (".cache", "gpu_lease")
    date, device, version = folder.name.split("_", 2)
    assert date == datetime.date.today().isoformat() and device == "cpu-dry" and version.startswith("torch2.")
    assert default_folder("cpu", dry=False).parts[-3:-1] == ("runs", "gpu")


def test_a_later_science_call_trains_the_steps_of_an_earlier_one_for_the_seeds_asked(tmp_path):
    """--steps-from takes each shape's steps from an earlier call's science.json, so that a later
    call's seeds join that call's comparison; --experiments and --seeds choose what trains."""
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps({"plan": {"steps": {"a_250m": 6}}}))
    result = _lease("science", tmp_path / "later", "--experiments", "a_250m", "--seeds", "3",
                    "--steps-from", str(earlier))
    runs = {name: r for name, r in result["items"].items() if "status" in r}
    assert sorted(runs) == ["a_250m_lns_s3", "a_250m_pre_ln_s3"]
    assert all(r["steps"] == 6 and r["seed"] == 3 for r in runs.values())
    assert result["plan"]["steps"] == {"a_250m": 6}
