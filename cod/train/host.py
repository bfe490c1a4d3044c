"""The host process's memory allocator, set to keep freed memory for reuse.

With its defaults, glibc gives freed memory at the top of its heap back to the kernel once a
few MB of it are free (`M_TRIM_THRESHOLD`), and serves large blocks with fresh mappings that
are unmapped when freed (`M_MMAP_THRESHOLD`). A training step frees its activations at the end
of the backward pass and allocates them again in the next forward, so every step touches its
activations' pages anew, and each first touch is a page fault. On this project's CPU that costs
about 1 ms per 2 MB, up to a quarter of a step at the miniature's shapes (`cod.tools.benchmark`).
`keep_freed_memory` raises both thresholds: blocks of up to 32 MB come from the heap, and up to
1 GiB of free heap is kept. It changes no number a run computes, only where its memory comes from.
"""

from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (glibc's malloc.h)
MMAP_THRESHOLD = 32 * 2**20  # blocks up to this size come from the heap (glibc's largest allowed value)
TRIM_THRESHOLD = 2**30  # free heap kept before any is given back


def keep_freed_memory() -> bool:
    """Set glibc's thresholds for this process; False (and nothing changed) where the C
    library is not glibc or refuses them."""
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
