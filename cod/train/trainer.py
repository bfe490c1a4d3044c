"""Train one run: AdamW, warmup + cosine, clipping, per-layer statistics, exact resume.

    Trainer(cfg, out, identity=fingerprint.describe(cfg)).fit()   # what `python -m cod.train.run` does

Memory and scale (train.*): `micro_batch` accumulates gradients over micro-batches (the step's
loss and gradients equal one pass over the whole batch), `recompute` recomputes each block's
activations in the backward pass, `compile` runs the model through torch.compile, and
`parallel=fsdp` shards weights, gradients and AdamW state over torchrun's processes. Under
torchrun, evaluation and statistics are split over the processes and summed on the model's
device (NCCL has no CPU path); only process 0 writes files.

Files in --out (small, human-readable):
    config.json     every setting of the run
    history.jsonl   one row per logged step: loss, lr, grad norm, tokens/s (a mixture of
                    experts adds its auxiliary losses and expert loads); rows with
                    per-layer variances every train.stats_every steps (float32, written in
                    float32's shortest digits: cod.records.results.history_line / read_history)
    final.json      status (completed | diverged | stopped), final losses, perplexities, speed
Files in --weights (large, DVC-cached):
    ckpt.pt         model + optimiser + step + wall time, written every train.ckpt_every
                    steps and when the command is stopped (Ctrl-C, SIGTERM, a deadline); a run
                    started again with the same settings resumes from it exactly
    model.pt        final weights and config, for analyses

The loop (`Trainer.fit`) takes optimiser steps; everything else it does on the way is a side job,
a `Callback` that says when it is due and what it does: the divergence watch, the history rows,
the per-layer statistics, validation, checkpoints (those four from train.*), a deadline and the
signal stop (from the Trainer's arguments), and any the caller passes in.

Stopping: the first SIGINT or SIGTERM ends the step under way, writes ckpt.pt and exits (status
130 or 143) with the command that resumes; a second one stops at once. Under torchrun the
signals act as usual. `wall_s` (final.json, history rows) counts every session of the run.

Three kinds of run share the loop and everything above; what differs (the model, the training
batches, the tokens of a batch, the statistics batch, validation and final scores) lives in a
`Task`, which `task_of` picks from the settings:
    Pretraining          pre-training on windows of the token arrays (the default)
    FineTuning           finetune.base set: starts from that model.pt (whose model settings must
                         equal the run's) and reads batches of the instruction mix
                         (`cod.data.instructions`) instead of text windows; statistics and
                         validation loss on text
    ImageClassification  vision.dataset set: a Vision Transformer (`cod.model.vision`) on batches of
                         images (`cod.data.images`); the variance statistics are taken on fixed
                         validation images, the validation loss on all of them, and final.json
                         holds the top-1 accuracies `val_acc` and `test_acc` (no perplexities)
"""

from __future__ import annotations

import json
import math
import os
import signal
import time
from abc import ABC, abstractmethod
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.utils.checkpoint import checkpoint

from cod.config import ConfigError, ImageSet, OptimConfig, Parallel, Precision, RunConfig, run_config_from_dict
from cod.data.images import ImageBatches, load_images
from cod.data.instructions import InstructionBatches
from cod.data.loader import TokenBatches, eval_windows
from cod.data.prepare import prepare_command
from cod.eval.lm import load_tokenizer
from cod.model.loss import IGNORE_INDEX
from cod.metrics.variance import layer_variances
from cod.model import Transformer
from cod.records.results import history_line
from cod.train.host import keep_freed_memory
from cod.model.vision import VisionTransformer


# ----------------------------------------------------------------------------- optimiser


def param_groups(model: Transformer, weight_decay: float, decay_all: bool) -> list[dict]:
    """Decay matrices; norms, gains, biases and the input embeddings only when `decay_all`."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        exempt = p.ndim < 2 or name.startswith(model.EMBEDDINGS)
        (no_decay if exempt and not decay_all else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def adamw(model: Transformer, o: OptimConfig) -> torch.optim.AdamW:
    """The run's AdamW over `param_groups`, fused: one kernel for all parameters (CPUs too)."""
    groups = param_groups(model, o.weight_decay, o.decay_norms_and_embeddings)
    return torch.optim.AdamW(groups, lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps, fused=True)


def schedule_steps(cfg: RunConfig) -> int:
    """Steps the learning-rate schedule spans: `optim.schedule_steps` when above 0 (a run of fewer
    `train.steps` stops early inside it, as the first part of a longer run), else `train.steps`."""
    return cfg.optim.schedule_steps or cfg.train.steps


def warmup_steps(cfg: RunConfig) -> int:
    """Steps of linear warmup: `optim.warmup_steps` when above 0 (absolute, as paper B's 1,000
    iterations), else `optim.warmup_frac` of the schedule's steps."""
    absolute, total = cfg.optim.warmup_steps, schedule_steps(cfg)
    return min(absolute, total) if absolute > 0 else int(cfg.optim.warmup_frac * total)


