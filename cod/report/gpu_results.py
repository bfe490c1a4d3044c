"""What lent GPUs measured, as the tables of docs/measurements.md: read from the results `cod.tools.gpu_lease`
wrote (`cod.report` writes the page).

    python -m cod.report.gpu_results            # print the tables

Every folder runs/gpu/<date>_<device>_torch<version>[_<call>]/ holds one call's check.json,
bench.json, science.json or fig4.json (a lease's later calls add a suffix). Calls on the same device,
torch version and date are one lease: a shape measured in several calls shows its range, and
science's runs of a shape pool their seeds (a later call trains an earlier one's steps,
`--steps-from`). Nothing here needs torch or a GPU.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from statistics import median

from cod import ROOT
from cod.claims.depth_map import PAPER_A_GAPS
from cod.claims.scoreboard import span

RESULTS = ROOT / "runs" / "gpu"
CPU_ROWS = [  # what the CPU tests, whatever a GPU has measured
    "| FSDP, DDP, compile, micro-batches, resume, MoE dispatches, global target counts | this CPU, gloo for NCCL "
    "(`tests/test_gpu_path.py`) | pass |",
    "| every lease mode end to end at tiny shapes | this CPU (`--dry`) | pass |",
]
PAPER_A_SHAPES = {(12, 768): "130M", (24, 768): "250M"}  # science's shapes: paper A's sizes (Table 1)
MODES = ("check", "bench", "science", "fig4")  # the results files cod.tools.gpu_lease writes


def lease_key(folder: Path) -> str:
    """<date>_<device>_torch<version>: the lease a call's folder belongs to (its `_<n>` suffix dropped)."""
    name = folder.name
    head, _, tail = name.rpartition("_")
    return head if tail.isdigit() and "_torch" in head else name


