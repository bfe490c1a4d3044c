"""The README's GPU tables (`cod.report.gpu_results`): calls of one lease pooled, numbers read, never typed."""

import json
import math

from cod import ROOT
from cod.report.gpu_results import bench_rows, lease_key, load, report, science_rows

ENV = {"device": "cuda", "gpu": "NVIDIA H200", "torch": "2.11.0+cu130", "cuda": "13.0", "python": "3.12.3",
       "peak_bf16_flops": 989e12}


def _speed(tokens_per_s, peak=10.0, **extra):
    return {"ok": True, "tokens_per_s": tokens_per_s, "mfu": tokens_per_s / 1e6, "params": 162e6, "micro_batch": 128,
            "seq_len": 256, "recompute": False, "peak_allocated_gb": peak, **extra}


def _run(norm, seed, loss, layers=24, steps=228):
    return {"ok": True, "status": "completed", "norm": norm, "seed": seed, "val_loss": loss, "val_ppl": math.exp(loss),
            "n_layers": layers, "d_model": 768, "steps": steps, "tokens": steps * 16384,
            "last_layer_over_first_resid_var": 2.0 if norm == "lns" else 4.0}


def _write(folder, mode, items, **extra):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{mode}.json").write_text(json.dumps({"mode": mode, "dry": False, "environment": ENV,
                                                     "items": items, **extra}))


def test_calls_of_one_lease_are_pooled_by_folder_name(tmp_path):
    first, second = tmp_path / "2026-11-27_nvidia-h200_torch2.11.0-cu130", tmp_path / "2026-11-27_nvidia-h200_torch2.11.0-cu130_2"
    assert lease_key(first) == lease_key(second) == first.name
    _write(first, "bench", {"a/x eager": _speed(100.0, 9.0), "a/x compiled": {"ok": None, "skipped": "late"},
                            "a/x estimate": {"ok": True, "estimated_gb": 10.0}})
    _write(second, "bench", {"a/x eager": _speed(120.0, 11.0), "a/x compiled": _speed(300.0)})
    _write(tmp_path / "dry", "bench", {"a/x eager": _speed(1.0)}, dry=True)  # a dry run is never reported
    leases = load(tmp_path)
    assert list(leases) == [first.name] and len(leases[first.name]["bench"]) == 2
    rows, missing, speedups = bench_rows(leases[first.name]["bench"])
    eager, compiled = rows
    assert "| eager | 100-120 |" in eager and "| 9.0-11.0 | 10.0 | 0.90-1.10 | 2 |" in eager
    assert "| compiled | 300 |" in compiled
    assert missing == []  # skipped in one call, measured in another
    assert speedups == ["`a/x` 2.73x"]  # 300 over the median of 100 and 120


def test_science_pairs_seeds_and_gives_lns_minus_pre_ln_beside_the_paper(tmp_path):
    call = {"items": {"a": _run("pre_ln", 0, 4.0), "b": _run("lns", 0, 3.5), "c": _run("pre_ln", 1, 4.2),
                      "d": _run("lns", 2, 3.0), "skipped": {"ok": None, "skipped": "late"}}}
    (row,) = science_rows([call])
    assert row.startswith("| 24 x 768 | 228 steps, 3.7M tokens | 0 |")  # seed 0 alone has both norms
    assert "| 4.000 | 3.500 | -0.500 | -0.074 (250M," in row  # paper A: log(20.35 / 21.92)
    assert "| 54.6 / 33.1 |" in row and "| 4.0 / 2.0 |" in row


def test_the_measurements_page_shows_what_the_committed_gpu_results_say():
    assert report().strip() in (ROOT / "docs" / "measurements.md").read_text()
