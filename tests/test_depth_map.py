"""The curse-of-depth map (cod.claims.depth_map): the loss gap paired by seed, the variance ratio by hand."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from cod.claims.depth_map import (PAPER_A_GAPS, MapPoint, at_fraction, gap_interval, load_curves, load_stats, loss_gap,
                           variance_ratio)


def write_run(root, experiment, variant, seed, layers, losses, final_loss, variances):
    """A run folder as the trainer leaves it: validation losses at steps 2 and 4 of 6, the final one
    in final.json, and per-layer variances at steps 0 and 6."""
    folder = root / experiment / f"{variant}_s{seed}"
    folder.mkdir(parents=True)
    final = {"steps": 6, "tokens": 600, "val_loss": final_loss, "params_non_embedding": 100, "seed": seed}
    (folder / "final.json").write_text(json.dumps(final))
    rows = [{"step": 0, "resid_var": variances[0], "attn_var": variances[0], "mlp_var": variances[0]},
            {"step": 2, "loss": 5.0}, {"step": 2, "val_loss": losses[0]}, {"step": 4, "val_loss": losses[1]},
            {"step": 6, "resid_var": variances[1], "attn_var": variances[1], "mlp_var": variances[1]}]
    (folder / "history.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")


@pytest.fixture
def runs(tmp_path):
    flat, steep = [1.0] * 8, [2.0 ** layer for layer in range(8)]
    for seed in (0, 1):
        write_run(tmp_path, "e", "pre", seed, 8, [5.0, 4.5], 4.0 + seed, [flat, steep])
        write_run(tmp_path, "e", "lns", seed, 8, [5.1, 4.4], 3.8 + seed, [flat, flat])
    write_run(tmp_path, "e", "pre", 2, 8, [5.0, 4.5], 4.0, [flat, steep])  # no LNS partner: left out of the gap
    return tmp_path, {8: MapPoint("e", "pre", "lns")}


def test_the_gap_is_lns_minus_pre_ln_paired_by_seed_at_every_validation_point(runs):
    root, points = runs
    curves = load_curves(points, root)
    assert sorted(curves["step"].unique()) == [2, 4, 6]
    assert curves["tokens_per_param"].max() == 6.0  # 600 tokens over 100 parameters at the last step
    gap = loss_gap(curves)
    assert list(gap.columns) == [0, 1]
    assert gap.xs(2, level="step").to_numpy().ravel() == pytest.approx([0.1, 0.1])
    assert gap.xs(4, level="step").to_numpy().ravel() == pytest.approx([-0.1, -0.1])
    assert gap.xs(6, level="step").to_numpy().ravel() == pytest.approx([-0.2, -0.2])
    assert at_fraction(gap, 0.5).index.get_level_values("step").tolist() == [4]


def test_the_variance_ratio_is_the_deep_quarter_over_the_shallow_quarter(runs):
    root, points = runs
    ratio = variance_ratio(load_stats(points, root)).set_index(["norm", "seed", "step"])["ratio"]
    # blocks 1-2 have 1 and 2, blocks 7-8 have 64 and 128: geometric means sqrt(2) and sqrt(8192)
    assert ratio["pre_ln", 0, 6] == pytest.approx(math.sqrt(8192) / math.sqrt(2))
    assert ratio["pre_ln", 0, 0] == pytest.approx(1.0) and ratio["lns", 1, 6] == pytest.approx(1.0)


def test_paper_a_points_read_table_1():
    assert PAPER_A_GAPS.loc["130M", "gap"] == pytest.approx(np.log(25.76 / 26.73))
    assert PAPER_A_GAPS.loc["250M", "layers"] == 24
    assert PAPER_A_GAPS.loc["130M", "tokens_per_param"] == pytest.approx(25.9, abs=0.1)  # README: "26 at 130M"


def test_the_gap_interval_needs_two_seeds_and_ignores_missing_ones():
    gap = pd.DataFrame([[-0.2, -0.21, -0.19], [-0.1, float("nan"), float("nan")], [0.1, -0.1, float("nan")]],
                       columns=[0, 1, 2])
    out = gap_interval(gap)
    assert out["n"].tolist() == [3, 1, 2]
    assert out.loc[0, "pays"] and out.loc[0, "high"] == pytest.approx(-0.2 + 4.3027 * 0.01 / np.sqrt(3), abs=1e-4)
    assert not out.loc[1, "pays"] and np.isnan(out.loc[1, "low"])  # one seed decides nothing
    assert not out.loc[2, "decided"] and out.loc[2, "mean"] == pytest.approx(0.0)
