"""One maker at a time of a shared cache entry (.cache/): processes side by side (test workers,
DVC stages, notebooks) that need the same converted model or fetched package wait for the first
to finish it instead of making it twice into the same folder."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(folder: Path) -> Iterator[None]:
    """Hold the lock of `folder` (the file `.<name>.lock` beside it) for the block; another process
    asking for it waits until the block ends. Released when the process dies."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
