"""Tokenize a corpus into flat token arrays for training and validation.

    python -m cod.data.prepare --tokenizer bpe --vocab-size 4096 --out data/tokens/bpe4096
    python -m cod.data.prepare --tokenizer gpt_neox --source fineweb_edu --max-tokens 10000000000 --out DIR
    python -m cod.data.prepare --tokenizer gpt_neox --source fineweb_edu --files sample/10BT/*.parquet --out DIR
    python -m cod.data.prepare --tokenizer bpe --vocab-size 8192 --source text_files --files a.txt b.txt --out DIR

Writes `DIR/train.bin`, `DIR/val.bin` and, when the raw snapshot is at hand, `DIR/val_bbc.bin`
(uint16 when every id fits, else uint32; each document followed by the end-of-text token),
`DIR/tokenizer.json` and `DIR/meta.json` (dtype, vocabulary, token and document counts per
split and source). Sources: `offline_mix` is the snapshot in `data/raw` with its pinned
split; `fineweb_edu` streams FineWeb-Edu (or reads `--files` parquet/jsonl); `text_files`
cuts plain-text files into ~8 KB documents at blank lines. Those two split by document id
with `--val-fraction`. A BPE is trained on the train split only (with `--max-tokens`, on its
first that many bytes of text).

`--workers` processes encode batches of documents; the parent writes them in document order,
so the arrays do not depend on the number of workers. `--max-tokens` stops reading the source
once the train split holds that many tokens (whole documents; the BBC articles still follow).
After every batch the arrays are flushed and `DIR/progress.json` records the settings, the
documents consumed and the tokens written: a killed preparation, run again with the same
arguments, truncates the arrays to what was recorded, reads past the documents consumed
(without encoding them; streamed ones are downloaded again) and goes on from there. Other
settings over an unfinished preparation are an error (`--restart` discards it); a finished
one (`meta.json`, written last, and no `progress.json`) is not redone.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
import threading
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from itertools import chain, islice
from multiprocessing import get_context
from pathlib import Path
from typing import IO, Iterable, Iterator, Sequence

import numpy as np
from tokenizers import Tokenizer

from cod.config import DataConfig
from cod.data import corpus, fineweb, tokenizer

SOURCES = ("offline_mix", "fineweb_edu", "text_files")
BATCH_DOCS = 1024  # documents per call of the batch encoder, and between two commits of the progress
PROGRESS_EVERY_S = 5.0  # at most one progress line this often while encoding
PROGRESS = "progress.json"  # the record of an unfinished preparation, removed when it is done

Document = tuple[str, str, str]  # split, source name, text


class OutputConflict(ValueError):
    """The output folder holds a preparation made with other settings."""


def dtype_for(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16 if vocab_size <= 2**16 else np.uint32)


def default_workers() -> int:
    """The CPU cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def text_file_documents(files: Sequence[Path]) -> Iterator[tuple[str, str]]:
    for path in files:
        paragraphs = corpus.clean(path.read_text(encoding="utf-8", errors="replace")).split("\n\n")
        for i, text in enumerate(corpus.chunk(paragraphs, 8000)):
            yield f"{path.name}/{i:05d}", text


def source_documents(
    source: str, raw: Path, files: Sequence[Path], limit: int | None, val_fraction: float
) -> Iterator[Document]:
    """The source's own documents in a fixed order: those `--max-tokens` counts."""
    if source == "offline_mix":
        for mixed in (s for s in corpus.SOURCES if not s.heldout):
            for record in corpus.read_source(raw, mixed.name):
                yield record["split"], record["source"], record["text"]
        return
    docs = fineweb.iter_documents(files or None, limit) if source == "fineweb_edu" else text_file_documents(files)
    for doc_id, text in docs:
        yield ("val" if corpus.id_fraction(doc_id) < val_fraction else "train"), source, text


