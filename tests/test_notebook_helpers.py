"""The helpers notebooks a2/a10 (norms at several sizes, from their layer analyses) and a5/a7/a8/a9
(a table of variants at one size or several: `cod.claims.sweep.Sweep`) share: loading, tables, claims marked
by size, figures."""

import json
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch

from cod import plots

from cod.claims import tables as compare
from cod.records.analyses import save_layers
from cod.claims.sizes import load_sizes, norm_tables, size_label
from cod.claims.tables import load_size_sweep, load_variants, perplexities, ppl_and_loss
from cod.config import ModelConfig
from cod.metrics.effectiveness import analyse_layers
from cod.model import Transformer
from cod.claims.sweep import Sweep
from cod.claims.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, SizeClaims, Verdict

NORMS = {"Pre-LN": "pre_ln", "LNS": "lns"}


@pytest.fixture(scope="module")
def analysis():
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=61, d_model=16, n_layers=3, n_heads=2, max_seq_len=16)).eval()
    ids = torch.randint(0, 61, (8, 9))
    with torch.no_grad():
        return analyse_layers(model, ids[:4, :-1], ids[:4, 1:], ids[4:, :-1], ids[:2, :-1])


def fake(loss_increase: list[float], base_loss: float = 3.0):
    """What `norm_tables` reads of a LayerAnalysis: the block count and the removal scores."""
    drop = np.asarray(loss_increase)
    return SimpleNamespace(variance=np.zeros(len(drop)), removal=SimpleNamespace(base_loss=base_loss,
                                                                                   loss_increase=drop))


def measure(a):
    return {"drop_mean": float(a.removal.loss_increase.mean())}, {"loss_increase": a.removal.loss_increase}


def write_final(root, experiment, run, val_ppl, status="completed"):
    folder = root / experiment / run
    folder.mkdir(parents=True)
    (folder / "final.json").write_text(json.dumps({"status": status, "val_ppl": val_ppl}))


def test_size_label_reads_the_size_of_an_analysis_name():
    assert size_label("a_130m") == "130M" and size_label("h_250m") == "250M"


def test_load_sizes_keeps_the_sizes_with_every_norm_under_its_labels(tmp_path, analysis, capsys):
    for name, variants in {"a_130m": ["pre_ln", "lns"], "a_250m": ["pre_ln"]}.items():
        for variant in variants:
            save_layers(analysis, tmp_path / name / f"{variant}_s0", matrices=False)
        (tmp_path / name / "settings.json").write_text(json.dumps({"experiment": f"exp_{name}", "eval_tokens": 64}))
    layers, experiments = load_sizes(tmp_path, ["a_130m", "a_250m"], NORMS)
    assert list(layers) == ["a_130m"] and set(layers["a_130m"]) == {("Pre-LN", 0), ("LNS", 0)}
    assert experiments == {"a_130m": "exp_a_130m"}
    printed = capsys.readouterr().out
    assert "a_250m: no stored analysis of lns" in printed
    assert "130M: 2 runs; settings (params.yaml analyses.a_130m): {'experiment': 'exp_a_130m'" in printed
    with pytest.raises(FileNotFoundError, match="none of"):
        load_sizes(tmp_path, ["a_250m"], NORMS)


@pytest.fixture
def tables():
    layers = {"a_250m": {("Pre-LN", 1): fake([0.4, 0.2]), ("Pre-LN", 0): fake([0.2, 0.0]),
                         ("LNS", 0): fake([1.0, 3.0], base_loss=2.5)},
              "a_130m": {("Pre-LN", 0): fake([0.1, 0.3, 0.5]), ("LNS", 0): fake([0.0, 0.0, 0.6])}}
    finals = pd.DataFrame({"size": ["a_130m", "a_130m", "a_250m", "a_250m", "a_250m"],
                           "variant": ["pre_ln", "lns", "pre_ln", "pre_ln", "lns"], "seed": [0, 0, 0, 1, 5],
                           "val_ppl": [10.0, 12.0, 20.0, 21.0, 99.0], "failed": [False, False, False, True, False],
                           "status": "completed"})
    return norm_tables(layers, NORMS, measure, finals)


