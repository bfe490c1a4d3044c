"""Training speed of our model against Hugging Face's LlamaForCausalLM at the same shape.

    python -m cod.benchmark                      # the default profile's shapes, one thread
    python -m cod.benchmark --threads 2 --steps 20
    python -m cod.benchmark --device cuda        # on a GPU (bf16 autocast with --bf16)

Prints, per shape: training tokens/s (forward, backward, AdamW step) of ours and of HF,
their ratio, model FLOP utilisation against the measured matmul peak of this machine, and
peak memory. Each measurement runs in its own process, so peak memory is the process's own
and the two implementations do not share warm caches.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import torch

from cod.config import ModelConfig
from cod.experiments import load_params
from cod.model import Transformer


def default_shapes() -> dict[str, dict]:
    """The default profile's language-model shapes with its batch shape (the ViT's size, which
    reads images, is left out)."""
    profile = load_params()["profiles"]["default"]
    base = profile["base"]
    shapes = {}
    for name, size in profile["sizes"].items():
        if name.startswith("vit"):
            continue
        model = {k.split(".", 1)[1]: v for k, v in {**base, **size}.items() if k.startswith("model.")}
        shapes[name] = {"model": model, "batch": base["data.batch_size"], "seq": base["data.seq_len"]}
    return shapes


def matmul_peak(device: torch.device, dtype: torch.dtype, n: int = 1024, repeats: int = 20) -> float:
    """Measured FLOP/s of an n x n matmul, the best of `repeats`."""
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    best = float("inf")
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        a @ b
        _sync(device)
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def flops_per_token(cfg: ModelConfig, seq_len: int) -> float:
    """Training FLOPs per token: 6 x (matmul parameters) + attention scores and values."""
    d, L, f, kv = cfg.d_model, cfg.n_layers, cfg.ffn_width, cfg.kv_heads * cfg.head_dim
    per_block = 2 * d * d + 2 * d * kv + 3 * d * f
    matmul_params = L * per_block + d * cfg.vocab_size
    return 6 * matmul_params + 6 * L * seq_len * d  # causal attention: half of 12 L T d


def measure(impl: str, shape: dict, steps: int, threads: int, device: str, bf16: bool) -> dict:
    """Train `steps` steps (after 3 warm-up steps) and report speed and peak memory."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    dev = torch.device(device)
    cfg = ModelConfig(**shape["model"])
    model = Transformer(cfg)
    if impl == "hf":
        from cod.interop import to_hf_llama

        model = to_hf_llama(model).train()
    model.to(dev)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randint(0, cfg.vocab_size, (shape["batch"], shape["seq"]), device=dev)
    autocast = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16)

    def step() -> None:
        with autocast:
            loss = model(x, x).loss if impl == "ours" else model(input_ids=x, labels=x).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    for _ in range(3):
        step()
    _sync(dev)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    _sync(dev)
    elapsed = time.perf_counter() - start
    tokens_per_s = steps * x.numel() / elapsed
    if dev.type == "cuda":
        peak_mb = torch.cuda.max_memory_allocated(dev) / 2**20
    else:
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"impl": impl, "tokens_per_s": tokens_per_s, "peak_mb": peak_mb,
            "flops_per_token": flops_per_token(cfg, shape["seq"])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per measurement")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast (GPUs; slow on CPUs without bf16 units)")
    parser.add_argument("--shapes", nargs="*", help="names of default-profile sizes (default: all)")
    parser.add_argument("--one", nargs=2, metavar=("IMPL", "SHAPE_JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        impl, shape = args.one[0], json.loads(args.one[1])
        print(json.dumps(measure(impl, shape, args.steps, args.threads, args.device, args.bf16)))
        return 0

    torch.set_num_threads(args.threads)
    dtype = torch.bfloat16 if args.bf16 else torch.float32
    peak = matmul_peak(torch.device(args.device), dtype)
    print(f"device {args.device}, {args.threads} thread(s), {dtype}: measured matmul peak {peak / 1e9:.1f} GFLOP/s")
    print(f"{'shape':<8} {'ours tok/s':>11} {'HF tok/s':>10} {'ratio':>6} {'ours MFU':>9} {'HF MFU':>7} "
          f"{'ours MB':>8} {'HF MB':>7}")
    shapes = default_shapes()
    for name in args.shapes or shapes:
        results = {}
        for impl in ("ours", "hf"):
            command = [sys.executable, "-m", "cod.benchmark", "--one", impl, json.dumps(shapes[name]),
                       "--steps", str(args.steps), "--threads", str(args.threads), "--device", args.device]
            if args.bf16:
                command.append("--bf16")
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            results[impl] = json.loads(done.stdout.strip().splitlines()[-1])
        ours, hf = results["ours"], results["hf"]
        mfu = lambda r: r["tokens_per_s"] * r["flops_per_token"] / peak  # noqa: E731
        print(f"{name:<8} {ours['tokens_per_s']:>11.0f} {hf['tokens_per_s']:>10.0f} "
              f"{ours['tokens_per_s'] / hf['tokens_per_s']:>6.2f} {mfu(ours):>9.1%} {mfu(hf):>7.1%} "
              f"{ours['peak_mb']:>8.0f} {hf['peak_mb']:>7.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
