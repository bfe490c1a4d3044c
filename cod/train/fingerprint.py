"""A run's identity: its settings plus what the code does with them.

A finished run is kept (not retrained) when both still match:

- **settings**: every resolved setting (`config.json`), except cosmetic ones. A setting added
  to the code after the run was made matches when it sits at its default, so adding an option
  (a new norm, an MoE switch) leaves existing runs alone.
- **behaviour**: a hash of what the real trainer computes on a *probe* of the run: the same
  architecture, depth, initialisation, optimiser, schedule, clipping, statistics and
  evaluation, shrunk in width, vocabulary and length, trained for a few steps on synthetic
  tokens, in float64 on the CPU. Everything the probe writes (losses, learning rates,
  gradient norms, per-layer variances, final metrics, weight statistics) is rounded to
  `DIGITS` significant digits and hashed, so the hash is the same on any machine and
  changes when the code computes something else for this run. Code that this run does not
  execute (another norm's branch, a new FFN) cannot change it.

The list of code that feeds the fingerprint is therefore nowhere: it is whatever the probe runs.

A fine-tuning run (`finetune.base` set) is probed as the pre-training of its model (the probe
has no instruction mix), and its identity adds the digest of the weights it starts from:
retraining the base model makes its fine-tuned runs stale. Where the base weights are absent
(a fresh clone), the digest cannot be checked and the rest decides.

A vision run (`vision.dataset` set) is probed on synthetic images of its dataset's shape and
classes, at its own patch size and sequence length.

The trainer is handed a run's identity (`Trainer(cfg, out, identity=describe(cfg))`, as
`cod.train.run` does): it records it in checkpoints and final.json and resumes only a checkpoint of
the same identity. It never imports this module, which runs it.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from cod.config import DataSource, ImageSet, Precision, RunConfig, Tokenizer, VisionConfig, flatten, run_config
from cod.data.images import FILES, write_idx
from cod.train.trainer import Trainer

COSMETIC = ("train.log_every", "train.threads", "train.recompute")  # settings that never change a run's result
DIGITS = 6  # significant digits kept of every probed number (float64 noise is ~1e-15)
PROBE_VOCAB = 272  # smallest BPE-sized vocabulary (>= 260), a multiple of 16
PROBE_STEPS = 10  # long enough for a warmup step and a cosine tail at warmup_frac 0.1
TIMINGS = ("tokens_per_s", "wall_s")  # fields that measure the machine, not the run


def settings(cfg: RunConfig) -> dict[str, Any]:
    """The run's settings as dotted keys, cosmetic ones dropped."""
    flat = flatten(cfg.to_dict())
    return {k: v for k, v in flat.items() if k not in COSMETIC}


@lru_cache(maxsize=1)
def _defaults() -> dict[str, Any]:
    return settings(RunConfig())


def same_settings(stored: Mapping[str, Any], cfg: RunConfig) -> bool:
    """True when `stored` (a run's config.json) describes the run `cfg` would make.

    A key the stored run lacks matches when `cfg` holds that setting's default (the setting
    was added to the code later); a key the code no longer knows never matches."""
    stored, current = {k: v for k, v in flatten(stored).items() if k not in COSMETIC}, settings(cfg)
    for key in stored.keys() | current.keys():
        if key not in current:
            return False
        if key not in stored:
            if current[key] != _defaults().get(key, object()):
                return False
        elif stored[key] != current[key]:
            return False
    return True


def probe_config(cfg: RunConfig) -> RunConfig:
    """`cfg` shrunk to a probe: same architecture and recipe, tiny width and data, seed 0."""
    m = cfg.model
    width = 4 * m.n_heads  # head dimension 4: even, as RoPE needs
    changes = {
        "model.d_model": width,
        "model.vocab_size": PROBE_VOCAB,
        "model.max_seq_len": 16,
        "model.d_ff": None if m.d_ff is None else max(8, round(m.d_ff * width / m.d_model)),
        "data.source": DataSource.OFFLINE_MIX.value, "data.tokenizer": Tokenizer.BPE.value,
        "data.vocab_size": PROBE_VOCAB, "data.seq_len": 8, "data.batch_size": 4,
        "train.steps": PROBE_STEPS, "train.log_every": 1,
        "train.stats_every": 5 if cfg.train.stats_every else 0, "train.stats_tokens": 16,
        "train.eval_every": 5 if cfg.train.eval_every else 0, "train.eval_tokens": 64,
        "train.ckpt_every": 0, "train.precision": Precision.FP32.value, "train.threads": 1, "seed": 0,
        "train.compile": False,  # an execution detail, and compiling the probe would cost a minute
        "finetune.base": "",
        # a run stopped early inside a longer schedule: the probe stops as early inside one as long
        "optim.schedule_steps": math.ceil(PROBE_STEPS * cfg.optim.schedule_steps / cfg.train.steps),
    }
    if cfg.vision.dataset != ImageSet.NONE:  # a ViT's sequence is its image's tokens: kept
        changes.update({"data.seq_len": cfg.data.seq_len, "model.max_seq_len": cfg.model.max_seq_len})
    return run_config(settings(cfg), changes)