def load(results: Path = RESULTS) -> dict[str, dict[str, list[dict]]]:
    """{lease: {mode: [that mode's results file, one per call]}}, leases and calls in name order."""
    leases: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(results.glob("*/*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and data.get("mode") in MODES and not data.get("dry"):
            leases[lease_key(path.parent)][data["mode"]].append({**data, "folder": path.parent.name})
    return {key: dict(modes) for key, modes in sorted(leases.items())}


def check_rows(calls: list[dict]) -> list[str]:
    """One row per check item, from its last call that ran it."""
    latest: dict[str, dict] = {}
    for call in calls:
        latest.update({k: v for k, v in call["items"].items() if v.get("ok") is not None})
    rows = []
    if "bf16_step" in latest:
        r = latest["bf16_step"]
        rows.append(f"| bf16 step | {'finite' if r['ok'] else 'FAILED'}: two steps at the paper's 50K vocabulary, "
                    f"queries in {r['query_dtype'].replace('torch.', '')}, peak {r['peak_gb']} GB |")
    if "resume" in latest:
        r = latest["resume"]
        how = "exactly" if r["exact"] else f"within {r['max_rel_loss_diff']:.1e} (relative loss)"
        rows.append(f"| resume after a kill | {'pass' if r['ok'] else 'FAILED'}: killed (SIGKILL) at step "
                    f"{r['killed_at_step']}, checkpoint every {r['checkpoint_every']}; the resumed run ends {how} "
                    f"where the uninterrupted one does (weights: max relative difference {r['max_rel_weight_diff']:.1e}) |")
    if "compile" in latest:
        r = latest["compile"]
        rows.append(f"| compiled = eager | {'pass' if r['ok'] else 'FAILED'}: {r['backend']}, "
                    f"{len(r['eager']['losses_and_grad_norms'])} steps, max relative loss difference "
                    f"{r['max_rel_loss_diff']:.1e} (tolerance {r['tolerance']}) |")
    if "moe_dispatch" in latest:
        r = latest["moe_dispatch"]
        compared = "; ".join(f"{way}: loss {c['rel_loss_diff']:.1e}, gradients {c['max_rel_grad_diff']:.1e}"
                             f"{', same loads' if c['same_loads'] else ', loads differ'}"
                             for way, c in r["compared_with_each"].items())
        rows.append(f"| MoE dispatch | {'pass' if r['ok'] else 'FAILED'}: `{r['dispatch_chosen_in_bf16']}` chosen "
                    f"in bf16; against expert by expert (relative): {compared} |")
    return rows


def bench_rows(calls: list[dict]) -> tuple[list[str], list[str], list[str]]:
    """Rows per shape and way (ranges over calls), what no call measured, and compiled over eager
    tokens/s (medians over calls) of each shape measured both ways."""
    measured: dict[tuple[str, str], list[dict]] = defaultdict(list)
    estimates: dict[str, float] = {}
    skipped: set[tuple[str, str]] = set()
    for call in calls:
        for name, r in call["items"].items():
            label, way = name.rsplit(" ", 1)
            if way == "estimate" and r.get("ok"):
                estimates[label] = r["estimated_gb"]
            elif r.get("ok"):
                measured[(label, way)].append(r)
            elif r.get("ok") is None:
                skipped.add((label, way))
    rows = []
    for (label, way), runs in sorted(measured.items(), key=lambda kv: (kv[0][0], kv[0][1] != "eager")):
        r = runs[0]
        peak = span([x["peak_allocated_gb"] for x in runs], "{:.1f}")
        estimate = estimates.get(label)
        ratio = span([x["peak_allocated_gb"] / estimate for x in runs], "{:.2f}") if estimate else "-"
        rows.append(f"| `{label}` | {r['params'] / 1e6:,.0f}M | {r['micro_batch']} x {r['seq_len']} | "
                    f"{'yes' if r['recompute'] else 'no'} | {way} | {span([x['tokens_per_s'] for x in runs], '{:,.0f}')} "
                    f"| {span([100 * x['mfu'] for x in runs], '{:.1f}')}% | {peak} | "
                    f"{f'{estimate:.1f}' if estimate else '-'} | {ratio} | {len(runs)} |")
    missing = [f"`{label}` {way}" for label, way in sorted(skipped - set(measured))]
    speed = {key: median(r["tokens_per_s"] for r in runs) for key, runs in measured.items()}
    speedups = [f"`{label}` {speed[(label, 'compiled')] / speed[(label, 'eager')]:.2f}x"
                for label, way in sorted(measured) if way == "compiled" and (label, "eager") in measured]
    return rows, missing, speedups


def science_rows(calls: list[dict]) -> list[str]:
    """Per shape: Pre-LN and LNS validation losses by seed, and LNS minus Pre-LN for each seed run with both."""
    runs: dict[tuple[int, int, int], dict[str, dict[int, dict]]] = defaultdict(lambda: defaultdict(dict))
    for call in calls:
        for r in call["items"].values():
            if r.get("status") == "completed":
                runs[(r["n_layers"], r["d_model"], r["steps"])][r["norm"]][r["seed"]] = r
    rows = []
    for (layers, width, steps), norms in sorted(runs.items()):
        pre, lns = norms.get("pre_ln", {}), norms.get("lns", {})
        paired = sorted(set(pre) & set(lns))
        tokens = next(iter({**pre, **lns}.values()))["tokens"]
        diffs = [lns[s]["val_loss"] - pre[s]["val_loss"] for s in paired]
        growth = [span([n[s]["last_layer_over_first_resid_var"] for s in n], "{:.1f}") if n else "-"
                  for n in (pre, lns)]
        size = PAPER_A_SHAPES.get((layers, width))
        paper = (f"{PAPER_A_GAPS.loc[size, 'gap']:+.3f} ({size}, {PAPER_A_GAPS.loc[size, 'tokens_per_param']:.0f} "
                 "tokens per non-embedding parameter)") if size else "-"
        rows.append(f"| {layers} x {width} | {steps} steps, {tokens / 1e6:.1f}M tokens | {', '.join(map(str, paired))} | "
                    + " | ".join(", ".join(f"{n[s]['val_loss']:.3f}" for s in paired) for n in (pre, lns))
                    + f" | {', '.join(f'{d:+.3f}' for d in diffs)} | {paper} | "
                    + " / ".join(f"{sum(n[s]['val_ppl'] for s in paired) / len(paired):.1f}" for n in (pre, lns))
                    + f" | {growth[0]} / {growth[1]} |")
    return rows


def fig4_rows(calls: list[dict]) -> list[str]:
    """One row per Fig. 4 run: what it trained of its schedule, its validation loss, and the last layer's
    residual variance over the first's at the first statistics step, the end of warmup and the last."""
    rows = []
    for call in calls:
        for r in call["items"].values():
            growth = {int(step): ratio for step, ratio in (r.get("last_layer_over_first_by_step") or {}).items()}
            if r.get("status") not in ("completed", "stopped") or not growth:
                continue
            marks = [min((s for s in growth if s > 0), default=None), r["warmup_steps"], max(growth)]
            shown = [f"{growth[s]:.2f}" if s in growth else "-" for s in marks]
            rows.append(f"| {r['variant']} | {r['steps']:,} of {r['schedule_steps']:,} ({r['tokens'] / 1e6:.1f}M "
                        f"tokens, {r['status']}) | {r['val_loss']:.3f} | " + " | ".join(shown) + " |")
    return rows


def report(results: Path = RESULTS) -> str:
    """The README's section: what was measured where, then each lease's tables."""
    leases = load(results)
    done = {mode for modes in leases.values() for mode in modes}
    where = {mode: ", ".join(k for k, m in leases.items() if mode in m) or "GPU: not yet" for mode in MODES}
    lines = ["| what | where measured | result |", "|---|---|---|",
             f"| trainer on a GPU: bf16 step, resume after a kill, compiled = eager, grouped MoE dispatch | "
             f"{where['check']} | {'below' if 'check' in done else 'unmeasured (`check`)'} |",
             f"| tokens/s, MFU and peak memory of paper shapes against `cod.tools.memory`, eager and compiled | "
             f"{where['bench']} | {'below' if 'bench' in done else 'unmeasured (`bench`)'} |",
             f"| paper A's Pre-LN vs LNS at its 130M / 250M shapes | {where['science']} | "
             f"{'below' if 'science' in done else 'unmeasured (`science`)'} |",
             f"| paper A's Fig. 4 at its 130M shape: per-layer variance of Pre-LN, LNS and scaled init on the released "
             f"recipe | {where['fig4']} | {'below' if 'fig4' in done else 'unmeasured (`lease`)'} |", *CPU_ROWS]
    for key, modes in leases.items():
        env = next(iter(modes.values()))[0]["environment"]
        folders = sorted({call["folder"] for calls in modes.values() for call in calls})
        lines += ["", f"**{env.get('gpu', env['device'])}**, torch {env['torch']}, CUDA {env.get('cuda')}, "
                      f"Python {env['python']}: {len(folders)} calls, `runs/gpu/{key}*`."]
        if "check" in modes:
            lines += ["", "| check | result |", "|---|---|", *check_rows(modes["check"])]
        if "bench" in modes:
            rows, missing, speedups = bench_rows(modes["bench"])
            peak = env.get("peak_bf16_flops")
            lines += ["", f"Bench: one micro-batch a step, timed after two warm-up steps; MFU against "
                          f"{peak / 1e12:,.0f} TFLOP/s (dense bf16), recomputation not counted; peak of allocated "
                          "memory against `cod.tools.memory.training_peak` of the same step; a range spans the calls.", "",
                      "| shape | params | micro-batch | recompute | way | tokens/s | MFU | peak GB | estimate GB | "
                      "measured / estimate | calls |", "|---|---|---|---|---|---|---|---|---|---|---|", *rows]
            if speedups:
                lines += ["", f"Compiled over eager tokens/s: {', '.join(speedups)}."]
            if missing:
                lines += ["", f"Not measured (its call's time ran out first): {', '.join(missing)}."]
        if "science" in modes:
            corpus = modes["science"][0]["tokens"]
            lines += ["", f"Science (ours, not a claim of the papers): Pre-LN and LNS at the paper profile's shapes "
                          f"and recipe, 64 x 256 tokens a step, on the default profile's tokens ({corpus['vocab']:,}-token "
                          f"BPE, {corpus['train_tokens'] / 1e6:.1f}M training tokens), not the paper's data: compare "
                          "the two norms, not Table 1. Validation loss per seed; perplexity the mean over those seeds; "
                          "residual variance of the last layer over the first at the last statistics step. Paper A's gap "
                          "is the log of its perplexity ratio, after far more tokens.", "",
                      "| layers x width | trained | seeds | Pre-LN val loss | LNS val loss | LNS - Pre-LN | "
                      "paper A's LNS - Pre-LN (Table 1) | ppl Pre-LN / LNS | variance growth Pre-LN / LNS |",
                      "|---|---|---|---|---|---|---|---|---|",
                      *science_rows(modes["science"])]
        if "fig4" in modes:
            call = modes["fig4"][0]
            lines += ["", f"Fig. 4 (ours, not a claim of the papers): paper A's 130M shape, 64 x 256 tokens a step, on "
                          f"the default profile's tokens ({call['tokens']['vocab']:,}-token BPE), under "
                          f"{call['recipe']}. "
                          "Residual variance of the last layer over the first at the first statistics step, the end "
                          "of warmup and the last statistics step.", "",
                      "| run | trained of the schedule's steps | val loss | first | end of warmup | last |",
                      "|---|---|---|---|---|---|", *fig4_rows(modes["fig4"])]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m cod.report.gpu_results", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    print(report())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
