"""What a profile costs: every run's status and estimated training time, from measured throughput.

    python -m cod.pipeline.experiments plan [--runs todo|all]

A run's cost is its tokens over the tokens/s of its shape, plus start-up and final evaluation.
The speed of a shape is the fastest of the profile's finished runs of that shape (they trained
two side by side, as the pipeline does, and any further load on the machine only slowed them);
a shape nobody has trained yet takes the speed of a measured shape of the same width and
vocabulary, scaled by their training FLOPs per token (`cod.model.flops`), and failing that is timed
here for a few steps (alone, so a loaded machine makes the estimate pessimistic). Planned runs (params.yaml `planned:`) are costed by the settings this code knows, and a
`cost_factor` for what it does not (an MoE step).
"""

from __future__ import annotations

import dataclasses
import io
import json
import sys
from datetime import date
from functools import lru_cache
from typing import Any

import torch

from cod.config import FFN, ModelConfig, RunConfig, run_config_from_dict
from cod.model.flops import flops_per_token
from cod.model import Transformer
from cod.runs.params import ROOT, Run, all_runs, profile_settings
from cod.paths import profile_runs
from cod.train.speed import measure

MAX_TIMED_PARAMS = 5e7  # larger shapes are not timed on a CPU (the paper profile): cost unknown here
STARTUP_S = 5.0  # a run process: imports, data, fingerprint probe
SIDE_BY_SIDE = 0.94  # a shape timed alone runs this much slower beside another run (measured on the pilot)
FORWARD_SHARE = 1 / 3  # a forward pass costs about a third of a training step per token
CPU_PROFILES = ("default", "headline")  # the profiles whose runs train on this machine


def shape_key(cfg: RunConfig) -> tuple:
    """What a run's speed depends on."""
    m, d = cfg.model, cfg.data
    return (m.d_model, m.n_layers, m.n_heads, m.kv_heads, m.ffn_width, m.vocab_size, str(m.ffn),
            d.seq_len, d.batch_size)


def measured_speeds(profile: str) -> dict[tuple, float]:
    """The fastest training tokens/s of the profile's finished runs, per shape (they ran side by
    side; other load on the machine only slows a run, so the fastest is the shape's own speed)."""
    speeds: dict[tuple, list[float]] = {}
    for final in profile_runs(profile, ROOT).glob("*/*/final.json"):
        result = json.loads(final.read_text())
        if result.get("tokens_per_s") and result.get("device") == "cpu":
            cfg = run_config_from_dict(json.loads((final.parent / "config.json").read_text()))
            speeds.setdefault(shape_key(cfg), []).append(result["tokens_per_s"])
    return {key: max(values) for key, values in speeds.items()}


def time_steps(cfg: RunConfig, steps: int = 8) -> float:
    """Training tokens/s of `cfg`'s shape on one CPU thread (`cod.train.speed.measure`), leaving
    this process's thread count and random state as they were."""
    threads, rng = torch.get_num_threads(), torch.get_rng_state()
    try:
        shape = {"model": dataclasses.asdict(cfg.model), "batch": cfg.data.batch_size, "seq": cfg.data.seq_len}
        return measure("ours", shape, steps)
    finally:
        torch.set_num_threads(threads)
        torch.set_rng_state(rng)


def scaled_speed(cfg: RunConfig, speeds: dict[tuple, float], measured: set[tuple]) -> float | None:
    """Tokens/s of a dense shape from the fastest measured dense shape of the same width, vocabulary
    and tokens a step, times the ratio of their training FLOPs per token (more layers, a longer
    sequence or fewer KV heads); None when no such shape was measured."""
    m, d = cfg.model, cfg.data
    if m.ffn == FFN.MOE:
        return None
    same = [key for key in measured if key[0] == m.d_model and key[5] == m.vocab_size
            and key[6] == str(m.ffn) and key[7] * key[8] == d.seq_len * d.batch_size]
    if not same:
        return None
    best = max(same, key=lambda key: speeds[key])
    _, layers, heads, kv_heads, ffn_width, _, _, seq_len, _ = best
    reference = dataclasses.replace(m, n_layers=layers, n_heads=heads, n_kv_heads=kv_heads, d_ff=ffn_width)
    return speeds[best] * flops_per_token(reference, seq_len) / flops_per_token(m, d.seq_len)


def timed_speed(cfg: RunConfig) -> float:
    """Tokens/s of `cfg`'s shape timed here beside nothing (NaN for shapes too large for a CPU)."""
    with torch.device("meta"):
        size = Transformer(cfg.model).num_params()
    return SIDE_BY_SIDE * time_steps(cfg) if size <= MAX_TIMED_PARAMS else float("nan")


def run_seconds(run: Run, speeds: dict[tuple, float], measured: set[tuple] = frozenset(),
                sources: dict[tuple, str] | None = None) -> float | None:
    """Estimated single-core seconds to train `run` from scratch, start-up and final evaluation
    included; None when the shape is too large to time here.

    `speeds` holds tokens/s per shape (`measured_speeds`, which already include the per-layer
    statistics logged during training); a shape missing from it is timed now and its statistics
    passes are added; `sources` records how (scaled by FLOPs or timed now)."""
    sources = {} if sources is None else sources
    cfg = run.shape_config
    key = shape_key(cfg)
    if key not in speeds:
        scaled = scaled_speed(cfg, speeds, measured)
        speeds[key] = scaled or timed_speed(cfg)
        sources[key] = "scaled by FLOPs" if scaled else "timed now"
    speed, t = speeds[key], cfg.train
    if speed != speed:
        return None
    tokens = t.steps * cfg.data.batch_size * cfg.data.seq_len
    forward_tokens = 2 * t.eval_tokens  # the final validation losses (two splits)
    if key not in measured and t.stats_every:
        forward_tokens += t.steps // t.stats_every * t.stats_tokens
    return (tokens + FORWARD_SHARE * forward_tokens) / speed * run.cost_factor + STARTUP_S


