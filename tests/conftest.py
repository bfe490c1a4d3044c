"""Shared fixtures: a tiny token dataset so training tests need no corpus."""

import json

import numpy as np
import pytest

VOCAB = 300


@pytest.fixture
def tiny_tokens(tmp_path):
    """A tokens_dir holding bpe300/{train,val}.bin of patterned random tokens."""
    folder = tmp_path / "tokens" / f"bpe{VOCAB}"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    pattern = rng.integers(0, VOCAB, 97)  # a repeating sequence a model can learn
    for split, n in (("train", 60_000), ("val", 6_000)):
        tokens = np.where(rng.random(n) < 0.8, np.resize(pattern, n), rng.integers(0, VOCAB, n))
        tokens.astype(np.uint16).tofile(folder / f"{split}.bin")
    (folder / "meta.json").write_text(json.dumps({"dtype": "uint16", "vocab_size": VOCAB}))
    return tmp_path / "tokens"


def tiny_run(tokens_dir, *extra: str) -> list[str]:
    """Overrides of a run small enough for a test."""
    return [f"data.tokens_dir={tokens_dir}", f"data.vocab_size={VOCAB}", f"model.vocab_size={VOCAB}",
            "model.d_model=32", "model.n_layers=3", "model.n_heads=2", "model.max_seq_len=32",
            "data.seq_len=32", "data.batch_size=8", "train.steps=24", "train.log_every=4",
            "train.stats_every=8", "train.stats_tokens=64", "train.eval_tokens=2048", "train.ckpt_every=8",
            "optim.lr=1e-2",
            *extra]
