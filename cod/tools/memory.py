"""Peak memory of a training step, sized on the CPU with fake tensors: no memory, no GPU.

    python -m cod.tools.memory paper                    # every size of the paper profile against one 80 GB GPU
    python -m cod.tools.memory paper --record           # the same, kept in runs/memory/paper.json (docs/measurements.md)

`training_peak(cfg)` builds the run's model under `FakeTensorMode` (tensors with shapes and dtypes
but no storage), runs two optimiser steps of one process's share of the batch in its micro-batches,
with the run's precision and recomputation, and tracks every storage alive: the peak of their sum,
each rounded up to the CUDA caching allocator's 512-byte blocks. It counts weights, gradients,
AdamW state and activations. It does not count the CUDA context, library workspaces or
fragmentation: `fits_one_gpu` leaves `MARGIN` of the GPU for them. Autocast runs as the CPU's (its bf16
matrix products are CUDA's), and attention is the CPU's fused kernel, which, like CUDA's flash
attention, keeps no T x T matrix. The vocabulary loss is sized at `SIZING_CHUNK` logits a chunk,
the chunk it takes on a GPU (`cod.model.loss.DEVICE_CHUNK_ELEMENTS`; the CPU's smaller chunks would
cost thousands of fake ops). A mixture of experts is sized at perfectly balanced load (each
expert N k / n of the N tokens), whose dispatch fake tensors can shape, expert by expert; on a
GPU the grouped dispatch (`cod.model.MoE`) also stacks the experts' weights in bf16 for the
layer being run (6 n F D bytes: 0.8 GB a layer of the 7.9B MoE, one layer at a time under
recomputation), which is not counted.

The CLI and the sizing test trace each run at two shallow depths and extend the line
(`extrapolated_peak`): a peak is linear in depth, which the test checks at a third depth.

FSDP is estimated, not traced (`sharded_peak`): the paper's two large MoE models (6-8B
parameters in all) do not fit one GPU unsharded, and the CLI prints, for a run that does not
fit, its estimated peak when `train.parallel: fsdp` shards it over `SHARDS` GPUs. A run whose
weights, gradients and AdamW moments alone exceed the GPU (`state_bytes`) is not traced
unsharded: the CLI prints that lower bound after a '>'.

`--record` keeps the sizes in runs/memory/<profile>.json, with the peaks of `WHOLE_BATCH`'s runs
at their whole batch in one pass (no micro-batches); `cod.report.memory_sizes` renders the table of
docs/measurements.md from that record: every number of it comes from a sizing, none is typed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import types
import weakref
from contextlib import contextmanager, nullcontext
from datetime import date
from fractions import Fraction
from pathlib import Path
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from cod import ROOT

from cod.model import loss
from cod.config import ImageSet, Norm, Precision, RunConfig, flatten
from cod.model import MoE, Transformer
from cod.runs.params import PROFILES, all_runs, load_params
from cod.train.trainer import Recomputed, adamw  # the trainer's own optimiser and recomputation
from cod.model.vision import VisionTransformer

GPU_BYTES = 80 * 10**9  # an 80 GB H100 or A100
MARGIN = 0.15  # share of the GPU left for the CUDA context, workspaces and fragmentation
BLOCK = 512  # bytes: the CUDA caching allocator's rounding
SHARDS = 8  # GPUs a run that does not fit one is estimated over (one node)
RECORDS = ROOT / "runs" / "memory"  # <profile>.json: a profile's sizes, kept by --record
WHOLE_BATCH = ("a_130m/pre_ln", "b_depth/d32")  # runs also sized at their whole batch in one pass: why micro-batches
SIZING_CHUNK = loss.DEVICE_CHUNK_ELEMENTS  # logits per chunk of the vocabulary loss when sizing: the GPU's


class LiveStorages(TorchDispatchMode):
    """Bytes of the tensor storages alive, now and at their peak, for tensors that ops made
    while the mode was on and any added by hand (weights made before it)."""

    def __init__(self):
        super().__init__()
        self.alive: dict[int, weakref.ref] = {}
        self.now = self.peak = 0

    def add(self, t: torch.Tensor) -> None:
        storage = t.untyped_storage()
        key = storage._cdata
        if key in self.alive:
            return
        size = -(-storage.nbytes() // BLOCK) * BLOCK

        def freed(_, key=key, size=size):
            self.alive.pop(key, None)
            self.now -= size

        self.alive[key] = weakref.ref(storage, freed)
        self.now += size
        self.peak = max(self.peak, self.now)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self.add(t)
        return out


def training_peak(cfg: RunConfig, world_size: int = 1) -> int:
    """Peak bytes on one process of `world_size` (DDP) in a training step of run `cfg`, AdamW's
    state included."""
    per_process = cfg.data.batch_size // world_size
    micro = cfg.train.micro_batch or per_process
    steps = min(2, -(-per_process // micro))  # later micro-steps repeat the second's peak
    vision = cfg.vision.dataset != ImageSet.NONE
    bf16 = cfg.train.precision == Precision.BF16
    with FakeTensorMode(), _loss_chunks(SIZING_CHUNK):
        model = _model(cfg)
        optimizer = adamw(model, cfg.optim)
        for p in model.parameters():  # AdamW's state, made by a first step
            p.grad = torch.zeros_like(p)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        order = [Recomputed(block, model.rotary) for block in model.blocks] if cfg.train.recompute else None
        live = LiveStorages()
        for t in [*model.parameters(), *(v for state in optimizer.state.values() for v in state.values())]:
            live.add(t)
        with live:
            for _ in range(steps):
                x, y = _fake_batch(cfg, micro, vision)
                with torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else nullcontext():
                    loss = model(x, y, logits=False, order=order).loss
                loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    return live.peak


def depth_period(cfg: RunConfig) -> int:
    """The fewest blocks after which the run's stack repeats: 1, or for Mix-LN the denominator of
    its Post-LN share (floor(fraction x L) of the L blocks, linear in L at multiples of it)."""
    if cfg.model.norm != Norm.MIX_LN:
        return 1
    return Fraction(cfg.model.mix_ln_fraction).limit_denominator(64).denominator


def at_depth(cfg: RunConfig, n_layers: int) -> RunConfig:
    return dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, n_layers=n_layers))


def extrapolated_peak(cfg: RunConfig, world_size: int = 1, check: bool = False) -> int:
    """`training_peak` traced at depths p and 2p (p = `depth_period`) and carried along the line
    through them to the run's depth: every p blocks add the same weights, gradients, AdamW state
    and saved activations to the step's peak. A fraction of a whole trace's time (fake tensors
    cost time per op, and the ops grow with depth).
    With `check`, also traced at 3p, and a peak off the line raises. A run of at most 3p blocks,
    or whose depth is no multiple of p, is traced whole."""
    period, depth = depth_period(cfg), cfg.model.n_layers
    if depth <= 3 * period or depth % period:
        return training_peak(cfg, world_size)
    one, two = (training_peak(at_depth(cfg, k * period), world_size) for k in (1, 2))
    if check:
        three = training_peak(at_depth(cfg, 3 * period), world_size)
        if three - two != two - one:
            raise RuntimeError(f"the peak is not linear in depth ({one}, {two}, {three} bytes at {period}, "
                               f"{2 * period}, {3 * period} blocks): trace the run whole with training_peak")
    return one + (two - one) * (depth - period) // period


def sharded_peak(cfg: RunConfig, world_size: int = SHARDS) -> int:
    """Estimated peak bytes on one of `world_size` processes of FSDP, which shards each block
    (cod.train.trainer): `extrapolated_peak` of that process's batch, less the share of the fp32 weights,
    gradients and AdamW moments (16 bytes a parameter) held by the other processes, plus the
    largest block's weights and gradients gathered whole."""
    with FakeTensorMode():
        model = _model(cfg)
        n, block = model.num_params(), max(sum(p.numel() for p in b.parameters()) for b in model.blocks)
    return extrapolated_peak(cfg, world_size) - 16 * n * (world_size - 1) // world_size + 8 * block


