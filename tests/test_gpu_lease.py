"""The one call of a GPU lease (`python -m cod.tools.gpu_lease lease`): priced before the device starts,
refused in one line when it cannot run, run dry at tiny shapes, exported after every item within
what comes back from $OUT, and imported back under runs/gpu/ as the call wrote it."""

import json
import math

import pytest

from conftest import VOCAB
from cod.report.gpu_results import fig4_rows
from cod.tools import gpu_carry, gpu_lease
from cod.tools.gpu_carry import Refusal, export, exported, import_results, pack_tokens


def test_the_dry_call_exports_after_every_item_and_imports_back(tiny_tokens, tmp_path, monkeypatch, capsys):
    """The whole call at tiny shapes on the CPU, its tokens unpacked from the carried archive: Fig. 4's
    three runs under the released recipe, then the bench items; $OUT holds a few flat files after each
    item, and --import puts them back as the call wrote them."""
    tokens, carry = tiny_tokens / f"bpe{VOCAB}", tmp_path / "carry"
    out, sent = tmp_path / "out", tmp_path / "OUT"
    pack_tokens(tokens, carry)
    for file in tokens.iterdir():  # travels packed: the call unpacks it
        file.unlink()
    tokens.rmdir()
    snapshots = []

    def recorded(folder, target):
        export(folder, target)
        snapshots.append({p.name: p.read_text() for p in target.iterdir()})

    monkeypatch.setattr(gpu_lease, "export", recorded)
    code = gpu_lease.main(["lease", "--dry", "--tokens", str(tokens), "--carry", str(carry), "--out", str(out),
                           "--export", str(sent)])
    printed = capsys.readouterr().out
    assert code == 0, printed[-3000:]
    assert "tokens unpacked from" in printed and "plan: " in printed
    assert "--import gives back what the call wrote" in printed

    fig4 = json.loads((out / "fig4.json").read_text())
    runs = {name: r for name, r in fig4["items"].items()}
    assert list(runs) == [f"a_130m_{v}_s0" for v in gpu_lease.FIG4_VARIANTS]
    assert all(r["status"] == "completed" and r["recipe"] == "released before eb1a0a5" for r in runs.values())
    assert (runs["a_130m_scaled_init_s0"]["init"], runs["a_130m_lns_s0"]["norm"]) == ("scaled", "lns")
    config = json.loads((out / "fig4" / "a_130m_lns_s0" / "config.json").read_text())
    assert config["model"]["embed_init_std"] == math.sqrt(0.4) and config["optim"]["grad_clip"] == 0.0
    assert config["optim"]["schedule_steps"] > config["train"]["steps"]  # stopped early inside the schedule
    assert len(fig4_rows([fig4])) == 3
    bench = json.loads((out / "bench.json").read_text())["items"]
    assert bench["a71m eager"]["ok"] and bench["a71m estimate"]["ok"]
    assert bench["b_depth/d16 compiled"]["ok"] and bench["b_depth/d16 compiled"]["recompute"]

    for n, name in enumerate(runs):  # after each run, $OUT already held it: a kill loses only the item in flight
        packed = json.loads(snapshots[n]["fig4.files.json"])["files"]
        assert f"{name}/final.json" in packed and f"{name}/history.jsonl" in packed
    assert all(len(s) <= gpu_carry.EXPORT_FILES for s in snapshots)
    assert sorted(p.name for p in sent.iterdir()) == ["bench.json", "fig4.files.json", "fig4.json"]

    with pytest.raises(Refusal, match="a --dry run's results, not a lent GPU's"):
        import_results(sent, tmp_path / "runs_gpu")
    back = import_results(sent, tmp_path / "runs_gpu", dry=True)
    assert back.name == out.name and exported(back) == exported(out)


