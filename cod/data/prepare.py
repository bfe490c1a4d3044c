"""Tokenize a corpus into flat token arrays for training and validation.

    python -m cod.data.prepare --tokenizer bpe --vocab-size 4096 --out data/tokens/bpe4096
    python -m cod.data.prepare --tokenizer gpt_neox --source fineweb_edu --limit 100000 --out DIR
    python -m cod.data.prepare --tokenizer bpe --vocab-size 8192 --source text_files --files a.txt b.txt --out DIR

Writes `DIR/train.bin`, `DIR/val.bin` and, when the raw snapshot is at hand, `DIR/val_bbc.bin`
(uint16 when every id fits, else uint32; each document followed by the end-of-text token),
`DIR/tokenizer.json` and `DIR/meta.json` (dtype, vocabulary, token and document counts per
split and source). Sources: `offline_mix` is the snapshot in `data/raw` with its pinned
split; `fineweb_edu` streams FineWeb-Edu (or reads `--files` parquet/jsonl); `text_files`
cuts plain-text files into ~8 KB documents at blank lines. Those two split by document id
with `--val-fraction`. A BPE is trained on the train split only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from itertools import islice
from pathlib import Path
from typing import IO, Iterable, Iterator, Sequence

import numpy as np

from cod.config import DataConfig
from cod.data import corpus, fineweb, tokenizer

SOURCES = ("offline_mix", "fineweb_edu", "text_files")
BATCH_DOCS = 1024  # documents per call of the batch encoder
PROGRESS_EVERY_S = 5.0  # at most one progress line this often while encoding


def dtype_for(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16 if vocab_size <= 2**16 else np.uint32)


def text_file_documents(files: Sequence[Path]) -> Iterator[tuple[str, str]]:
    for path in files:
        paragraphs = corpus.clean(path.read_text(encoding="utf-8", errors="replace")).split("\n\n")
        for i, text in enumerate(corpus.chunk(paragraphs, 8000)):
            yield f"{path.name}/{i:05d}", text


def documents(
    source: str, raw: Path, files: Sequence[Path], limit: int | None, val_fraction: float
) -> Iterator[tuple[str, str, str]]:
    """(split, source name, text) of every document, in a fixed order."""
    if source == "offline_mix":
        for record in corpus.read(raw):
            yield record["split"], record["source"], record["text"]
        return
    docs = fineweb.iter_documents(files or None, limit) if source == "fineweb_edu" else text_file_documents(files)
    for doc_id, text in docs:
        yield ("val" if corpus.id_fraction(doc_id) < val_fraction else "train"), source, text
    if (raw / "bbc.jsonl").is_file():
        for record in corpus.read_source(raw, "bbc"):
            yield record["split"], record["source"], record["text"]


def check(
    tokenizer_kind: str, vocab_size: int | None, source: str, raw: Path, files: Sequence[Path], val_fraction: float
) -> int:
    """Validate the arguments before any work; return the vocabulary size."""
    vocab_size = tokenizer.check(tokenizer_kind, vocab_size)
    if source not in SOURCES:
        raise ValueError(f"--source {source!r} is not one of {', '.join(SOURCES)}")
    if source == "offline_mix":
        missing = [p for p in (raw, *(raw / f"{s.name}.jsonl" for s in corpus.SOURCES)) if not p.exists()]
        if missing:
            raise FileNotFoundError(f"{missing[0]} not found: run `python -m cod.data.snapshot`")
    if source == "text_files":
        if not files:
            raise ValueError("--source text_files needs --files")
        missing = [str(p) for p in files if not p.is_file()]
        if missing:
            raise FileNotFoundError(f"--files not found: {', '.join(missing)}")
    if source == "fineweb_edu" and files:
        fineweb.builder_for(files)
    if not 0 < val_fraction < 1:
        raise ValueError(f"--val-fraction {val_fraction} must be between 0 and 1")
    return vocab_size


class SplitWriter:
    """Appends documents' token ids to `<out>/<split>.bin`, counting tokens per split and source."""

    def __init__(self, out: Path):
        self.out = out
        self.files: dict[str, IO[bytes]] = {}
        self.counts: dict[str, dict] = {}

    def write(self, split: str, source: str, ids: np.ndarray) -> None:
        if split not in self.files:
            self.files[split] = open(self.out / f"{split}.bin", "wb")
            self.counts[split] = {"tokens": 0, "documents": 0, "sources": {}}
        self.files[split].write(ids.tobytes())
        per_source = self.counts[split]["sources"].setdefault(source, {"tokens": 0, "documents": 0})
        for counts in (self.counts[split], per_source):
            counts["tokens"] += len(ids)
            counts["documents"] += 1

    def totals(self) -> tuple[int, int]:
        """Documents and tokens written so far, over every split."""
        return sum(c["documents"] for c in self.counts.values()), sum(c["tokens"] for c in self.counts.values())

    def close(self) -> None:
        for f in self.files.values():
            f.close()


