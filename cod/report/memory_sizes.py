"""The memory section of docs/measurements.md, read from the record `python -m cod.tools.memory paper
--record` keeps in runs/memory/<profile>.json (`cod.report` writes the page). Nothing here needs torch.
"""

from __future__ import annotations

from typing import Any

from cod.claims.scoreboard import span


def report(kept: dict[str, Any]) -> str:
    """docs/measurements.md's memory section: the record's sizes, a row per experiment."""
    runs = kept["runs"]
    sharded = {label: r for label, r in runs.items() if r["sharded"] is not None}
    lines = [f"Sized {kept['date']} (torch {kept['torch']}, `python -m cod.tools.memory {kept['profile']} --record`): "
             f"{len(runs) - len(sharded)} of the profile's {len(runs)} distinct shapes peak within "
             f"{1 - kept['margin']:.0%} of one {kept['gpu_bytes'] / 1e9:.0f} GB GPU."]
    if sharded:
        lines[0] += (" " + ", ".join(f"`{label}`" for label in sharded) + " fit only sharded: over "
                     f"{kept['shards']} GPUs with `train.parallel: fsdp`, their estimated peak per GPU is "
                     + " and ".join(f"{r['sharded'] / 1e9:.0f}" for r in sharded.values()) + " GB.")
    if kept["whole_batch"]:
        lines[0] += " Without micro-batches (the whole batch in one pass), " + " and ".join(
            f"`{label}` would peak at {peak / 1e9:,.0f} GB" for label, peak in kept["whole_batch"].items()) + "."
    lines += ["", "| experiment | shapes | parameters | batch | `train.micro_batch` | `train.recompute` | peak (GB) |",
              "|---|---|---|---|---|---|---|"]
    experiments: dict[str, list[dict]] = {}
    for label, r in runs.items():
        experiments.setdefault(label.split("/")[0], []).append(r)
    for experiment, rs in experiments.items():
        shapes = sorted({(r["tokens"], r["batch"]) for r in rs})
        batches = [f"{batch} x {tokens}" if tokens else f"{batch} images" for tokens, batch in shapes]
        peaks = [r["peak"] / 1e9 for r in rs if r["traced"] and r["sharded"] is None]
        big = [r for r in rs if not r["traced"] or r["sharded"] is not None]
        peak = "; ".join([*([span(peaks, "{:.0f}")] if peaks else []),
                          *(f"{'>' if not r['traced'] else ''}{r['peak'] / 1e9:.0f} unsharded" for r in big)])
        lines.append(f"| {experiment} | {len(rs)} | {span([r['params'] / 1e9 for r in rs], '{:.2f}')}B | "
                     f"{', '.join(batches)} | {', '.join(str(m) for m in sorted({r['micro_batch'] for r in rs}))} | "
                     f"{', '.join(sorted({'yes' if r['recompute'] else 'no' for r in rs}))} | {peak} |")
    return "\n".join(lines)
