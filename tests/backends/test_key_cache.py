"""KeyCache: entries live for their TTL, a forgotten owner's keys go at once, and a lookup that
began before a forget cannot put its (stale) answer back."""

from __future__ import annotations

from gateway.foundation.backends.key_cache import KeyCache


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_entry_lives_for_its_ttl() -> None:
    clock = Clock()
    cache = KeyCache(ttl_s=5.0, clock=clock)
    cache.put("k", "agent-a", "a", cache.generation)
    clock.now += 4.9
    assert cache.get("k") == "agent-a"
    clock.now += 0.1
    assert cache.get("k") is None
    assert cache.get("unknown") is None


def test_a_shorter_ttl_per_entry_but_never_longer() -> None:
    clock = Clock()
    cache = KeyCache(ttl_s=5.0, clock=clock)
    cache.put("short", 1, "a", cache.generation, ttl_s=0.5)
    cache.put("long", 2, "a", cache.generation, ttl_s=60)
    cache.put("stale", 3, "a", cache.generation, ttl_s=-1)
    clock.now += 0.5
    assert (cache.get("short"), cache.get("long"), cache.get("stale")) == (None, 2, None)
    clock.now += 4.5
    assert cache.get("long") is None


def test_forgetting_an_owner_drops_its_keys_only() -> None:
    cache = KeyCache()
    cache.put("k1", "agent-a", "a", cache.generation)
    cache.put("k2", "agent-a", "a", cache.generation)
    cache.put("k3", "agent-b", "b", cache.generation)
    cache.forget_owner("a")
    assert (cache.get("k1"), cache.get("k2"), cache.get("k3")) == (None, None, "agent-b")


def test_a_lookup_that_began_before_a_forget_is_not_cached() -> None:
    cache = KeyCache()
    began = cache.generation  # a request reads the key from the database...
    cache.forget_owner("a")  # ...while the agent is deleted and forgotten
    cache.put("k", "agent-a", "a", began)
    assert cache.get("k") is None
    cache.put("k", "agent-a", "a", cache.generation)
    assert cache.get("k") == "agent-a"