def batches(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def prepare(
    out: Path,
    tokenizer_kind: str,
    vocab_size: int | None = None,
    source: str = "offline_mix",
    raw: Path = Path("data/raw"),
    files: Sequence[Path] = (),
    limit: int | None = None,
    val_fraction: float = corpus.VAL_FRACTION,
) -> dict:
    """Train or load the tokenizer, write the token arrays and meta.json (last); return the meta."""
    vocab_size = check(tokenizer_kind, vocab_size, source, raw, files, val_fraction)
    dtype = dtype_for(vocab_size)

    def stream() -> Iterator[tuple[str, str, str]]:
        return documents(source, raw, files, limit, val_fraction)

    start = time.perf_counter()
    print(f"preparing {out} from {source} documents", flush=True)
    print(f"training a byte-level BPE of {vocab_size} ids on the train split" if tokenizer_kind == "bpe"
          else "loading the GPT-NeoX tokenizer", flush=True)
    tok = tokenizer.build(tokenizer_kind, vocab_size, (text for split, _, text in stream() if split == "train"))
    print(f"tokenizer ready in {time.perf_counter() - start:.1f} s; encoding every split", flush=True)
    eot = tokenizer.eot_id(tok)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    writer = SplitWriter(out)
    reported = time.perf_counter()
    try:
        for batch in batches(stream(), BATCH_DOCS):
            encodings = tok.encode_batch_fast([text for _, _, text in batch])
            for (split, name, _), encoding in zip(batch, encodings):
                writer.write(split, name, np.asarray(encoding.ids + [eot], dtype=dtype))
            if time.perf_counter() - reported >= PROGRESS_EVERY_S:
                reported = time.perf_counter()
                report_progress(writer, reported - start)
    finally:
        writer.close()
    report_progress(writer, time.perf_counter() - start)
    for split in ("train", "val"):
        if split not in writer.counts:
            raise ValueError(f"no {split} documents: the corpus is too small for --val-fraction {val_fraction}")
    meta = {
        "tokenizer": tokenizer_kind,
        "vocab_size": vocab_size,
        "eot_id": eot,
        "dtype": dtype.name,
        "source": source,
        "splits": dict(sorted(writer.counts.items())),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def report_progress(writer: SplitWriter, elapsed: float) -> None:
    documents, tokens = writer.totals()
    print(f"  encoded {documents:,} documents, {tokens:,} tokens ({elapsed:.1f} s)", flush=True)


def prepare_command(data: DataConfig) -> str:
    """The command that writes the token arrays `data` names (`data.dataset_dir`)."""
    vocab = f" --vocab-size {data.vocab_size}" if data.tokenizer == "bpe" else ""
    source = "" if data.source == "offline_mix" else f" --source {data.source} --files FILE [FILE ...]"
    return f"python -m cod.data.prepare --tokenizer {data.tokenizer}{vocab}{source} --out {data.dataset_dir}"


def what_to_run() -> str:
    """The commands that prepare the pipeline's token arrays, or those `cod.train` reads by default."""
    return (
        "--tokenizer and --out are required. To prepare every dataset the pipeline trains on (for the "
        "profile in params.yaml; what `dvc repro prepare` runs):\n"
        "  python -m cod.experiments prepare\n"
        "or the one `python -m cod.train` reads with its default settings:\n"
        f"  {prepare_command(DataConfig())}"
    )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m cod.data.prepare", description=__doc__.split("\n")[0])
    p.add_argument("--tokenizer", choices=tokenizer.KINDS, help="required")
    p.add_argument("--vocab-size", type=int, help=f"BPE vocabulary size (>= {tokenizer.MIN_BPE_VOCAB}); ignored for gpt_neox")
    p.add_argument("--source", default="offline_mix", choices=SOURCES)
    p.add_argument("--raw", type=Path, default=Path("data/raw"), help="the raw snapshot directory")
    p.add_argument("--files", type=Path, nargs="+", default=[], help="local files for text_files / fineweb_edu")
    p.add_argument("--limit", type=int, help="at most this many fineweb_edu documents")
    p.add_argument("--val-fraction", type=float, default=corpus.VAL_FRACTION, help="fineweb_edu / text_files only")
    p.add_argument("--out", type=Path, help="output directory (required)")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = vars(p.parse_args(argv))
    kind = args.pop("tokenizer")
    if kind is None or args["out"] is None:
        p.error(what_to_run())
    try:
        check(kind, args["vocab_size"], args["source"], args["raw"], args["files"], args["val_fraction"])
    except (ValueError, FileNotFoundError) as e:
        p.error(str(e))
    meta = prepare(tokenizer_kind=kind, **args)
    for split, counts in meta["splits"].items():
        print(f"{split:8s} {counts['tokens']:>11,} tokens {counts['documents']:>7,} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
