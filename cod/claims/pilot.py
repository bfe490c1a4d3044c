"""The headline profile's criterion: is a Pre-LN baseline a real language model with the curse of depth?

Fixed before any pilot or treatment run (notebooks/h0_pilot.py states it; issue 28) and applied
to Pre-LN runs alone, never to a treatment. A candidate (shape and token budget) meets it when
its Pre-LN run passes all four tests:

1. **A real language model**: validation loss at least `margin_nats` below the unigram model's
   cross-entropy (token frequencies of the training split). A count-based bigram model of the
   training split (`bigram_perplexity`) is shown beside it for scale.
2. **Variance grows with depth**: at the end of training the blocks' output variance rises with
   the block index (Spearman rho >= `min_rho`) and the last block's is at least `min_depth_ratio`
   times the first block's.
3. **Variance grows over training in the deep layers**: from step 0 to the end, the deepest
   quarter of blocks grows at least `min_growth_ratio` times as much as the shallowest quarter
   (geometric means), so the depth profile is learned, not an initialisation offset.
4. **Deep blocks are less effective**: removing one of the deepest third of blocks raises the loss,
   on average, by at most `max_removal_ratio` times what removing one of the shallowest third
   does (block 1 left out of the shallow third: every architecture needs its first block).

The profile takes the cheapest candidate that meets the criterion, cost being single-core hours
of one run (its tokens over its shape's measured training throughput). The stopping rule, added
after 4 of the 9 first-round runs had trained (all failing test 3 alone) and before any treatment
run: when every candidate of every round has trained and none meets all four tests, the profile
takes the cheapest candidate meeting tests 1, 2 and 4, and test 3 is reported as unmet.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from cod.data.loader import open_tokens


@dataclass(frozen=True)
class Criterion:
    margin_nats: float = 2.25  # test 1: validation loss below the unigram cross-entropy, in nats
    min_rho: float = 0.9  # test 2: Spearman rho of the final output variance with the block index
    min_depth_ratio: float = 4.0  # test 2: last block's output variance over the first block's
    min_growth_ratio: float = 2.0  # test 3: deepest quarter's growth over training / shallowest quarter's
    max_removal_ratio: float = 0.5  # test 4: deep third's mean loss rise on removal / shallow third's


def bigram_perplexity(dataset_dir: str | Path, eval_tokens: int | None = None, weight: float = 0.9) -> float:
    """Perplexity on val.bin of bigram counts of train.bin, interpolated with add-one unigram
    frequencies (`weight` on the bigram): a count-based model that sees one token of context."""
    dataset_dir = Path(dataset_dir)
    vocab = json.loads((dataset_dir / "meta.json").read_text())["vocab_size"]
    train = np.asarray(open_tokens(dataset_dir / "train.bin")).astype(np.int64)
    val = np.asarray(open_tokens(dataset_dir / "val.bin")[:eval_tokens]).astype(np.int64)
    pairs = np.bincount(train[:-1] * vocab + train[1:], minlength=vocab * vocab).reshape(vocab, vocab)
    unigram = np.bincount(train, minlength=vocab) + 1.0
    unigram /= unigram.sum()
    context = np.maximum(pairs.sum(axis=1), 1)
    p = weight * pairs[val[:-1], val[1:]] / context[val[:-1]] + (1 - weight) * unigram[val[1:]]
    return float(np.exp(-np.mean(np.log(p))))


def _spearman(values: np.ndarray) -> float:
    order = np.arange(len(values), dtype=float)
    return float(np.corrcoef(pd.Series(values).rank().to_numpy(), order)[0, 1])


def geomean(values: np.ndarray) -> float:
    return float(np.exp(np.mean(np.log(values))))


def judge(val_loss: float, unigram_ppl: float, variance_start: np.ndarray, variance_end: np.ndarray,
          removal_rise: np.ndarray, criterion: Criterion = Criterion()) -> dict[str, float | bool]:
    """The four tests on one Pre-LN run: `variance_start` / `variance_end` are the blocks' output
    variances (L,) at step 0 and at the end of training, `removal_rise` (L,) the loss rise when
    each block is removed. Returns each measured value and whether each test passes."""
    L = len(variance_end)
    quarter, third = max(1, L // 4), max(1, L // 3)
    growth = np.asarray(variance_end) / np.asarray(variance_start)
    shallow = removal_rise[1:1 + third]
    out = {
        "margin_nats": math.log(unigram_ppl) - val_loss,
        "rho_depth": _spearman(np.asarray(variance_end)),
        "depth_ratio": float(variance_end[-1] / variance_end[0]),
        "growth_ratio": geomean(growth[-quarter:]) / geomean(growth[:quarter]),
        "removal_ratio": float(np.mean(removal_rise[-third:]) / np.mean(shallow)),
    }
    out["real_lm"] = out["margin_nats"] >= criterion.margin_nats
    out["grows_with_depth"] = out["rho_depth"] >= criterion.min_rho and out["depth_ratio"] >= criterion.min_depth_ratio
    out["grows_in_training"] = out["growth_ratio"] >= criterion.min_growth_ratio
    out["deep_less_effective"] = out["removal_ratio"] <= criterion.max_removal_ratio
    out["meets"] = all(out[k] for k in ("real_lm", "grows_with_depth", "grows_in_training", "deep_less_effective"))
    return out


FALLBACK_TESTS = ("real_lm", "grows_with_depth", "deep_less_effective")


def choose(candidates: pd.DataFrame, complete: bool) -> tuple[str | None, str]:
    """(the candidate the profile takes, the rule that took it) from rows with `core_hours`, each
    test's column and `meets`. The cheapest meeting all four tests; once every candidate of every
    round has trained (`complete`) and none does, the cheapest meeting tests 1, 2 and 4, test 3
    then reported as unmet (the stopping rule, stated before any treatment run). None while
    candidates remain untrained and none meets all four."""
    meeting = candidates[candidates["meets"]]
    if not meeting.empty:
        return str(meeting["core_hours"].idxmin()), "all four tests"
    if not complete:
        return None, "not yet: candidates remain untrained"
    fallback = candidates[candidates[list(FALLBACK_TESTS)].all(axis=1)]
    if fallback.empty:
        return None, "none: no candidate meets tests 1, 2 and 4"
    return str(fallback["core_hours"].idxmin()), "tests 1, 2 and 4 (the stopping rule; test 3 unmet)"
