"""Kurtosis of layer outputs, per dimension and per layer (paper B eq. 19-20, Fig. 13).

    kappa_{l,j} = mean_t (h_{l,t,j} - mu_{l,j})^4 / (mean_t (h_{l,t,j} - mu_{l,j})^2)^2      (eq. 19)
    kappa_l     = (1 / D) sum_j kappa_{l,j}                                                (eq. 20)

with mu_{l,j} the mean of dimension j over tokens t (the plain fourth standardised moment:
3 for a Gaussian, not the excess). h_l is the output of block l (1-based), before the final norm.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from cod.metrics.stream import Stream


def kurtosis(h: torch.Tensor) -> torch.Tensor:
    """(..., D) values -> (D,) kurtosis of each dimension over all leading (token) axes."""
    x = h.reshape(-1, h.shape[-1]).double()
    centred = x - x.mean(0)
    return centred.pow(4).mean(0) / centred.pow(2).mean(0).pow(2)


@dataclass
class LayerKurtosis:
    per_dim: np.ndarray  # (L, D), eq. 19

    @property
    def layer(self) -> np.ndarray:
        """(L,): eq. 20."""
        return self.per_dim.mean(axis=1)


@torch.no_grad()
def layer_kurtosis(stream: Stream) -> LayerKurtosis:
    """Kurtosis of every block's output h_1 .. h_L on the stream's tokens."""
    return LayerKurtosis(np.stack([kurtosis(h).cpu().numpy() for h in stream.h[1:]]))
