"""Large blocks stay out of glibc's heap in a long-lived process (gateway/kernel/allocator.py): a
block of a few MiB allocated again after one was freed is still mapped on its own, where by default
it would come from the heap."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # starts processes of its own

PROBE = textwrap.dedent(
    """
    import ctypes, sys
    from gateway.kernel.allocator import map_large_blocks_apart

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    if sys.argv[1] == "apart":
        assert map_large_blocks_apart()
    block = bytearray(4 << 20)
    del block  # freed: by default glibc raises its threshold to this size
    mapped = libc.mallinfo2().hblkhd
    block = bytearray(4 << 20)
    print(libc.mallinfo2().hblkhd - mapped >= 4 << 20)
    """
)


def _mapped_on_its_own(mode: str) -> bool:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True
    )
    return done.stdout.strip() == "True"


def test_a_large_block_allocated_again_is_mapped_on_its_own() -> None:
    assert _mapped_on_its_own("apart")
    assert not _mapped_on_its_own("default")  # what the setting changes
