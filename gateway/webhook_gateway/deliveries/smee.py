"""smee.io's message format, and where a channel's stream resumes.

smee.io sends each webhook it received as an SSE `message` whose data is the request's headers
as top-level keys beside `body` (the parsed JSON body), `query` and `timestamp`; smee-client
POSTs `JSON.stringify(body)` to its target with every other key but `query` as a header. So a
channel's message holds the delivery's stored headers (those the log redacts, credentials and
signatures, are left out, as for `gateway listen`) and its body, and no `timestamp` or `query`,
which smee-client would forward as headers the sender never sent.

smee-client keeps no ids of its own: the server must neither repeat nor skip on a reconnect. A
stream's follower is kept, per process, under the last id it sent (RESUMES): a reconnect with
that Last-Event-ID to the same process continues it exactly (late-logged deliveries included).
Elsewhere, or later, the stream resumes after the named delivery in the log's order.
"""

from __future__ import annotations

import base64
import time
from collections import OrderedDict

import msgspec

from gateway.webhook_gateway.deliveries.stream import Follower, StreamedDelivery

# they describe the hop to the gateway; smee-client sets content-length and content-type itself
HOP_HEADERS = frozenset(
    {"host", "content-length", "connection", "transfer-encoding", "keep-alive", "te", "upgrade"}
)
RESERVED = frozenset({"body", "query", "timestamp"})  # smee's own keys beside the headers
KEPT_S = 600.0
KEPT = 256
_encode = msgspec.json.Encoder().encode


def message(item: StreamedDelivery) -> bytes:
    """The data of one delivery's smee message: one line of JSON."""
    data: dict[str, object] = {}
    for name, value in item.headers:
        key = name.lower()
        if key in HOP_HEADERS or key in RESERVED:
            continue
        data[key] = f"{data[key]}, {value}" if key in data else value
    # re-encoded (one line, key order kept): smee-client re-serializes it in any case
    data["body"] = msgspec.json.decode(base64.b64decode(item.body_base64))
    return _encode(data)


class ResumePoints:
    """Followers of recently open channel streams, by (channel, last id sent)."""

    def __init__(self, limit: int = KEPT, kept_s: float = KEPT_S) -> None:
        self.limit = limit
        self.kept_s = kept_s
        self._held: OrderedDict[tuple[str, str], tuple[float, Follower]] = OrderedDict()

    def put(self, channel_uid: str, last_id: str, follower: Follower, previous: str | None) -> None:
        if previous is not None:
            self._held.pop((channel_uid, previous), None)
        self._held[(channel_uid, last_id)] = (time.monotonic(), follower)
        while len(self._held) > self.limit:
            self._held.popitem(last=False)

    def find(self, channel_uid: str, last_id: str) -> Follower | None:
        held = self._held.get((channel_uid, last_id))
        if held is None or time.monotonic() - held[0] > self.kept_s:
            return None
        return held[1]


RESUMES = ResumePoints()