def test_the_dry_check_refuses_in_one_line_when_the_tokens_are_missing(tmp_path, capsys):
    code = gpu_lease.main(["lease", "--dry", "--tokens", str(tmp_path / "bpe2048"), "--carry", str(tmp_path / "carry"),
                           "--out", str(tmp_path / "out"), "--export", str(tmp_path / "OUT")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("gpu_lease: --tokens ")
    assert f"`python -m cod.data.prepare --tokenizer bpe --vocab-size 2048 --out {tmp_path / 'bpe2048'}`" in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "OUT").exists()  # refused before any work


def _measured(folder, mode, items):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{mode}.json").write_text(json.dumps({"mode": mode, "dry": False, "items": items}))


def test_each_item_is_priced_from_what_a_lent_gpu_measured(tmp_path):
    lease = tmp_path / "2026-11-27_nvidia-h200_torch2.11.0-cu130"
    run = {"ok": True, "status": "completed", "n_layers": 12, "d_model": 768, "tokens": 1_000_000,
           "tokens_per_s": 100_000.0, "seconds": 12.0}  # 10 s of steps, 2 s besides
    _measured(lease, "science", {"a": run, "b": {**run, "tokens_per_s": 200_000.0, "seconds": 5.0},
                                 "deep": {**run, "n_layers": 24, "tokens_per_s": 1.0}})
    _measured(lease, "bench", {
        "a_130m/pre_ln eager": {"ok": True, "seconds": 15.0, "steps": 50, "step_s": 0.1},  # 10 s besides timing
        "a_130m/pre_ln compiled": {"ok": True, "seconds": 50.0, "warmup_s": 36.0, "steps": 40, "step_s": 0.1},
        "a_130m/pre_ln estimate": {"ok": True, "seconds": 1.0}, "b_depth/d16 estimate": {"ok": True, "seconds": 3.0},
        "b_depth/d16 compiled": {"ok": None, "skipped": "late"}})
    plan = {p.item: p.seconds for p in gpu_lease.price_call(tmp_path)}
    tokens = 2_400 * 64 * 256
    assert plan["a_130m_pre_ln_s0"] == pytest.approx(tokens / 100_000 + 2.0)  # the slowest rate, the most set-up
    assert list(plan)[:3] == [f"a_130m_{v}_s0" for v in gpu_lease.FIG4_VARIANTS]
    assert plan["a71m eager"] == pytest.approx(10.0 + gpu_lease.LEASE_SECONDS)
    assert plan["b_depth/d16 compiled"] == pytest.approx(36.0 * 16 / 12 * 1.5 + 10.0 + gpu_lease.LEASE_SECONDS)
    assert plan["b_depth/d16 estimate"] == 3.0
    with pytest.raises(Refusal, match="no GPU measurement of 'a_130m/pre_ln eager'"):
        (lease / "bench.json").unlink()
        gpu_lease.price_call(tmp_path)


def test_the_committed_measurements_price_the_call_within_nine_minutes():
    plan = gpu_lease.price_call()
    assert sum(p.seconds for p in plan) <= gpu_lease.BUDGET_S == 540
    assert "plan: " in gpu_lease.check_plan(plan, gpu_lease.BUDGET_S)
    for budget, allowed in ((100, "at least"), (600, "at most 540")):
        with pytest.raises(Refusal, match=f"--budget {budget}:.*{allowed}"):
            gpu_lease.check_plan(plan, budget)


def test_the_export_stays_within_what_comes_back(tmp_path):
    folder, out = tmp_path / "2026-11-28_nvidia-h200_torch2.11", tmp_path / "OUT"
    (folder / "fig4" / "run").mkdir(parents=True)
    out.mkdir()
    (folder / "fig4.json").write_text(json.dumps({"mode": "fig4", "folder": folder.name, "started": "t1"}))
    (folder / "fig4" / "run" / "history.jsonl").write_text("{}\n")
    export(folder, out)
    assert sorted(p.name for p in out.iterdir()) == ["fig4.files.json", "fig4.json"]
    for n in range(7):
        (out / f"log{n}").write_text("")
    with pytest.raises(Refusal, match="more than the 8 that come back"):
        export(folder, out)


def test_an_import_never_writes_over_another_call(tmp_path):
    source, into = tmp_path / "OUT", tmp_path / "runs_gpu"
    source.mkdir()
    (source / "bench.json").write_text(json.dumps({"mode": "bench", "folder": "day_gpu_torch2", "started": "t2"}))
    (source / "lease.log").write_text("ignored")
    (into / "day_gpu_torch2").mkdir(parents=True)
    (into / "day_gpu_torch2" / "bench.json").write_text(json.dumps({"mode": "bench", "started": "t1"}))
    assert import_results(source, into).name == "day_gpu_torch2_2"
    assert import_results(source, into).name == "day_gpu_torch2_2"  # the same call again: in place
    (source / "evil.files.json").write_text(json.dumps({"folder": "fig4", "files": {"../../x": ""}}))
    with pytest.raises(Refusal, match="outside its folder"):
        import_results(source, into)
    with pytest.raises(Refusal, match="not a lease's results file"):
        (source / "other.json").write_text("[]")
        import_results(source, into)


def test_a_tree_over_the_limit_is_refused_in_one_line(tmp_path, monkeypatch):
    from cod import ROOT

    carry = tmp_path / "carry"
    carry.mkdir()
    (carry / "x").write_bytes(b"0" * 1000)
    assert "of 64.0 MiB" in gpu_carry.check_tree(ROOT, [carry])
    monkeypatch.setattr(gpu_carry, "TREE_LIMIT", 10)
    with pytest.raises(Refusal, match="over the limit") as refused:
        gpu_carry.check_tree(ROOT, [carry])
    assert "\n" not in str(refused.value)
