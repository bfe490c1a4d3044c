"""The curse-of-depth map: the two central effects against depth and training tokens.

    points = {6: MapPoint("h_depth", "pre_ln_l6", "lns_l6"), 12: MapPoint("h_130m", "pre_ln", "lns")}
    curves = load_curves(points, "runs/headline")     # validation loss along training, per run
    gap = loss_gap(curves)                            # LNS minus Pre-LN, per depth, tokens and seed
    ratio = variance_ratio(load_stats(points, "runs/headline"))   # deep / shallow output variance

Neither paper has this map. Its axes are the model's depth (blocks) and the tokens seen; its
two effects are (1) the loss gap of LayerNorm Scaling against Pre-LN, paired by seed, at every
validation point of training (`train.eval_every`), and (2) the deep-to-shallow ratio of the
blocks' output variance (paper B eq. 4): the geometric mean over the deepest quarter of blocks
over that of the shallowest quarter. Points along training share one learning-rate schedule
(warmup, cosine to 10%), so a point before the end is a model mid-schedule, not a model trained
to that budget. The papers' own points, on a common axis of tokens per non-embedding parameter,
come from paper A's Table 1 (`PAPER_A_GAPS`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from cod.claims.pilot import geomean
from cod.records.results import load_final, load_layer_stats, load_validation
from cod.claims.verdicts import t_interval


@dataclass(frozen=True)
class MapPoint:
    """Where one depth's runs live: an experiment and its Pre-LN and LNS variants."""

    experiment: str
    pre_ln: str
    lns: str


def _paper_a_row(ppl_pre_ln: float, ppl_lns: float, layers: int, hidden: int, ffn: int, tokens: float) -> dict:
    """Paper A's Table 1 at one size: the LNS gap in nats and its tokens per non-embedding
    parameter (attention 4 d^2 and SwiGLU 3 d f a block)."""
    params = layers * (4 * hidden ** 2 + 3 * hidden * ffn)
    return {"layers": layers, "tokens_per_param": tokens / params, "gap": math.log(ppl_lns / ppl_pre_ln)}


# Paper A, Table 1 (Pre-LN and LNS perplexity) and section 5.1 (shapes, tokens): 130M, 250M, 350M, 1B
PAPER_A_GAPS = pd.DataFrame([
    _paper_a_row(26.73, 25.76, 12, 768, 2048, 2.2e9),
    _paper_a_row(21.92, 20.35, 24, 768, 2560, 3.9e9),
    _paper_a_row(19.58, 18.20, 24, 1024, 2736, 6.0e9),
    _paper_a_row(17.02, 15.71, 24, 2048, 5461, 8.9e9),
], index=["130M", "250M", "350M", "1B"])


def load_curves(points: dict[int, MapPoint], runs_root: str | Path) -> pd.DataFrame:
    """Validation loss along training of every map run: depth, norm (pre_ln | lns), seed, step,
    tokens, tokens_per_param, val_loss; the final evaluation counts as the last point."""
    rows = []
    for depth, point in points.items():
        final = load_final(point.experiment, runs_root)
        history = load_validation(point.experiment, runs_root)
        for norm, variant in (("pre_ln", point.pre_ln), ("lns", point.lns)):
            for _, run in final[final["variant"] == variant].iterrows():
                per_step = run["tokens"] / run["steps"]
                points_ = history[(history["variant"] == variant) & (history["seed"] == run["seed"])]
                losses = dict(zip(points_["step"], points_["val_loss"]))
                losses[run["steps"]] = run["val_loss"]
                for step, loss in sorted(losses.items()):
                    rows.append({"depth": depth, "norm": norm, "seed": run["seed"], "step": step,
                                 "tokens": step * per_step, "tokens_per_param": step * per_step / run["params_non_embedding"],
                                 "val_loss": loss})
    return pd.DataFrame(rows)


def loss_gap(curves: pd.DataFrame) -> pd.DataFrame:
    """LNS minus Pre-LN validation loss (nats) per depth and step, one column per seed that has
    both (rows: (depth, step, tokens, tokens_per_param))."""
    table = curves.pivot_table(index=["depth", "step", "tokens", "tokens_per_param"], columns=["norm", "seed"],
                               values="val_loss")
    gap = table["lns"] - table["pre_ln"]
    return gap.dropna(axis=1, how="all")


def gap_interval(gap: pd.DataFrame) -> pd.DataFrame:
    """Per row of `gap` (seeds as columns, some missing): mean, the 95% t interval of the mean (the
    verdict rule's), the seeds n, and `pays`: LNS better, the interval wholly below zero (n >= 2)."""
    rows = []
    for values in gap.to_numpy():
        values = values[~np.isnan(values)]
        mean, low, high = t_interval(values) if len(values) >= 2 else (values.mean(), np.nan, np.nan)
        rows.append({"mean": float(mean), "low": float(low), "high": float(high), "n": len(values)})
    out = pd.DataFrame(rows, index=gap.index)
    out["pays"] = out["high"] < 0
    out["decided"] = (out["high"] < 0) | (out["low"] > 0)
    return out


def load_stats(points: dict[int, MapPoint], runs_root: str | Path) -> pd.DataFrame:
    """Per-layer output variance along training of every map run: depth, norm, seed, step, layer, resid_var."""
    frames = []
    for depth, point in points.items():
        stats = load_layer_stats(point.experiment, runs_root)
        for norm, variant in (("pre_ln", point.pre_ln), ("lns", point.lns)):
            at = stats[stats["variant"] == variant][["seed", "step", "layer", "resid_var"]]
            frames.append(at.assign(depth=depth, norm=norm))
    return pd.concat(frames, ignore_index=True)


def variance_ratio(stats: pd.DataFrame) -> pd.DataFrame:
    """Deepest quarter's geometric-mean output variance over the shallowest quarter's, per depth,
    norm, seed and step (a quarter of L blocks is max(1, L // 4) of them)."""
    rows = []
    for (depth, norm, seed, step), at in stats.groupby(["depth", "norm", "seed", "step"]):
        at = at.sort_values("layer")["resid_var"]
        quarter = max(1, len(at) // 4)
        rows.append({"depth": depth, "norm": norm, "seed": seed, "step": step,
                     "ratio": geomean(at.iloc[-quarter:]) / geomean(at.iloc[:quarter])})
    return pd.DataFrame(rows)


def at_fraction(table: pd.DataFrame, fraction: float, level: str = "step") -> pd.DataFrame:
    """Rows of `table` (index with a `depth` and a `level` level) at the first point of each depth
    whose `level` reaches `fraction` of that depth's last."""
    picked = []
    for depth, at in table.groupby(level="depth"):
        steps = at.index.get_level_values(level)
        picked.append(at[steps == steps[steps >= fraction * steps.max()].min()])
    return pd.concat(picked)
