"""Training speed of our trainer against Hugging Face's LlamaForCausalLM, and the layer analysis's speed.

    python -m cod.tools.benchmark                      # every default-profile shape, CPU, fp32
    python -m cod.tools.benchmark --shapes a130m b_d32 --rounds 9
    python -m cod.tools.benchmark --analysis           # + the full layer analysis at 24 and 32 layers
    python -m cod.tools.benchmark --device cuda --bf16 # on a GPU
    python -m cod.tools.benchmark --record --analysis  # + keep it in runs/cpu/ (the README's section: cod.report.cpu_speed)

**What is timed.** One training step as each trainer takes it: forward, loss, backward,
gradient clipping to norm 1 and a fused AdamW step, at the same shape, batch and optimiser
for both models (HF gets the same fused AdamW; its loss comes from `labels=`, ours from
`logits=False`, the trainer's path).

**How, on a shared machine.** Per shape, one worker process holds our model and one holds
HF's, each on one thread, as the pipeline runs two single-thread runs side by side. After a
warm-up, `--rounds` rounds follow; in each, both workers train at the same moment for the
same `--seconds` window and report tokens/s. The ratio is taken within each round, so a
change of the machine's speed between rounds (other tenants, clock) cancels, and the table
gives the median ratio with its range over rounds. The matmul peak that model FLOP
utilisation (MFU) is measured against is taken the same way: both workers multiply 1024 x
1024 matrices at once, twice before the rounds and twice after, and the best counts (a
neighbour's burst during one measurement would otherwise lower the peak and inflate the
MFU). Peak memory is each worker's own resident peak (CPU) or allocated peak (GPU). Model
FLOPs count 6 x matrix parameters (unembedding included) plus causal
attention, per token.

**The bound.** Each worker also times the matrix products of one step alone
(`cod.model.flops.step_products`: every linear layer's forward and two backward products,
attention's six batched products, fused as far as they can be), each at its shape, best of 5,
in whichever orientation runs faster. The MFU a step made of nothing else would reach is the
`bound` column: no implementation built on these BLAS products gets above it.

**Where the time went** (torch.profiler, a130m, one thread, 2026-11-23), and what changed:
- 35% in the fused CPU attention kernel (`_scaled_dot_product_flash_attention_for_cpu` and
  its backward), at 6-dimensional heads. Explicit products are faster, and a BLAS product
  whose output is only head-size wide (P @ V) runs 3-5x slower than the same product taken
  transposed (V^T @ P^T). `cod.model.cpu_attention` arranges every product, forward and backward, to
  be wide: attention now takes about 30% less time. Forward and backward of 32 x 4 heads of 64
  tokens: head size 6, 11.4 ms fused against 6.1 ms ours; 8, 6.3 against 5.2; 12, 5.2 against
  5.6. So heads of up to 8 (`cod.model.transformer.SMALL_HEAD`) use ours on CPUs, larger heads and GPUs the
  fused kernels.
- 13% in log-softmax and its backward over the (2048, 2048) logits, plus the unembedding
  products. `cod.model.loss` forms the loss and its gradients chunk by chunk in one pass with a
  single exp (the fp32 logits never exist; see #14 for the memory side).
- 4% in AdamW's per-parameter loop: the trainer's AdamW is now fused on CPUs too.
- q, k, v (and gate, up) are one product each, with rotary applied to q and k at once.
- Page faults: glibc gave the activations' memory back to the kernel after every step and
  faulted it in again in the next (about 1 ms per 2 MB). `cod.train.host` keeps freed memory in the
  process; the trainer and both workers here set it. Side by side, ours gained 2-17% and HF
  2-21%, so the ratios fell from 1.15-1.70 to 1.04-1.55.
What remains (2026-11-24, a_w48 alone on one thread, with `cod.train.host`: 200 ms a step; HF 214
ms): 44% in the matrix products (88 ms; HF 77 ms: the rotary trick adds (H + KV) head sizes
of columns to our q/k/v product), 23% in the fused attention kernel at 12-dimensional heads
(47 ms; HF the same kernel, 45 ms; `cod.model.cpu_attention` there is no faster, 199 against 200 ms a
step), the rest in elementwise work (norms, rotary, SiLU, residual adds) and the optimiser.
1.5x HF would be a 143 ms step, of which products and attention alone take 135 ms:
everything else would have to fit in 8 ms, against 66 ms now. Products whose inner
dimension is the width (every forward product and input gradient, e.g. (2048, 48) @ (48,
256) at 41 GFLOP/s and the logits' (256, 48) @ (48, 2048) at 28) run far below the peak,
those whose inner dimension is the tokens (weight gradients) near it. The `bound` column is
what that leaves for MFU: 41-77% at the default shapes and below 50% at a_w16, b_d24, b_d32
and b_d32_narrow, where no implementation built on these products reaches 50% MFU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from cod import ROOT
from cod.runs.analysis import analysis_settings
from cod.metrics.effectiveness import analyse_layers
from cod.runs.params import load_params
from cod.report.cpu_speed import record_folder
from cod.train.speed import Worker

def default_shapes() -> dict[str, dict]:
    """The default profile's language-model shapes with their batch shape (the ViT's size, which
    reads images, is left out)."""
    profile = load_params()["profiles"]["default"]
    base = profile["base"]
    shapes = {}
    for name, size in profile["sizes"].items():
        if name.startswith("vit"):
            continue
        settings = {**base, **size}
        model = {k.split(".", 1)[1]: v for k, v in settings.items() if k.startswith("model.")}
        shapes[name] = {"model": model, "batch": settings["data.batch_size"], "seq": settings["data.seq_len"]}
    return shapes


def serve(impl: str, shape: dict, threads: int, device: str, bf16: bool) -> None:
    """Worker loop: one JSON command per line on stdin, one JSON answer per line on stdout."""
    torch.set_num_threads(threads)
    worker = Worker(impl, shape, device, bf16)
    print(json.dumps({"ready": True, "flops_per_token": worker.flops_per_token}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        if command["do"] == "train":
            answer = {"tokens_per_s": worker.train_for(command["seconds"])}
        elif command["do"] == "peak":
            answer = {"flops": worker.matmul_peak()}
        elif command["do"] == "products":
            answer = {"seconds": worker.products_seconds()}
        else:
            answer = {"peak_mb": worker.peak_mb()}
        print(json.dumps(answer), flush=True)
        if command["do"] == "memory":
            return


# ----------------------------------------------------------------------------- side by side


class Pair:
    """Our worker and HF's, started together and asked the same thing at the same moment."""

    def __init__(self, shape: dict, args: argparse.Namespace):
        self.procs = {}
        for impl in ("ours", "hf"):
            command = [sys.executable, "-m", "cod.tools.benchmark", "--worker", impl, json.dumps(shape),
                       "--threads", str(args.threads), "--device", args.device] + (["--bf16"] if args.bf16 else [])
            self.procs[impl] = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ready = self._read()

    def _read(self) -> dict[str, dict]:
        answers = {}
        for impl, proc in self.procs.items():
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the {impl} worker stopped (exit code {proc.wait()})")
            answers[impl] = json.loads(line)
        return answers

    def ask(self, **command) -> dict[str, dict]:
        for proc in self.procs.values():
            proc.stdin.write(json.dumps(command) + "\n")
            proc.stdin.flush()
        return self._read()

    def close(self) -> dict[str, dict]:
        memory = self.ask(do="memory")
        for proc in self.procs.values():
            proc.wait()
        return memory


