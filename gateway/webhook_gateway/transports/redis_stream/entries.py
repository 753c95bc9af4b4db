"""Stream entries as SUBMIT and the rejection scripts write them, read back as DeliveryRecords.

Fields: d delivery id, w webhook uid, t Redis time (ms), n size, l label, i identity,
f first delivery id (duplicates), p payload, or k the key that holds a large payload, r the
rejection reason (rejected ones), h the redacted request headers as JSON (accepted ones).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gateway.foundation.backends.contract import DeliveryRecord, Label
from gateway.kernel.rejections import Reason

RawEntry = tuple[Any, Any, dict[bytes, bytes]]  # stream, entry id, fields
_ACCEPTED = Label.ACCEPTED.value.encode()
_LABELS = {label.value.encode(): label for label in Label}
_REASONS = {reason.value.encode(): reason for reason in Reason}


def raw_entries(stream: Any, items: list[Any]) -> list[RawEntry]:
    # an entry deleted while pending comes back without fields
    return [(stream, entry_id, fields) for entry_id, fields in items if fields]


def body_key(fields: dict[bytes, bytes]) -> bytes | None:
    """The key holding the entry's payload when it is large (else the payload is inline)."""
    return fields.get(b"k")


def record_of(fields: dict[bytes, bytes], payload: bytes | None) -> DeliveryRecord:
    """The entry's record; `payload` is its inline `p` field or its large body's value (made per
    delivery: positional, without a helper per field)."""
    get = fields.get
    identity, first = get(b"i"), get(b"f")
    label = fields[b"l"]
    return DeliveryRecord(
        fields[b"d"].decode(),
        fields[b"w"].decode(),
        datetime.fromtimestamp(int(fields[b"t"]) / 1000, UTC),
        int(fields[b"n"]),
        _LABELS[label],
        identity.decode() if identity else None,
        first.decode() if first else None,
        payload if label == _ACCEPTED else None,
        _REASONS.get(get(b"r", b"")),
        get(b"h") or None,
    )
