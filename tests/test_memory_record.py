"""The paper profile's memory record (runs/memory/paper.json, `python -m cod.tools.memory paper --record`)
and README.md's table rendered from it: the record sizes the profile's current shapes, a shape
sized again gives the recorded peak, and the README shows the record."""

import json

import pytest

from cod.runs.params import load_params
from cod.report import memory_sizes
from cod.tools import memory

GB = 10**9


def _sized(peak: float, params: float = 0.1, traced: bool = True, sharded: float | None = None, **extra) -> dict:
    return {"params": int(params * GB), "batch": 512, "tokens": 256, "micro_batch": 128, "recompute": False,
            "peak": int(peak * GB), "traced": traced, "sharded": None if sharded is None else int(sharded * GB), **extra}


def test_the_table_has_a_row_per_experiment_and_names_what_fits_only_sharded():
    kept = {"profile": "paper", "date": "2026-11-28", "torch": "2.13.0", "gpu_bytes": 80 * GB, "margin": 0.15,
            "shards": 8, "whole_batch": {"a/x": 75 * GB},
            "runs": {"a/x": _sized(22), "a/y": _sized(26, params=0.14), "b/moe": _sized(126, 7.9, False, 24),
                     "v/vit": _sized(2, 0.02, batch=512, tokens=0)}}
    text = memory_sizes.report(kept)
    assert "3 of the profile's 4 distinct shapes" in text
    assert "`b/moe` fit only sharded" in text and "estimated peak per GPU is 24 GB" in text
    assert "`a/x` would peak at 75 GB" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| experiment")]
    assert rows == ["| a | 2 | 0.10-0.14B | 512 x 256 | 128 | no | 22-26 |",
                    "| b | 1 | 7.90B | 512 x 256 | 128 | no | >126 unsharded |",
                    "| v | 1 | 0.02B | 512 images | 128 | no | 2 |"]
    assert memory.fitting(kept["runs"]["b/moe"]) and not memory.fitting(_sized(126, traced=False, sharded=90))


@pytest.fixture(scope="module")
def kept() -> dict:
    return json.loads(memory.record_path("paper").read_text())


def test_the_record_sizes_every_shape_of_the_paper_profile_and_all_fit(kept):
    shapes = memory.distinct_shapes({**load_params(), "profile": "paper"})
    assert kept["runs"].keys() == shapes.keys(), "params.yaml's paper shapes changed: python -m cod.tools.memory paper --record --readme"
    assert all(memory.fitting(r) for r in kept["runs"].values())
    assert kept["whole_batch"].keys() == set(memory.WHOLE_BATCH)


@pytest.mark.parametrize("label", ["a11_vit/none", "b_depth/d12", "a_130m/mix_ln", "b_moe/moe_small_shared"])
def test_a_shape_sized_again_gives_the_recorded_sizes(kept, label):
    """The record is the current code's: a shape of each kind (a ViT, a recomputed decoder, Mix-LN's
    stack, a mixture of experts) sized now gives the recorded sizes."""
    shapes = memory.distinct_shapes({**load_params(), "profile": "paper"})
    assert memory.size(shapes[label]) == kept["runs"][label]


def test_the_measurements_page_shows_the_record(kept):
    assert memory_sizes.report(kept).strip() in (memory.ROOT / "docs" / "measurements.md").read_text()
