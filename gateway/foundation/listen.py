"""`gateway listen`: a remote gateway's deliveries of one webhook or provider connection,
forwarded to a local URL as they arrive (the development loop smee-client gives).

It follows the API's delivery stream (Server-Sent Events;
gateway/webhook_gateway/deliveries/stream_routes.py), re-sends each delivery's body and headers as
received to `--forward-to`, and prints one line per delivery: when, the delivery id, the local
answer's status and how long it took. After a dropped connection it reconnects with the last id it
received (Last-Event-ID): the stream sends again what came up to a minute before that, and the ids
forwarded already are skipped, so no delivery is lost or forwarded twice.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

import httpx

# not forwarded: they describe the hop to the gateway, not the delivery
HOP_HEADERS = frozenset(
    {"host", "content-length", "connection", "transfer-encoding", "keep-alive", "te", "upgrade"}
)
READ_TIMEOUT_S = 45.0  # three missed heartbeats: the connection is gone
REMEMBERED = 10_000
MAX_BACKOFF_S = 30.0


@dataclass(frozen=True)
class ListenOptions:
    api_url: str
    key: str
    source: str  # webhooks/{uid} or provider-connections/{uid}
    forward_to: str
    once: int | None = None  # stop after this many deliveries (tests, scripts)


def messages(lines: Iterator[str]) -> Iterator[dict[str, str]]:
    """Server-Sent Events messages ({id, event, data}) from a stream's lines; comments skipped."""
    current: dict[str, str] = {}
    for line in lines:
        if not line:
            if "data" in current:
                yield current
            current = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            current[name] = current.get(name, "") + value if name == "data" else value


class Listener:
    def __init__(self, options: ListenOptions, out: TextIO = sys.stdout) -> None:
        self.options = options
        self.out = out
        self.last_id: str | None = None
        self.forwarded: OrderedDict[str, None] = OrderedDict()
        self.count = 0

    def run(self) -> int:
        stream_url = f"{self.options.api_url.rstrip('/')}/api/v1/{self.options.source}"
        stream_url += "/deliveries/stream"
        timeout = httpx.Timeout(10.0, read=READ_TIMEOUT_S)
        backoff = 1.0
        self._say(f"listening to {self.options.source}, forwarding to {self.options.forward_to}")
        with httpx.Client(timeout=timeout) as remote, httpx.Client(timeout=30.0) as local:
            while True:
                try:
                    done = self._follow(remote, local, stream_url)
                    if done is not None:
                        return done
                    backoff = 1.0
                except httpx.HTTPError as exc:
                    self._say(f"connection lost ({type(exc).__name__}); again in {backoff:.0f} s")
                    time.sleep(backoff)
                    backoff = min(backoff * 2, MAX_BACKOFF_S)

    def _follow(self, remote: httpx.Client, local: httpx.Client, url: str) -> int | None:
        headers = {"Authorization": f"Bearer {self.options.key}", "Accept": "text/event-stream"}
        if self.last_id is not None:
            headers["Last-Event-ID"] = self.last_id
        with remote.stream("GET", url, headers=headers) as response:
            if response.status_code != 200:
                response.read()
                self._say(f"error: {response.status_code} {_detail(response)}")
                return 1 if response.status_code in (400, 401, 403, 404) else None
            for message in messages(response.iter_lines()):
                delivery = json.loads(message["data"])
                self.last_id = message.get("id", self.last_id)
                if delivery["delivery_id"] in self.forwarded:
                    continue
                self._forward(local, delivery)
                if self.options.once is not None and self.count >= self.options.once:
                    return 0
        return None  # the server ended the stream: reconnect

    def _forward(self, local: httpx.Client, delivery: dict[str, Any]) -> None:
        body = base64.b64decode(delivery["body_base64"])
        headers = [(n, v) for n, v in delivery["headers"] if n.lower() not in HOP_HEADERS]
        started = time.perf_counter()
        try:
            answer = local.post(self.options.forward_to, content=body, headers=headers)
            outcome = str(answer.status_code)
        except httpx.HTTPError as exc:
            outcome = f"failed ({type(exc).__name__}: {exc})"
        took = (time.perf_counter() - started) * 1000
        self.forwarded[delivery["delivery_id"]] = None
        if len(self.forwarded) > REMEMBERED:
            self.forwarded.popitem(last=False)
        self.count += 1
        self._say(
            f"{delivery['delivery_id']} -> POST {self.options.forward_to} {outcome} {took:.0f} ms"
        )

    def _say(self, text: str) -> None:
        stamp = datetime.now().astimezone().strftime("%H:%M:%S")
        print(f"{stamp} {text}", file=self.out, flush=True)


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json().get("detail", ""))
    except ValueError:
        return response.text[:200]
