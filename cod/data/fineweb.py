"""FineWeb-Edu documents, streamed from the Hugging Face Hub or read from local files.

The papers pre-train on FineWeb-Edu. With network access, `iter_documents()` streams the
`sample-10BT` subset; offline, `iter_documents(data_files=[...])` reads local parquet or
JSON-lines files with a `text` column (and optionally `id`) through the same code path.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Iterator, Sequence

HUB_DATASET = "HuggingFaceFW/fineweb-edu"
BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".jsonl.gz": "json"}


def builder_for(files: Sequence[Path]) -> str:
    """The `datasets` builder that reads these files; raise ValueError if there is none."""
    kinds = set()
    for path in files:
        if not path.is_file():
            raise FileNotFoundError(f"--files: {path} not found")
        suffix = "".join(path.suffixes[-2:]) if path.name.endswith(".jsonl.gz") else path.suffix
        if suffix not in BUILDERS:
            raise ValueError(f"--files: {path} is not one of {', '.join(BUILDERS)}")
        kinds.add(BUILDERS[suffix])
    if len(kinds) != 1:
        raise ValueError(f"--files: give files of one format, not {sorted(kinds)}")
    return kinds.pop()


def iter_documents(
    data_files: Sequence[Path] | None = None, limit: int | None = None, name: str = "sample-10BT"
) -> Iterator[tuple[str, str]]:
    """(id, text) of up to `limit` documents, in the dataset's order.

    Without `data_files` this streams `HuggingFaceFW/fineweb-edu` (config `name`) and needs
    network access; documents without an `id` column are numbered.
    """
    from datasets import load_dataset  # deferred: importing datasets takes seconds

    if data_files:
        paths = [str(p) for p in data_files]
        dataset = load_dataset(builder_for(list(map(Path, paths))), data_files=paths, split="train", streaming=True)
    else:
        dataset = load_dataset(HUB_DATASET, name=name, split="train", streaming=True)
    for i, row in enumerate(islice(dataset, limit)):
        if "text" not in row:
            raise KeyError(f"documents need a 'text' column; found {sorted(row)}")
        yield str(row.get("id") or f"doc{i}"), row["text"]
