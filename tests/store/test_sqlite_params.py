"""The store's SQLite connections bind bytes, None and bools through registered adapters that
give them back unchanged (gateway.foundation.store.sqlite_params): no failed adaptation per
value, and the same stored values as sqlite3's own binding."""

from __future__ import annotations

import sqlite3

from gateway.foundation.store import sqlite_driver
from gateway.foundation.store.sqlite_params import bind_as_is
from gateway.webhook_gateway.transports.outbox import file as outbox


def test_the_store_registers_the_adapters_when_it_is_imported() -> None:
    assert sqlite_driver.bind_as_is is outbox.bind_as_is is bind_as_is  # both call it on import
    for kind in (bytes, type(None), bool):
        assert (kind, sqlite3.PrepareProtocol) in sqlite3.adapters, kind


def test_values_are_stored_as_sqlite3_stores_them_without_adapters() -> None:
    row = (b"\x00payload\xff", None, True, False, "text", 7, 1.5)
    query = (
        "SELECT a, typeof(a), b, typeof(b), c, typeof(c), d, typeof(d), e, typeof(e), "
        "f, typeof(f), g, typeof(g) FROM t"
    )
    stored = []
    saved = dict(sqlite3.adapters)
    try:
        for kind in (bytes, type(None), bool):  # sqlite3's own binding first
            sqlite3.adapters.pop((kind, sqlite3.PrepareProtocol), None)
        for registered in (False, True):
            if registered:
                bind_as_is()
            conn = sqlite3.connect(":memory:")
            conn.execute("CREATE TABLE t (a, b, c, d, e, f, g)")
            conn.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", row)
            conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", [row])
            stored.append(conn.execute(query).fetchall())
            conn.close()
    finally:
        sqlite3.adapters.clear()
        sqlite3.adapters.update(saved)
    without, with_adapters = stored
    assert with_adapters == without
    assert without[0][:8] == (b"\x00payload\xff", "blob", None, "null", 1, "integer", 0, "integer")


def test_bytes_are_bound_without_a_copy() -> None:
    body = b"x" * 256 * 1024
    assert bytes(body) is body  # what the bytes adapter returns: the value itself
