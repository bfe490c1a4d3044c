"""The CPU speed section of docs/measurements.md, read from the newest record `python -m cod.tools.benchmark
--record` wrote (`cod.report` writes the page).

    python -m cod.report.cpu_speed            # print the section

Each record is runs/cpu/<date>_<cpu>/bench.json: the machine, the benchmark's settings, one
result per shape (`cod.tools.benchmark.compare`) and, with `--analysis`, the layer analysis's seconds
per score at 24 and 32 layers. Nothing here needs torch.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from statistics import median
from typing import Any

from cod import ROOT
from cod.claims.scoreboard import span

RESULTS = ROOT / "runs" / "cpu"
RATIO_TARGET, MFU_TARGET = 1.5, 0.5  # issue #13: 1.5x HF's tokens/s, 50% of the matmul peak
ANALYSIS_TARGETS = {24: 120, 32: 300}  # issue #13: seconds of the full layer analysis at 24 and 32 layers


def record_folder(date: str, cpu: str, results: Path = RESULTS) -> Path:
    """runs/cpu/<date>_<cpu as a slug>/: where one benchmark run's record goes."""
    slug = re.sub(r"[^a-z0-9]+", "-", cpu.lower()).strip("-")[:40] or "cpu"
    return results / f"{date}_{slug}"


def newest(results: Path = RESULTS) -> dict[str, Any] | None:
    """The newest record with every shape's result (by date, then folder name); None when there is none."""
    records = [json.loads(p.read_text()) for p in sorted(results.glob("*/bench.json"))]
    records = [r for r in records if r.get("shapes")]
    return max(records, key=lambda r: (r["date"], r["path"])) if records else None


def table(record: dict[str, Any]) -> list[str]:
    """One row per shape: tokens/s of both sides, the ratio and its range, MFU, bound, memory."""
    rows = ["| shape | ours tok/s | HF tok/s | ratio (range over rounds) | ours MFU | HF MFU | bound | ours MB | HF MB |",
            "|---|---|---|---|---|---|---|---|---|"]
    for name, r in record["shapes"].items():
        rows.append(f"| {name} | {r['ours']:.0f} | {r['hf']:.0f} | {r['ratio']:.2f} ({r['ratio_min']:.2f}-"
                    f"{r['ratio_max']:.2f}) | {r['mfu_ours']:.1%} | {r['mfu_hf']:.1%} | {r['mfu_products']:.1%} | "
                    f"{r['mb_ours']:.0f} | {r['mb_hf']:.0f} |")
    return rows


def summary(record: dict[str, Any]) -> list[str]:
    """The table read against issue #13's targets, every number from the record."""
    shapes = record["shapes"]
    ratios = {n: r["ratio"] for n, r in shapes.items()}
    saved = [1 - r["mb_ours"] / r["mb_hf"] for r in shapes.values()]
    fast = [n for n, v in ratios.items() if v >= RATIO_TARGET]
    low_bound = [n for n, r in shapes.items() if r["mfu_products"] < MFU_TARGET]
    mfu = [r["mfu_ours"] for r in shapes.values()]
    bound = [r["mfu_products"] for r in shapes.values()]
    faster = sum(v > 1 for v in ratios.values())
    lines = [f"Our training step runs at {span(list(ratios.values()), '{:.2f}')}x HF's tokens/s (faster at {faster} "
             f"of {len(ratios)} shapes), with a peak memory {span([100 * s for s in saved], '{:.0f}')}% below HF's. "
             "Against issue #13's targets:", ""]
    lines.append(f"- **{RATIO_TARGET:g}x HF**: met at {len(fast)} of {len(ratios)} shapes"
                 + (f" ({', '.join(fast)})" if fast else "") + ".")
    lines.append(f"- **{MFU_TARGET:.0%} of the matmul peak**: model FLOP utilisation is {span([100 * m for m in mfu], '{:.0f}')}%, "
                 f"and the `bound` column, a step of nothing but its products, is {span([100 * b for b in bound], '{:.0f}')}%"
                 + (f"; it stays below {MFU_TARGET:.0%} at {', '.join(low_bound)}, where no implementation built on "
                    "these BLAS products could reach the target." if low_bound else "."))
    analysis = record.get("analysis") or {}
    if analysis:
        parts = []
        for layers, seconds in sorted(analysis.items(), key=lambda kv: int(kv[0])):
            total = sum(seconds.values())
            target = ANALYSIS_TARGETS.get(int(layers))
            parts.append(f"{total:.0f} s at {layers} layers" + (f" (asked: at most {target} s)" if target else ""))
        shares = [seconds.get("permutation", 0.0) / sum(seconds.values()) for seconds in analysis.values()]
        lines += ["", f"The full layer analysis (`--analysis`: removal, causal, permutation, usefulness, Jacobians at "
                      f"`analyses.a_250m`'s tokens, one thread, a freshly initialised model of a250m's width) took "
                      f"{' and '.join(parts)}; the permutation score is {span([100 * s for s in shares], '{:.0f}')}% of it."]
    return lines


def report(record: dict[str, Any] | None) -> str:
    """The README section: when and where it was measured, the table and its reading."""
    if record is None:
        return "Not measured on this machine yet: `python -m cod.tools.benchmark --record --analysis` measures it."
    machine, settings = record["machine"], record["settings"]
    peak = median(r["peak_gflops"] for r in record["shapes"].values())
    head = (f"Measured {record['date']} on {machine['cpu']} ({machine['cores']} cores), torch {machine['torch']}, "
            f"{settings['dtype']}, two workers of {settings['threads']} thread(s) side by side, {settings['rounds']} "
            f"rounds of {settings['seconds']:g} s a shape; matmul peak about {peak:.0f} GFLOP/s a worker with both busy "
            f"(record: `{record['path']}`):")
    return "\n".join([head, "", *table(record), "", *summary(record)])


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m cod.report.cpu_speed", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    print(report(newest()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
