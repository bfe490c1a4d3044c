"""The instruction mix of supervised fine-tuning (paper A section 5.2, Table 2), built offline.

Paper A fine-tunes on Commonsense170K, the training splits of eight commonsense sets. No
training split of them ships offline, so each example comes from the 'tune' half of a shipped
evaluation set (`cod.data.tasks`, Parts); evaluation later scores only the 'eval' half, and
an example whose prompt and answer also occur there is dropped, so the mix holds no
evaluation item. An example is an item's prompt and right answer in the very
format zero-shot scoring uses (`Item.contexts[gold]`, `Item.continuations[gold]`), encoded
as `TextEncoder.request` splits it; with `finetune.loss_on=answer` only the answer's tokens
carry a loss.

`InstructionBatches(cfg, tokenizer).batch(step)` gives (x, y) like `TokenBatches`: the
examples of step s are the global sample indices s * batch_size ..., visited in a fresh
random order each epoch, so a batch depends only on (seed, step) and a resumed run sees the
same data. Rows are padded on the right to the longest example of the batch; targets that
carry no loss are IGNORE, which `F.cross_entropy` skips. Prompts longer than
`data.seq_len` lose their start.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from cod.config import LossOn, RunConfig
from cod.data.tasks import check_fine_tuning, load_task
from cod.eval.lm import TextEncoder

IGNORE = -100  # target id without a loss (F.cross_entropy's default ignore_index)


@dataclass(frozen=True)
class Example:
    task: str
    prompt: str
    answer: str  # with its leading delimiter, as scored


def instruction_mix(tasks: list[str], items_per_task: int = 0) -> list[Example]:
    """Prompt and right answer of every item in the 'tune' half of each task (at most
    `items_per_task` of each when > 0, a fixed random subset), except those whose prompt and
    answer also make a request of the 'eval' half: HellaSwag reuses contexts and endings
    across its items, so a few documents of one half repeat a pair of the other."""
    examples = []
    for name in tasks:
        evaluated = {request for item in load_task(name, part="eval")
                     for request in zip(item.contexts, item.continuations)}
        for item in load_task(name, limit=items_per_task or None, part="tune"):
            pair = (item.contexts[item.gold], item.continuations[item.gold])
            if pair not in evaluated:
                examples.append(Example(name, *pair))
    return examples


def encode_example(text: TextEncoder, example: Example, seq_len: int, loss_on: LossOn = LossOn.ANSWER
                   ) -> tuple[list[int], list[int]]:
    """(input ids, target ids) of one example, at most `seq_len` long; targets are the inputs
    shifted by one, IGNORE on the prompt when `loss_on` is 'answer'."""
    prompt, answer = text.request(example.prompt, example.answer)
    ids = prompt + answer
    targets = ids[1:]
    if loss_on == LossOn.ANSWER:
        targets = [IGNORE] * (len(prompt) - 1) + targets[len(prompt) - 1:]
    return ids[:-1][-seq_len:], targets[-seq_len:]


class InstructionBatches:
    """Deterministic fine-tuning batches: `.batch(step) -> (x, y)`, int64, (batch_size // world_size, T)
    with T the longest example of the batch (at most data.seq_len)."""

    def __init__(self, cfg: RunConfig, tokenizer, rank: int = 0, world_size: int = 1):
        if cfg.data.batch_size % world_size:
            raise ValueError(f"batch_size {cfg.data.batch_size} is not divisible by world_size {world_size}")
        text = TextEncoder(tokenizer)
        check_fine_tuning(cfg.finetune)
        mix = instruction_mix(cfg.finetune.task_names, cfg.finetune.items_per_task)
        self.examples = [encode_example(text, example, cfg.data.seq_len, cfg.finetune.loss_on) for example in mix]
        self.tasks = [example.task for example in mix]
        self.batch_size, self.seed = cfg.data.batch_size, cfg.seed
        self.rows = slice(rank * self.batch_size // world_size, (rank + 1) * self.batch_size // world_size)
        self._order = lru_cache(maxsize=2)(self._epoch_order)

    def __len__(self) -> int:
        return len(self.examples)

    def _epoch_order(self, epoch: int) -> np.ndarray:
        return np.random.default_rng([self.seed, epoch]).permutation(len(self.examples))

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        samples = np.arange(step * self.batch_size, (step + 1) * self.batch_size)[self.rows]
        epochs, positions = np.divmod(samples, len(self.examples))
        chosen = [self.examples[self._order(int(e))[p]] for e, p in zip(epochs, positions)]
        width = max(len(ids) for ids, _ in chosen)
        x = torch.zeros(len(chosen), width, dtype=torch.long)
        y = torch.full((len(chosen), width), IGNORE, dtype=torch.long)
        for row, (ids, targets) in enumerate(chosen):
            x[row, :len(ids)] = torch.tensor(ids)
            y[row, :len(targets)] = torch.tensor(targets)
        return x, y
