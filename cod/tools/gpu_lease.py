"""One command for a lent GPU: the one call of a lease (`lease`), or one of three modes, each at most 10 minutes.

    python -m cod.tools.gpu_lease lease --dry   # here: check and price the call, pack the tokens, run it at tiny shapes
    python -m cod.tools.gpu_lease lease --export $OUT   # on the lent GPU: Fig. 4 at 130M, then bench items as time allows
    python -m cod.tools.gpu_lease --import DIR  # here: what came back from $OUT, under runs/gpu/<its folder>/
    python -m cod.tools.gpu_lease check     # imports, a bf16 step, a killed run resumes, compiled = eager, MoE dispatch
    python -m cod.tools.gpu_lease bench     # paper shapes: tokens/s, MFU, peak memory against cod.tools.memory, eager and compiled
    python -m cod.tools.gpu_lease science   # paper A's Pre-LN against LNS at its smallest shapes, on carried tokens
    python -m cod.tools.gpu_lease check --dry   # any mode at tiny shapes on the CPU (what the tests run)

A GPU is lent rarely and briefly (15 minutes of device time a session, the machine's start
included, 10 minutes a command, a working tree under 64 MiB, no package registry, possibly an
older torch; only the folder $OUT comes back: 8 files, see cod.tools.gpu_carry). So each mode:

- imports nothing beyond torch, numpy, pyyaml and tokenizers (no dvc, papermill or jupytext: the
  lent machine has none), and reads params.yaml with yaml (`cod.runs.params`, never through dvc);
- plans its work to end within `--budget` seconds (default 540): work that would not fit is
  skipped and said so, a run overrunning is stopped by the trainer's deadline, and a watchdog
  (SIGALRM) ends the mode `WATCHDOG_GRACE` seconds after the budget in any case;
- writes small JSON files, after each item, to runs/gpu/<date>_<device>_torch<version>/ (the first
  free `_<n>` suffix after it: a call never writes over an earlier one's folder)
  (`<mode>.json`; science and fig4 add each run's config, history and final metrics under
  science/ and fig4/), so a mode cut short still leaves what it measured; --export copies them
  into a folder that comes back. --dry writes under .cache/gpu_lease/ (ignored by git, emptied
  first) unless --out says otherwise.

check (under a minute and a half on an H200, see README.md "What was measured where"):
  environment   Python, torch, CUDA, the device; that dvc, papermill and jupytext were not imported
  bf16_step     two steps of a paper-width model (vocabulary 50,304) under bf16 autocast: finite
  resume        the trainer run as a process is killed (SIGKILL) one logged step after its first
                checkpoint, run again to the end, and compared with the same run uninterrupted
                (exact on the CPU; on a GPU within bf16's nondeterminism, max difference reported)
  compile       the same steps eager and through torch.compile (the trainer's train.compile):
                losses within bf16 tolerance
  moe_dispatch  a mixture of experts' GPU dispatch (`MoE.dispatch_for`: grouped products in
                bf16) against the expert-by-expert reference: loss and gradients
bench: every shape of BENCH eager; the first compiled; cod.tools.memory's estimates; then the others
  compiled while time is left. One micro-batch a step
  (tokens/s are those of a whole step, which is micro-batches in sequence), model FLOPs utilisation
  against the card's dense bf16 peak (`PEAK_FLOPS`; recomputation not counted) and the peak of
  allocated memory against `cod.tools.memory.training_peak` of the same step.
science: paper A's Pre-LN and LNS (Table 1's comparison) at the paper profile's 12- and 24-layer
  shapes of 130M and 250M, trained on tokens carried in the working tree (--tokens; default
  data/tokens/bpe2048, the default profile's 2,048-token BPE of the offline corpus, 24 MB: carry
  it with the command). The throughput of each shape is measured first; then seed 0's four runs
  share the budget (Pre-LN and LNS of a shape train the same steps, at most `SCIENCE_EPOCHS`
  epochs of the tokens), and further seeds run while time is left. Per run its config, history
  (losses, per-layer variances) and final metrics, and a summary by shape and norm. Eager: a
  compilation per model would cost more than it saves in runs of a minute. The vocabulary and
  corpus are not the paper's (C4; the profile's FineWeb-Edu at 50K): losses compare Pre-LN with
  LNS, not with Table 1.

lease (the one call: modes fig4, then bench, on one clock of --budget seconds, default 540):
  fig4          paper A's Fig. 4 at its 130M shape (768 wide, 12 layers, 12 heads, FFN 2048): Pre-LN, LNS
                and scaled initialisation under paper A's released recipe as it stood before its commit
                eb1a0a5 (FIG4_RECIPE: token embedding N(0, 2/5), Adam with beta2 0.999, no clipping, no
                weight decay), each the first 2,400 steps of the released 20,000-step schedule (2,000
                warming up, cosine from 1e-3 to a tenth), 64 x 256 tokens a step on the carried tokens,
                per-layer variances every 100 steps
  bench         as time allows: a71m's MFU (eager), then b_depth/d16 compiled with recomputation (whether
                train.compile can be on in the paper profile), each with cod.tools.memory's estimate
  Each item is priced before the call from what the last lease measured (`price_call`, runs/gpu/);
  a plan over the budget is refused before the device is spent. With --export $OUT the results
  folder is mirrored into $OUT after every item (cod.tools.gpu_carry.export), so a kill loses only the
  item in flight; `--import DIR` puts what came back under runs/gpu/, as the call wrote it.
  The tokens travel packed (.cache/gpu_carry/bpe2048.tar.xz, made by `lease --dry`) and are
  unpacked on the device; `lease --dry` also checks that the tree plus the carried folder is under
  64 MiB and prints the device tool's call.

--dry: the same code at tiny shapes on the CPU (fp32, and bf16 autocast where the mode runs bf16),
compiled with AOT-eager (inductor would take minutes on a CPU), on synthetic tokens (lease: on the
tokens it would carry, unpacked from their archive if need be).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import gc
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from cod import ROOT
from cod.config import run_config
from cod.records.results import read_history
from cod.tools.gpu_carry import (CARRY, RESULTS, Refusal, check_tree, export, exported, import_results, is_packed,
                           pack_tokens, ready_tokens)

BUDGET_S = 540.0  # seconds a mode plans for: well within a command's 10 minutes
WATCHDOG_GRACE = 30.0  # seconds past the budget after which the watchdog ends a mode
ABSENT = ("dvc", "papermill", "jupytext")  # packages the lent machine lacks: never imported here
PEAK_FLOPS = {  # dense bf16 matrix-product peaks (FLOP/s) by a substring of the device's name, first match
    "H100 PCIe": 756e12, "H100 NVL": 835e12, "H100": 989e12, "H200": 989e12, "GH200": 989e12,
    "A100": 312e12, "L40S": 362e12, "L4": 121e12, "A10G": 70e12,
}
BENCH = [  # (experiment, variant) of the paper profile, in the order they are measured
    ("a_130m", "pre_ln"),  # paper A's 130M: 768 wide, 12 layers, micro-batch 128 x 256
    ("b_depth", "d16"),  # paper B's 16-layer 2048-wide model (1.5B), micro-batch 32 x 1024, recomputed
    ("a_350m", "pre_ln"),  # paper A's 350M: 1024 wide, 24 layers
    ("b_depth", "d32"),  # paper B's deepest, 2.3B
    ("b_moe", "moe_small_shared"),  # an MoE of paper B (32 experts, top-4, one shared): the grouped dispatch
]
SCIENCE = ("a_130m", "a_250m")  # paper A's experiments whose shapes science trains: 12 and 24 layers
SCIENCE_NORMS = ("pre_ln", "lns")
SCIENCE_SEEDS = (0, 1, 2)
SCIENCE_BATCH = 64  # sequences of 256 a step: 16K tokens, so one epoch of the carried tokens is ~600 steps
SCIENCE_EPOCHS = 4  # at most, of the carried tokens (repeating data up to ~4 times costs little loss)
SCIENCE_OVERHEAD_S = 20.0  # a run's start, statistics and final evaluation, besides its steps


class BudgetSpent(Exception):
    """Raised by the watchdog when a mode runs past its budget and grace."""


# ----------------------------------------------------------------------------- the lease


class Lease:
    """What one mode shares: device, precision, time budget (from `start`, shared by the modes of
    one call), the results file, and the folder it is exported to after every item."""

    def __init__(self, mode: str, dry: bool, budget: float, out: Path | None, export: Path | None = None,
                 start: float | None = None):
        self.mode, self.dry, self.budget, self.export = mode, dry, budget, export
        self.start = time.monotonic() if start is None else start
        self.device = "cuda" if torch.cuda.is_available() and not dry else "cpu"
        self.folder = Path(out) if out else default_folder(self.device, dry)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / f"{mode}.json"
        self.results: dict[str, Any] = {"mode": mode, "dry": dry, "budget_s": budget, "folder": self.folder.name,
                                        "started": _now(), "environment": environment(self.device), "items": {}}
        self.scratch = Path(tempfile.mkdtemp(prefix=f"gpu_lease_{mode}_"))

    def left(self) -> float:
        """Seconds of the budget left."""
        return self.budget - (time.monotonic() - self.start)

    def record(self, name: str, value: Any) -> None:
        self.results["items"][name] = value
        self.save()

    def save(self) -> None:
        """Write the results file, and mirror the results folder into the export folder (if any)."""
        self.results["elapsed_s"] = round(time.monotonic() - self.start, 1)
        self.path.write_text(json.dumps(self.results, indent=2, default=_plain) + "\n")
        if self.export:
            try:
                export(self.folder, self.export)
            except (Refusal, OSError) as error:  # said, and the work goes on: the device's copy stays
                print(f"[gpu_lease {self.mode}] not exported: {error}", flush=True)

    def item(self, name: str, work: Callable[[], dict], needs: float = 0.0) -> dict:
        """Run one item of the mode and record it: its result, or its error, or that it was skipped
        because fewer than `needs` seconds were left."""
        if self.left() < needs:
            result = {"ok": None, "skipped": f"{self.left():.0f} s left, {needs:.0f} s needed"}
        else:
            begin = time.monotonic()
            try:
                result = work()
            except BudgetSpent:
                raise
            except Exception as error:  # recorded: the other items still run
                result = {"ok": False, "error": f"{type(error).__name__}: {error}",
                          "traceback": traceback.format_exc(limit=6)}
            result["seconds"] = round(time.monotonic() - begin, 1)
            if self.device == "cuda":
                gc.collect()
                torch.cuda.empty_cache()
        self.record(name, result)
        print(f"[gpu_lease {self.mode}] {name}: {_summary(result)}", flush=True)
        return result


def default_folder(device: str, dry: bool) -> Path:
    """runs/gpu/<date>_<device>_torch<version>/ (.cache/gpu_lease/... for --dry)."""
    name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu-dry" if dry else "cpu"
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    version = re.sub(r"[^0-9A-Za-z.]+", "-", torch.__version__)
    base = ROOT / (".cache/gpu_lease" if dry else "runs/gpu")
    return base / f"{datetime.date.today().isoformat()}_{slug}_torch{version}"


def environment(device: str) -> dict[str, Any]:
    info = {"python": sys.version.split()[0], "torch": torch.__version__, "numpy": np.__version__,
            "device": device, "imported_absent_packages": sorted(m for m in ABSENT if m in sys.modules)}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        info.update({"gpu": props.name, "capability": f"{props.major}.{props.minor}",
                     "memory_gb": round(props.total_memory / 1e9, 1), "cuda": torch.version.cuda,
                     "gpus_visible": torch.cuda.device_count(), "peak_bf16_flops": peak_flops(props.name)})
    return info


def peak_flops(name: str) -> float | None:
    return next((peak for key, peak in PEAK_FLOPS.items() if key in name), None)


# ----------------------------------------------------------------------------- shapes and data


def paper_config(experiment: str, variant: str, seed: int = 0, **changes: Any) -> dict[str, Any]:
    """The overrides of one run of the paper profile (params.yaml through yaml), with `changes`."""
    from cod.runs.params import load_params, resolve_runs  # lazy: an import error (an older torch) fails this item only

    params = {**load_params(ROOT / "params.yaml"), "profile": "paper"}
    runs = [r for r in resolve_runs(experiment, params) if r.variant == variant]
    if not runs:
        raise ValueError(f"no paper-profile run {experiment}/{variant}")
    return {**runs[0].overrides, "seed": seed, **changes}


def tiny(overrides: dict[str, Any], vocab: int = 300) -> dict[str, Any]:
    """`overrides` at a shape a CPU trains in a fraction of a second (--dry)."""
    heads = 2
    return {**overrides, "model.d_model": 32, "model.n_heads": heads, "model.n_kv_heads": None,
            "model.n_layers": min(3, overrides.get("model.n_layers", 3)), "model.d_ff": 64, "model.moe_d_ff": None,
            "model.moe_experts": min(4, overrides.get("model.moe_experts", 4)),
            "model.moe_top_k": min(2, overrides.get("model.moe_top_k", 2)),
            "model.vocab_size": vocab, "data.vocab_size": vocab, "data.tokenizer": "bpe", "data.source": "offline_mix",
            "model.max_seq_len": 64, "data.seq_len": 32, "data.batch_size": 8, "train.micro_batch": 4,
            "train.stats_tokens": 64, "train.eval_tokens": 1024}


def synthetic_tokens(cfg_overrides: dict[str, Any], folder: Path, train_tokens: int) -> dict[str, Any]:
    """Random tokens where the run reads its dataset (speed does not depend on the text); the
    overrides with data.tokens_dir set there."""
    overrides = {**cfg_overrides, "data.tokens_dir": str(folder)}
    cfg = run_config(overrides)
    data = Path(cfg.data.dataset_dir)
    if not (data / "train.bin").exists():
        data.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(0)
        vocab = cfg.model.vocab_size
        for split, n in (("train", train_tokens), ("val", 65_536), ("val_bbc", 16_384)):
            rng.integers(0, min(vocab, 2**16), n, dtype=np.uint16).tofile(data / f"{split}.bin")
        (data / "meta.json").write_text(json.dumps({"dtype": "uint16", "vocab_size": vocab}))
    return overrides


def trainer(overrides: dict[str, Any], out: Path, device: str):
    from cod.train.trainer import Trainer  # lazy: an import error (an older torch) fails this item only

    return Trainer(run_config(overrides), out, device=device, distributed=False, quiet=True)


@contextlib.contextmanager
def compile_backend(dry: bool):
    """torch.compile as the trainer calls it: inductor on a GPU, AOT-eager in --dry."""
    if not dry:
        yield
        return
    original = torch.compile
    torch.compile = functools.partial(original, backend="aot_eager")
    try:
        yield
    finally:
        torch.compile = original


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _release(compiled: bool = False) -> None:
    """Free what the last model held (its caller has dropped it); after a compiled model, dynamo's
    caches too, so that the next model compiles afresh instead of hitting the recompile limit."""
    if compiled:
        torch._dynamo.reset()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


# ----------------------------------------------------------------------------- check


def check(lease: Lease) -> None:
    lease.item("environment", lambda: {"ok": not lease.results["environment"]["imported_absent_packages"],
                                       **lease.results["environment"]})
    lease.item("bf16_step", lambda: bf16_step(lease), needs=20)
    lease.item("resume", lambda: resume_after_kill(lease), needs=90)
    lease.item("compile", lambda: compiled_equals_eager(lease), needs=90)
    lease.item("moe_dispatch", lambda: moe_dispatch(lease), needs=20)


def _check_overrides(lease: Lease, *extra: tuple[str, Any]) -> dict[str, Any]:
    """A small model at the paper's vocabulary and bf16 (--dry: tiny, bf16 autocast on the CPU)."""
    base = {"model.d_model": 512, "model.n_layers": 4, "model.n_heads": 8, "model.vocab_size": 50304,
            "data.tokenizer": "gpt_neox", "data.source": "fineweb_edu", "model.max_seq_len": 256, "data.seq_len": 256,
            "data.batch_size": 16, "train.micro_batch": 8, "train.precision": "bf16", "train.steps": 40,
            "train.log_every": 5, "train.stats_every": 20, "train.stats_tokens": 2048, "train.eval_tokens": 16384,
            "train.ckpt_every": 10, "optim.lr": 1e-3}
    if lease.dry:
        base = {**tiny(base), "train.steps": 12, "train.log_every": 2, "train.stats_every": 6, "train.ckpt_every": 4}
    base.update(dict(extra))
    return synthetic_tokens(base, lease.scratch / "tokens", 2**20 if not lease.dry else 2**14)


