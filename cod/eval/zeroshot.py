"""Zero-shot multiple choice and LAMBADA, scored the lm-evaluation-harness way.

A request is (context, continuation), split into token ids by `TextEncoder.request`. Its
score is the summed log-probability of the continuation's ids; `greedy` says whether each of
them is also the argmax. Inputs longer than the model's positions lose their start.

Per item with choices c_i: `acc` takes argmax_i loglik_i, `acc_norm` takes
argmax_i loglik_i / len(c_i) (characters, delimiter excluded); LAMBADA's `acc` is the share
of items whose last word is predicted greedily in full. Each result carries the chance
level of its items and their number.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from cod.data.tasks import TASKS, Item, chance, load_task, task
from cod.eval.lm import LanguageModel
from cod.progress import progress_bar


@torch.no_grad()
def loglikelihoods(lm: LanguageModel, requests: Sequence[tuple[str, str]], batch_tokens: int = 4096,
                   progress: bool | None = None, desc: str = "zero-shot") -> tuple[np.ndarray, np.ndarray]:
    """(summed log-probability, greedy match) of each (context, continuation) request.
    `progress`: a bar of the requests done on stderr, named `desc` (see cod.progress)."""
    device, encoded = lm.device, []
    for context, continuation in requests:
        head, tail = lm.request(context, continuation)
        ids = (head + tail)[:-1]
        if lm.max_len is not None:  # as lm-evaluation-harness: keep the last max_len positions and
            ids = ids[-lm.max_len:]  # score the continuation tokens that survive
            tail = tail[-lm.max_len:]
        encoded.append((ids, tail))
    scores, greedy = np.zeros(len(requests)), np.zeros(len(requests), dtype=bool)
    order = sorted(range(len(requests)), key=lambda r: -len(encoded[r][0]))
    start, bar = 0, progress_bar(desc, len(requests), progress, "request")
    while start < len(order):
        width = len(encoded[order[start]][0])
        batch = order[start:start + max(1, batch_tokens // width)]
        start += len(batch)
        padded, rows, cols, targets, owner = [], [], [], [], []
        for b, r in enumerate(batch):
            ids, tail = encoded[r]
            padded.append(ids + [0] * (width - len(ids)))
            rows += [b] * len(tail)
            cols += range(len(ids) - len(tail), len(ids))
            targets += tail
            owner += [b] * len(tail)
        idx, rows, cols, targets, owner = (torch.tensor(v, dtype=torch.long, device=device)
                                           for v in (padded, rows, cols, targets, owner))
        x = lm.hidden(idx)[rows, cols]  # (N, D): states that predict the tail
        logprobs = lm.head(x[None])[0][0].float().log_softmax(-1)  # (N, V)
        picked = logprobs.gather(1, targets[:, None])[:, 0].double()
        hits = (logprobs.argmax(-1) == targets).long()
        sums = torch.zeros(len(batch), dtype=torch.double, device=device).index_add_(0, owner, picked)
        misses = torch.zeros(len(batch), dtype=torch.long, device=device).index_add_(0, owner, 1 - hits)
        scores[batch] = sums.cpu().numpy()
        greedy[batch] = (misses == 0).cpu().numpy()
        bar.update(len(batch))
    bar.close()
    return scores, greedy


def score_items(lm: LanguageModel, items: Sequence[Item], greedy: bool = False, batch_tokens: int = 4096,
                progress: bool | None = None, desc: str = "zero-shot") -> dict:
    """{'acc', 'acc_norm', 'n'} on `items`; `greedy`: acc = exact greedy match (acc_norm NaN);
    `progress`, `desc`: as in `loglikelihoods`."""
    requests = [(ctx, cont) for item in items for ctx, cont in zip(item.contexts, item.continuations)]
    scores, hits = loglikelihoods(lm, requests, batch_tokens, progress, desc)
    if greedy:
        return {"acc": float(hits.mean()), "acc_norm": float("nan"), "n": len(items)}
    right, right_norm, at = [], [], 0
    for item in items:
        s = scores[at:at + len(item.choices)]
        at += len(item.choices)
        lengths = np.array([len(c) for c in item.choices], dtype=float)
        right.append(np.argmax(s) == item.gold)
        right_norm.append(np.argmax(s / lengths) == item.gold)
    return {"acc": float(np.mean(right)), "acc_norm": float(np.mean(right_norm)), "n": len(items)}


def evaluate(lm: LanguageModel, name: str, limit: int | None = None, batch_tokens: int = 4096,
             part: str | None = None, progress: bool | None = None) -> dict:
    """{'task', 'acc', 'acc_norm', 'chance', 'n'} of `lm` on task `name` (see cod.data.tasks);
    `part` = 'eval' scores only the half of the set that fine-tuning never sees; `progress`: a bar
    of the task's requests (one per choice) on stderr (see cod.progress)."""
    items = load_task(name, limit, part)
    result = score_items(lm, items, task(name).greedy, batch_tokens, progress, f"zero-shot {name}")
    return {"task": name, **result, "chance": chance(items, name), **({"part": part} if part else {})}


def evaluate_all(lm: LanguageModel, names: Sequence[str] | None = None, limit: int | None = None,
                 batch_tokens: int = 4096, progress: bool | None = None) -> list[dict]:
    """`evaluate` on each task of `names` (default: all of cod.data.tasks.TASKS), a bar per task."""
    return [evaluate(lm, name, limit, batch_tokens, progress=progress) for name in (names or list(TASKS))]