def tokens_per_parameter(run: Run) -> float:
    cfg = run.shape_config
    model = json.dumps(cfg.to_dict()["model"], sort_keys=True)
    return cfg.train.steps * cfg.data.batch_size * cfg.data.seq_len / non_embedding_params(model)


@lru_cache(maxsize=None)
def non_embedding_params(model: str) -> int:
    """Non-embedding parameters of a model (`model`: its config as JSON, `RunConfig.to_dict()["model"]`),
    built once per shape on the meta device, where initialising still costs Python calls per tensor."""
    with torch.device("meta"):
        return Transformer(ModelConfig(**json.loads(model))).num_params(embeddings=False)


def plan(params: dict[str, Any], show_runs: str | None = None, out=sys.stdout) -> dict[str, float]:
    """Print every experiment's runs, what is done and the estimated cost; returns the totals in
    hours on the profile's cores side by side (all, to_train, planned), its core-hours from scratch
    (core_hours), and its runs (runs) and those with results (with_results).

    `show_runs`: None (one line per experiment), "todo" (also every run `make repro` will train)
    or "all" (also every run)."""
    profile, jobs = params["profile"], profile_settings(params).get("jobs", 1)
    speeds = measured_speeds(profile)
    measured, sources = set(speeds), {}
    runs = all_runs(params)
    rows: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        rows.setdefault((run.planned or "now", run.experiment), []).append(run)
    print(f"profile {profile}: {len(runs)} runs, {jobs} side by side. Cost = tokens / tokens per second of one "
          "process (the fastest of this profile's finished runs of the same shape, else scaled by FLOPs from one "
          "of its width, else timed here now), plus start-up and evaluation.", file=out)
    header = f"{'experiment':<24} {'when':>5} {'runs':>5} {'done':>5} {'no weights':>10} {'to train':>9} " \
             f"{'tok/param':>10} {'core-min':>9} {'to train':>9}"
    print(header, file=out)
    totals = {"all": 0.0, "to_train": 0.0, "planned": 0.0}
    unknown, with_results = 0, 0
    for (when, experiment), group in rows.items():
        statuses = [run.status() for run in group]
        with_results += sum(status in ("done", "result only") for status in statuses)
        seconds = [run_seconds(run, speeds, measured, sources) for run in group]
        unknown += sum(s is None for s in seconds)
        cost = sum(s or 0.0 for s in seconds)
        pending = sum(s or 0.0 for s, st in zip(seconds, statuses) if st != "done")
        ratios = [tokens_per_parameter(run) for run in group]
        totals["all"] += cost
        totals["planned" if when != "now" else "to_train"] += pending
        print(f"{experiment:<24} {when:>5} {len(group):>5} {statuses.count('done'):>5} "
              f"{statuses.count('result only'):>10} {statuses.count('to train'):>9} "
              f"{min(ratios):>4.1f}-{max(ratios):<5.1f} {cost / 60:>9.1f} {pending / 60:>9.1f}", file=out)
        if show_runs:
            for run, status, s in zip(group, statuses, seconds):
                if show_runs == "todo" and status not in ("to train", "result only"):
                    continue
                speed = sources.get(shape_key(run.shape_config), "measured")
                print(f"    {run.name:<28} {status:<12} {'?' if s is None else f'{s / 60:.1f}'} core-min ({speed})",
                      file=out)
    hours = {k: v / 3600 / jobs for k, v in totals.items()}
    print(f"\nmake repro trains the runs marked 'no weights' or 'to train': about {hours['to_train']:.2f} h on "
          f"{jobs} core(s).", file=out)
    print(f"The complete profile from scratch, planned runs included: about {hours['all']:.2f} h on {jobs} core(s) "
          f"({totals['all'] / 3600:.2f} core-hours; planned runs not yet in the pipeline: {hours['planned']:.2f} h).",
          file=out)
    if unknown:
        print(f"{unknown} runs are too large to time on this machine: their cost is not included.", file=out)
    return {**hours, "core_hours": totals["all"] / 3600, "runs": len(runs), "with_results": with_results}


def measured_core_hours(profile: str) -> float:
    """Single-core hours the profile's finished runs took, from their final.json (wall time, resumes
    included; runs that shared the machine with other work count as they ran)."""
    finals = (json.loads(path.read_text()) for path in profile_runs(profile, ROOT).glob("*/*/final.json"))
    return sum(final.get("wall_s") or 0.0 for final in finals) / 3600


def record_block(params: dict[str, Any], profiles: tuple[str, ...] = CPU_PROFILES) -> str:
    """The table of what each CPU profile costs, dated (`python -m cod.pipeline.experiments plan --record`
    keeps it in runs/plan.md, which docs/measurements.md shows)."""
    rows = []
    for profile in profiles:
        settings = {**params, "profile": profile}
        totals, jobs = plan(settings, out=io.StringIO()), profile_settings(settings).get("jobs", 1)
        rows.append(f"| `{profile}` | {totals['runs']} | {totals['with_results']} | {totals['core_hours']:.1f} "
                    f"| {totals['all']:.1f} h on {jobs} cores | {measured_core_hours(profile):.1f} |")
    return "\n".join([
        f"`make plan`, {date.today().isoformat()}: each CPU profile from scratch, priced from its runs' measured "
        "throughput (`cod.runs.plan`), and what its finished runs took.",
        "",
        "| profile | runs | with results in git | core-hours from scratch | wall time | core-hours measured |",
        "|---|---|---|---|---|---|",
        *rows,
    ])
