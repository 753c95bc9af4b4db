"""Public identifiers: their shape, their time order, and the pooled random bytes behind them
(each byte handed out once, and never the same in a forked child as in its parent)."""

from __future__ import annotations

import os
import re
import time
import uuid

from gateway.kernel import ids


def test_an_id_is_its_prefix_its_millisecond_and_random_digits() -> None:
    before = int(time.time() * 1000)
    made = ids.new_id("dlv")
    after = int(time.time() * 1000)
    assert re.fullmatch(r"dlv_[0-9a-f]{32}", made)
    millis = ids.millis_of(made)
    assert millis is not None and before <= millis <= after
    assert ids.millis_of("not-an-id") is None


def test_a_uuid_is_version_7_and_ordered_by_time() -> None:
    first = ids.new_uuid()
    time.sleep(0.002)
    second = ids.new_uuid()
    parsed = uuid.UUID(first)
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
    assert first < second


def test_random_bytes_are_never_handed_out_twice_across_pool_refills() -> None:
    draws = [ids.random_bytes(10) for _ in range(3 * ids.POOL_BYTES // 10)]
    assert all(len(d) == 10 for d in draws)
    assert len(set(draws)) == len(draws)
    assert len({ids.new_id("run") for _ in range(5000)}) == 5000


def test_a_forked_child_draws_bytes_of_its_own() -> None:
    ids.random_bytes(10)  # the pool holds bytes the child would otherwise share
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next bytes, to the parent
        try:
            os.write(writing, ids.random_bytes(16))
        finally:
            os._exit(0)
    os.close(writing)
    try:
        childs = os.read(reading, 16)
    finally:
        os.close(reading)
        os.waitpid(pid, 0)
    assert len(childs) == 16
    assert childs != ids.random_bytes(16)  # the parent's next bytes


def test_ids_made_in_batches_have_the_shapes_of_those_made_one_at_a_time() -> None:
    before = int(time.time() * 1000)
    uuids = ids.new_uuids(1000)  # more than one draw of the pool
    made = ids.new_ids("att", 1000)
    after = int(time.time() * 1000)
    for value in uuids:
        parsed = uuid.UUID(value)
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122 and str(parsed) == value
        assert before <= parsed.int >> 80 <= after  # its 48 bits of milliseconds
    for value in made:
        assert re.fullmatch(r"att_[0-9a-f]{32}", value)
        assert before <= (ids.millis_of(value) or 0) <= after
    assert len(set(uuids)) == 1000 and len(set(made)) == 1000


def test_a_supply_hands_out_each_id_once() -> None:
    supply = ids.IdSupply()
    taken = [supply.uuid() for _ in range(3 * ids.IdSupply.BATCH)]
    assert len(set(taken)) == len(taken)
    tasks = [supply.id("task") for _ in range(10)]
    assert all(t.startswith("task_") for t in tasks) and len(set(tasks)) == 10
