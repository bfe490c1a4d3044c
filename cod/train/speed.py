"""Training speed of a shape: one implementation, ours or Hugging Face's LlamaForCausalLM, trained
step by step in this process as each trainer takes a step (forward, loss, backward, clipping to
norm 1, a fused AdamW step), and timed; with the device's matrix-product peak and a step's products
alone, which model FLOP utilisation is measured against. `measure` is `cod.runs.plan`'s estimate for a
shape no run has measured; `cod.tools.benchmark` runs two workers side by side (its docstring says
how, and what it found).
"""

from __future__ import annotations

import resource
import time

import torch

from cod.config import ModelConfig, OptimConfig
from cod.model.flops import flops_per_token, step_products
from cod.model.interop import to_hf_llama
from cod.model import Transformer
from cod.train.host import keep_freed_memory

MATMUL_N = 1024  # side of the square matrices the peak is measured on


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


class Worker:
    """One implementation at one shape, trained step by step on request."""

    def __init__(self, impl: str, shape: dict, device: str, bf16: bool):
        keep_freed_memory()  # as the trainer does; both sides, so the ratio compares the models
        torch.manual_seed(0)
        self.device = torch.device(device)
        self.impl, cfg = impl, ModelConfig(**shape["model"])
        model = Transformer(cfg)
        if impl == "hf":
            model = to_hf_llama(model).train()
        self.model = model.to(self.device)
        o = OptimConfig()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps,
                                           fused=True)
        self.x = torch.randint(0, cfg.vocab_size, (shape["batch"], shape["seq"]), device=self.device)
        self.dtype = torch.bfloat16 if bf16 else torch.float32
        self.autocast = torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=bf16)
        self.flops_per_token = flops_per_token(cfg, shape["seq"])
        self.cfg, self.batch, self.seq = cfg, shape["batch"], shape["seq"]
        for _ in range(3):
            self.step()
        sync(self.device)

    def step(self) -> None:
        x = self.x
        with self.autocast:
            out = self.model(x, x, logits=False) if self.impl == "ours" else self.model(input_ids=x, labels=x)
        self.optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()

    def train_for(self, seconds: float) -> float:
        """Train whole steps for about `seconds`; tokens/s."""
        steps, start = 0, time.perf_counter()
        while steps == 0 or time.perf_counter() - start < seconds:
            self.step()
            steps += 1
        sync(self.device)
        return steps * self.x.numel() / (time.perf_counter() - start)

    def matmul_peak(self, repeats: int = 20) -> float:
        """FLOP/s of the best of `repeats` square matmuls."""
        a, b = (torch.randn(MATMUL_N, MATMUL_N, device=self.device, dtype=self.dtype) for _ in range(2))
        best = float("inf")
        for _ in range(repeats):
            sync(self.device)
            start = time.perf_counter()
            a @ b
            sync(self.device)
            best = min(best, time.perf_counter() - start)
        return 2 * MATMUL_N**3 / best

    def products_seconds(self, repeats: int = 5) -> float:
        """Seconds of one step's matrix products alone (`step_products`), each the best of
        `repeats`, taken in whichever orientation (C = A B or C^T = B^T A^T) runs faster."""
        return sum(count * min(self._product(batch, m, k, n, repeats), self._product(batch, n, k, m, repeats))
                   for count, batch, m, k, n in step_products(self.cfg, self.batch, self.seq))

    def _product(self, batch: int, m: int, k: int, n: int, repeats: int) -> float:
        """Best seconds of (batch, m, k) @ (batch, k, n) into a preallocated output."""
        a = torch.randn(batch, m, k, device=self.device, dtype=self.dtype)
        b = torch.randn(batch, k, n, device=self.device, dtype=self.dtype)
        out = torch.empty(batch, m, n, device=self.device, dtype=self.dtype)
        best = float("inf")
        for _ in range(repeats):
            sync(self.device)
            start = time.perf_counter()
            torch.bmm(a, b, out=out)
            sync(self.device)
            best = min(best, time.perf_counter() - start)
        return best

    def peak_mb(self) -> float:
        if self.device.type == "cuda":
            return torch.cuda.max_memory_allocated(self.device) / 2**20
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(impl: str, shape: dict, steps: int, threads: int = 1, device: str = "cpu", bf16: bool = False) -> float:
    """Training tokens/s of `steps` steps of one implementation in this process, after warm-up
    (no partner: `cod.runs.plan`'s estimate for a shape no run has measured yet)."""
    torch.set_num_threads(threads)
    worker = Worker(impl, shape, device, bf16)
    start = time.perf_counter()
    for _ in range(steps):
        worker.step()
    sync(worker.device)
    return steps * worker.x.numel() / (time.perf_counter() - start)
