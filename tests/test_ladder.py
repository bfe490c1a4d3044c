"""Paper B's sparsity ladders (cod.claims.ladder) read from hand-made run folders, and runs at equal FLOPs."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

from cod import plots
from cod.records.analyses import save_layers
from cod.config import ConfigError, ModelConfig, run_config
from cod.model.flops import flops_per_token
from cod.claims.ladder import Rung, load_ladder, paper_along, paper_pair, paper_rows, rungs_from
from cod.metrics.effectiveness import analyse_layers
from cod.model import Transformer
from cod.runs.params import load_params, resolve_runs, steps_at_equal_flops
from cod.claims.verdicts import Claims, monotone


def write_run(root, experiment, name, status="completed", val_ppl=100.0, layers=3):
    folder = root / "runs" / experiment / name
    folder.mkdir(parents=True)
    seed = int(name.rsplit("_s", 1)[1])
    final = {"status": status, "steps": 20, "tokens": 640, "params": 1000, "params_non_embedding": 500,
             "val_loss": float(np.log(val_ppl)), "val_ppl": val_ppl, "seed": seed}
    (folder / "final.json").write_text(json.dumps(final))
    rows = [{"step": 10, "loss": 4.0, "lr": 1e-3, "grad_norm": 1.0, "tokens": 320},
            {"step": 20, "resid_var": [0.1 * (i + 1) + seed for i in range(layers)], "attn_var": [0.0] * layers,
             "mlp_var": [0.0] * layers}]
    (folder / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def analysis():
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=61, d_model=16, n_layers=3, n_heads=2, max_seq_len=16)).eval()
    ids = torch.randint(0, 61, (8, 9))  # 4 windows to score, 4 (32 tokens > width 16 + 1) to fit
    with torch.no_grad():
        return analyse_layers(model, ids[:4, :-1], ids[:4, 1:], ids[4:, :-1], ids[:2, :-1])


def test_a_ladder_reads_every_rung_in_order_with_its_scores(tmp_path, analysis):
    for name in ("a_s0", "a_s1", "b_s0", "b_s1"):
        write_run(tmp_path, "exp", name)
        save_layers(analysis, tmp_path / "analyses" / "exp" / name)
    write_run(tmp_path, "base", "d_s0", val_ppl=50.0)
    write_run(tmp_path, "base", "d_s1", status="diverged")  # no stored scores
    save_layers(analysis, tmp_path / "analyses" / "base" / "d_s0")
    ladder = load_ladder([Rung("B", "exp", "b"), Rung("D", "base", "d"), Rung("A", "exp", "a")],
                         tmp_path / "runs", tmp_path / "analyses")
    ppl = ladder.by_seed("val_ppl")
    assert list(ppl.index) == ["B", "D", "A"] and ladder.seeds == [0, 1]
    assert ppl.loc["D", 0] == 50.0 and ppl.loc["D", 1] == np.inf  # a diverged run is infinitely bad
    assert np.isnan(ladder.by_seed("causal").loc["D", 1])  # and has no scores
    assert ladder.by_seed("causal").loc["A", 0] == pytest.approx(analysis.causal.global_score)
    assert ladder.by_seed("last_var_train").loc["A", 1] == pytest.approx(1.3)  # last layer, last logged step
    assert len(ladder.layers) == 5 * 3 and set(ladder.analyses) == {("A", 0), ("A", 1), ("B", 0), ("B", 1), ("D", 0)}
    curve = ladder.usefulness_curve([0.0, 1e9])
    assert list(curve.columns) == ["B", "D", "A"] and (curve.loc[1e9] == 0).all()
    rises = analysis.usefulness.relative_increase
    assert curve.loc[0.0, "A"] == pytest.approx(np.mean(rises > 0))
    assert list(ladder.last_variance_during_training()["B"].index) == [20]
    figures = tmp_path / "figs"
    figures.mkdir()
    drawn = plots.ladder_sensitivity(ladder, [0.0, 1e9], 0.1, None, figures, "matrices")
    assert drawn.equals(curve) and pd.read_csv(figures / "usefulness_vs_tau.csv", index_col="tau").shape == (2, 3)
    assert {p.name for p in figures.glob("*.png")} == {"usefulness_vs_tau.png", "matrices.png"}


def test_a_ladder_reads_zero_shot_accuracy_from_its_own_folder(tmp_path):
    def scored(folder, arc, hella):
        folder.mkdir(parents=True)
        rows = [{"task": "arc_challenge", "acc": arc, "acc_norm": arc + 0.01, "n": 299, "chance": 0.25},
                {"task": "hellaswag", "acc": hella, "acc_norm": hella + 0.01, "n": 1000, "chance": 0.25}]
        (folder / "zero_shot.json").write_text(json.dumps(rows))

    write_run(tmp_path, "exp", "a_s0")
    write_run(tmp_path, "base", "d_s0")
    scored(tmp_path / "analyses" / "exp" / "a_s0", 0.2, 0.3)
    scored(tmp_path / "analyses" / "base_items" / "d_s0", 0.3, 0.5)  # another analysis than its layer scores'
    ladder = load_ladder([Rung("A", "exp", "a"), Rung("D", "base", "d", zero_shot="base_items")],
                         tmp_path / "runs", tmp_path / "analyses")
    column = ladder.mean_accuracy(["arc_challenge", "hellaswag"])
    assert column == "mean_acc_norm"
    assert ladder.by_seed(column)[0].to_list() == pytest.approx([0.26, 0.41])
    assert ladder.by_seed(ladder.mean_accuracy(["hellaswag"], "acc"))[0].to_list() == pytest.approx([0.3, 0.5])
    assert ladder.by_seed("n:arc_challenge")[0].to_list() == [299, 299]
    with pytest.raises(KeyError, match="no zero-shot \\['acc_norm:mmlu'\\]"):
        ladder.mean_accuracy(["mmlu"])


def test_a_ladder_names_a_missing_rung(tmp_path):
    write_run(tmp_path, "exp", "a_s0")
    with pytest.raises(FileNotFoundError, match="no run of variant 'zz'"):
        load_ladder([Rung("Z", "exp", "zz")], tmp_path / "runs", tmp_path / "analyses")
    with pytest.raises(ValueError, match="distinct"):
        load_ladder([Rung("A", "exp", "a"), Rung("A", "exp", "a")], tmp_path / "runs", tmp_path / "analyses")


def test_a_ladder_parameter_gives_its_rungs_in_order():
    rungs = rungs_from({"MHA": "b_depth/d16", "MQA": "b_gqa/kv1/b_gqa_scores"})
    assert rungs == [Rung("MHA", "b_depth", "d16"), Rung("MQA", "b_gqa", "kv1", analysis="b_gqa_scores")]
    assert rungs[1].scores("analyses/default", 2).as_posix() == "analyses/default/b_gqa_scores/kv1_s2"
    assert rungs[0].scores("analyses/default", 0).as_posix() == "analyses/default/b_depth/d16_s0"


@pytest.mark.parametrize("runs", ["b_depth", "b_depth/d16/x/y", "b_depth//x", "/d16", 16, None])
def test_a_malformed_rung_is_refused_in_one_line(runs):
    with pytest.raises(ConfigError) as error:
        rungs_from({"MHA": "b_depth/d16", "bad": runs})
    message = str(error.value)
    assert message == (f"ladder: 'bad': {runs!r} is not allowed; "
                       "expected 'experiment/variant' or 'experiment/variant/analysis'")
    with pytest.raises(ConfigError, match="^ladder is empty; expected"):
        rungs_from({})


@pytest.mark.parametrize("ladder", [{"L=64": "b_depth/d64"}, {"+ MoE": "b_recipe/moe", "L=32": "b_recipe/baseline"}])
def test_a_ladder_of_the_papers_rungs_keeps_their_names_and_order(ladder):
    paper = ["L=16", "L=32", "+ MoE"]
    assert [rung.label for rung in rungs_from({"L=32": "h_250m/pre_ln", "+ MoE": "h_recipe/moe"}, paper)] == \
        ["L=32", "+ MoE"]
    with pytest.raises(ConfigError) as error:
        rungs_from(ladder, paper)
    assert str(error.value) == (f"ladder: {list(ladder)} is not allowed; "
                                "expected some of ['L=16', 'L=32', '+ MoE'], in that order")


def test_rungs_without_runs_stop_the_ladder_before_anything_is_read(tmp_path):
    write_run(tmp_path, "exp", "a_s0")
    write_run(tmp_path, "exp", "ab_s0")  # a variant whose name starts with another's is not that variant
    rungs = [Rung("A", "exp", "a"), Rung("B", "exp", "b"), Rung("C", "exp", "c"), Rung("D", "other", "d")]
    with pytest.raises(FileNotFoundError) as error:
        load_ladder(rungs, tmp_path / "runs", tmp_path / "analyses")
    message = str(error.value)
    assert "\n" not in message
    assert message == (f"{tmp_path / 'runs' / 'exp'} holds no run of variant 'b' (rung 'B'), 'c' (rung 'C'): "
                       "train it with `python -m cod.pipeline.experiments train exp --profile runs`; "
                       f"{tmp_path / 'runs' / 'other'} holds no run of variant 'd' (rung 'D'): "
                       "train it with `python -m cod.pipeline.experiments train other --profile runs`")


def test_a_rungs_third_part_names_the_folder_of_its_scores(tmp_path, analysis):
    write_run(tmp_path, "exp", "a_s0")
    save_layers(analysis, tmp_path / "analyses" / "elsewhere" / "a_s0")
    ladder = load_ladder(rungs_from({"A": "exp/a/elsewhere"}), tmp_path / "runs", tmp_path / "analyses")
    assert set(ladder.analyses) == {("A", 0)} and ladder.tau == analysis.usefulness.tau


def test_a_subset_ladder_meets_only_its_own_rows_of_the_papers_table(tmp_path, analysis, capsys):
    paper = pd.DataFrame({"val_ppl": [14.52, 14.50, 14.47]}, index=["G=1", "G=4", "G=16"])
    labels = ["MQA", "MHA", "ours only"]  # a subset, in another order, with a rung the paper lacks
    rows = paper_rows(paper, labels, {"MHA": "G=1", "MQA": "G=16"})
    assert list(rows.index) == labels
    assert rows.loc["MQA", "val_ppl"] == 14.47 and rows.loc["MHA", "val_ppl"] == 14.52
    assert np.isnan(rows.loc["ours only", "val_ppl"])  # never another row's value
    assert paper_along(rows["val_ppl"]) is None  # no slope of the paper's along our rungs
    assert paper_along(rows["val_ppl"].iloc[:2]).tolist() == [14.47, 14.52]
    assert paper_pair(rows, "val_ppl", "MHA", "MQA") == (14.52, 14.47)
    assert paper_pair(rows, "val_ppl", "MHA", "ours only") is None and paper_pair(rows, "causal", "MHA", "MQA") is None
    same = paper_rows(paper, ["G=16", "G=2"])  # labels that are the paper's settings
    assert same.loc["G=16", "val_ppl"] == 14.47 and np.isnan(same.loc["G=2", "val_ppl"])

    for name in ("a_s0", "a_s1", "b_s0", "b_s1"):
        write_run(tmp_path, "exp", name, val_ppl=100.0 if name.startswith("a") else 90.0)
        save_layers(analysis, tmp_path / "analyses" / "exp" / name)
    ladder = load_ladder(rungs_from({"MHA": "exp/a", "MQA": "exp/b"}), tmp_path / "runs", tmp_path / "analyses")
    table = ladder.table(["val_ppl"], paper_rows(paper, ladder.labels, {"MHA": "G=1"}))
    assert table["val_ppl paper"].iloc[0] == 14.52 and np.isnan(table["val_ppl paper"].iloc[1])
    assert ladder.lacks("MHA", "MQA") is None
    assert ladder.lacks("MHA", "GQA") == "no rung 'GQA' on this ladder"
    claims = Claims("B", "default", ladder.paired_seeds)
    claims.add("b5-ppl-falls-with-sharing", "Table 4", "falls", "", monotone(ladder.by_seed("val_ppl"), -1))
    claims.add("b5-mqa-half-variance", "Fig. 7", "half", "", ladder.lacks("GQA") or monotone(None, -1))
    shown = claims.save(tmp_path / "figures")
    assert shown["id"].tolist() == ["b5-ppl-falls-with-sharing"]
    saved = json.loads((tmp_path / "figures" / "claims.json").read_text())
    assert [claim["id"] for claim in saved] == ["b5-ppl-falls-with-sharing"]
    assert capsys.readouterr().out == "not judged: b5-mqa-half-variance (no rung 'GQA' on this ladder)\n"


def test_equal_flops_buys_the_cheaper_shape_more_steps():
    base = {"model.d_model": 24, "model.n_layers": 2, "model.n_heads": 4, "model.vocab_size": 512,
            "data.vocab_size": 512, "data.seq_len": 16, "data.batch_size": 2, "train.steps": 100}
    mqa = {**base, "model.n_kv_heads": 1}
    steps = steps_at_equal_flops(base, mqa)
    a, b = run_config(base), run_config(mqa)
    ratio = flops_per_token(a.model, 16) / flops_per_token(b.model, 16)
    assert steps == round(100 * ratio) and steps > 100


def test_gqa_runs_of_the_default_profile_train_at_equal_flops():
    params = load_params()
    params["profile"] = "default"
    runs = {run.variant: run for run in resolve_runs("b_gqa", params)}
    mha = next(run.config for run in resolve_runs("b_depth", params) if run.variant == "d16")
    budget = mha.train.steps * flops_per_token(mha.model, mha.data.seq_len)
    for variant in ("kv2", "kv1"):
        cfg = runs[variant].config
        assert cfg.model.n_kv_heads < mha.model.n_heads and cfg.train.steps > mha.train.steps
        spent = cfg.train.steps * flops_per_token(cfg.model, cfg.data.seq_len)
        assert abs(spent / budget - 1) < 1 / mha.train.steps


def test_the_authors_usefulness_is_read_where_measured(tmp_path, analysis):
    from dataclasses import replace as changed

    assert analysis.usefulness_authors is not None and analysis.usefulness_authors.loss.shape == (3,)
    for name in ("a_s0", "a_s1"):
        write_run(tmp_path, "exp", name)
        save_layers(analysis, tmp_path / "analyses" / "exp" / name)
    write_run(tmp_path, "exp", "b_s0")
    save_layers(changed(analysis, usefulness_authors=None), tmp_path / "analyses" / "exp" / "b_s0")  # stored before it
    ladder = load_ladder([Rung("A", "exp", "a"), Rung("B", "exp", "b")], tmp_path / "runs", tmp_path / "analyses")
    assert ladder.authors_fit_lacks(["A"]) is None
    assert ladder.authors_fit_lacks().startswith("no usefulness under the authors' fit for B: ")
    assert ladder.by_seed("usefulness_authors").loc["A", 0] == pytest.approx(analysis.usefulness_authors.score)
    assert np.isnan(ladder.by_seed("usefulness_authors").loc["B", 0])
    rises = ladder.largest_rise(["A"], authors=True)["A"]
    assert rises.loc[0] == pytest.approx(analysis.usefulness_authors.relative_increase.max())
    # a seed no claim pairs (A's seed 2, with no run of B) may lack the fit: only the paired seeds are compared
    write_run(tmp_path, "exp", "a_s2")
    save_layers(changed(analysis, usefulness_authors=None), tmp_path / "analyses" / "exp" / "a_s2")
    ladder = load_ladder([Rung("A", "exp", "a"), Rung("B", "exp", "b")], tmp_path / "runs", tmp_path / "analyses")
    assert ladder.paired_seeds == [0] and ladder.authors_fit_lacks(["A"]) is None


def test_a_share_of_layers_moves_in_steps_of_one_over_the_depth(tmp_path, analysis):
    for name in ("a_s0", "b_s0"):
        write_run(tmp_path, "exp", name)
        save_layers(analysis, tmp_path / "analyses" / "exp" / name)  # 3 layers each
    ladder = load_ladder([Rung("A", "exp", "a"), Rung("B", "exp", "b")], tmp_path / "runs", tmp_path / "analyses")
    assert ladder.share_step() == pytest.approx(1 / 3)
    ladder.layers = pd.concat([ladder.layers, ladder.layers[ladder.layers["rung"] == "B"].assign(layer=4)])
    assert ladder.share_step() == pytest.approx(1 / 12) and ladder.share_step(["A"]) == pytest.approx(1 / 3)