def compare(shape: dict, args: argparse.Namespace) -> dict:
    """Median tokens/s of each side, the median and range of the per-round ratio, MFU, memory."""
    pair = Pair(shape, args)
    peaks = [statistics.mean(a["flops"] for a in pair.ask(do="peak").values()) for _ in range(2)]
    rounds = [pair.ask(do="train", seconds=args.seconds) for _ in range(args.rounds)]
    products = pair.ask(do="products")["ours"]["seconds"]  # both time the same shapes at once, as in the rounds
    peaks += [statistics.mean(a["flops"] for a in pair.ask(do="peak").values()) for _ in range(2)]
    memory = pair.close()
    speed = {impl: [r[impl]["tokens_per_s"] for r in rounds] for impl in ("ours", "hf")}
    ratios = [o / h for o, h in zip(speed["ours"], speed["hf"])]
    peak, flops = max(peaks), pair.ready["ours"]["flops_per_token"]
    return {
        "ours": statistics.median(speed["ours"]), "hf": statistics.median(speed["hf"]),
        "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
        "mfu_ours": statistics.median(speed["ours"]) * flops / peak,
        "mfu_hf": statistics.median(speed["hf"]) * flops / peak,
        "mfu_products": shape["batch"] * shape["seq"] / products * flops / peak,
        "peak_gflops": peak / 1e9,
        "mb_ours": memory["ours"]["peak_mb"], "mb_hf": memory["hf"]["peak_mb"],
    }


# ----------------------------------------------------------------------------- analysis


