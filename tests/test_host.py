"""The host allocator setting (cod.train.host): freed blocks stay in the process for the next step."""

import ctypes
import platform

import pytest
import torch

from cod.train.host import keep_freed_memory

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt and mallinfo2 are glibc's")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


@glibc
def test_a_freed_16_mb_block_stays_in_the_heap_for_reuse():
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    assert keep_freed_memory()
    block = torch.ones(4 * 2**20)  # 16 MB: glibc's default would map it and unmap it when freed
    del block
    assert libc.mallinfo2().fordblks >= 16 * 2**20  # free bytes held in the heap