def test_norm_tables_merge_each_run_with_its_own_final_row(tables):
    per_run = tables.per_run
    assert list(per_run.columns) == ["size", "norm", "variant", "seed", "layers", "base_loss", "drop_mean",
                                     "val_ppl", "failed"]
    assert list(zip(per_run["size"], per_run["norm"], per_run["seed"])) == [
        ("a_130m", "LNS", 0), ("a_130m", "Pre-LN", 0), ("a_250m", "LNS", 0), ("a_250m", "Pre-LN", 0),
        ("a_250m", "Pre-LN", 1)]
    assert per_run["val_ppl"].iloc[:2].tolist() == [12.0, 10.0]
    assert np.isnan(per_run["val_ppl"].iloc[2])  # final.json has no lns_s0 of a_250m (only lns_s5)
    assert per_run["val_ppl"].iloc[3:].tolist() == [20.0, 21.0] and per_run["failed"].iloc[4]
    assert per_run["layers"].tolist() == [3, 3, 2, 2, 2] and per_run["base_loss"].iloc[2] == 2.5


def test_norm_tables_give_per_layer_rows_and_means_over_seeds(tables, tmp_path):
    per_layer = tables.per_layer
    assert list(per_layer.columns) == ["size", "norm", "seed", "layer", "loss_increase"] and len(per_layer) == 12
    assert tables.per_seed("a_250m", "Pre-LN", "drop_mean").to_dict() == pytest.approx({0: 0.1, 1: 0.3})
    assert tables.mean("a_250m", "Pre-LN", "drop_mean") == pytest.approx(0.2)
    assert tables.profile("a_250m", "Pre-LN", "loss_increase").to_dict() == pytest.approx({1: 0.3, 2: 0.1})
    tables.save(tmp_path / "figs")
    assert pd.read_csv(tmp_path / "figs" / "per_run.csv").shape == (5, 9)
    assert pd.read_csv(tmp_path / "figs" / "per_layer.csv")["layer"].tolist()[:3] == [1, 2, 1]


class Recorder:
    """Stands in for `Claims`: records what `add` was given and returns the verdict."""

    def __init__(self):
        self.added = []

    def add(self, id_, item, claim, paper_value, verdict):
        self.added.append((id_, item, claim, paper_value, verdict))
        return verdict


def test_size_claims_mark_sizes_the_paper_does_not_show_as_ours():
    recorder = Recorder()
    by_size = SizeClaims(recorder, "a2", "Fig. 3 / section 2.2")
    for size, verdict in [("130M", "reproduced"), ("250M", "not reproduced")]:
        by_size.add(size, "removal-deep", "removing costs less", "Fig. 3c (130M)", "Pre-LN 0.1, Post-LN 0.2",
                    Verdict(verdict, "ratio 0.5 [0.4, 0.6]", n=3))
    (id_130, item, claim_130, paper_130, verdict_130), (id_250, _, claim_250, paper_250, _) = recorder.added
    assert (id_130, id_250, item) == ("a2-removal-deep-130m", "a2-removal-deep-250m", "Fig. 3 / section 2.2")
    assert claim_130 == "130M: removing costs less" and paper_130 == "Fig. 3c (130M)"
    assert claim_250 == "(ours) 250M: removing costs less"
    assert paper_250 == "no 250M figure in the paper; Fig. 3c (130M)"
    assert verdict_130.why == "Pre-LN 0.1, Post-LN 0.2; ratio 0.5 [0.4, 0.6]"
    assert by_size.verdict("250M", "removal-deep") == "not reproduced"
    assert by_size.summary(["350M"]) == (
        "**130M** (3 seeds): a2-removal-deep-130m: *reproduced*.\n\n"
        "**250M** (3 seeds): a2-removal-deep-250m: *not reproduced*.\n\n"
        "Not analysed yet, so not judged: 350M.")


def two_sizes(sizes=("130M", "250M")) -> pd.DataFrame:
    """Rows A and B over three seeds: at 130M A is about half of B on every seed; at 250M A's third
    seed failed and its other two stand above B's."""
    ppl = {("130M", "a"): [10.0, 11.0, 12.0], ("130M", "b"): [20.0, 21.0, 25.0],
           ("250M", "a"): [30.0, 34.0, 40.0], ("250M", "b"): [20.0, 21.0, 22.0]}
    return pd.DataFrame([{"size": size, "variant": variant, "seed": seed, "ppl": value,
                          "failed": (size, variant, seed) == ("250M", "a", 2)}
                         for (size, variant), values in ppl.items() if size in sizes
                         for seed, value in enumerate(values)])


