"""The benchmark's bookkeeping: shapes, FLOP counts and the side-by-side comparison."""

import argparse

import pytest

from cod.tools import benchmark
from cod.train.speed import measure


def test_each_default_shape_keeps_its_own_batch_shape():
    shapes = benchmark.default_shapes()
    assert (shapes["a130m"]["batch"], shapes["a130m"]["seq"]) == (32, 64)
    assert (shapes["b_d12"]["batch"], shapes["b_d12"]["seq"]) == (8, 128)  # paper B's longer sequences
    assert shapes["b_d12"]["model"]["d_ff"] == 96 and not any(name.startswith("vit") for name in shapes)


def test_side_by_side_rounds_give_the_median_ratio_and_its_range():
    shape = {"model": {"vocab_size": 64, "max_seq_len": 16, "d_model": 8, "n_layers": 1, "n_heads": 2},
             "batch": 2, "seq": 8}
    args = argparse.Namespace(threads=1, device="cpu", bf16=False, rounds=3, seconds=0.05)
    result = benchmark.compare(shape, args)
    assert result["ratio_min"] <= result["ratio"] <= result["ratio_max"]
    assert result["ours"] > 0 and result["hf"] > 0 and result["peak_gflops"] > 0
    assert 0 < result["mfu_ours"] < 1 and result["mb_ours"] > 0 and result["mb_hf"] > 0
    assert result["mfu_ours"] < result["mfu_products"]  # a whole step is slower than its products alone


def test_unknown_shape_is_refused_before_any_worker_starts(capsys):
    with pytest.raises(SystemExit):
        benchmark.main(["--shapes", "a_w99"])
    assert "allowed: a_w16" in capsys.readouterr().err


def test_a_mixture_of_experts_is_timed_alone_for_the_plan():
    shape = {"model": {"vocab_size": 64, "max_seq_len": 16, "d_model": 8, "n_layers": 1, "n_heads": 2, "ffn": "moe",
                       "moe_experts": 4, "moe_top_k": 2}, "batch": 2, "seq": 8}
    assert measure("ours", shape, steps=2) > 0  # the products' bound is dense-only; training is not


def test_a_recorded_run_becomes_the_measurements_section_with_its_own_numbers(tmp_path, monkeypatch):
    from cod.report import cpu_speed

    monkeypatch.setattr(benchmark, "ROOT", tmp_path)
    monkeypatch.setattr(benchmark, "record_folder", lambda date, cpu: cpu_speed.record_folder(date, cpu, tmp_path))
    row = {"ours": 1500.0, "hf": 1000.0, "ratio": 1.5, "ratio_min": 1.4, "ratio_max": 1.6, "mfu_ours": 0.2,
           "mfu_hf": 0.1, "mfu_products": 0.45, "peak_gflops": 90.0, "mb_ours": 300.0, "mb_hf": 400.0}
    args = argparse.Namespace(rounds=3, seconds=1.0, threads=1, device="cpu", bf16=False)
    path = benchmark.write_record(args, {"a": row, "b": {**row, "ratio": 1.2, "mfu_products": 0.6}},
                                  {24: {"permutation": 60.0, "removal": 20.0}})
    record = cpu_speed.newest(tmp_path)
    assert record["path"] == str(path.relative_to(tmp_path)) and record["machine"]["cores"] > 0
    text = cpu_speed.report(record)
    assert "| a | 1500 | 1000 | 1.50 (1.40-1.60) | 20.0% | 10.0% | 45.0% | 300 | 400 |" in text
    assert "1.20-1.50x HF's tokens/s (faster at 2 of 2 shapes)" in text and "25% below HF's" in text
    assert "met at 1 of 2 shapes (a)" in text and "below 50% at a," in text
    assert "80 s at 24 layers (asked: at most 120 s); the permutation score is 75% of it" in text
    assert cpu_speed.report(None).startswith("Not measured")


def test_the_measurements_page_shows_the_newest_recorded_cpu_benchmark():
    from cod.report import cpu_speed

    assert cpu_speed.report(cpu_speed.newest()) in (cpu_speed.ROOT / "docs" / "measurements.md").read_text()


def test_a_record_needs_the_whole_cpu_table(capsys):
    with pytest.raises(SystemExit):
        benchmark.main(["--record", "--shapes", "a130m"])
    assert "--record keeps a whole CPU table" in capsys.readouterr().err
