"""Paper B's sparsity ladders (cod.ladder) read from hand-made run folders, and runs at equal FLOPs."""

import json

import numpy as np
import pytest
import torch

from cod.analysis import save_layers
from cod.config import ModelConfig, run_config
from cod.flops import flops_per_token
from cod.ladder import Rung, load_ladder
from cod.metrics.effectiveness import analyse_layers
from cod.model import Transformer
from cod.params import load_params, resolve_runs, steps_at_equal_flops


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