PAPER_AB = pd.DataFrame({"130M": [25.0, 50.0], "250M": [30.0, 20.0]}, index=["A", "B"])


def test_a_sweep_means_leave_failed_seeds_out_and_say_where_a_row_ends():
    variants = Sweep(two_sizes(), {"A": "a", "B": "b"}, PAPER_AB, Recorder())
    assert variants.sizes == ["130M", "250M"]
    assert variants.perplexities["250M"].ppl["A"].tolist() == [30.0, 34.0, 40.0]
    assert variants.mean("A", "130M") == 11.0 and variants.mean("B", "130M") == 22.0
    assert variants.mean("A", "250M") == 32.0 and variants.mean("B", "250M") == 21.0  # seed 2 failed: out
    assert variants.means_against("A", "B") == "130M 11 against 22; 250M 32 against 21"
    assert variants.lower_or_higher("A", "B") == "lower at some sizes and higher at others"
    assert variants.lower_or_higher("B", "A", "better", "worse") == "better at some sizes and worse at others"
    one = Sweep(two_sizes(["130M"]), {"Pre-LN": "b", "LNS": "a"}, PAPER_AB.rename({"A": "LNS", "B": "Pre-LN"}),
                Recorder())
    assert one.lower_or_higher("LNS") == "lower" and one.lower_or_higher("Pre-LN", "LNS", "better", "worse") == "worse"


def test_a_judged_sweep_keeps_the_papers_claims_over_every_seed_of_its_runs():
    variants = Sweep.judged(two_sizes(), {"A": "a", "B": "b"}, PAPER_AB, "smoke", paper_id="B")
    assert variants.claims.paper == "B" and variants.claims.profile == "smoke" and variants.claims.seeds == [0, 1, 2]


def test_a_sweep_judges_a_beats_b_paired_by_seed_with_the_papers_values_beside():
    variants = Sweep(two_sizes(), {"A": "a", "B": "b"}, PAPER_AB, Recorder())
    ahead = variants.beats("A", "B")  # the size defaults to 130M: A / B is 0.5, 0.52, 0.48 by seed
    assert ahead.verdict == REPRODUCED and ahead.n == 3 and ahead.mean == 11.0
    assert ahead.effect == pytest.approx(np.exp(np.mean(np.log([10 / 20, 11 / 21, 12 / 25]))))
    assert ahead.paper_effect == pytest.approx(0.5)  # the paper's 25 against 50
    assert variants.beats("B", "A").verdict == NOT_REPRODUCED
    behind = variants.beats("A", "B", "250M")  # A's failed seed counts at its perplexity: A above B
    assert behind.verdict == NOT_REPRODUCED and behind.paper_effect == pytest.approx(1.5)


def test_a_sweep_adds_each_claim_and_phrases_its_verdicts_across_sizes():
    recorder = Recorder()
    variants = Sweep(two_sizes(), {"A": "a", "B": "b"}, PAPER_AB, recorder)
    for size, verdict in [("130M", REPRODUCED), ("250M", INCONCLUSIVE)]:
        variants.add(f"a7-a-beats-b-{size.lower()}", "Table 6", f"A beats B ({size})", "25 vs 50",
                     Verdict(verdict, "ratio", n=3))
    assert [row[:4] for row in recorder.added] == [("a7-a-beats-b-130m", "Table 6", "A beats B (130M)", "25 vs 50"),
                                                   ("a7-a-beats-b-250m", "Table 6", "A beats B (250M)", "25 vs 50")]
    assert variants.verdict_of["a7-a-beats-b-250m"].verdict == INCONCLUSIVE
    assert variants.across_sizes("a7-a-beats-b") == "*reproduced* at 130M, *inconclusive* at 250M"


def test_load_size_sweep_marks_every_size_against_the_first_experiments_line(tmp_path, monkeypatch):
    lines = {"exp_small": 50.0, "exp_large": 5.0}
    monkeypatch.setattr(compare, "failure_line", lambda root, experiment: lines[experiment])
    write_final(tmp_path, "exp_small", "pre_ln_s0", 40.0)
    write_final(tmp_path, "exp_large", "pre_ln_s0", 45.0)
    write_final(tmp_path, "exp_large", "lns_s0", 60.0)
    sweep = load_size_sweep({"a_130m": "exp_small", "a_250m": "exp_large"}, tmp_path)
    assert sorted(zip(sweep["size"], sweep["variant"], sweep["failed"])) == [
        ("a_130m", "pre_ln", False), ("a_250m", "lns", True), ("a_250m", "pre_ln", False)]