def analysis_seconds(n_layers: int, analysis: str = "a_250m") -> dict[str, float]:
    """Seconds per score of `analyse_layers` on a freshly initialised model of the deepest
    default shape with `n_layers` blocks, at the token counts of analysis `analysis`, one thread."""
    params = load_params()
    params["profile"] = "default"
    spec = analysis_settings(analysis, params)
    shape = default_shapes()["a250m"]
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Transformer(ModelConfig(**{**shape["model"], "n_layers": n_layers})).eval()
    seq, vocab = shape["seq"], model.cfg.vocab_size
    tokens = lambda n, length=seq: torch.randint(0, vocab, (n // length, length))  # noqa: E731
    x, y, x_fit = tokens(spec["eval_tokens"]), tokens(spec["eval_tokens"]), tokens(spec["fit_tokens"])
    x_jac = tokens(spec["jacobian_tokens"] * spec["jacobian_context"], spec["jacobian_context"])
    with torch.no_grad():
        layers = analyse_layers(model, x, y, x_fit, x_jac, tau=spec["tau"])
    return layers.seconds


# ----------------------------------------------------------------------------- report


def cpu_name() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo; else what `platform` knows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def write_record(args: argparse.Namespace, shapes: dict[str, dict], analysis: dict[int, dict]) -> Path:
    """runs/cpu/<date>_<cpu>/bench.json: this run's machine, settings and results (read by cod.report.cpu_speed)."""
    date, cpu = time.strftime("%Y-%m-%d"), cpu_name()
    path = record_folder(date, cpu) / "bench.json"
    record = {"date": date, "path": str(path.relative_to(ROOT)),
              "machine": {"cpu": cpu, "cores": os.cpu_count(), "torch": torch.__version__},
              "settings": {"rounds": args.rounds, "seconds": args.seconds, "threads": args.threads,
                           "device": args.device, "dtype": "bf16 autocast" if args.bf16 else "fp32"},
              "shapes": shapes, "analysis": {str(k): v for k, v in analysis.items()}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds per shape (medians are over them)")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one round in seconds")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast (GPUs; slow on CPUs without bf16 units)")
    parser.add_argument("--shapes", nargs="*", help="names of default-profile sizes (default: all)")
    parser.add_argument("--analysis", action="store_true", help="also time the full layer analysis (24 and 32 layers)")
    parser.add_argument("--record", action="store_true",
                        help="keep the results in runs/cpu/<date>_<cpu>/bench.json (all shapes, CPU only)")
    parser.add_argument("--worker", nargs=2, metavar=("IMPL", "SHAPE_JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        serve(args.worker[0], json.loads(args.worker[1]), args.threads, args.device, args.bf16)
        return 0
    shapes = default_shapes()
    unknown = sorted(set(args.shapes or ()) - set(shapes))
    if unknown:
        parser.error(f"--shapes {unknown} unknown; allowed: {', '.join(shapes)}")
    if args.rounds < 1 or args.seconds <= 0:
        parser.error("--rounds must be >= 1 and --seconds > 0")
    if args.record and (args.shapes or args.device != "cpu"):
        parser.error("--record keeps a whole CPU table: drop --shapes and use --device cpu")

    dtype = "bf16 autocast" if args.bf16 else "fp32"
    print(f"{time.strftime('%Y-%m-%d')}, device {args.device}, {dtype}, two workers side by side with "
          f"{args.threads} thread(s) each, {args.rounds} rounds of {args.seconds:g} s per shape")
    print(f"{'shape':<13} {'ours tok/s':>10} {'HF tok/s':>9} {'ratio':>6} {'(range)':>11} {'ours MFU':>8} "
          f"{'HF MFU':>7} {'bound':>6} {'peak GF/s':>9} {'ours MB':>8} {'HF MB':>6}")
    results, analysis = {}, {}
    for name in args.shapes or shapes:
        r = results[name] = compare(shapes[name], args)
        print(f"{name:<13} {r['ours']:>10.0f} {r['hf']:>9.0f} {r['ratio']:>6.2f} "
              f"{'(%.2f-%.2f)' % (r['ratio_min'], r['ratio_max']):>11} {r['mfu_ours']:>8.1%} {r['mfu_hf']:>7.1%} "
              f"{r['mfu_products']:>6.1%} "
              f"{r['peak_gflops']:>9.1f} {r['mb_ours']:>8.0f} {r['mb_hf']:>6.0f}", flush=True)
    if args.analysis:
        print("\nfull layer analysis (analyse_layers, analyses.a_250m's tokens, one thread), seconds per score:")
        for n_layers in (24, 32):
            seconds = analysis[n_layers] = analysis_seconds(n_layers)
            parts = ", ".join(f"{k} {v:.1f}" for k, v in seconds.items() if v >= 0.05)
            print(f"{n_layers} layers: {sum(seconds.values()):.0f} s in all ({parts})", flush=True)
    if args.record:
        print(f"\nrecorded in {write_record(args, results, analysis)}; `python -m cod.report.cpu_speed --readme` "
              "puts it in README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
