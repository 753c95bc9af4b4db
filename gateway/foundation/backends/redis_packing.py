"""redis-py's asyncio connection with its commands packed by hiredis's C packer.

redis-py packs a command into the Redis protocol in Python, joining the growing buffer again
for every argument. The evaluator's acknowledgement of a batch is one script call with about
three arguments a delivery (its entry id, its webhook's pending index, its id), and packing it
took a twentieth of the evaluator's time. hiredis (already the reply parser) packs the same
bytes in C; an argument it does not take (None, a bool) goes the Python way, which raises
redis-py's own error.
"""

from __future__ import annotations

from typing import Any

import hiredis
from redis.asyncio.connection import Connection


class HiredisPackingConnection(Connection):
    def pack_command(self, *args: Any) -> list[bytes]:
        name = args[0]
        # as redis-py does: a command name given with its literal arguments ("CONFIG GET")
        # goes as separate arguments
        if isinstance(name, str):
            head: tuple[Any, ...] = tuple(name.encode().split())
        elif isinstance(name, bytes) and b" " in name:
            head = tuple(name.split())
        else:
            head = (name,)
        try:
            return [hiredis.pack_command(head + args[1:])]
        except TypeError:
            return super().pack_command(*args)
