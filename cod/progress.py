"""Progress bars on stderr for the long scoring loops (permutation, usefulness, Jacobians, zero-shot).

Every scoring function that loops for long takes `progress: bool | None = None`:

    True   a bar on stderr: items done / total, rate and ETA (tqdm)
    False  nothing is written
    None   a bar only when stderr is a terminal

The default follows the terminal so that an interactive shell (and `dvc repro` started from one,
which passes its terminal to the stage) shows the bars, while output captured into a file stays
clean: papermill's kernels write stderr into the executed notebooks, whose committed outputs must
not hold bars, and their stderr is no terminal; neither is pytest's captured stderr. In Jupyter,
whose stderr is no terminal either, pass progress=True. A bar only counts the loop it wraps: the
work, its order and its random draws are the same with and without it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from tqdm import tqdm


def shown(progress: bool | None) -> bool:
    """Whether a bar is drawn: `progress` if given, else whether stderr is a terminal."""
    return sys.stderr.isatty() if progress is None else progress


def progress_bar(desc: str, total: int, progress: bool | None = None, unit: str = "it",
                 items: Iterable | None = None) -> tqdm:
    """A bar of `total` steps on stderr, silent when not `shown`: iterate it to count `items` as
    they are consumed, or, without items, advance it with .update(n) and close it (or use `with`)."""
    return tqdm(items, total=total, desc=desc, unit=unit, file=sys.stderr, disable=not shown(progress))
