"""Parameters bound without a failed adaptation each.

sqlite3 binds an int, float, str or bytearray as it is, and first tries to adapt any other
value (bytes, None, bool): it builds a key, looks it up among the registered adapters, then asks
the protocol for `__adapt__`, which raises and drops a formatted AttributeError (CPython 3.11,
Modules/_sqlite/microprotocols.c). That cost ~430 ns a value, and the store binds several a
row: payloads, header blocks and traces (bytes), NULLs, flags. In the evaluator's SQLite thread
it was 10 % of the instructions (callgrind: 99,003 AttributeErrors for 9,000 deliveries).

`bind_as_is` registers adapters that give such values back unchanged, so the lookup finds one:
the same values are bound (bytes as a BLOB, None as NULL, a bool as the integer it is), at
~115 ns each. The registry is the sqlite3 module's, for the whole process; adapting these types
in another way would be a change of the stored values, which nothing here wants.
"""

from __future__ import annotations

import sqlite3


def _unchanged(value: None) -> None:
    return value


def bind_as_is() -> None:
    """Registers the adapters (idempotent)."""
    sqlite3.register_adapter(bytes, bytes)  # bytes(b) is b itself, no copy
    sqlite3.register_adapter(type(None), _unchanged)
    sqlite3.register_adapter(bool, int)  # what sqlite3 binds a bool as: 0 or 1