def bf16_step(lease: Lease) -> dict:
    t = trainer(_check_overrides(lease), lease.scratch / "bf16", lease.device)
    losses = []
    for _ in range(2):
        loss, norm = t.train_step()
        losses.append((loss, norm))
    with torch.autocast(lease.device, dtype=torch.bfloat16):
        q, _, _ = t.model.blocks[0].attn.branch.qkv(torch.randn(1, 8, t.cfg.model.d_model, device=lease.device),
                                                    t.model.rotary(8))
    ok = all(math.isfinite(v) for pair in losses for v in pair) and q.dtype == torch.bfloat16
    return {"ok": ok, "losses_and_grad_norms": losses, "query_dtype": str(q.dtype),
            "peak_gb": round(torch.cuda.max_memory_allocated() / 1e9, 2) if lease.device == "cuda" else None}


KILLED = """
import os, signal, sys
from cod.train import run, trainer

kill_at = int(os.environ["COD_KILL_AT_STEP"])
record = trainer.Trainer.record


def _record(self, row):  # killed (SIGKILL) as soon as the run's row of step `kill_at` is written
    record(self, row)
    if not self.quiet and "loss" in row and row["step"] >= kill_at:  # quiet: the fingerprint's probe
        os.kill(os.getpid(), signal.SIGKILL)


trainer.Trainer.record = _record
sys.exit(run.main(sys.argv[1:]))
"""