def heldout_documents(raw: Path) -> Iterator[Document]:
    """The held-out sources' documents (BBC News, `val_bbc`) of the raw snapshot, if it is at hand."""
    for heldout in (s for s in corpus.SOURCES if s.heldout):
        if (raw / f"{heldout.name}.jsonl").is_file():
            for record in corpus.read_source(raw, heldout.name):
                yield record["split"], record["source"], record["text"]


def check(
    tokenizer_kind: str, vocab_size: int | None, source: str, raw: Path, files: Sequence[Path], val_fraction: float,
    max_tokens: int | None = None, workers: int | None = None,
) -> int:
    """Validate the arguments before any work (without network); return the vocabulary size."""
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
    if max_tokens is not None and max_tokens <= 0:
        raise ValueError(f"--max-tokens {max_tokens} must be positive")
    if workers is not None and workers <= 0:
        raise ValueError(f"--workers {workers} must be positive")
    return vocab_size


def require_fineweb(tokenizer_kind: str, vocab_size: int, out: Path, max_tokens: int | None) -> None:
    """Raise fineweb.Unavailable, with the command to run on local files, when the Hub cannot be reached."""
    try:
        fineweb.open_hub()
    except fineweb.Unavailable as e:
        files = f"{fineweb.LOCAL_DIR}/{fineweb.HUB_FILES}"
        command = command_line(tokenizer_kind, vocab_size, "fineweb_edu", out, files, max_tokens)
        raise fineweb.Unavailable(f"{e}\n  {command}") from e


