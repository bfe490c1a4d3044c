"""Perplexity on held-out token arrays and on raw text.

Both cut one token stream into non-overlapping windows of `seq_len + 1` tokens from its
start (as `cod.data.loader.eval_windows` does for training's validation loss), predict the
last `seq_len` tokens of each window from the ones before, and report

    ppl = exp(total next-token negative log-likelihood / number of predicted tokens).

Raw text becomes a stream the way `cod.data.prepare` builds its arrays: documents joined
with the model's `prefix` (end-of-text) token in between.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable

import numpy as np
import torch
import torch.nn.functional as F

from cod.data.loader import open_tokens
from cod.eval.lm import LanguageModel


@torch.no_grad()
def stream_nll(lm: LanguageModel, tokens: np.ndarray, seq_len: int, batch_size: int = 8,
               max_tokens: int | None = None) -> dict[str, float]:
    """{'ppl', 'nll' (mean per token), 'tokens'} of `lm` on a 1-D token stream."""
    if seq_len < 1 or batch_size < 1:
        raise ValueError(f"seq_len={seq_len} and batch_size={batch_size} must be positive")
    if lm.max_len is not None and seq_len > lm.max_len:
        raise ValueError(f"seq_len={seq_len} exceeds the model's {lm.max_len} positions")
    n_windows = (len(tokens) - 1) // seq_len
    if max_tokens is not None:
        n_windows = min(n_windows, max_tokens // seq_len)
    if n_windows < 1:
        raise ValueError(f"{len(tokens)} tokens (max_tokens={max_tokens}) hold no window of seq_len={seq_len}")
    total, count = 0.0, 0
    for first in range(0, n_windows, batch_size):
        starts = seq_len * np.arange(first, min(first + batch_size, n_windows))
        windows = np.asarray(tokens[starts[:, None] + np.arange(seq_len + 1)]).astype(np.int64)
        windows = torch.as_tensor(windows, device=lm.device)
        logits, _ = lm.head(lm.hidden(windows[:, :-1]))
        total += F.cross_entropy(logits.flatten(0, 1).float(), windows[:, 1:].flatten(), reduction="sum").item()
        count += windows[:, 1:].numel()
    return {"ppl": math.exp(total / count), "nll": total / count, "tokens": count}


def perplexity(lm: LanguageModel, tokens: str | Path | np.ndarray, seq_len: int, batch_size: int = 8,
               max_tokens: int | None = None) -> dict[str, float]:
    """Perplexity on a token array: a path (e.g. data/tokens/NAME/val.bin) or an array."""
    array = open_tokens(tokens) if isinstance(tokens, (str, Path)) else np.asarray(tokens)
    return stream_nll(lm, array, seq_len, batch_size, max_tokens)


def text_tokens(lm: LanguageModel, texts: Iterable[str], max_tokens: int | None = None) -> np.ndarray:
    """One stream of documents, each preceded by the prefix token, cut at `max_tokens` + 1."""
    ids: list[int] = []
    for text in texts:
        ids += lm.document(text)
        if max_tokens is not None and len(ids) > max_tokens:
            break
    return np.array(ids[: None if max_tokens is None else max_tokens + 1], dtype=np.int64)


def perplexity_text(lm: LanguageModel, texts: Iterable[str], seq_len: int, batch_size: int = 8,
                    max_tokens: int | None = None) -> dict[str, float]:
    """Perplexity on raw documents, tokenized with the model's tokenizer."""
    return stream_nll(lm, text_tokens(lm, texts, max_tokens), seq_len, batch_size, max_tokens)