def lr_at(step: int, cfg: RunConfig) -> float:
    """Linear warmup to the peak, then cosine decay to min_lr_ratio of it (step is 0-based)."""
    o, total = cfg.optim, schedule_steps(cfg)
    warmup = warmup_steps(cfg)
    if step < warmup:
        return o.lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return o.lr * (o.min_lr_ratio + (1 - o.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


# ----------------------------------------------------------------------------- distributed


class Dist:
    """Rank, world size and device; initialises torch.distributed under torchrun (unless told not to).
    Collectives run on `device`, as NCCL needs; what the host alone holds (target counts, a
    checkpoint's step and RNG state) goes through `host_group`, a gloo group beside NCCL, so that
    the host never waits for the GPU for it."""

    def __init__(self, device: str | None, distributed: bool = True):
        env = os.environ if distributed else {}
        self.world_size = int(env.get("WORLD_SIZE", 1))
        self.rank = int(env.get("RANK", 0))
        local_rank = int(env.get("LOCAL_RANK", 0))
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.device = torch.device(f"cuda:{local_rank}" if device == "cuda" else device)
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)  # before the group starts, so NCCL binds this GPU
        if self.world_size > 1:
            cuda = self.device.type == "cuda"
            dist.init_process_group("nccl" if cuda else "gloo", device_id=self.device if cuda else None)
        self.host_group = dist.new_group(backend="gloo") if self.world_size > 1 and self.device.type != "cpu" \
            else None  # None: the default group (gloo already on the CPU)

    @property
    def main(self) -> bool:
        return self.rank == 0

    def sum(self, values: Sequence[float]) -> list[float]:
        """Elementwise sums over processes (the values themselves in one process)."""
        if self.world_size == 1:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return t.tolist()

    def mean(self, value: float) -> float:
        return value if self.world_size == 1 else self.sum([value])[0] / self.world_size

    def mean_tensor(self, t: torch.Tensor) -> torch.Tensor:
        """The mean over processes of a float64 scalar on the device, left there (no host sync)."""
        if self.world_size == 1:
            return t
        t = t.clone()
        dist.all_reduce(t)
        return t / self.world_size

    def host_sum(self, values: Sequence[float]) -> list[float]:
        """Elementwise sums over processes of numbers the host holds, through the gloo group."""
        if self.world_size == 1:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t, group=self.host_group)
        return t.tolist()

    def broadcast(self, obj):
        """Process 0's `obj` on every process (a small picklable object, through the gloo group)."""
        if self.world_size == 1:
            return obj
        box = [obj if self.main else None]
        dist.broadcast_object_list(box, src=0, group=self.host_group)
        return box[0]

    def share(self, n: int) -> list[tuple[int, bool]]:
        """This process's items of 0..n-1 (every world_size-th), as (index, counted). Processes
        get equally many, as FSDP's gathers need: the ones short of an item repeat item 0 uncounted."""
        rounds = -(-n // self.world_size)
        items = (k * self.world_size + self.rank for k in range(rounds))
        return [(i, True) if i < n else (0, False) for i in items]

    def close(self) -> None:
        """Leave the process group together: a process that tears it down while another still
        writes its files can leave that one hanging."""
        if self.world_size > 1:
            dist.barrier()
            dist.destroy_process_group()


# ----------------------------------------------------------------------------- kinds of run


def autocast(precision: Precision, device: torch.device):
    """bf16 autocast on `device` under train.precision=bf16; nothing otherwise."""
    if precision == Precision.BF16:
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return nullcontext()


@contextmanager
def evaluating(model: nn.Module, precision: Precision, device: torch.device) -> Iterator[None]:
    """Within the block `model` is in eval mode, without gradients, under the run's autocast; in
    train mode after it."""
    model.eval()
    with torch.no_grad(), autocast(precision, device):
        yield
    model.train()


class Task(ABC):
    """What one kind of run does its own way; the Trainer does everything else the same. Built on
    every process before the model; it checks that the run's data is there."""

    def __init__(self, cfg: RunConfig, dist: Dist):
        self.cfg, self.dist = cfg, dist

    @abstractmethod
    def train_batches(self):
        """The training data: `.batch(step) -> (inputs, targets)`, this process's share of the step."""

    @abstractmethod
    def build_model(self) -> Transformer:
        """The freshly initialised model (on the host)."""

    @abstractmethod
    def tokens(self, x: torch.Tensor) -> int:
        """Input tokens of a batch's inputs `x` (padding included)."""

    @abstractmethod
    def stats_input(self) -> torch.Tensor:
        """The fixed validation inputs on which per-layer variances are measured (on the host)."""

    @abstractmethod
    def evaluate(self, model: Transformer, split: str) -> float | None:
        """Mean validation loss of `model` on `split`; None where the run has no such split."""

    @abstractmethod
    def scores(self, model: Transformer, diverged: bool) -> dict:
        """The final results of final.json (each None after a divergence)."""

    @abstractmethod
    def summary(self, final: dict) -> str:
        """The results of `final` as the closing line shows them."""

    @property
    def stats_rows(self) -> int:
        """Sequences (or images) in the statistics batch: train.stats_tokens' worth, at least one."""
        return max(1, self.cfg.train.stats_tokens // self.cfg.data.seq_len)

    def start(self, trainer: Trainer) -> None:
        """Ready `trainer` for a run that starts afresh (not resumed): nothing to do here."""

    def provenance(self, identity: dict | None) -> dict:
        """What final.json records of where the weights come from besides the code: nothing here."""
        return {}


class Pretraining(Task):
    """Pre-training on text: shuffled windows of the token arrays; the mean next-token loss and
    perplexity on the validation splits (val, val_bbc)."""

    def __init__(self, cfg: RunConfig, dist: Dist):
        super().__init__(cfg, dist)
        self.dataset = Path(cfg.data.dataset_dir)
        if not (self.dataset / "train.bin").exists():
            raise FileNotFoundError(
                f"no token arrays in {self.dataset} (data.tokens_dir={cfg.data.tokens_dir}, data.tokenizer="
                f"{cfg.data.tokenizer}, data.vocab_size={cfg.data.vocab_size}): run `{prepare_command(cfg.data)}`")

    def train_batches(self) -> TokenBatches:
        d = self.cfg.data
        return TokenBatches(self.dataset / "train.bin", d.seq_len, d.batch_size, self.cfg.seed,
                            rank=self.dist.rank, world_size=self.dist.world_size)

    def build_model(self) -> Transformer:
        return Transformer(self.cfg.model)

    def tokens(self, x: torch.Tensor) -> int:
        return x.numel()  # x: (B, T) token ids

    def stats_input(self) -> torch.Tensor:
        seq, n = self.cfg.data.seq_len, self.stats_rows
        x, _ = next(eval_windows(self.dataset / "val.bin", seq, n, n * seq))
        return x  # (n, seq_len)

    def evaluate(self, model: Transformer, split: str) -> float | None:
        """Mean next-token loss over the first train.eval_tokens tokens of `split`; under torchrun
        each process takes some of the windows."""
        path = self.dataset / f"{split}.bin"
        if not path.exists():
            return None
        seq, device = self.cfg.data.seq_len, self.dist.device
        batches = list(eval_windows(path, seq, max(1, 8192 // seq), self.cfg.train.eval_tokens))
        total, count = 0.0, 0
        with evaluating(model, self.cfg.train.precision, device):
            for i, counted in self.dist.share(len(batches)):
                x, y = batches[i]
                loss = model(x.to(device), y.to(device), logits=False).loss
                if counted:
                    total, count = total + loss.item() * y.numel(), count + y.numel()
        total, count = self.dist.sum([total, count])
        return total / count

    def scores(self, model: Transformer, diverged: bool) -> dict:
        val, val_bbc = (None, None) if diverged else (self.evaluate(model, "val"), self.evaluate(model, "val_bbc"))
        return {"val_loss": val, "val_ppl": _ppl(val), "val_bbc_loss": val_bbc, "val_bbc_ppl": _ppl(val_bbc)}

    def summary(self, final: dict) -> str:
        return f"val ppl {_shown(final['val_ppl'], '.2f')}"


class FineTuning(Pretraining):
    """Supervised fine-tuning: from the weights of finetune.base (a model of this run's model
    settings), on batches of the instruction mix (`cod.data.instructions`); validated on text as
    pre-training is."""

    def __init__(self, cfg: RunConfig, dist: Dist):
        super().__init__(cfg, dist)
        if not Path(cfg.finetune.base).is_file():
            from cod.records.results import weights_command  # lazy: pandas, for this message only

            raise FileNotFoundError(f"finetune.base={cfg.finetune.base} not found: "
                                    f"`{weights_command(cfg.finetune.base)}` trains it")

    def train_batches(self) -> InstructionBatches:
        return InstructionBatches(self.cfg, load_tokenizer(self.dataset), self.dist.rank, self.dist.world_size)

    def start(self, trainer: Trainer) -> None:
        trainer.load_base()

    def provenance(self, identity: dict | None) -> dict:
        return {"base": identity and identity["base"]}  # the digest of the base weights (`cod.train.fingerprint`)


class ImageClassification(Task):
    """A Vision Transformer (`cod.model.vision`) on shuffled training images (`cod.data.images`); the
    class loss and top-1 accuracy over all validation and test images."""

    EVAL_IMAGES = 500  # images per forward pass of an evaluation

    def __init__(self, cfg: RunConfig, dist: Dist):
        super().__init__(cfg, dist)
        self.images = load_images(cfg.vision)  # split -> Images

    def train_batches(self) -> ImageBatches:
        return ImageBatches(self.images["train"], self.cfg.data.batch_size, self.cfg.seed,
                            rank=self.dist.rank, world_size=self.dist.world_size)

    def build_model(self) -> VisionTransformer:
        return VisionTransformer(self.cfg.model, self.cfg.vision)

    def tokens(self, x: torch.Tensor) -> int:
        return len(x) * self.cfg.data.seq_len  # x: (B, C, H, W), an image is seq_len tokens

    def stats_input(self) -> torch.Tensor:
        x, _ = self.images["val"].tensors(slice(0, self.stats_rows))
        return x  # (n, C, H, W)

    def evaluate(self, model: Transformer, split: str) -> float | None:
        return self.classify(model, split)[0] if split in self.images else None

    def classify(self, model: Transformer, split: str) -> tuple[float, float]:
        """Mean class loss and top-1 accuracy over every image of `split` (val, test); under
        torchrun each process takes some of the chunks."""
        images, loss, correct = self.images[split], 0.0, 0
        with evaluating(model, self.cfg.train.precision, self.dist.device):
            for i, counted in self.dist.share(-(-len(images) // self.EVAL_IMAGES)):
                rows = slice(i * self.EVAL_IMAGES, (i + 1) * self.EVAL_IMAGES)
                x, y = (t.to(self.dist.device) for t in images.tensors(rows))
                out = model(x, y)
                if counted:
                    loss, correct = loss + out.loss.item() * len(y), correct + (out.logits.argmax(-1) == y).sum().item()
        loss, correct = self.dist.sum([loss, correct])
        return loss / len(images), correct / len(images)

    def scores(self, model: Transformer, diverged: bool) -> dict:
        (val, val_acc), (test, test_acc) = ((None, None), (None, None)) if diverged else \
            (self.classify(model, "val"), self.classify(model, "test"))
        return {"val_loss": val, "val_ppl": None, "val_bbc_loss": None, "val_bbc_ppl": None,
                "val_acc": val_acc, "test_loss": test, "test_acc": test_acc}

    def summary(self, final: dict) -> str:
        return f"val acc {_shown(final['val_acc'], '.4f')}, test acc {_shown(final['test_acc'], '.4f')}"


def task_of(cfg: RunConfig, dist: Dist) -> Task:
    """The kind of run `cfg` asks for: image classification where vision.dataset is set,
    fine-tuning where finetune.base is, else language-model pre-training."""
    if cfg.vision.dataset != ImageSet.NONE:
        if cfg.finetune.base:
            raise ConfigError(f"finetune.base={cfg.finetune.base} with vision.dataset={cfg.vision.dataset}: "
                              "fine-tuning starts from a language model; allowed: finetune.base=''")
        return ImageClassification(cfg, dist)
    return FineTuning(cfg, dist) if cfg.finetune.base else Pretraining(cfg, dist)


# ----------------------------------------------------------------------------- side jobs


@dataclass(frozen=True)
class Reading:
    """One optimiser step's numbers, once read back from the device."""

    step: int  # the step taken (1-based)
    tokens: int  # input tokens seen after it, over all processes
    loss: float  # the mean training loss of its batch, over all processes
    grad_norm: float  # the gradient norm before clipping


class Callback:
    """A side job of the training loop (`Trainer.fit`). The loop calls each callback's hooks, in
    the order of `Trainer.callbacks`:

        start(trainer)          once, before this session's first step
        read(trainer, reading)  for every step, in order, once its loss is read back from the device
        due(trainer)            after every step (`trainer.step` is the step just taken): whether
                                `run` follows; on a GPU, a step at which some job is due is also
                                one whose loss (and those before it) the loop reads back
        run(trainer)            the job itself, after that read-back
        end(trainer)            once, when the run is over (finished or raised)

    Every hook does nothing unless overridden. A job may end the run early (`Trainer.stop`); the
    jobs due at the same step after it do not run. Under torchrun every process calls the hooks
    and `due` must answer alike on all of them (the jobs' collectives need every process)."""

    def start(self, trainer: Trainer) -> None:
        pass

    def read(self, trainer: Trainer, reading: Reading) -> None:
        pass

    def due(self, trainer: Trainer) -> bool:
        return False

    def run(self, trainer: Trainer) -> None:
        pass

    def end(self, trainer: Trainer) -> None:
        pass


class Periodic(Callback):
    """A side job due every `every` steps."""

    def __init__(self, every: int):
        self.every = every

    def due(self, trainer: Trainer) -> bool:
        return trainer.step % self.every == 0


class DivergenceWatch(Callback):
    """Ends the run as diverged at a loss that is not finite, or after `patience` losses above
    `limit` in a row (train.diverge_loss, train.diverge_patience). `bad_checks`, the losses above
    the limit so far in a row, goes into checkpoints."""

    def __init__(self, limit: float, patience: int):
        self.limit, self.patience = limit, patience
        self.bad_checks = 0

    def read(self, trainer: Trainer, reading: Reading) -> None:
        if math.isfinite(reading.loss) and reading.loss <= self.limit:
            self.bad_checks = 0
            return
        self.bad_checks += 1
        if not math.isfinite(reading.loss) or self.bad_checks >= self.patience:
            trainer.say(f"diverged at step {reading.step} (loss {reading.loss}); recorded, not raised")
            trainer.stop("diverged", reading.step)


class History(Periodic):
    """A row of history.jsonl and a progress line every `every` steps (train.log_every), at the
    last step and at the step a run diverged: loss, learning rate, gradient norm, tokens, speed,
    wall time and, for a mixture of experts, its routing (`Trainer.routing_row`). Due at its
    steps only so that the loop reads their losses back (`read` writes the rows)."""

    def read(self, trainer: Trainer, reading: Reading) -> None:
        step, steps = reading.step, trainer.cfg.train.steps
        if step % self.every and step != steps and trainer.diverged_at != step:
            return
        speed, lr = trainer.tokens_per_s(), lr_at(step - 1, trainer.cfg)
        trainer.record({"step": step, "loss": _finite(reading.loss), "lr": lr, "grad_norm": _finite(reading.grad_norm),
                        "tokens": reading.tokens, "tokens_per_s": round(speed, 1), "wall_s": round(trainer.wall_s(), 1),
                        **trainer.routing_row()})
        eta = (steps - step) * reading.tokens / step / max(speed, 1e-9)
        trainer.say(f"step {step:>6}/{steps} loss {reading.loss:7.4f} lr {lr:.2e} "
                    f"gnorm {reading.grad_norm:7.3f} {speed:8.0f} tok/s eta {_duration(eta)}")


class Statistics(Periodic):
    """Per-layer variances (`cod.metrics.variance`) on the fixed inputs `batch` (the task's
    `stats_input`, on the model's device) every `every` steps (train.stats_every) and at step 0 of
    a run that starts afresh; under torchrun each process takes some of the rows."""

    def __init__(self, every: int, batch: torch.Tensor):
        super().__init__(every)
        self.batch = batch

    def start(self, trainer: Trainer) -> None:
        if trainer.fresh:
            self.run(trainer)

    def run(self, trainer: Trainer) -> None:
        batch, dist = self.batch, trainer.dist
        if dist.world_size > 1:
            rows = [i for i, counted in dist.share(len(batch)) if counted]
            batch = batch[rows] if rows else batch[:1]  # a process without rows still joins FSDP's gathers
        with evaluating(trainer.model, trainer.cfg.train.precision, dist.device):
            variances = layer_variances(trainer.model, batch)  # name -> one value per block
        if dist.world_size > 1:  # the mean over processes, weighted by their rows
            names = list(variances)
            sums = dist.sum([len(rows) * v for name in names for v in variances[name]] + [len(rows)])
            n = len(trainer.model.blocks)
            variances = {name: [s / sums[-1] for s in sums[k * n:(k + 1) * n]] for k, name in enumerate(names)}
        trainer.record({"step": trainer.step, **variances})


class Validation(Periodic):
    """The validation loss (the task's `evaluate` on val) every `every` steps (train.eval_every)."""

    def run(self, trainer: Trainer) -> None:
        trainer.record({"step": trainer.step, "val_loss": trainer.task.evaluate(trainer.model, "val")})


class Checkpoints(Periodic):
    """ckpt.pt every `every` steps (train.ckpt_every)."""

    def run(self, trainer: Trainer) -> None:
        trainer.save_checkpoint()


class Deadline(Callback):
    """Ends the run as stopped after the step during which time.monotonic() passed `at` (a time
    budget, as `cod.tools.gpu_lease` gives its runs): ckpt.pt is written, so the same run started again
    resumes, and the run finishes (final.json, model.pt) with what it has learnt. One process only."""

    def __init__(self, at: float):
        self.at = at

    def due(self, trainer: Trainer) -> bool:
        return time.monotonic() >= self.at and trainer.step < trainer.cfg.train.steps

    def run(self, trainer: Trainer) -> None:
        trainer.say(f"time budget spent: stopped at step {trainer.step}")
        if trainer.checkpoint_step != trainer.step:
            trainer.save_checkpoint()
        trainer.stop("stopped", trainer.step)


class Interrupted(KeyboardInterrupt):
    """Training stopped by signal `signum` after step `step` of `steps`, its checkpoint written."""

    def __init__(self, signum: int, step: int, steps: int, checkpoint: Path):
        super().__init__(f"{signal.Signals(signum).name} at step {step} of {steps}: checkpoint in {checkpoint}")
        self.signum, self.step = signum, step


class SignalStop(Callback):
    """While the run trains, the first SIGINT (Ctrl-C) or SIGTERM ends the step under way; then
    ckpt.pt is written and `Interrupted` raised. That first signal gives the signals back to their
    previous handlers, so a second one stops at once. One process only: under torchrun the signals
    act as usual."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.signum: int | None = None  # the signal received, once one is
        self.previous: dict[int, Any] = {}  # signal -> the handler it had before `start`

    def start(self, trainer: Trainer) -> None:
        self.previous = {signum: signal.signal(signum, self._received) for signum in self.SIGNALS}

    def _received(self, signum: int, frame: Any) -> None:
        self.signum = signum
        self._restore()

    def due(self, trainer: Trainer) -> bool:
        return self.signum is not None and trainer.step < trainer.cfg.train.steps

    def run(self, trainer: Trainer) -> None:
        if trainer.checkpoint_step != trainer.step:
            trainer.save_checkpoint()
        raise Interrupted(self.signum, trainer.step, trainer.cfg.train.steps, trainer.weights / "ckpt.pt")

    def end(self, trainer: Trainer) -> None:
        self._restore()

    def _restore(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        self.previous = {}


# ----------------------------------------------------------------------------- trainer


class Recomputed(nn.Module):
    """A block whose activations are recomputed in the backward pass instead of stored
    (activation checkpointing); passed in the model's `order=`, so no weights are copied."""

    def __init__(self, block: nn.Module, rotary: nn.Module):
        super().__init__()
        self.block, self.rotary = block, rotary

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return checkpoint(self._run, x, use_reentrant=False)

    def _run(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x, self.rotary(x.shape[1]))[0]


class Trainer:
    """One run: the loop and what every kind of run shares (schedule, checkpoints, exact resume);
    what differs lives in `task` (`task_of`), the side jobs in `callbacks` (`Callback`).

    `distributed=False` ignores torchrun's environment; `quiet` prints nothing; `identity`
    (`cod.train.fingerprint.describe`) is recorded in checkpoints and final.json, and a checkpoint
    resumes only under the identity it was written with (none: never). `callbacks` are side jobs
    of the caller's, run after those of the settings; `deadline`, a time.monotonic(), stops the
    run after the step during which it passes (`Deadline`); `stop_on_signals` stops it with a
    checkpoint at the first SIGINT or SIGTERM (`SignalStop`, one process only).
    `read_back_every_step` reads every step's loss back at once; by default only on the CPU, where
    it is free (`fit`)."""

    def __init__(self, cfg: RunConfig, out: Path, weights: Path | None = None, name: str | None = None,
                 device: str | None = None, distributed: bool = True, quiet: bool = False,
                 identity: dict | None = None, callbacks: Sequence[Callback] = (), deadline: float | None = None,
                 stop_on_signals: bool = False, read_back_every_step: bool | None = None):
        self.cfg, self.out = cfg, Path(out)
        self.weights = Path(weights) if weights else self.out
        self.name = name or self.out.name
        self.quiet = quiet
        self.identity = identity
        self.dist = Dist(device, distributed)
        torch.set_num_threads(cfg.train.threads)
        keep_freed_memory()  # no page faults on every step's activations (cod.train.host)
        torch.manual_seed(cfg.seed)
        np.random.seed(cfg.seed)
        self.task = task_of(cfg, self.dist)
        self.batches = self.task.train_batches()
        self.model = self.task.build_model().to(self.dist.device)
        self.fsdp = self.dist.world_size > 1 and cfg.train.parallel == Parallel.FSDP
        self.net = self._distributed(self.model)
        if cfg.train.compile:
            self.net = torch.compile(self.net)
        self.order = [Recomputed(block, self.model.rotary) for block in self.model.blocks] if cfg.train.recompute \
            else None
        self.optimizer = adamw(self.model, cfg.optim)
        self.step = 0  # optimiser steps taken
        self.tokens = 0  # input tokens seen, padding included, summed over processes
        self.routing: dict | None = None  # MoE: the last step's auxiliary losses and expert loads (`step_on_device`)
        self.fresh = True  # whether this session started the run at step 0 (`fit`: no checkpoint resumed)
        self.stopped: tuple[str, int] | None = None  # (final.json's status, step) once a side job ended the run
        self.checkpoint_step: int | None = None  # the step of the last ckpt.pt this session wrote
        self.last_loss = float("nan")  # the training loss of the last step read back
        self.wall_before = 0.0  # seconds trained by earlier sessions of this run (from the checkpoint)
        self.started: float | None = None  # time.perf_counter() when this session's steps began
        self.tokens_at_start = 0  # `tokens` when they began
        self.read_back_every_step = self.dist.device.type == "cpu" if read_back_every_step is None \
            else read_back_every_step
        self.divergence = DivergenceWatch(cfg.train.diverge_loss, cfg.train.diverge_patience)
        self.callbacks = self._side_jobs(callbacks, deadline, stop_on_signals)

    def _side_jobs(self, extra: Sequence[Callback], deadline: float | None, stop_on_signals: bool) -> list[Callback]:
        """The loop's callbacks in the order they run: the two that read every step (divergence
        first, so that the diverged step is logged), those of the settings, the caller's, and the
        ones that stop the run last, so that every job due at a step runs before a stop there."""
        t = self.cfg.train
        jobs: list[Callback] = [self.divergence, History(t.log_every)]
        if t.stats_every:
            jobs.append(Statistics(t.stats_every, self.task.stats_input().to(self.dist.device)))
        if t.eval_every:
            jobs.append(Validation(t.eval_every))
        if t.ckpt_every:
            jobs.append(Checkpoints(t.ckpt_every))
        jobs += extra
        if deadline is not None:
            if self.dist.world_size > 1:
                raise ValueError("a deadline stops one process, not a run under torchrun: give none")
            jobs.append(Deadline(deadline))
        if stop_on_signals and self.dist.world_size == 1:
            jobs.append(SignalStop())
        return jobs

    def _distributed(self, model: nn.Module) -> nn.Module:
        """What the training step calls: the model itself, DDP around it, or the model sharded in place.

        DDP does not broadcast buffers on every forward: the only ones are the rotary tables, which
        every process computes identically. FSDP under bf16 gathers the weights in bf16 and reduces
        the gradients in fp32 (`MixedPrecisionPolicy`); the fp32 weights stay sharded."""
        if self.dist.world_size == 1:
            return model
        if not self.fsdp:
            return nn.parallel.DistributedDataParallel(model, broadcast_buffers=False)
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard  # lazy: seconds to import; FSDP only

        options = {}
        if self.cfg.train.precision == Precision.BF16:
            options["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for block in model.blocks:
            fully_shard(block, **options)
        return fully_shard(model, **options)

    def _gradient_sync(self, sync: bool):
        """Context of one micro-step's forward and backward: gradients are averaged over processes
        only when `sync` (the step's last micro-batch)."""
        if self.fsdp:
            self.model.set_requires_gradient_sync(sync)
        elif self.dist.world_size > 1 and not sync:
            return self.net.no_sync()
        return nullcontext()

    # .................................................................. bookkeeping
    def record(self, row: dict) -> None:
        """Append `row` to history.jsonl (process 0)."""
        if self.dist.main:
            with open(self.out / "history.jsonl", "a") as f:
                f.write(history_line(row))

    def say(self, text: str) -> None:
        """Print a progress line, labelled with the run's name (process 0, unless quiet)."""
        if self.dist.main and not self.quiet:
            print(f"[{self.name}] {text}", flush=True)

    def wall_s(self) -> float:
        """Seconds of training so far, over every session of the run."""
        return self.wall_before + (0.0 if self.started is None else time.perf_counter() - self.started)

    def tokens_per_s(self) -> float:
        """Input tokens a second over this session's steps so far."""
        elapsed = 0.0 if self.started is None else time.perf_counter() - self.started
        return (self.tokens - self.tokens_at_start) / max(elapsed, 1e-9)

    def stop(self, status: str, step: int) -> None:
        """End the run after the step under way (`fit` takes no further step) with final.json's
        `status`: "diverged" (at `step`, the step judged so) or "stopped" (at `step`)."""
        self.stopped = (status, step)

    @property
    def diverged_at(self) -> int | None:
        """The step at which the run diverged; None while it has not."""
        return self.stopped[1] if self.stopped and self.stopped[0] == "diverged" else None

    # .................................................................. checkpoints
    def full_state(self, optimizer: bool = True) -> tuple[dict, dict | None]:
        """Model and (unless optimizer=False) optimiser state, whole. FSDP's shards are gathered
        on process 0 (every process must call; the others get empty dicts)."""
        if not self.fsdp:
            return self.model.state_dict(), self.optimizer.state_dict() if optimizer else None
        # lazy: seconds to import; FSDP only
        from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                             get_optimizer_state_dict)

        whole = StateDictOptions(full_state_dict=True, cpu_offload=True)
        return (get_model_state_dict(self.model, options=whole),
                get_optimizer_state_dict(self.model, self.optimizer, options=whole) if optimizer else None)

    def load_full_state(self, model: dict, optimizer: dict | None) -> None:
        """Inverse of `full_state`; optimizer=None loads the weights only. Under FSDP only process
        0's dicts are read (the others pass empty ones): it broadcasts each tensor in turn and every
        process keeps its shard, so no process holds the whole model and AdamW state."""
        if not self.fsdp:
            self.model.load_state_dict(model)
            if optimizer is not None:
                self.optimizer.load_state_dict(optimizer)
            return
        # lazy: seconds to import; FSDP only
        from torch.distributed.checkpoint.state_dict import (StateDictOptions, set_model_state_dict,
                                                             set_optimizer_state_dict)

        whole = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
        set_model_state_dict(self.model, model if self.dist.main else {}, options=whole)
        if optimizer is not None:
            set_optimizer_state_dict(self.model, self.optimizer, optimizer if self.dist.main else {}, options=whole)

    def read_state(self, path: Path, keys: Sequence[str]) -> tuple[dict, dict]:
        """A saved state (checkpoint or model.pt) and its small entries `keys`, on every process.
        It is read on the CPU, whatever the device (a GPU's tensors would carry the RNG state onto
        it), memory-mapped; under FSDP by process 0 alone, which broadcasts `keys` (the others get
        an empty state: `load_full_state` broadcasts the weights)."""
        reads = self.dist.main or not self.fsdp
        state = torch.load(path, map_location="cpu", weights_only=False, mmap=True) if reads else {}
        head = {key: state.get(key) for key in keys}
        return state, self.dist.broadcast(head) if self.fsdp else head

    def save_checkpoint(self) -> None:
        """Write ckpt.pt: model, optimiser, step, tokens, divergence count, RNG state and wall time
        (every process must call: FSDP gathers the state on process 0, which writes it)."""
        model, optimizer = self.full_state()
        self.checkpoint_step = self.step
        if not self.dist.main:
            return
        state = {
            "identity": self.identity,
            "step": self.step,
            "tokens": self.tokens,
            "model": model,
            "optimizer": optimizer,
            "bad_checks": self.divergence.bad_checks,
            "rng": torch.get_rng_state(),
            "wall_s": self.wall_s(),
        }
        tmp = self.weights / "ckpt.pt.tmp"
        torch.save(state, tmp)
        os.replace(tmp, self.weights / "ckpt.pt")

    def try_resume(self) -> bool:
        """Load ckpt.pt when it was written under this run's identity; whether it was."""
        path = self.weights / "ckpt.pt"
        if not path.exists():
            self.say(f"starting from step 0 (no checkpoint at {path})")
            return False
        state, head = self.read_state(path, ("identity", "step", "tokens", "bad_checks", "rng", "wall_s"))
        if self.identity is None or head["identity"] != self.identity:
            self.say("checkpoint belongs to other settings: starting afresh")
            return False
        self.load_full_state(state.get("model", {}), state.get("optimizer", {}))
        self.step, self.divergence.bad_checks = head["step"], head["bad_checks"]
        tokens = head["tokens"]
        self.tokens = self.step * self.cfg.data.batch_size * self.cfg.data.seq_len if tokens is None else tokens
        torch.set_rng_state(head["rng"].cpu())  # the CPU generator's state: a CPU ByteTensor
        self.wall_before = head["wall_s"] or 0.0  # None: a checkpoint written before wall time was kept
        self._truncate_history(self.step)
        self.say(f"resumed from step {self.step} of {self.cfg.train.steps} ({path}, {self.wall_before:.0f}s trained)")
        return True

    def _truncate_history(self, step: int) -> None:
        path = self.out / "history.jsonl"
        if self.dist.main and path.exists():
            rows = [line for line in path.read_text().splitlines() if json.loads(line)["step"] <= step]
            path.write_text("".join(r + "\n" for r in rows))

    def load_base(self) -> None:
        """Start from the weights of finetune.base, a model of exactly this run's model settings."""
        state, head = self.read_state(Path(self.cfg.finetune.base), ("config",))
        if run_config_from_dict(head["config"]).model != self.cfg.model:
            raise ConfigError(f"finetune.base={self.cfg.finetune.base} has other model settings than this run; "
                              "give the run the base's model.* settings")
        self.load_full_state(state.get("model", {}), None)

    # .................................................................. training
    def train_step(self) -> tuple[float, float]:
        """Take one optimiser step (`step_on_device`); its loss and gradient norm as numbers."""
        loss, grad_norm = self.step_on_device()
        return loss.item(), grad_norm.item()

    def step_on_device(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Take one optimiser step over this process's share of the batch, in micro-batches of
        train.micro_batch: each micro-batch's mean loss is weighted by its share of the counted
        targets, so loss and gradients equal those of one pass over the whole share. Under
        torchrun the targets are counted over all processes (padding may leave them unequal), so
        that every process optimises its part of the mean over the global batch. A mixture of
        experts' weighted auxiliary losses (`ModelOutput.aux_loss`) are added to what is optimised,
        not to the returned loss (the cross-entropy); its unweighted ones and expert loads (token
        assignments per expert, summed over micro-batches) are kept in `self.routing`. The loss
        (this process's part, float64) and the gradient norm stay on the device: reading them
        back waits for the GPU, which `fit` does only at steps that some side job is due. The
        step count advances by one."""
        x, y = self.batches.batch(self.step)
        self.tokens += self.task.tokens(x) * self.dist.world_size
        lr = lr_at(self.step, self.cfg)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        counted = (y != IGNORE_INDEX).sum().item()  # y is on the host: no wait for the device
        processes = self.dist.world_size  # gradients are averaged over processes: scaled back by their number
        if processes > 1:
            counted = int(self.dist.host_sum([counted])[0])
        counted = max(1, counted)
        size = self.cfg.train.micro_batch or len(x)
        pieces = list(zip(x.split(size), y.split(size)))
        loss = torch.zeros((), dtype=torch.float64, device=self.dist.device)
        self.routing = None
        for i, (xm, ym) in enumerate(pieces):
            share = (ym != IGNORE_INDEX).sum().item() * processes / counted
            xm, ym = xm.to(self.dist.device, non_blocking=True), ym.to(self.dist.device, non_blocking=True)
            with self._gradient_sync(i == len(pieces) - 1):
                with autocast(self.cfg.train.precision, self.dist.device):
                    out = self.net(xm, ym, logits=False, order=self.order)
                part = out.loss
                objective = part if out.aux_loss is None else part + out.aux_loss
                (objective * share).backward()  # share is exactly 1.0 for a whole batch
            loss += part.detach().double() * share  # float64 as Python's numbers: the sums of .item()
            if out.routing:
                self._add_routing(out.routing, share)
        clip = self.cfg.optim.grad_clip or float("inf")
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip)
        self.optimizer.step()
        self.step += 1
        return loss, _whole(grad_norm).detach()

    def _add_routing(self, routing: dict, share: float) -> None:
        """Add one micro-batch's routing to the step's: losses weighted by share, loads as counts
        (float64, on the device until a history row reads them)."""
        part = {"moe_balance_loss": routing["balance_loss"].detach().double() * share,
                "moe_z_loss": routing["z_loss"].detach().double() * share,
                "moe_load": routing["counts"].detach().double()}
        if self.routing is None:
            self.routing = part
        else:
            self.routing = {k: self.routing[k] + v for k, v in part.items()}

    def routing_row(self) -> dict:
        """The last step's MoE fields of a history row, over all processes: the mean auxiliary losses
        (unweighted) and, per block run, each expert's share of the token assignments. Empty for a
        dense model. Under torchrun every process must call it (it sums over them)."""
        if self.routing is None:
            return {}
        r = self.routing
        balance, z = (self.dist.mean(r[k].item()) for k in ("moe_balance_loss", "moe_z_loss"))
        counts = torch.tensor(self.dist.sum(r["moe_load"].flatten().tolist()), dtype=torch.float64)
        counts = counts.view(r["moe_load"].shape)
        load = counts / counts.sum(-1, keepdim=True)
        return {"moe_balance_loss": _finite(balance), "moe_z_loss": _finite(z), "moe_load": load.tolist()}

    # .................................................................. the loop
    def fit(self) -> dict:
        """Train to train.steps, or until a side job ends the run (a divergence, the deadline; a
        signal raises Interrupted), and finish: final.json and model.pt.

        On a GPU a step's loss and gradient norm stay there until a step at which some side job is
        due (or the last): the pending ones are then read back at once and every callback reads
        them in order, so a run that diverges in between trains on to that step. On the CPU every
        step is read back at once."""
        steps = self.cfg.train.steps
        self._begin()
        try:
            for callback in self.callbacks:
                callback.start(self)
            self.started, self.tokens_at_start = time.perf_counter(), self.tokens
            self.model.train()
            pending: list[tuple[int, int, torch.Tensor]] = []  # (step, tokens, [loss, grad norm]) not read back yet
            while self.step < steps and self.stopped is None:
                loss, grad_norm = self.step_on_device()  # self.step is now the step just taken
                pending.append((self.step, self.tokens, torch.stack([self.dist.mean_tensor(loss),
                                                                     grad_norm.to(torch.float64)])))
                due = [callback for callback in self.callbacks if callback.due(self)]
                if due or self.read_back_every_step or self.step == steps:
                    self._read_back(pending)
                    pending = []
                    for callback in due:
                        if self.stopped is None:  # a run that diverged (or stopped) runs no further job
                            callback.run(self)
            return self._finish(time.perf_counter() - self.started)
        finally:
            for callback in self.callbacks:
                callback.end(self)

    def _begin(self) -> None:
        """Resume this identity's checkpoint, or start afresh: a new history, the task's start (a
        fine-tuning run loads its base) and config.json."""
        self.out.mkdir(parents=True, exist_ok=True)
        self.weights.mkdir(parents=True, exist_ok=True)
        self.fresh = not self.try_resume()
        if self.fresh:
            if self.dist.main:
                (self.out / "history.jsonl").unlink(missing_ok=True)
            self.task.start(self)
            if self.dist.main:
                (self.out / "config.json").write_text(json.dumps(self.cfg.to_dict(), indent=2) + "\n")
        self.say(f"{self.model.num_params():,} parameters, {self.cfg.train.steps} steps of "
                 f"{self.cfg.data.batch_size}x{self.cfg.data.seq_len} tokens on {self.dist.device} "
                 f"x{self.dist.world_size}")

    def _read_back(self, pending: list[tuple[int, int, torch.Tensor]]) -> None:
        """Read the pending steps' losses and gradient norms back (the one wait for the device)
        and give each step's `Reading` to every callback, in step order, up to a step that ends
        the run (a divergence)."""
        values = torch.stack([v for _, _, v in pending]).tolist()  # (steps, 2): loss, grad norm
        for (step, tokens, _), (loss, grad_norm) in zip(pending, values):
            self.last_loss = loss
            reading = Reading(step, tokens, loss, grad_norm)
            for callback in self.callbacks:
                callback.read(self, reading)
            if self.stopped is not None:
                break

    def _finish(self, elapsed: float) -> dict:
        """Score the model (the task's scores), write final.json and model.pt, and drop the
        checkpoint, unless the deadline stopped the run (it can go on from there); `elapsed` is
        this session's seconds of training."""
        status = self.stopped[0] if self.stopped else "completed"
        final = {
            "name": self.name,
            "status": status,
            "diverged_at": self.diverged_at,
            "steps": self.step,
            "tokens": self.tokens,
            "final_train_loss": _finite(self.last_loss),
            **self.task.scores(self.model, diverged=bool(self.diverged_at)),
            "params": self.model.num_params(),
            "params_non_embedding": self.model.num_params(embeddings=False),
            "seed": self.cfg.seed,
            "behaviour": self.identity and self.identity["behaviour"],
            **self.task.provenance(self.identity),
            "wall_s": round(self.wall_before + elapsed, 1),
            "tokens_per_s": round((self.tokens - self.tokens_at_start) / max(elapsed, 1e-9), 1),
            "device": str(self.dist.device),
            "world_size": self.dist.world_size,
        }
        model, _ = self.full_state(optimizer=False)  # the weights alone: AdamW's state is not kept
        if self.dist.main:
            torch.save({"config": self.cfg.to_dict(), "model": model}, self.weights / "model.pt")
            if status != "stopped":
                (self.weights / "ckpt.pt").unlink(missing_ok=True)
            (self.out / "final.json").write_text(json.dumps(final, indent=2) + "\n")
            self.say(f"{status}: {self.task.summary(final)}, {final['tokens_per_s']:.0f} tok/s, "
                     f"{final['wall_s']:.0f}s")
        return final


def _whole(t: torch.Tensor) -> torch.Tensor:
    """A plain tensor of `t`, gathering it if it is an FSDP DTensor (a gradient norm)."""
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _ppl(loss: float | None) -> float | None:
    return None if loss is None else math.exp(min(loss, 50.0))


def _shown(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s"
