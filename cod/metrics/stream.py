"""The residual stream of an unaltered model, cached at every depth, and forwards resumed from it.

Metrics that alter one or two blocks (removing, skipping, swapping, replacing) leave every
block before the first altered one untouched, so they start from the cached input of that
block instead of recomputing the prefix: `resume(model, stream, start, order)`.

Any model works that follows the layered-model protocol (`LayeredModel`), which
`cod.model.Transformer` satisfies and `cod.metrics.adapters` provides for Hugging Face models.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Protocol, Sequence

import torch
from torch import nn

from cod.model.loss import IGNORE_INDEX

CHUNK_TOKENS = 2048  # tokens per forward in loss_after


class LayeredModel(Protocol):
    """What the metrics need of a model."""

    blocks: Sequence[nn.Module]  # L blocks

    def parameters(self) -> Iterator[nn.Parameter]:
        """Its weights (their device is where analyses create tensors)."""

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        """(B, T) token ids -> (B, T, D) input of the first block."""

    def run_blocks(self, x: torch.Tensor, order: Sequence[int | nn.Module] | None = None, keep: Iterable[str] = (),
                   states: dict[str, torch.Tensor] | None = None, first_step: int = 0) -> torch.Tensor:
        """Run blocks (by index, or modules in their place) in `order`; store `resid_post.{step}` if kept."""

    def head(self, x: torch.Tensor, targets: torch.Tensor | None = None,
             logits: bool = True) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(B, T, D) last residual stream -> logits (B, T, V) and the mean next-token loss; with
        logits=False a model may skip the logits and give the loss alone."""


def device_of(model: LayeredModel) -> torch.device:
    """The device of the model's parameters: analyses create their tensors there."""
    return next(model.parameters()).device


@dataclass
class Stream:
    """Hidden states h_0 .. h_L of the unaltered model on one batch of tokens.

    h[0] is the embedding output, h[l] the output of block l (1-based), so h[l] is also the
    input of block l + 1 (0-based index l); h[L] is taken before the final norm.
    """

    h: list[torch.Tensor]  # L + 1 tensors (B, T, D)
    targets: torch.Tensor | None  # (B, T) next tokens, or None
    loss: float | None  # mean next-token loss of the unaltered model

    @property
    def n_layers(self) -> int:
        return len(self.h) - 1


@torch.no_grad()
def residual_stream(model: LayeredModel, idx: torch.Tensor, targets: torch.Tensor | None = None) -> Stream:
    """One forward pass of tokens idx (B, T), keeping the residual stream at every depth."""
    x = model.embed(idx)
    states: dict[str, torch.Tensor] = {}
    out = model.run_blocks(x, keep=("resid_post",), states=states)
    h = [x] + [states[f"resid_post.{i}"] for i in range(len(model.blocks))]
    loss = model.head(out, targets, logits=False)[1] if targets is not None else None
    return Stream(h=h, targets=targets, loss=None if loss is None else loss.item())


def resume(model: LayeredModel, stream: Stream, start: int, order: Sequence[int | nn.Module],
           states: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
    """Run `order` from the cached input of block `start` (0-based); returns the last residual
    stream (B, T, D). With `states`, stores resid_post.{start + k} after the k-th step."""
    keep = ("resid_post",) if states is not None else ()
    return model.run_blocks(stream.h[start], order=list(order), keep=keep, states=states, first_step=start)


def loss_after(model: LayeredModel, stream: Stream, start: int, order: Sequence[int | nn.Module]) -> float:
    """Mean next-token loss when blocks 0 .. start-1 run unaltered and then `order` runs. The
    sequences go through in groups of about CHUNK_TOKENS tokens, whose activations stay in
    cache (one pass over a batch of 8K tokens is about twice as slow per token)."""
    rows = max(1, CHUNK_TOKENS // stream.h[0].shape[1])
    losses, counts = [], []
    for first in range(0, len(stream.targets), rows):
        part = slice(first, first + rows)
        x = model.run_blocks(stream.h[start][part], order=list(order))
        losses.append(model.head(x, stream.targets[part], logits=False)[1].item())
        counts.append(int((stream.targets[part] != IGNORE_INDEX).sum()))
    if len(losses) == 1:
        return losses[0]
    return sum(loss * n for loss, n in zip(losses, counts)) / sum(counts)


@torch.no_grad()
def first_sequences(model: LayeredModel, stream: Stream, n: int) -> Stream:
    """The stream of its first n sequences, with their own unaltered loss: a cheaper batch for the
    costliest scores, sharing the cached states."""
    if n >= len(stream.h[0]):
        return stream
    part = Stream(h=[h[:n] for h in stream.h], targets=None if stream.targets is None else stream.targets[:n],
                  loss=None)
    if part.targets is not None:
        part.loss = loss_after(model, part, part.n_layers, [])
    return part