def resume_after_kill(lease: Lease) -> dict:
    """The trainer as its own process: killed one logged step after its first checkpoint, run
    again, and compared with the run left alone."""
    overrides = _check_overrides(lease)
    cfg = run_config(overrides)
    settings = [f"{k}={json.dumps(v)}" for k, v in overrides.items()]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "COD_KILL_AT_STEP": str(cfg.train.ckpt_every + cfg.train.log_every), "OMP_NUM_THREADS": "4"}
    straight, killed = lease.scratch / "straight", lease.scratch / "killed"
    args = ["--device", lease.device, *settings]
    limit = max(30.0, lease.left() / 3)

    def run(*command) -> int:
        return subprocess.run([sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=limit).returncode

    codes = {"straight": run("-m", "cod.train.run", "--out", str(straight), *args),
             "killed": run("-c", KILLED, "--out", str(killed), *args)}
    was_killed = codes["killed"] == -signal.SIGKILL and (killed / "ckpt.pt").exists()
    history_at_kill = len((killed / "history.jsonl").read_text().splitlines()) if was_killed else None
    codes["resumed"] = run("-m", "cod.train.run", "--out", str(killed), *args)
    a, b = (json.loads((folder / "final.json").read_text()) for folder in (straight, killed))
    rows = [read_history(folder / "history.jsonl") for folder in (straight, killed)]
    losses = [[(r["step"], r["loss"]) for r in history if "loss" in r] for history in rows]
    wa, wb = (torch.load(folder / "model.pt", map_location="cpu")["model"] for folder in (straight, killed))
    weight_diff = max((torch.linalg.norm(wa[k].float() - wb[k].float()) / torch.linalg.norm(wa[k].float())).item()
                      for k in wa)
    loss_diff = max(abs(x - y) / abs(x) for (_, x), (_, y) in zip(losses[0], losses[1]))
    exact = losses[0] == losses[1] and all(torch.equal(wa[k], wb[k]) for k in wa)
    tolerance = 0.0 if lease.device == "cpu" else 2e-2  # bf16 kernels with atomics are not bitwise reproducible
    same_steps = [s for s, _ in losses[0]] == [s for s, _ in losses[1]]
    ok = (was_killed and codes["straight"] == codes["resumed"] == 0 and same_steps and loss_diff <= tolerance
          and b["status"] == "completed" and b["steps"] == cfg.train.steps)
    return {"ok": ok, "killed_at_step": int(env["COD_KILL_AT_STEP"]), "checkpoint_every": cfg.train.ckpt_every,
            "return_codes": codes, "history_rows_at_kill": history_at_kill, "exact": exact,
            "max_rel_loss_diff": loss_diff, "max_rel_weight_diff": weight_diff,
            "val_loss": [a["val_loss"], b["val_loss"]], "tolerance": tolerance}


def compiled_equals_eager(lease: Lease) -> dict:
    overrides = _check_overrides(lease)
    steps, results = 3, {}
    with compile_backend(lease.dry):
        for name, compiled in (("eager", False), ("compiled", True)):
            t = trainer({**overrides, "train.compile": compiled}, lease.scratch / name, lease.device)
            begin, losses = time.monotonic(), []
            for _ in range(steps):
                losses.append(t.train_step())
            results[name] = {"losses_and_grad_norms": losses, "seconds": round(time.monotonic() - begin, 1)}
            del t
            _release(compiled)
    eager, compiled = (results[k]["losses_and_grad_norms"] for k in ("eager", "compiled"))
    loss_diff = max(abs(a[0] - b[0]) / abs(a[0]) for a, b in zip(eager, compiled))
    tolerance = 2e-2  # bf16: kernels fused differently round differently
    return {"ok": loss_diff <= tolerance, "max_rel_loss_diff": loss_diff, "tolerance": tolerance,
            "backend": "aot_eager" if lease.dry else "inductor", **results}


def moe_dispatch(lease: Lease) -> dict:
    """The device's MoE dispatch (bf16 autocast) against expert by expert, same weights and tokens."""
    from cod.model import MoE, Transformer  # lazy: an import error (an older torch) fails this item only

    overrides = {"model.ffn": "moe", "model.d_model": 256, "model.n_heads": 4, "model.n_layers": 2,
                 "model.moe_experts": 16, "model.moe_top_k": 4, "model.moe_d_ff": 256, "model.moe_shared_expert": True,
                 "model.vocab_size": 2048, "data.vocab_size": 2048}
    if lease.dry:
        overrides.update({"model.d_model": 32, "model.moe_experts": 4, "model.moe_top_k": 2, "model.moe_d_ff": 32})
    torch.manual_seed(0)
    model = Transformer(run_config(overrides).model).to(lease.device)
    idx = torch.randint(0, 2048, (4, 128), device=lease.device)
    with torch.autocast(lease.device, dtype=torch.bfloat16):
        chosen = model.blocks[0].mlp.branch.dispatch_for(torch.zeros(1, 1, device=lease.device))
    ways = ["each", "grouped" if lease.dry else "auto"]
    results, errors = {}, {}
    for way in ways + ([] if lease.dry else ["sorted"]):
        MoE.dispatch = way
        try:
            model.zero_grad(set_to_none=True)
            with torch.autocast(lease.device, dtype=torch.bfloat16):
                out = model(idx, idx)
            (out.loss + out.aux_loss).backward()
            _sync(lease.device)
            results[way] = (out.loss.float().item(), {n: p.grad.float().clone() for n, p in model.named_parameters()},
                            out.routing["counts"].cpu())
        except Exception as error:  # recorded; the fallback is tried
            errors[way] = f"{type(error).__name__}: {error}"
        finally:
            MoE.dispatch = "auto"
    compared = {}
    for way in results:
        if way == "each" or "each" not in results:
            continue
        loss_a, grads_a, counts_a = results["each"]
        loss_b, grads_b, counts_b = results[way]
        grad_diff = max((torch.linalg.norm(grads_a[n] - grads_b[n]) / (torch.linalg.norm(grads_a[n]) + 1e-12)).item()
                        for n in grads_a)
        compared[way] = {"rel_loss_diff": abs(loss_a - loss_b) / abs(loss_a), "max_rel_grad_diff": grad_diff,
                         "same_loads": torch.equal(counts_a, counts_b)}
    tolerance = 2e-2
    main = ways[1]
    ok = main in compared and compared[main]["rel_loss_diff"] <= tolerance and \
        compared[main]["max_rel_grad_diff"] <= 10 * tolerance
    return {"ok": ok, "dispatch_chosen_in_bf16": chosen, "compared_with_each": compared, "errors": errors,
            "tolerance": tolerance}


# ----------------------------------------------------------------------------- bench


def bench_config(lease: Lease, label: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """A paper shape's run as bench times it: one micro-batch a step, on synthetic tokens (--dry: tiny)."""
    if lease.dry:
        overrides = tiny(overrides)
    micro = overrides.get("train.micro_batch") or overrides["data.batch_size"]
    overrides = {**overrides, "data.batch_size": micro, "train.micro_batch": 0, "train.steps": 10**6,
                 "train.stats_every": 0, "train.ckpt_every": 0, "train.log_every": 1}
    tokens = micro * overrides["data.seq_len"] * (64 if not lease.dry else 16)
    return synthetic_tokens(overrides, lease.scratch / "tokens" / label.replace("/", "_"), tokens)


def bench(lease: Lease, shapes: list[tuple[str, str]] | None = None, seconds: float | None = None) -> None:
    shapes = shapes or BENCH
    configs = {f"{e}/{v}": bench_config(lease, f"{e}/{v}", paper_config(e, v)) for e, v in shapes}
    seconds = seconds or (0.5 if lease.dry else 25.0)  # timed per shape and way, after the warm-up
    labels = list(configs)

    def compiled(label: str) -> None:
        lease.item(f"{label} compiled", lambda o=configs[label]: measure(lease, o, True, seconds), needs=seconds + 60)

    for label in labels:  # eager first: every shape measured before anything compiles
        lease.item(f"{label} eager", lambda o=configs[label]: measure(lease, o, False, seconds), needs=seconds + 20)
    compiled(labels[0])  # then one compiled shape, the estimates of all (CPU work), the other compiled shapes
    for label in labels:
        lease.item(f"{label} estimate", lambda l=label: estimate(lease, l, configs[l]), needs=40)
    for label in labels[1:] if not lease.dry else []:  # --dry: the compiled path once is enough
        compiled(label)


def measure(lease: Lease, overrides: dict[str, Any], compiled: bool, seconds: float) -> dict:
    from cod.model.flops import flops_per_token  # lazy: an import error (an older torch) fails this item only

    if lease.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    with compile_backend(lease.dry):
        t = trainer({**overrides, "train.compile": compiled}, lease.scratch / "bench", lease.device)
        begin = time.monotonic()
        for _ in range(2):  # warm-up: compilation, the allocator's pools, cuBLAS's choices
            t.step_on_device()
        _sync(lease.device)
        warm = time.monotonic() - begin
        steps, begin = 0, time.monotonic()
        while steps < 3 or time.monotonic() - begin < seconds:
            loss, _ = t.step_on_device()
            steps += 1
            if time.monotonic() - begin > 3 * seconds:
                break
        _sync(lease.device)
        elapsed = time.monotonic() - begin
    cfg = t.cfg
    tokens = cfg.data.batch_size * cfg.data.seq_len
    speed = steps * tokens / elapsed
    flops = flops_per_token(cfg.model, cfg.data.seq_len)
    peak = lease.results["environment"].get("peak_bf16_flops")
    result = {"ok": math.isfinite(loss.item()), "tokens_per_step": tokens, "steps": steps, "warmup_s": round(warm, 1),
              "tokens_per_s": round(speed, 1), "step_s": round(elapsed / steps, 4), "flops_per_token": flops,
              "mfu": round(flops * speed / peak, 4) if peak else None, "params": t.model.num_params(),
              "micro_batch": cfg.data.batch_size, "seq_len": cfg.data.seq_len, "recompute": cfg.train.recompute,
              "precision": str(cfg.train.precision)}
    if lease.device == "cuda":
        result["peak_allocated_gb"] = round(torch.cuda.max_memory_allocated() / 1e9, 2)
        result["peak_reserved_gb"] = round(torch.cuda.max_memory_reserved() / 1e9, 2)
    del t, loss
    _release(compiled)
    return result


def estimate(lease: Lease, label: str, overrides: dict[str, Any]) -> dict:
    """cod.tools.memory's traced peak of the same step (fake tensors, on the CPU), against the measured ones."""
    from cod.tools.memory import training_peak  # lazy: an import error (an older torch) fails this item only

    estimated = training_peak(run_config({**overrides, "train.compile": False})) / 1e9
    measured = {way: lease.results["items"].get(f"{label} {way}", {}).get("peak_allocated_gb")
                for way in ("eager", "compiled")}
    return {"ok": True, "estimated_gb": float(f"{estimated:.4g}"), "measured_gb": measured,
            "measured_over_estimated": {way: round(gb / estimated, 3) if gb else None for way, gb in measured.items()}}


# ----------------------------------------------------------------------------- science


def science(lease: Lease, tokens: Path, experiments: tuple[str, ...] = SCIENCE, seeds: tuple[int, ...] = SCIENCE_SEEDS,
            steps_from: Path | None = None) -> None:
    """Pre-LN against LNS of `experiments` for `seeds`; with `steps_from` (an earlier call's
    science.json) each shape trains that call's steps, so a later call adds seeds to its comparison."""
    vocab, corpus = _token_source(lease, tokens)
    lease.results["tokens"] = corpus
    speeds = {}
    for experiment in experiments:
        probe = lease.item(f"{experiment} throughput", lambda e=experiment: science_speed(lease, e, vocab, corpus),
                           needs=30)
        speeds[experiment] = probe.get("tokens_per_s")
    first = len(experiments) * len(SCIENCE_NORMS)  # the first seed of every shape and norm share what is left
    slice_s = (lease.left() - 20.0) / first
    earlier = json.loads(Path(steps_from).read_text())["plan"]["steps"] if steps_from else {}
    steps = {experiment: earlier.get(experiment) or science_steps(lease, experiment, vocab, corpus,
                                                                  speeds[experiment], slice_s)
             for experiment in experiments if speeds[experiment]}
    lease.results["plan"] = {"seconds_per_run": round(slice_s, 1), "steps": steps, "tokens_per_s": speeds,
                             "steps_from": str(steps_from) if steps_from else None}
    for seed in seeds[:1] if lease.dry else seeds:
        for experiment in steps:
            for norm in SCIENCE_NORMS:
                overrides = science_overrides(lease, experiment, norm, seed, vocab, corpus, steps[experiment])
                needs = 10.0 if lease.dry else steps[experiment] * _step_tokens(overrides) / speeds[experiment] \
                    + SCIENCE_OVERHEAD_S
                name = f"{experiment}_{norm}_s{seed}"
                lease.item(name, lambda o=overrides, n=name: science_run(lease, o, n), needs=needs)
    lease.record("summary", science_summary(lease.results["items"]))


def _token_source(lease: Lease, tokens: Path, synthetic: bool = True) -> tuple[int, dict[str, Any]]:
    """The vocabulary and a description of the tokens trained on: the carried ones (made ready by
    `cod.tools.gpu_carry.ready_tokens` before the call starts), or, in --dry when `synthetic`, random ones."""
    folder = Path(tokens)
    if lease.dry and synthetic:
        overrides = synthetic_tokens(tiny({}), lease.scratch / "science_tokens", 2**15)
        folder = Path(run_config(overrides).data.dataset_dir)
    meta = json.loads((folder / "meta.json").read_text())
    n_train = (folder / "train.bin").stat().st_size // np.dtype(meta.get("dtype", "uint16")).itemsize
    return int(meta["vocab_size"]), {"folder": str(folder), "vocab": int(meta["vocab_size"]), "train_tokens": n_train}


def _step_tokens(overrides: dict[str, Any]) -> int:
    cfg = run_config(overrides)
    return cfg.data.batch_size * cfg.data.seq_len


def science_overrides(lease: Lease, experiment: str, norm: str, seed: int, vocab: int, corpus: dict[str, Any],
                      steps: int) -> dict[str, Any]:
    """Paper A's run of `experiment` with norm `norm` (its paper-profile shape and recipe) on the
    carried tokens: their vocabulary, SCIENCE_BATCH sequences a step, `steps` steps."""
    overrides = paper_config(experiment, norm, seed)
    folder = Path(corpus["folder"])
    name = folder.name  # the dataset folder, bpe<V>: the offline corpus's BPE
    if not re.fullmatch(r"bpe\d+", name):
        raise ValueError(f"--tokens must be a bpe<V> folder of cod.data.prepare's offline corpus, not {name}")
    overrides.update({"data.tokens_dir": str(folder.parent), "data.tokenizer": "bpe", "data.source": "offline_mix",
                      "data.vocab_size": vocab, "model.vocab_size": vocab, "data.batch_size": SCIENCE_BATCH,
                      "train.micro_batch": 0, "train.compile": False, "train.ckpt_every": 0,
                      "train.eval_tokens": 2**17, "train.stats_tokens": 2**14, "train.log_every": 10,
                      "train.stats_every": max(10, steps // 10), "train.steps": steps})
    if lease.dry:
        overrides = {**tiny(overrides, vocab), "data.tokens_dir": str(folder.parent), "train.steps": steps,
                     "train.stats_every": 4, "train.log_every": 2}
        overrides["model.n_layers"] = 2 if experiment == SCIENCE[0] else 4
    return overrides


def science_speed(lease: Lease, experiment: str, vocab: int, corpus: dict[str, Any]) -> dict:
    """Tokens per second of the shape's training step (eager, after two warm-up steps)."""
    t = trainer(science_overrides(lease, experiment, "pre_ln", 0, vocab, corpus, 10**6), lease.scratch / "speed",
                lease.device)
    for _ in range(2):
        t.step_on_device()
    _sync(lease.device)
    begin, steps = time.monotonic(), 3 if lease.dry else 8
    for _ in range(steps):
        t.step_on_device()
    _sync(lease.device)
    speed = steps * t.cfg.data.batch_size * t.cfg.data.seq_len / (time.monotonic() - begin)
    result = {"ok": True, "tokens_per_s": round(speed, 1), "params": t.model.num_params(),
              "n_layers": t.cfg.model.n_layers, "d_model": t.cfg.model.d_model}
    del t
    _release()
    return result


def science_steps(lease: Lease, experiment: str, vocab: int, corpus: dict[str, Any], speed: float,
                  seconds: float) -> int:
    """Steps of a run of `experiment` that fit `seconds`, at most SCIENCE_EPOCHS epochs (8 in --dry)."""
    if lease.dry:
        return 8
    per_step = _step_tokens(science_overrides(lease, experiment, "pre_ln", 0, vocab, corpus, 1))
    fit = int(speed * max(0.0, seconds - SCIENCE_OVERHEAD_S) / per_step)
    return max(10, min(fit, SCIENCE_EPOCHS * corpus["train_tokens"] // per_step))


def science_run(lease: Lease, overrides: dict[str, Any], name: str) -> dict:
    from cod.train.trainer import Trainer  # lazy: an import error (an older torch) fails this item only

    out = lease.folder / lease.mode / name
    cfg = run_config(overrides)
    t = Trainer(cfg, out, weights=lease.scratch / "weights" / name, name=name, device=lease.device,
                distributed=False, quiet=False, deadline=time.monotonic() + max(5.0, lease.left() - 15.0))
    final = t.fit()
    history = read_history(out / "history.jsonl")
    growth = {r["step"]: r["resid_var"][-1] / r["resid_var"][0] for r in history if "resid_var" in r}
    del t
    _release()
    return {"ok": final["status"] in ("completed", "stopped"), "status": final["status"], "steps": final["steps"],
            "planned_steps": cfg.train.steps, "norm": str(cfg.model.norm), "init": str(cfg.model.init),
            "n_layers": cfg.model.n_layers, "d_model": cfg.model.d_model, "seed": cfg.seed,
            "val_loss": final["val_loss"], "val_ppl": final["val_ppl"], "val_bbc_loss": final["val_bbc_loss"],
            "final_train_loss": final["final_train_loss"], "tokens": final["tokens"],
            "tokens_per_s": final["tokens_per_s"],
            "last_layer_over_first_resid_var": growth[max(growth)] if growth else None,
            "last_layer_over_first_by_step": growth}


def science_summary(items: dict[str, Any]) -> dict[str, Any]:
    """Per shape and norm: the completed runs' mean validation loss and variance growth, over seeds."""
    groups: dict[str, list[dict]] = {}
    for result in items.values():
        if isinstance(result, dict) and result.get("status") == "completed":
            key = f"{result['n_layers']} layers x {result['d_model']}, {result['steps']} steps, {result['norm']}"
            groups.setdefault(key, []).append(result)
    return {key: {"seeds": [r["seed"] for r in runs], "val_loss_mean": float(np.mean([r["val_loss"] for r in runs])),
                  "val_loss": [r["val_loss"] for r in runs],
                  "resid_var_growth": [r["last_layer_over_first_resid_var"] for r in runs]}
            for key, runs in sorted(groups.items())}


# ----------------------------------------------------------------------------- the one call: Fig. 4, then bench


FIG4_VARIANTS = ("pre_ln", "lns", "scaled_init")  # a_130m's variants of paper A's Fig. 4, in the order they train
EMBED_STD_RELEASED = math.sqrt(2 / 5)  # paper A's released code drew its token embedding so until eb1a0a5
FIG4_RECIPE = {  # paper A's released code for its 130M model, as it stood before its commit eb1a0a5 (2026-01-02)
    "model.embed_init_std": EMBED_STD_RELEASED,
    "optim.beta2": 0.999, "optim.grad_clip": 0.0, "optim.weight_decay": 0.0,  # Adam, no clipping, no decay
    "optim.lr": 1e-3, "optim.min_lr_ratio": 0.1,  # cosine from 1e-3 to a tenth of it
    "optim.schedule_steps": 20_000, "optim.warmup_steps": 2_000,  # the script's schedule ...
    "train.steps": 2_400,  # ... of which the first 2,400 steps train: the warmup and 400 steps after it
    "train.stats_every": 100,  # per-layer variances
}
FIG4_DRY = {"optim.schedule_steps": 40, "optim.warmup_steps": 4, "train.steps": 8, "train.stats_every": 2}
FIG4_NOTE = ("paper A's released code as it stood before its commit eb1a0a5 (2026-01-02): token embedding drawn "
             "N(0, 2/5), Adam with beta2 0.999, no gradient clipping, no weight decay; the first 2,400 steps of its "
             "20,000-step schedule (2,000 warming up, then cosine from 1e-3 towards a tenth of it)")
LEASE_BENCH = (  # (paper-profile size, or experiment/variant; compiled), timed after Fig. 4 while time is left
    ("a71m", False),  # paper A's 71M shape (512 wide, 12 layers): its MFU, eager
    ("b_depth/d16", True),  # paper B's 16 layers, recomputed, compiled: decides whether train.compile can be on
)
LEASE_SECONDS = 8.0  # timed per bench item of the call, after its warm-up
RECOMPUTE_MARGIN = 1.5  # unmeasured: how much longer than a stored model's a recomputed model's compilation may take
CALL = ("set -o pipefail; PYTHONUNBUFFERED=1 python3 -m cod.tools.gpu_lease lease --export $OUT 2>&1 "
        "| tee $OUT/lease.log")  # the device tool's command for the call (python3 there holds torch)


@dataclass(frozen=True)
class Priced:
    """One item of the call and the seconds it should take on the lent GPU, priced from what an
    earlier lease measured (`basis` says what)."""

    mode: str
    item: str
    seconds: float
    basis: str


def paper_overrides(label: str) -> dict[str, Any]:
    """A paper-profile run's overrides: `experiment/variant`, or a size's (the profile's base and its shape)."""
    if "/" in label:
        return paper_config(*label.split("/", 1))
    from cod.runs.params import load_params, profile_settings  # lazy: an import error (an older torch) fails this item only

    profile = profile_settings({**load_params(ROOT / "params.yaml"), "profile": "paper"})
    if label not in profile["sizes"]:
        raise ValueError(f"size={label!r} is not one of the paper profile's; allowed: {', '.join(profile['sizes'])}")
    return {**profile.get("base", {}), **profile["sizes"][label], "seed": 0}


def measured_items(results: Path = RESULTS) -> dict[str, list[dict]]:
    """Every item a lent GPU ran without error (dry runs left out), by name, over the calls under `results`."""
    found: dict[str, list[dict]] = {}
    for path in sorted(results.glob("*/*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and not data.get("dry") and isinstance(data.get("items"), dict):
            for name, result in data["items"].items():
                if isinstance(result, dict) and result.get("ok"):
                    found.setdefault(name, []).append(result)
    return found


def _measured(found: dict[str, list[dict]], name: str) -> list[dict]:
    if not found.get(name):
        raise Refusal(f"no GPU measurement of {name!r} under runs/gpu/ to price the call from")
    return found[name]


def price_fig4(found: dict[str, list[dict]]) -> list[Priced]:
    """Each Fig. 4 run: its tokens at the slowest rate science measured at the 12 x 768 shape (64 x 256
    a step, the carried tokens), plus the most set-up and evaluation a run of it took besides its steps."""
    runs = [r for results in found.values() for r in results
            if r.get("status") == "completed" and (r.get("n_layers"), r.get("d_model")) == (12, 768)]
    if not runs:
        raise Refusal("no GPU science run at 12 x 768 under runs/gpu/ to price Fig. 4's runs from")
    rate = min(r["tokens_per_s"] for r in runs)
    setup = max(r["seconds"] - r["tokens"] / r["tokens_per_s"] for r in runs)
    tokens = FIG4_RECIPE["train.steps"] * SCIENCE_BATCH * paper_config("a_130m", "pre_ln")["data.seq_len"]
    basis = (f"{tokens / 1e6:.1f}M tokens at {rate:,.0f} tokens/s + {setup:.1f} s set-up and evaluation "
             f"(slowest and most of {len(runs)} science runs at 12 x 768)")
    return [Priced("fig4", f"a_130m_{v}_s0", tokens / rate + setup, basis) for v in FIG4_VARIANTS]


def price_bench(found: dict[str, list[dict]]) -> list[Priced]:
    """a71m eager: a_130m's eager set-up and warm-up plus the seconds timed; d16 compiled: a_130m's
    compilation scaled by layers and `RECOMPUTE_MARGIN`, its set-up, the seconds timed; estimates as measured."""
    eager = _measured(found, "a_130m/pre_ln eager")
    eager_setup = max(r["seconds"] - r["steps"] * r["step_s"] for r in eager)
    compiled = _measured(found, "a_130m/pre_ln compiled")
    compile_s = max(r["warmup_s"] for r in compiled)
    compiled_setup = max(r["seconds"] - r["warmup_s"] - r["steps"] * r["step_s"] for r in compiled)
    layers = paper_overrides("b_depth/d16")["model.n_layers"] / paper_overrides("a130m")["model.n_layers"]
    estimate_s = max(r["seconds"] for name in ("a_130m/pre_ln estimate", "b_depth/d16 estimate")
                     for r in _measured(found, name))
    estimated = f"the longest of a_130m's and d16's measured estimates ({estimate_s:.1f} s)"
    return [
        Priced("bench", "a71m eager", eager_setup + LEASE_SECONDS,
               f"a_130m/pre_ln eager's set-up and warm-up ({eager_setup:.1f} s, most of {len(eager)} calls) "
               f"+ {LEASE_SECONDS:.0f} s timed"),
        Priced("bench", "a71m estimate", estimate_s, estimated),
        Priced("bench", "b_depth/d16 compiled", compile_s * layers * RECOMPUTE_MARGIN + compiled_setup + LEASE_SECONDS,
               f"a_130m/pre_ln's compilation ({compile_s:.1f} s) x {layers:.2f} for its layers x {RECOMPUTE_MARGIN} "
               f"for recomputation (unmeasured) + {compiled_setup:.1f} s set-up + {LEASE_SECONDS:.0f} s timed"),
        Priced("bench", "b_depth/d16 estimate", estimate_s, estimated),
    ]


def price_call(results: Path = RESULTS) -> list[Priced]:
    """The call's items in the order they run, each priced from what the lent GPUs measured under `results`."""
    found = measured_items(results)
    return price_fig4(found) + price_bench(found)


def check_plan(plan: list[Priced], budget: float) -> str:
    """The plan as lines; refuses, in one line, a budget over `BUDGET_S` or below the plan's total."""
    total = sum(p.seconds for p in plan)
    if budget > BUDGET_S:
        raise Refusal(f"--budget {budget:.0f}: allowed at most {BUDGET_S:.0f} s (a command runs at most 600 s, "
                      f"the watchdog allows {WATCHDOG_GRACE:.0f} s more)")
    if total > budget:
        raise Refusal(f"--budget {budget:.0f}: the call's items are priced at {total:.0f} s; allowed: a budget of "
                      f"at least that, at most {BUDGET_S:.0f} s")
    lines = [f"  {p.mode:<5} {p.item:<22} {p.seconds:6.1f} s  {p.basis}" for p in plan]
    return "\n".join([f"plan: {total:.0f} s of the {budget:.0f} s budget", *lines])


def fig4_overrides(lease: Lease, variant: str, vocab: int, corpus: dict[str, Any]) -> dict[str, Any]:
    """a_130m's `variant` at the paper profile's shape, on the carried tokens, 64 x 256 a step, under
    the released recipe (--dry: tiny, a few steps of a short schedule)."""
    recipe = {**FIG4_RECIPE, **(FIG4_DRY if lease.dry else {})}
    return {**science_overrides(lease, "a_130m", variant, 0, vocab, corpus, recipe["train.steps"]), **recipe}


def fig4(lease: Lease, tokens: Path, plan: dict[str, Priced]) -> None:
    """Paper A's Fig. 4 at its 130M shape: Pre-LN, LNS and scaled initialisation on the first part of
    the released schedule. A run started with less than half its price left stops at the budget."""
    vocab, corpus = _token_source(lease, tokens, synthetic=False)
    lease.results.update({"tokens": corpus, "recipe": FIG4_NOTE})
    for variant in FIG4_VARIANTS:
        name = f"a_130m_{variant}_s0"
        overrides = fig4_overrides(lease, variant, vocab, corpus)
        needs = 5.0 if lease.dry else plan[name].seconds / 2
        lease.item(name, lambda o=overrides, n=name, v=variant: {
            **science_run(lease, o, n), "variant": v, "recipe": "released before eb1a0a5",
            "schedule_steps": o["optim.schedule_steps"], "warmup_steps": o["optim.warmup_steps"]}, needs=needs)


def lease_bench(lease: Lease, plan: dict[str, Priced]) -> None:
    """The bench items of the call (`LEASE_BENCH`), each with cod.tools.memory's estimate after it."""
    seconds = 0.5 if lease.dry else LEASE_SECONDS
    for label, compiled in LEASE_BENCH:
        config = bench_config(lease, label, paper_overrides(label))
        way = f"{label} {'compiled' if compiled else 'eager'}"
        lease.item(way, lambda: measure(lease, config, compiled, seconds), needs=0 if lease.dry else plan[way].seconds)
        lease.item(f"{label} estimate", lambda: estimate(lease, label, config),
                   needs=0 if lease.dry else plan[f"{label} estimate"].seconds)


def round_trip(folder: Path, out: Path) -> str:
    """What --dry checks last: the export imports back to what the call wrote; one line on it."""
    with tempfile.TemporaryDirectory() as scratch:
        same = exported(import_results(out, Path(scratch), dry=True)) == exported(folder)
    names = sorted(p.name for p in out.iterdir())
    if not same:
        raise Refusal(f"the export in {out} does not import back to {folder}")
    return f"export: {len(names)} files in {out} ({', '.join(names)}); --import gives back what the call wrote"


# ----------------------------------------------------------------------------- command line


MODES = {"check": ("check",), "bench": ("bench",), "science": ("science",), "lease": ("fig4", "bench")}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _plain(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    return str(value)


def _summary(result: dict) -> str:
    shown = {k: v for k, v in result.items() if k not in ("traceback", "losses_and_grad_norms") and
             not isinstance(v, (dict, list))}
    return json.dumps(shown, default=_plain)[:300]


def _shown(path: Path) -> str:
    """`path` relative to the repository where it lies inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def preflight(args: argparse.Namespace) -> dict[str, Priced]:
    """What must hold before the device is spent, printed: the tokens there (unpacked from the carried
    archive if need be) and, for the one call, its plan within its budget; in --dry also the tokens
    packed to travel and the tree that travels under its limit. Refuses, in one line, what would fail."""
    if args.mode == "lease" or (args.mode == "science" and not args.dry):
        print(f"[gpu_lease] {ready_tokens(args.tokens, args.carry)}", flush=True)
    if args.mode != "lease":
        return {}
    plan = price_call()
    print(check_plan(plan, args.budget), flush=True)
    if args.dry:
        if not is_packed(args.tokens, args.carry):
            print(f"[gpu_lease] packed {_shown(pack_tokens(args.tokens, args.carry))}", flush=True)
        print(f"[gpu_lease] {check_tree(ROOT, [args.carry])}", flush=True)
        print(f"[gpu_lease] the call: run(command={CALL!r}, carry=[{_shown(args.carry)!r}], timeout_s=600); "
              "then here: python -m cod.tools.gpu_lease --import <the folder its files came back to>", flush=True)
    return {p.item: p for p in plan}


def results_folder(args: argparse.Namespace) -> Path:
    """--out, or runs/gpu/<date>_<device>_torch<version> with the first free suffix (`_2`, ...) so that a
    call never writes over an earlier one; --dry's folder under .cache is emptied instead."""
    if args.out:
        return args.out
    device = "cuda" if torch.cuda.is_available() and not args.dry else "cpu"
    base = default_folder(device, args.dry)
    if args.dry:
        shutil.rmtree(base, ignore_errors=True)
        return base
    names = [base.name, *(f"{base.name}_{n}" for n in range(2, 1000))]
    return next(base.with_name(name) for name in names if not base.with_name(name).exists())


def work(args: argparse.Namespace, plan: dict[str, Priced], lease: Lease) -> None:
    """The items of `lease`'s mode."""
    if lease.mode == "check":
        check(lease)
    elif lease.mode == "fig4":
        fig4(lease, args.tokens, plan)
    elif lease.mode == "bench" and args.mode == "lease":
        lease_bench(lease, plan)
    elif lease.mode == "bench":
        bench(lease, [tuple(s.split("/", 1)) for s in args.shapes] if args.shapes else None, args.seconds)
    else:
        science(lease, args.tokens, tuple(args.experiments), tuple(args.seeds), args.steps_from)


def run_modes(args: argparse.Namespace, plan: dict[str, Priced]) -> list[Lease]:
    """Each mode of the call in turn, on one clock and budget, under the watchdog; every results file
    saved (and exported) however the call ends."""
    start, folder, leases = time.monotonic(), results_folder(args), []

    def watchdog(signum, frame):
        raise BudgetSpent(f"{args.budget + WATCHDOG_GRACE:.0f} s spent")

    previous = signal.signal(signal.SIGALRM, watchdog)
    signal.setitimer(signal.ITIMER_REAL, args.budget + WATCHDOG_GRACE)
    try:
        for mode in MODES[args.mode]:
            leases.append(Lease(mode, args.dry, args.budget, folder, args.export, start))
            print(f"[gpu_lease {mode}] {leases[-1].device}, torch {torch.__version__}, budget {args.budget:.0f} s, "
                  f"results in {leases[-1].path}", flush=True)
            work(args, plan, leases[-1])
            leases[-1].results["stopped_by_watchdog"] = False
    except BudgetSpent as error:
        leases[-1].results["stopped_by_watchdog"] = str(error)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        for lease in leases:
            lease.results["finished"] = _now()
            lease.save()
            shutil.rmtree(lease.scratch, ignore_errors=True)
    return leases


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m cod.tools.gpu_lease", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", nargs="?", choices=list(MODES), help="what the call runs (lease: the one call)")
    parser.add_argument("--dry", action="store_true", help="tiny shapes on the CPU, synthetic tokens (the tests)")
    parser.add_argument("--budget", type=float, default=BUDGET_S, help=f"seconds to plan for (default {BUDGET_S:.0f})")
    parser.add_argument("--out", type=Path, help="results folder (default runs/gpu/<date>_<device>_torch<version>/)")
    parser.add_argument("--export", type=Path, help="after every item, mirror the results here, flat: $OUT")
    parser.add_argument("--import", dest="import_from", type=Path, metavar="DIR",
                        help="put the files a call exported (what came back from $OUT) under runs/gpu/, and stop")
    parser.add_argument("--tokens", type=Path, default=ROOT / "data/tokens/bpe2048",
                        help="science, lease: the folder of train.bin, val.bin and meta.json trained on")
    parser.add_argument("--carry", type=Path, default=ROOT / CARRY,
                        help="the folder carried with the call: the tokens packed (default .cache/gpu_carry)")
    parser.add_argument("--shapes", nargs="*", metavar="EXPERIMENT/VARIANT",
                        help="bench: paper-profile runs to measure (default: BENCH)")
    parser.add_argument("--experiments", nargs="+", choices=SCIENCE, default=list(SCIENCE),
                        help="science: the shapes to train (default: all)")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SCIENCE_SEEDS), help="science: seeds, in order")
    parser.add_argument("--steps-from", type=Path,
                        help="science: an earlier call's science.json whose steps per shape are trained again")
    parser.add_argument("--seconds", type=float, help="bench: seconds timed per shape and way (default 25; --dry 0.5)")
    args = parser.parse_args(argv)
    if (args.mode is None) == (args.import_from is None):
        parser.error(f"give a mode ({', '.join(MODES)}) or --import DIR, not both")
    return args


def export_folder(args: argparse.Namespace) -> Path | None:
    """--export, made if need be; for the one call in --dry, .cache/gpu_lease/export, emptied."""
    if args.dry and args.mode == "lease" and args.export is None:
        args.export = ROOT / ".cache/gpu_lease/export"
        shutil.rmtree(args.export, ignore_errors=True)
    if args.export:
        args.export.mkdir(parents=True, exist_ok=True)
    return args.export


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        if args.import_from:
            print(f"[gpu_lease] imported {args.import_from} into {_shown(import_results(args.import_from))}")
            return 0
        plan = preflight(args)
        export_folder(args)
        leases = run_modes(args, plan)
        if args.dry and args.mode == "lease":
            print(f"[gpu_lease] {round_trip(leases[0].folder, args.export)}", flush=True)
    except Refusal as error:
        print(f"gpu_lease: {error}", file=sys.stderr)
        return 2
    failed = [f"{lease.mode}: {name}" for lease in leases for name, r in lease.results["items"].items()
              if isinstance(r, dict) and r.get("ok") is False]
    stopped = any(lease.results["stopped_by_watchdog"] for lease in leases)
    elapsed = max(lease.results["elapsed_s"] for lease in leases)
    print(f"[gpu_lease {args.mode}] {sum(len(lease.results['items']) for lease in leases)} items, failed: "
          f"{failed or 'none'}; {elapsed} s; {leases[0].folder}", flush=True)
    return 1 if failed or stopped else 0


if __name__ == "__main__":
    sys.exit(main())
