"""Events out per second: recorded events delivered, signed, to a local receiver.

    python -m benchmarks.events_bench [--events N] [--subscriptions S] [--db sqlite|postgresql]

Seeds a team with S event subscriptions (`run.*`) whose URL is a keep-alive HTTP receiver in a
process of its own (it answers 200 to everything and counts), records N `run.state_changed`
events through `record_events` in batches of 500 (each becomes S outbound messages, enqueued in
the events' transaction), then runs the real outbound Dispatcher with the EventSender (Standard
Webhooks signing, its keep-alive client, 16 in flight per subscription; every attempt's row
written as the dispatcher settles the attempts that ended together) until every message is
delivered. Reported: messages delivered per second, the dispatcher's CPU per message (this
process, all threads: the event loop and SQLite's thread) and what one core would deliver at
that cost (`one_core_messages_per_s`, the figure held to the target: >= 1,000 events/s out on
one core), and a check (every message delivered once, the receiver's count equal). `--pin` pins
the process to one core instead; on a shared host that measures the host's other load more than
this code (SQLite's thread and the event loop then take turns through the GIL's switch
interval).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from gateway.foundation.accounts import identities
from gateway.foundation.accounts.identities import Principal
from gateway.foundation.events.catalogue import RunEventData
from gateway.foundation.events.log import NewEvent, record_events
from gateway.foundation.outbound import Dispatcher
from gateway.foundation.outbound.keepalive import KeepAliveClient
from gateway.foundation.services import build_services
from gateway.foundation.store import migrate
from gateway.foundation.store import tables as t
from gateway.foundation.store.types import utcnow
from gateway.foundation.subscriptions.delivery import EventSender
from gateway.foundation.subscriptions.management import create_subscription
from gateway.foundation.subscriptions.models import SubscriptionCreate
from gateway.kernel.settings import load_settings
from testbed.procs import free_port

BATCH = 500
RECEIVER = r"""
import asyncio, sys
count = 0
class Answer(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.buffer = transport, b""
    def data_received(self, data):
        global count
        self.buffer += data
        while True:
            head, sep, rest = self.buffer.partition(b"\r\n\r\n")
            if not sep:
                return
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(rest) < length:
                return
            self.buffer = rest[length:]
            if head.startswith(b"GET /count"):
                body = str(count).encode()
            else:
                count += 1
                body = b"ok"
            head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body)
            self.transport.write(head + body)
async def main():
    server = await asyncio.get_running_loop().create_server(Answer, "127.0.0.1", int(sys.argv[1]))
    print("ready", flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


def settings_for(db: str, directory: Path) -> Any:
    url = f"sqlite:///{directory}/events.db"
    if db == "postgresql":
        url = os.environ.get("GATEWAY_BENCH_POSTGRES_URL", "postgresql://localhost/test")
    return load_settings(
        {
            "GATEWAY_DATABASE_URL": url,
            "GATEWAY_SECRET_KEY": base64.urlsafe_b64encode(b"b" * 32).decode(),
            "GATEWAY_OUTBOUND_ALLOW_PRIVATE": "1",
        }
    )


async def bench(db: str, events: int, subscriptions: int, port: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        settings = settings_for(db, Path(directory))
        services = build_services(settings)
        try:
            await migrate(services.database)
            async with services.database.transaction() as conn:
                team = await identities.create_team(conn, "bench")
                user, _ = await identities.create_user(conn, team, f"{team}@bench.test")
                principal = Principal("user", user, "b", None, frozenset({team}), team)
                url = f"http://127.0.0.1:{port}/hook"
                for _ in range(subscriptions):
                    spec = SubscriptionCreate(url=url, events=["run.*"])
                    await create_subscription(conn, services.secret_box, principal, spec)
            now = utcnow()
            recorded = time.perf_counter()
            for start in range(0, events, BATCH):
                batch = [
                    NewEvent(
                        "run.state_changed",
                        team,
                        RunEventData(
                            run_id=f"run-{n}",
                            factory_uid=None,
                            conversation_id=f"c-{n}",
                            state="SUCCEEDED",
                            title="bench",
                            source="API",
                            created_at=now,
                            updated_at=now,
                        ),
                    )
                    for n in range(start, min(events, start + BATCH))
                ]
                async with services.database.transaction() as conn:
                    await record_events(conn, batch)
            recorded = time.perf_counter() - recorded
            http = KeepAliveClient(allow_private=True)

            async def disabled(*_: Any) -> None:
                raise AssertionError("no subscription is disabled here")

            sender = EventSender(
                services.database, services.secret_box, http,
                disable_after=timedelta(days=5), on_disabled=disabled,
            )  # fmt: skip
            dispatcher = Dispatcher(services.database, {sender.kind: sender})
            cpu, started = time.process_time(), time.perf_counter()
            await dispatcher.drain(within_s=600)
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            await http.aclose()
            m = t.outbound_messages
            async with services.database.read() as conn:
                query = select(m.c.state, func.count()).where(m.c.kind == "event")
                states = dict((await conn.execute(query.group_by(m.c.state))).all())
                attempts = (
                    await conn.execute(select(func.count()).select_from(t.outbound_attempts))
                ).scalar()
        finally:
            await services.close()
    messages = events * subscriptions
    return {
        "case": {"db": db, "events": events, "subscriptions": subscriptions},
        "record_s": round(recorded, 3),
        "events_recorded_per_s": round(events / recorded, 1),
        "deliver_s": round(elapsed, 3),
        "messages_out_per_s": round(messages / elapsed, 1),
        "cpu_us_per_message": round(cpu / messages * 1e6, 1),
        # what one core would deliver, busy with nothing else: the figure held to the target
        "one_core_messages_per_s": round(messages / cpu, 1),
        "check": {"messages": messages, "states": states, "attempts": attempts},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--subscriptions", type=int, default=4)
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument(
        "--pin", action="store_true", help="pin this process to one core (see the docstring)"
    )
    args = parser.parse_args()
    port = free_port()
    receiver = subprocess.Popen(
        [sys.executable, "-c", RECEIVER, str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert receiver.stdout is not None and receiver.stdout.readline().strip() == "ready"
        if args.pin and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        result = asyncio.run(bench(args.db, args.events, args.subscriptions, port))
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/count") as answer:
            result["check"]["receiver_count"] = int(answer.read())
        result["check"]["ok"] = (
            result["check"]["states"] == {"delivered": result["check"]["messages"]}
            and result["check"]["receiver_count"] == result["check"]["messages"]
        )
        print(json.dumps(result, indent=2))
    finally:
        receiver.kill()
        receiver.wait()


if __name__ == "__main__":
    main()
