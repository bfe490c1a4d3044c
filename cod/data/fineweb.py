"""FineWeb-Edu documents, streamed from the Hugging Face Hub or read from local files.

The papers pre-train on FineWeb-Edu. With network access, `iter_documents()` streams the
`sample-10BT` subset; offline, `iter_documents(data_files=[...])` reads local parquet or
JSON-lines files with a `text` column (and optionally `id`) through the same code path.
Without either, `open_hub()` fails with `Unavailable`, whose message names the dataset and
how to provide it.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Iterator, Sequence

HUB_DATASET = "HuggingFaceFW/fineweb-edu"
HUB_CONFIG = "sample-10BT"
HUB_FILES = "sample/10BT/*.parquet"  # that config's files in the dataset repository
LOCAL_DIR = "fineweb-edu"  # where the download command of `Unavailable`'s message puts them
BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".jsonl.gz": "json"}


class Unavailable(FileNotFoundError):
    """FineWeb-Edu is neither in local files nor reachable on the Hugging Face Hub."""


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


def open_hub(name: str = HUB_CONFIG):
    """The dataset streamed from the Hub; `Unavailable`, saying how to provide it, when the Hub cannot be reached."""
    from datasets import load_dataset  # lazy: datasets takes seconds to import, and the trainer imports this module

    try:
        return load_dataset(HUB_DATASET, name=name, split="train", streaming=True)
    except OSError as e:  # ConnectionError offline, DatasetNotFoundError when the Hub does not answer for it
        raise Unavailable(
            f"FineWeb-Edu ({HUB_DATASET}, config {name}) is not at hand: no --files were given and the Hugging "
            f"Face Hub cannot be reached ({e}). Run with network access, or download its parquet files where "
            f"there is network:\n  hf download {HUB_DATASET} --repo-type dataset --include '{HUB_FILES}' "
            f"--local-dir {LOCAL_DIR}\nand pass them (or any parquet/jsonl files with a `text` column) with --files:"
        ) from e


def iter_documents(
    data_files: Sequence[Path] | None = None, limit: int | None = None, name: str = HUB_CONFIG
) -> Iterator[tuple[str, str]]:
    """(id, text) of up to `limit` documents, in the dataset's order.

    Without `data_files` this streams `HuggingFaceFW/fineweb-edu` (config `name`) and needs
    network access; documents without an `id` column are numbered.
    """
    if data_files:
        from datasets import load_dataset  # lazy: as in open_hub

        paths = [str(p) for p in data_files]
        dataset = load_dataset(builder_for(list(map(Path, paths))), data_files=paths, split="train", streaming=True)
    else:
        dataset = open_hub(name)
    for i, row in enumerate(islice(dataset, limit)):
        if "text" not in row:
            raise KeyError(f"documents need a 'text' column; found {sorted(row)}")
        yield str(row.get("id") or f"doc{i}"), row["text"]
