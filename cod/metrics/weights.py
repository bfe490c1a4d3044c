"""Weight sparsity at thresholds (paper B eq. 14, Fig. 4 b-d, Fig. 20-22).

    S_eps(Theta) = (1 / |Theta|) sum_{theta in Theta} 1[|theta| < eps]

over the entries of a parameter set Theta (the paper's Theta is "the model's parameters";
pass `model.parameters()` for that, or one block's for a per-layer profile).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import torch


@torch.no_grad()
def weight_sparsity(params: Iterable[torch.Tensor], thresholds: Sequence[float]) -> np.ndarray:
    """(len(thresholds),) fraction of entries with |theta| < eps, pooled over `params`."""
    values = torch.cat([p.detach().abs().flatten().float() for p in params])
    return np.array([(values < eps).double().mean().item() for eps in thresholds])