def behaviour(cfg: RunConfig) -> str:
    """Hash of what the trainer computes on the probe of `cfg` (cached per probe)."""
    return _probe_hash(json.dumps(settings(probe_config(cfg)), sort_keys=True))


@lru_cache(maxsize=256)
def _probe_hash(probe_settings: str) -> str:
    cfg = run_config(json.loads(probe_settings))
    previous_dtype, previous_threads = torch.get_default_dtype(), torch.get_num_threads()
    rng_state, np_state = torch.get_rng_state(), np.random.get_state()
    try:
        torch.set_default_dtype(torch.float64)
        with tempfile.TemporaryDirectory() as tmp:
            cfg.data.tokens_dir = str(_synthetic_tokens(Path(tmp) / "tokens"))
            if cfg.vision.dataset != ImageSet.NONE:
                cfg.vision.images_dir = str(_synthetic_images(Path(tmp) / "images", cfg.vision))
            out = Path(tmp) / "run"
            trainer = Trainer(cfg, out, device="cpu", distributed=False, quiet=True)
            final = trainer.fit()
            history = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
            weights = {name: _summary(p) for name, p in trainer.model.state_dict().items()}
    finally:
        torch.set_default_dtype(previous_dtype)
        torch.set_num_threads(previous_threads)
        torch.set_rng_state(rng_state)
        np.random.set_state(np_state)
    final = {k: v for k, v in final.items() if k not in (*TIMINGS, "name", "behaviour")}
    history = [{k: v for k, v in row.items() if k not in TIMINGS} for row in history]
    record = json.dumps(_rounded({"final": final, "history": history, "weights": weights}), sort_keys=True)
    return hashlib.sha256(record.encode()).hexdigest()[:16]


def _synthetic_tokens(folder: Path) -> Path:
    """A tokens_dir with bpe272/{train,val,val_bbc}.bin of fixed random tokens."""
    data = folder / f"bpe{PROBE_VOCAB}"
    data.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for split, n in (("train", 4096), ("val", 512), ("val_bbc", 512)):
        rng.integers(0, PROBE_VOCAB, n).astype(np.uint16).tofile(data / f"{split}.bin")
    (data / "meta.json").write_text(json.dumps({"dtype": "uint16", "vocab_size": PROBE_VOCAB}))
    return folder


def _synthetic_images(folder: Path, vision: VisionConfig) -> Path:
    """A folder of the dataset's four IDX files holding fixed random images and labels
    (48 training images, 4 of them validating, and 8 test images)."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for split, n in (("train", 48), ("test", 8)):
        images, labels = FILES[split]
        write_idx(folder / images, rng.integers(0, 256, (n, vision.channels, vision.side, vision.side)))
        write_idx(folder / labels, rng.integers(0, vision.n_classes, n))
    return folder


def _summary(t: torch.Tensor) -> list[float]:
    t = t.detach().double().flatten()
    return [t.sum().item(), t.abs().sum().item(), t.pow(2).sum().item(), *t[:2].tolist()]


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        if not math.isfinite(value) or value == 0.0:
            return str(value)
        return float(f"{value:.{DIGITS - 1}e}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


def base_digest(cfg: RunConfig) -> str | None:
    """SHA-256 (16 hex digits) of the weights a fine-tuning run starts from; None when the run
    pre-trains or the file is absent."""
    path = Path(cfg.finetune.base) if cfg.finetune.base else None
    if path is None or not path.is_file():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def describe(cfg: RunConfig) -> dict[str, Any]:
    """What a run records of its identity (in final.json and checkpoints)."""
    identity = {"settings": settings(cfg), "behaviour": behaviour(cfg)}
    if cfg.finetune.base:
        identity["base"] = base_digest(cfg)
    return identity


def matches(record: Mapping[str, Any] | None, cfg: RunConfig) -> bool:
    """True when `record` (from `describe`) identifies the run `cfg` would make now."""
    if not isinstance(record, Mapping):
        return False
    base = base_digest(cfg)
    return (record.get("behaviour") == behaviour(cfg) and same_settings(record.get("settings", {}), cfg)
            and (base is None or record.get("base") == base))


def is_complete(out: Path, cfg: RunConfig) -> bool:
    """True when `out` holds a finished run (completed or diverged) that `cfg` would make now:
    the same settings (`config.json`) and the same behaviour of the code."""
    final, config = Path(out) / "final.json", Path(out) / "config.json"
    if not final.exists() or not config.exists():
        return False
    result = json.loads(final.read_text())
    record = {"settings": json.loads(config.read_text()), "behaviour": result.get("behaviour"),
              "base": result.get("base")}
    return matches(record, cfg)

