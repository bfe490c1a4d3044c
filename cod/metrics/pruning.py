"""Performance drop when one layer is removed (paper A section 2, Fig. 2 top, Fig. 3 c-d, Fig. 7).

    Delta P^(l) = P(model) - P(model without block l)

for a score P where higher is better (task accuracy, through a callback), and the rise in
next-token loss (and perplexity) for the loss. Each removal resumes from the cached input
of block l, so only blocks l+1 .. L are recomputed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from cod.metrics.stream import LayeredModel, Stream, loss_after

# A task score of the model run with a given block order (list of 0-based block indices),
# e.g. zero-shot accuracy; higher is better.
TaskScore = Callable[[list[int]], float]


@dataclass
class LayerRemoval:
    base_loss: float
    loss: np.ndarray  # (L,) loss with block l (0-based) removed
    base_task: float | None = None  # task score of the full model
    task: np.ndarray | None = None  # (L,) task score with block l removed

    @property
    def loss_increase(self) -> np.ndarray:
        return self.loss - self.base_loss

    @property
    def ppl(self) -> np.ndarray:
        return np.exp(self.loss)

    @property
    def base_ppl(self) -> float:
        return math.exp(self.base_loss)

    @property
    def task_drop(self) -> np.ndarray | None:
        """Delta P^(l) = P(full) - P(without l): positive when removing l hurts."""
        return None if self.task is None else self.base_task - self.task


@torch.no_grad()
def layer_removal(model: LayeredModel, stream: Stream, task: TaskScore | None = None) -> LayerRemoval:
    """Loss (and task score) with each block removed in turn; `stream` needs targets."""
    n = stream.n_layers
    loss = np.array([loss_after(model, stream, l, range(l + 1, n)) for l in range(n)])
    if task is None:
        return LayerRemoval(stream.loss, loss)
    scores = np.array([task([k for k in range(n) if k != l]) for l in range(n)])
    return LayerRemoval(stream.loss, loss, task(list(range(n))), scores)
