"""The C allocator in a long-lived process: large blocks mapped on their own, free pages given
back.

glibc's malloc serves a block of M_MMAP_THRESHOLD bytes or more with a mapping of its own, which
goes back to the system when freed. By default, though, it raises that threshold to the size of
each such block freed (up to 32 MiB), and from then on serves blocks of that size from its heap.
The de-duplication memory's table (5 MB at 65,536 entries) is reallocated every ~110,000
deliveries as entries come and go: once it came from the heap, small blocks allocated in its
freed copy meanwhile left no room for the next, and the serving process grew ~5 MB every 30-40 s
under sustained load (docs/performance.md). A fixed threshold keeps every block of a mebibyte or
more out of the heap; smaller ones are not worth a system call each.

glibc gives memory back to the system only from the top of its heap. The evaluator's heap holds
~12 MB free in the middle (SQLite's and the batches' blocks of every size come and go), more as
it fragments over the minutes; `give_back_free_pages`, once a minute, returns those pages.
"""

from __future__ import annotations

import ctypes
import sys
from functools import cache
from typing import Any

M_MMAP_THRESHOLD = -3  # mallopt's parameter (glibc malloc.h)
LARGE_BLOCK = 1 << 20


def map_large_blocks_apart() -> bool:
    """Sets the fixed threshold; False where the C library is not glibc (nothing to do)."""
    mallopt = _libc_function("mallopt")
    return mallopt is not None and bool(mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK))


def give_back_free_pages() -> bool:
    """Returns the heap's free pages to the system (glibc's malloc_trim); whether any were."""
    malloc_trim = _libc_function("malloc_trim")
    return malloc_trim is not None and bool(malloc_trim(0))


@cache
def _libc_function(name: str) -> Any:
    if not sys.platform.startswith("linux"):
        return None
    return getattr(ctypes.CDLL(None), name, None)  # None: a C library other than glibc
