"""Request headers by lower-case name, decoded only when looked up."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping


class RawHeaders(Mapping[str, str]):
    """A read-only view of ASGI headers (already lower-case names, latin-1 bytes).

    `dict(raw)` is one C call; decoding every name and value up front cost ~1.5 µs per request
    for headers nobody reads. A repeated header keeps its last value, as a dict of them would.
    """

    __slots__ = ("_raw",)

    def __init__(self, raw: Iterable[tuple[bytes, bytes]]) -> None:
        self._raw: dict[bytes, bytes] = dict(raw)

    @property
    def raw(self) -> dict[bytes, bytes]:
        """The headers as received (names lower case, values latin-1 bytes); do not modify."""
        return self._raw

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        value = self._raw.get(name.encode("latin-1"))
        return default if value is None else value.decode("latin-1")

    def __getitem__(self, name: str) -> str:
        return self._raw[name.encode("latin-1")].decode("latin-1")

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.encode("latin-1") in self._raw

    def __iter__(self) -> Iterator[str]:
        return (name.decode("latin-1") for name in self._raw)

    def __len__(self) -> int:
        return len(self._raw)
