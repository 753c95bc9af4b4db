"""The C allocator's setting for a long-lived process: large blocks are mapped on their own.

glibc's malloc serves a block of M_MMAP_THRESHOLD bytes or more with a mapping of its own, which
goes back to the system when freed. By default, though, it raises that threshold to the size of
each such block freed (up to 32 MiB), and from then on serves blocks of that size from its heap.
The de-duplication memory's table (5 MB at 65,536 entries) is reallocated every ~110,000
deliveries as entries come and go: once it came from the heap, small blocks allocated in its
freed copy meanwhile left no room for the next, and the serving process grew ~5 MB every 30-40 s
under sustained load (docs/performance-history.md). A fixed threshold keeps every block of a
mebibyte or more out of the heap; smaller ones are not worth a system call each.
"""

from __future__ import annotations

import ctypes
import sys

M_MMAP_THRESHOLD = -3  # mallopt's parameter (glibc malloc.h)
LARGE_BLOCK = 1 << 20


def map_large_blocks_apart() -> bool:
    """Sets the fixed threshold; False where the C library is not glibc (nothing to do)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except AttributeError:  # a C library without mallopt
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK))
