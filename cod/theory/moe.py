"""Top-k mixture of experts as averaging: paper B Theorem 6 (App. B.7).

Reconstructed statement. With uniform gating y(x) = (1/k) sum_{i in S(x)} E_i(x) over the k selected
experts and a routing set S locally constant around x: if the E_i(x) are mutually independent with a
common mean and variance s^2, then Var(y) = s^2 / k (eq. 92); if the expert Jacobians J_i = dE_i/dx are
independent with a common mean and variance, then Var(J) = Var(J_i) / k entrywise (eq. 93).

Simulation: experts E_i(x) = W2_i ReLU(W1_i x) with N(0, 1/fan_in) weights, drawn afresh in every draw,
so expert outputs are independent across experts; with `corr` > 0 every expert's weights share a common
component (W = sqrt(corr) W_shared + sqrt(1 - corr) W_own), the correlated experts of an upcycled or
load-imbalanced MoE. Since the experts are exchangeable and drawn independently of the router,
the k selected experts are simply k fresh experts. Gating is uniform or a softmax over the selected
experts' router logits (i.i.d. N(0, s^2)).
"""

from __future__ import annotations

import math

import numpy as np
import torch


@torch.no_grad()
def moe_draws(ks, d: int, d_expert: int, n_draws: int, corr: float = 0.0, gate_scale: float = 0.0,
              seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per-draw mean square of the output coordinates and of the Jacobian entries, (D, len(ks)) each.

    Both are zero-mean (W2 has mean zero), so their expectations are Var(y) and Var(J).
    """
    g = torch.Generator().manual_seed(seed)
    kmax = max(ks)
    rn = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)
    mix = lambda shared, own: math.sqrt(corr) * shared + math.sqrt(1 - corr) * own
    w1 = mix(rn(n_draws, 1, d, d_expert), rn(n_draws, kmax, d, d_expert)) / math.sqrt(d)  # (D, K, d, de)
    w2 = mix(rn(n_draws, 1, d_expert, d), rn(n_draws, kmax, d_expert, d)) / math.sqrt(d_expert)  # (D, K, de, d)
    x = rn(n_draws, 1, 1, d)
    h = x @ w1  # (D, K, 1, de)
    outs = (torch.relu(h) @ w2).squeeze(2)  # (D, K, d)
    jacs = w1 @ ((h > 0).double().transpose(-1, -2) * w2)  # (D, K, d, d): dE_i/dx, rows input, cols output
    gate_logits = gate_scale * rn(n_draws, kmax)
    y_ms, j_ms = [], []
    for k in ks:
        gate = (
            torch.softmax(gate_logits[:, :k], -1)
            if gate_scale > 0
            else torch.full((n_draws, k), 1.0 / k, dtype=torch.float64)
        )
        y = (gate[..., None] * outs[:, :k]).sum(1)
        j = (gate[..., None, None] * jacs[:, :k]).sum(1)
        y_ms.append(y.pow(2).mean(-1))
        j_ms.append(j.pow(2).mean((-1, -2)))
    return torch.stack(y_ms, 1).numpy(), torch.stack(j_ms, 1).numpy()
