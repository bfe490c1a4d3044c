"""The benchmark's bookkeeping: shapes, FLOP counts and the side-by-side comparison."""

import argparse

import pytest

from cod import benchmark


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
    assert benchmark.measure("ours", shape, steps=2) > 0  # the products' bound is dense-only; training is not