def _model(cfg: RunConfig) -> Transformer:
    """The run's model (made of fake tensors under FakeTensorMode)."""
    shape = cfg.model
    if shape.norm == Norm.ADMIN:  # its initialisation profiles real activations; its memory is Post-LN's
        shape = dataclasses.replace(shape, norm=Norm.POST_LN)
    model = VisionTransformer(shape, cfg.vision) if cfg.vision.dataset != ImageSet.NONE else Transformer(shape)
    for module in model.modules():
        if isinstance(module, MoE):
            module.assignments = types.MethodType(_balanced_assignments, module)
    return model


def _balanced_assignments(self: MoE, chosen: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """`MoE.assignments` at perfectly balanced load, N k / n of the N tokens per expert (what the
    balancing loss aims for): fake tensors cannot size the data-dependent dispatch."""
    n_tokens, n_experts = chosen.shape[0], len(self.experts)
    share = n_tokens * self.top_k // n_experts
    tokens = [torch.arange(i * share, (i + 1) * share, device=chosen.device) % n_tokens for i in range(n_experts)]
    return [(token, torch.full_like(token, i % self.top_k)) for i, token in enumerate(tokens)]


@contextmanager
def _loss_chunks(elements: int):
    """The vocabulary loss walks chunks of `elements` logits (fake tensors cost time per op, not per byte)."""
    previous, loss.CHUNK_ELEMENTS = loss.CHUNK_ELEMENTS, elements
    try:
        yield
    finally:
        loss.CHUNK_ELEMENTS = previous


def _fake_batch(cfg: RunConfig, n: int, vision: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if vision:
        v = cfg.vision
        return torch.empty(n, v.channels, v.side, v.side), torch.zeros(n, dtype=torch.long)
    tokens = torch.zeros(n, cfg.data.seq_len, dtype=torch.long)
    return tokens, tokens


def fits_one_gpu(peak: int, gpu_bytes: int = GPU_BYTES) -> bool:
    """True when a step peaking at `peak` bytes leaves `MARGIN` of the GPU free."""
    return peak <= (1 - MARGIN) * gpu_bytes


SHAPE = ("model.d_", "model.n_", "model.vocab_size", "model.tie_embeddings", "model.ffn", "model.norm",
         "model.branch_gain", "model.causal", "model.rope", "data.seq_len", "data.batch_size", "train.micro_batch",
         "train.recompute", "train.precision", "vision.")  # the settings that decide a step's memory


def distinct_shapes(params: dict) -> dict[str, RunConfig]:
    """One run's config per distinct memory shape of the active profile's trained runs, by
    experiment/variant."""
    shapes = {}
    for run in all_runs(params, planned=False):
        cfg = run.config
        key = repr(sorted((k, str(v)) for k, v in flatten(cfg.to_dict()).items() if k.startswith(SHAPE)))
        shapes.setdefault(key, (f"{run.experiment}/{run.variant}", cfg))
    return dict(shapes.values())


def size(cfg: RunConfig) -> dict[str, Any]:
    """One run's sizing: its unsharded peak (traced, or after `traced: false` the lower bound
    `state_bytes`), and its FSDP estimate over `SHARDS` GPUs when that peak does not fit one."""
    traced = fits_one_gpu(state_bytes(cfg))  # else the states alone exceed the GPU: not worth tracing
    peak = extrapolated_peak(cfg) if traced else state_bytes(cfg)
    return {"params": _params(cfg), "batch": cfg.data.batch_size,
            "tokens": 0 if cfg.vision.dataset != ImageSet.NONE else cfg.data.seq_len,
            "micro_batch": min(cfg.train.micro_batch or cfg.data.batch_size, cfg.data.batch_size),
            "recompute": bool(cfg.train.recompute),
            "peak": peak, "traced": traced, "sharded": None if fits_one_gpu(peak) else sharded_peak(cfg)}


def fitting(sized: dict[str, Any]) -> bool:
    """Whether a sizing fits: on one GPU, or sharded over `SHARDS`."""
    return fits_one_gpu(sized["peak"]) or (sized["sharded"] is not None and fits_one_gpu(sized["sharded"]))


def row(label: str, sized: dict[str, Any]) -> str:
    """The CLI's line of one sizing."""
    shown = f"{sized['peak'] / 1e9:.1f}" if sized["traced"] else f">{sized['peak'] / 1e9:.1f}"
    verdict = "yes" if sized["sharded"] is None else (
        f"NO; FSDP over {SHARDS} GPUs: {sized['sharded'] / 1e9:.1f} GB (estimated), "
        + ("fits" if fits_one_gpu(sized["sharded"]) else "does NOT fit"))
    return (f"{label:<32} {sized['params'] / 1e9:>6.2f}B {sized['batch']:>6} {sized['micro_batch']:>6} "
            f"{str(sized['recompute']):>9} {shown:>8}  {verdict}")


def record(profile: str, params: dict) -> dict[str, Any]:
    """Every distinct shape of `profile` sized (printed as it goes), and `WHOLE_BATCH`'s runs at their whole batch."""
    shapes = distinct_shapes({**params, "profile": profile})
    print(f"{'run':<32} {'params':>7} {'batch':>6} {'micro':>6} {'recompute':>9} {'peak GB':>8}  fits 80 GB")
    runs = {}
    for label, cfg in shapes.items():
        runs[label] = size(cfg)
        print(row(label, runs[label]), flush=True)
    whole = {label: extrapolated_peak(dataclasses.replace(shapes[label], train=dataclasses.replace(
        shapes[label].train, micro_batch=0))) for label in WHOLE_BATCH if label in shapes}
    return {"profile": profile, "date": date.today().isoformat(), "torch": torch.__version__.split("+")[0],
            "gpu_bytes": GPU_BYTES, "margin": MARGIN, "shards": SHARDS, "runs": runs, "whole_batch": whole}


def record_path(profile: str) -> Path:
    return RECORDS / f"{profile}.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cod.tools.memory", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", choices=PROFILES, help="the profile of params.yaml to size")
    parser.add_argument("--record", action="store_true", help=f"keep the sizes in {RECORDS.relative_to(ROOT)}/PROFILE.json")
    args = parser.parse_args(argv)
    path = record_path(args.profile)
    kept = record(args.profile, load_params())
    if args.record:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(kept, indent=1) + "\n")
        print(f"kept in {path.relative_to(ROOT)}")
    return 0 if all(fitting(r) for r in kept["runs"].values()) else 1


def state_bytes(cfg: RunConfig) -> int:
    """Bytes of the fp32 weights, gradients and two AdamW moments alone: a lower bound of the
    unsharded peak that costs no tracing (a run above the GPU by this alone cannot fit it)."""
    return 16 * _params(cfg)


def _params(cfg: RunConfig) -> int:
    with FakeTensorMode():
        return _model(cfg).num_params()


if __name__ == "__main__":
    sys.exit(main())