# ---------------------------------------------------------------- writing and progress


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` so that a killed process leaves the old or the new file, whole."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class SplitWriter:
    """Appends documents' token ids to `<out>/<split>.bin`, counting tokens per split and source.

    `counts` (from progress.json) resumes: each split's file is cut back to the tokens counted.
    """

    def __init__(self, out: Path, itemsize: int, counts: dict[str, dict] | None = None):
        self.out = out
        self.files: dict[str, IO[bytes]] = {}
        self.counts: dict[str, dict] = counts or {}
        for split, split_counts in self.counts.items():
            path = out / f"{split}.bin"
            size = split_counts["tokens"] * itemsize
            if not path.is_file() or path.stat().st_size < size:
                raise OutputConflict(f"{path} is shorter than {out / PROGRESS} records: add --restart")
            self.files[split] = open(path, "r+b")
            self.files[split].truncate(size)
            self.files[split].seek(size)

    def write(self, split: str, source: str, ids: np.ndarray) -> None:
        if split not in self.files:
            self.files[split] = open(self.out / f"{split}.bin", "wb")
            self.counts[split] = {"tokens": 0, "documents": 0, "sources": {}}
        self.files[split].write(ids.tobytes())
        per_source = self.counts[split]["sources"].setdefault(source, {"tokens": 0, "documents": 0})
        for counts in (self.counts[split], per_source):
            counts["tokens"] += len(ids)
            counts["documents"] += 1

    def tokens(self, split: str) -> int:
        return self.counts.get(split, {}).get("tokens", 0)

    def totals(self) -> tuple[int, int]:
        """Documents and tokens written so far, over every split."""
        return sum(c["documents"] for c in self.counts.values()), sum(c["tokens"] for c in self.counts.values())

    def sync(self) -> None:
        """Put everything written so far on disk."""
        for f in self.files.values():
            f.flush()
            os.fsync(f.fileno())

    def close(self) -> None:
        for f in self.files.values():
            f.close()


def commit(out: Path, progress: dict, writer: SplitWriter) -> None:
    """Sync the arrays, then record how far they go (the arrays may run ahead of progress.json, never behind)."""
    writer.sync()
    progress["splits"] = writer.counts
    write_atomically(out / PROGRESS, json.dumps(progress, indent=2) + "\n")


class Meter:
    """Progress lines: documents, tokens, tokens/s and, with a token target, the ETA."""

    def __init__(self, writer: SplitWriter, target: int | None, start: float):
        self.writer, self.target, self.start = writer, target, start
        self.restart()

    def restart(self) -> None:
        """Measure rates from now on (after documents were skipped, not encoded)."""
        self.encoding_since = self.reported = time.perf_counter()
        self.tokens_before, self.train_before = self.writer.totals()[1], self.writer.tokens("train")

    def line(self, final: bool = False) -> str:
        documents, tokens = self.writer.totals()
        now = time.perf_counter()
        line = f"  encoded {documents:,} documents, {tokens:,} tokens ({now - self.start:.1f} s"
        if final:
            return line + ")"
        seconds = max(now - self.encoding_since, 1e-9)
        line += f", {(tokens - self.tokens_before) / seconds / 1e6:.2f}M tokens/s"
        train = self.writer.tokens("train")
        if self.target and train < self.target:
            train_rate = (train - self.train_before) / seconds
            eta = datetime.timedelta(seconds=round((self.target - train) / train_rate)) if train_rate else "?"
            line += f"; train {train:,} of {self.target:,} tokens, ETA {eta}"
        return line + ")"

    def tick(self) -> None:
        """Print a progress line if the last one is PROGRESS_EVERY_S old."""
        if time.perf_counter() - self.reported >= PROGRESS_EVERY_S:
            self.reported = time.perf_counter()
            print(self.line(), flush=True)


# ---------------------------------------------------------------- encoding


class Encoder:
    """Token ids of a batch of texts, each followed by the end-of-text id: one flat array and the lengths."""

    def __init__(self, tokenizer_json: str, dtype: str, eot: int):
        self.tok = Tokenizer.from_str(tokenizer_json)
        self.dtype = np.dtype(dtype)
        self.eot = eot

    def __call__(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        ids = [encoding.ids + [self.eot] for encoding in self.tok.encode_batch_fast(texts)]
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        return np.fromiter(chain.from_iterable(ids), dtype=self.dtype, count=int(lengths.sum())), lengths


_worker_encoder: Encoder | None = None  # a pool process's encoder, built once by _start_worker


def _start_worker(tokenizer_json: str, dtype: str, eot: int) -> None:
    global _worker_encoder
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # the processes are the parallelism
    _worker_encoder = Encoder(tokenizer_json, dtype, eot)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    """End this pool process once its parent is gone: a killed parent cannot shut its pool down."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def _encode_in_worker(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    return _worker_encoder(texts)


class BatchEncoder:
    """Encodes batches of documents in order: in this process (1 worker) or in a pool of processes."""

    def __init__(self, tokenizer_json: str, dtype: np.dtype, eot: int, workers: int):
        self.workers = workers
        self.local = Encoder(tokenizer_json, dtype.name, eot) if workers == 1 else None
        self.pool = None if workers == 1 else ProcessPoolExecutor(
            workers, mp_context=get_context("spawn"), initializer=_start_worker,
            initargs=(tokenizer_json, dtype.name, eot))

    def map(self, batches: Iterable[list[Document]]) -> Iterator[tuple[list[Document], np.ndarray, np.ndarray]]:
        """(batch, ids, lengths) for each batch, in order; at most two batches per worker in flight."""
        if self.pool is None:
            for batch in batches:
                yield batch, *self.local([text for _, _, text in batch])
            return
        pending: deque = deque()
        try:
            for batch in batches:
                pending.append((batch, self.pool.submit(_encode_in_worker, [text for _, _, text in batch])))
                if len(pending) > 2 * self.workers:
                    batch, future = pending.popleft()
                    yield batch, *future.result()
            while pending:
                batch, future = pending.popleft()
                yield batch, *future.result()
        finally:
            for _, future in pending:
                future.cancel()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)


def batches(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def write_batch(writer: SplitWriter, batch: list[Document], ids: np.ndarray, lengths: np.ndarray,
                max_tokens: int | None) -> int:
    """Write the batch's documents in order until the train split holds `max_tokens`; return how many."""
    ends = np.cumsum(lengths)
    for i, (split, source, _) in enumerate(batch):
        writer.write(split, source, ids[ends[i] - lengths[i] : ends[i]])
        if max_tokens is not None and writer.tokens("train") >= max_tokens:
            return i + 1
    return len(batch)


def encode_phases(phases: list[Iterable[Document]], out: Path, progress: dict, writer: SplitWriter,
                  encoder: BatchEncoder, meter: Meter, max_tokens: int | None) -> None:
    """Encode the documents from where `progress` stands, committing after every batch.

    Phase 0 is the source's documents, cut at `max_tokens` train tokens; phase 1 the held-out ones.
    """
    for phase in range(progress["phase"], len(phases)):
        target = max_tokens if phase == 0 else None
        docs = iter(phases[phase])
        if progress["documents"]:
            print(f"  skipping the {progress['documents']:,} documents already encoded", flush=True)
            skipped = sum(1 for _ in islice(docs, progress["documents"]))
            if skipped < progress["documents"]:
                raise OutputConflict(f"the source now holds {skipped:,} documents, fewer than were encoded: "
                                     "add --restart")
            meter.restart()
        for batch, ids, lengths in encoder.map(batches(docs, BATCH_DOCS)):
            progress["documents"] += write_batch(writer, batch, ids, lengths, target)
            if target is not None and writer.tokens("train") >= target:
                break
            commit(out, progress, writer)
            meter.tick()
        progress["phase"], progress["documents"] = phase + 1, 0
        commit(out, progress, writer)


# ---------------------------------------------------------------- resuming


def settings_of(tokenizer_kind: str, vocab_size: int, source: str, raw: Path, files: Sequence[Path],
                limit: int | None, val_fraction: float, max_tokens: int | None) -> dict:
    """What the arrays depend on (local files by path and size): a preparation resumes only with the same."""
    return {"tokenizer": tokenizer_kind, "vocab_size": vocab_size, "source": source, "raw": str(raw.resolve()),
            "files": [[str(p.resolve()), p.stat().st_size] for p in files], "limit": limit,
            "val_fraction": val_fraction, "max_tokens": max_tokens}


def finished(out: Path, settings: dict) -> dict | None:
    """The meta of a finished preparation in `out`, None if there is none; OutputConflict for another tokenizer
    or source (meta.json records no other settings)."""
    if not (out / "meta.json").is_file() or (out / PROGRESS).exists():
        return None
    meta = json.loads((out / "meta.json").read_text())
    made = {key: meta.get(key) for key in ("tokenizer", "vocab_size", "source")}
    if made != {key: settings[key] for key in made}:
        raise OutputConflict(f"{out} holds a finished preparation of {made}: choose another --out, "
                             "or add --restart to replace it")
    return meta


def unfinished(out: Path, settings: dict) -> dict | None:
    """The progress of an unfinished preparation in `out` with these settings, None if there is none;
    OutputConflict for one started with other settings."""
    path = out / PROGRESS
    if not path.is_file():
        return None
    progress = json.loads(path.read_text())
    started = progress["settings"]
    changed = [f"{key} {started.get(key)!r} (now {value!r})" for key, value in settings.items()
               if started.get(key) != value]
    if changed:
        raise OutputConflict(f"{out} holds an unfinished preparation started with {'; '.join(changed)}: run "
                             "again with its settings to resume it, or add --restart to discard it")
    return progress


def clear(out: Path) -> None:
    """Remove what a preparation writes into `out` (not the folder)."""
    names = (PROGRESS, "meta.json", "tokenizer.json", *(f"{split}.bin" for split in corpus.SPLITS))
    for name in names:
        (out / name).unlink(missing_ok=True)


def bpe_texts(docs: Iterable[Document], max_tokens: int | None) -> Iterator[str]:
    """The train split's texts; with a token target only the first ones, up to that many bytes (a part of what
    the train split will hold: a byte-level token has at least one byte)."""
    budget = max_tokens
    for split, _, text in docs:
        if split != "train":
            continue
        if budget is not None:
            budget -= len(text.encode())
            if budget < 0:
                return
        yield text


def new_tokenizer(out: Path, tokenizer_kind: str, vocab_size: int, train_docs: Iterable[Document],
                  max_tokens: int | None) -> Tokenizer:
    """Train or load the tokenizer and save it to `out/tokenizer.json`."""
    print(f"training a byte-level BPE of {vocab_size} ids on the train split" if tokenizer_kind == "bpe"
          else "loading the GPT-NeoX tokenizer", flush=True)
    tok = tokenizer.build(tokenizer_kind, vocab_size, bpe_texts(train_docs, max_tokens))
    tmp = out / "tokenizer.json.tmp"
    tok.save(str(tmp))
    os.replace(tmp, out / "tokenizer.json")
    return tok


# ---------------------------------------------------------------- the preparation


def prepare(
    out: Path,
    tokenizer_kind: str,
    vocab_size: int | None = None,
    source: str = "offline_mix",
    raw: Path = Path("data/raw"),
    files: Sequence[Path] = (),
    limit: int | None = None,
    val_fraction: float = corpus.VAL_FRACTION,
    max_tokens: int | None = None,
    workers: int | None = None,
    restart: bool = False,
) -> dict:
    """Train or load the tokenizer, write the token arrays and meta.json (last); return the meta.

    Resumes an unfinished preparation in `out` with the same settings; returns a finished one's meta.
    More than one worker starts processes by `spawn`: a calling script needs `if __name__ == "__main__":`.
    """
    vocab_size = check(tokenizer_kind, vocab_size, source, raw, files, val_fraction, max_tokens, workers)
    settings = settings_of(tokenizer_kind, vocab_size, source, raw, files, limit, val_fraction, max_tokens)
    if restart:
        clear(out)
    meta = finished(out, settings)
    if meta is not None:
        print(f"{out} is already prepared (meta.json): nothing to do (--restart prepares it again)", flush=True)
        return meta
    progress = unfinished(out, settings)
    if source == "fineweb_edu" and not files:
        require_fineweb(tokenizer_kind, vocab_size, out, max_tokens)

    def phases() -> list[Iterator[Document]]:
        return [source_documents(source, raw, files, limit, val_fraction), heldout_documents(raw)]

    dtype = dtype_for(vocab_size)
    start = time.perf_counter()
    if progress is None:
        print(f"preparing {out} from {source} documents", flush=True)
        out.mkdir(parents=True, exist_ok=True)
        clear(out)
        tok = new_tokenizer(out, tokenizer_kind, vocab_size, phases()[0], max_tokens)
        progress = {"settings": settings, "phase": 0, "documents": 0, "splits": {}}
        write_atomically(out / PROGRESS, json.dumps(progress, indent=2) + "\n")
    else:
        documents = sum(c["documents"] for c in progress["splits"].values())
        print(f"resuming {out}: {documents:,} documents already encoded", flush=True)
        tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    workers = workers or default_workers()
    print(f"tokenizer ready in {time.perf_counter() - start:.1f} s; encoding every split"
          + (f" in {workers} processes" if workers > 1 else ""), flush=True)
    eot = tokenizer.eot_id(tok)
    writer = SplitWriter(out, dtype.itemsize, progress["splits"])
    meter = Meter(writer, max_tokens, start)
    encoder = BatchEncoder(tok.to_str(), dtype, eot, workers)
    try:
        encode_phases(phases(), out, progress, writer, encoder, meter, max_tokens)
    finally:
        encoder.close()
        writer.close()
    print(meter.line(final=True), flush=True)
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
    write_atomically(out / "meta.json", json.dumps(meta, indent=2) + "\n")
    (out / PROGRESS).unlink()
    return meta


def command_line(tokenizer_kind: str, vocab_size: int, source: str, out: Path | str, files: str = "",
                 max_tokens: int | None = None) -> str:
    """The prepare command for these settings; `files` is what follows --files, if anything."""
    options = f" --vocab-size {vocab_size}" if tokenizer_kind == "bpe" else ""
    options += "" if source == "offline_mix" else f" --source {source}"
    options += f" --files {files}" if files else ""
    options += f" --max-tokens {max_tokens}" if max_tokens else ""
    return f"python -m cod.data.prepare --tokenizer {tokenizer_kind}{options} --out {out}"


def prepare_command(data: DataConfig) -> str:
    """The command that writes the token arrays `data` names (`data.dataset_dir`).

    FineWeb-Edu is streamed from the Hub; without network the command says how to pass local files.
    """
    files = "FILE [FILE ...]" if data.source == "text_files" else ""
    return command_line(str(data.tokenizer), data.vocab_size, str(data.source), data.dataset_dir, files)


def prepare_command_of(folder: str | Path) -> str:
    """The command that writes the token arrays of `folder`, a `data.dataset_dir` (bpe<V> or
    gpt_neox, then _<source> for a source other than offline_mix); its required options left to
    fill for a folder of another name."""
    found = re.fullmatch(rf"(?:bpe(\d+)|gpt_neox)(?:_({'|'.join(SOURCES)}))?", Path(folder).name)
    if found is None:
        return f"python -m cod.data.prepare --tokenizer KIND --out {folder}"
    vocab, source = found.groups()
    data = DataConfig(tokenizer="bpe" if vocab else "gpt_neox", vocab_size=int(vocab or DataConfig().vocab_size),
                      source=source or "offline_mix", tokens_dir=str(Path(folder).parent))
    return prepare_command(data)


def what_to_run() -> str:
    """The commands that prepare the pipeline's token arrays, or those `cod.train.run` reads by default."""
    return (
        "--tokenizer and --out are required. To prepare every dataset the pipeline trains on (for the "
        "profile in params.yaml; what `dvc repro prepare` runs):\n"
        "  python -m cod.pipeline.experiments prepare\n"
        "or the one `python -m cod.train.run` reads with its default settings:\n"
        f"  {prepare_command(DataConfig())}"
    )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m cod.data.prepare", description=__doc__.split("\n")[0])
    p.add_argument("--tokenizer", choices=tokenizer.KINDS, help="required")
    p.add_argument("--vocab-size", type=int,
                   help=f"BPE vocabulary size (>= {tokenizer.MIN_BPE_VOCAB}); ignored for gpt_neox")
    p.add_argument("--source", default="offline_mix", choices=SOURCES)
    p.add_argument("--raw", type=Path, default=Path("data/raw"), help="the raw snapshot directory")
    p.add_argument("--files", type=Path, nargs="+", default=[], help="local files for text_files / fineweb_edu")
    p.add_argument("--limit", type=int, help="at most this many fineweb_edu documents")
    p.add_argument("--max-tokens", type=int, help="stop reading the source once the train split holds this many tokens")
    p.add_argument("--val-fraction", type=float, default=corpus.VAL_FRACTION, help="fineweb_edu / text_files only")
    p.add_argument("--workers", type=int, help=f"encoding processes (default: the {default_workers()} CPU cores)")
    p.add_argument("--restart", action="store_true", help="discard what --out holds and prepare it afresh")
    p.add_argument("--out", type=Path, help="output directory (required)")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = vars(p.parse_args(argv))
    kind = args.pop("tokenizer")
    if kind is None or args["out"] is None:
        p.error(what_to_run())
    try:
        check(kind, args["vocab_size"], args["source"], args["raw"], args["files"], args["val_fraction"],
              args["max_tokens"], args["workers"])
    except (ValueError, FileNotFoundError) as e:
        p.error(str(e))
    try:
        meta = prepare(tokenizer_kind=kind, **args)
    except (OutputConflict, fineweb.Unavailable) as e:
        p.error(str(e))
    for split, counts in meta["splits"].items():
        print(f"{split:8s} {counts['tokens']:>11,} tokens {counts['documents']:>7,} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