def test_load_variants_keeps_the_rows_variants_and_returns_the_failure_line(tmp_path, monkeypatch):
    monkeypatch.setattr(compare, "failure_line", lambda root, experiment: 50.0)
    for run in ("pre_ln_s0", "lns_s0", "admin_s0"):
        write_final(tmp_path, "exp", run, 30.0)
    sweep, chance = load_variants("exp", tmp_path, ["pre_ln", "lns"])
    assert chance == 50.0 and sorted(sweep["variant"]) == ["lns", "pre_ln"] and set(sweep["size"]) == {"130M"}


def test_perplexities_leave_failed_seeds_out_of_the_mean():
    sweep = pd.DataFrame({"variant": ["a", "a", "a", "b"], "seed": [0, 1, 2, 0], "ppl": [10.0, 14.0, 80.0, 20.0],
                          "failed": [False, False, True, False]})
    seeds = perplexities(sweep, {"A": "a", "B": "b"})
    assert seeds.ppl["A"].tolist() == [10.0, 14.0, 80.0] and seeds.failed["A"].tolist() == [False, False, True]
    assert seeds.mean("A") == 12.0
    assert seeds.text("A") == "12 ± 3 (n=2), failed 1/3" and seeds.text("B") == "20 (n=1)"
    assert seeds.text("A", digits=1) == "12.0 ± 2.8 (n=2), failed 1/3"


def test_ppl_and_loss_cuts_the_loss_axis_at_the_median_plus_one():
    sweep = pd.DataFrame({"variant": ["a", "b"], "seed": [0, 0], "ppl": [10.0, 12.0], "failed": [False, False]})
    history = pd.DataFrame({"variant": ["a"] * 3 + ["b"] * 3, "seed": 0, "tokens": [1, 2, 3] * 2,
                            "loss": [9.0, 5.0, 4.0, 8.0, 6.0, 4.5]})
    fig = ppl_and_loss(sweep, history, {"Pre-LN": "a", "LNS": "b"}, pd.Series({"Pre-LN": 26.7, "LNS": 25.8}), "paper",
                       titles=("left", "right"))
    ax_ppl, ax = fig.axes[:2]
    assert ax_ppl.get_title() == "left" and ax.get_title() == "right"
    assert ax.get_ylim()[1] == pytest.approx(5.5 + 1.0)
    assert ax.get_legend_handles_labels()[1] == ["Pre-LN", "LNS"] and len(fig.legends) == 1
    assert ax_ppl.get_ylabel() == "validation perplexity / Pre-LN's\n(below 1: lower, better)"  # ratios: one scale
    plt.close(fig)


def test_layer_bands_draw_each_norm_and_style_the_removal_panel():
    per_layer = pd.DataFrame({"norm": ["Pre-LN"] * 4 + ["LNS"] * 4, "seed": [0, 0, 1, 1] * 2, "layer": [1, 2] * 4,
                              "loss_increase": [0.5, 0.1, 0.7, 0.3, 0.2, 0.2, 0.4, 0.2],
                              "adjacent_distance": np.linspace(0.1, 0.8, 8)})
    fig, axes = plt.subplots(1, 2)
    plots.layer_bands(axes, per_layer, {"Pre-LN": "C0", "LNS": "C2"}, ["loss_increase", "adjacent_distance"])
    removal, distance = axes
    assert removal.get_legend_handles_labels()[1] == ["Pre-LN", "LNS", "shallow | deep halves", "no loss increase"]
    assert removal.lines[0].get_ydata().tolist() == pytest.approx([0.6, 0.2])  # Pre-LN's mean over seeds
    assert removal.get_yscale() == "symlog" and removal.get_xlabel() == "removed layer $l$"
    assert distance.get_yscale() == "linear" and distance.get_xlabel() == "layer $l$"
    assert len(distance.collections) == 2  # a min..max band per norm
    plt.close(fig)
