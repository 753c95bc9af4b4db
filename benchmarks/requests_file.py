"""Pre-generated request files: raw HTTP heads (one per delivery) plus a few shared bodies.

Format (read by lua/cycle.lua):
    "<n_bodies> <n_requests>\n"
    n_bodies  x ("<len>\n" + body bytes)
    n_requests x ("<body_index> <len>\n" + head bytes, ending in CRLF CRLF)
A request is head + body. Heads carry the webhook uid, a unique delivery id and, for signed
webhooks, a Standard Webhooks signature made when the file is written (just before each run).
A `provider` plan sends GitHub `issues` deliveries to provider connections instead, signed as
GitHub signs (`X-Hub-Signature-256`), with `X-GitHub-Delivery` as the delivery id.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson
from standardwebhooks.webhooks import Webhook as Signer

from benchmarks.seed import MATCH_LABEL, MATCH_TYPE, PROVIDER_REPOSITORY, AuthMode, Webhook

RATE_LIMIT_PER_MINUTE = 60
MAX_BODIES = 64


@dataclass(frozen=True, slots=True)
class Plan:
    """Which webhook and which delivery id each request carries."""

    name: str
    targets: tuple[tuple[int, str], ...]  # (webhook index, delivery id)


def spread_plan(
    tag: str, webhooks: int, count: int, *, rate_limited: bool = True, rate: float | None = None
) -> Plan:
    """Every webhook once per pass, each pass in a random order of its own (seeded by `tag`:
    the same plan every time), every delivery id unique; refuses to break the rate limit (unless
    the server has none: the ceiling). Sent as fast as possible, all of them may fall in one
    minute; sent at an even `rate` (requests/s), a minute holds a minute's worth, and one more
    a webhook at most where a minute straddles two passes.

    Random, not round-robin in the seed's order: the seed makes webhook uids in time order, so
    a round-robin pass swept every index keyed by webhook (the outbox's, the delivery log's)
    from its first page to its last, and consecutive rows landed on the same pages. Senders
    are not in step like that; with arrivals in random order and 3,000 rows held, the outbox's
    former index by webhook cost 9-11 µs a delivery more, where the sweep showed none
    (`benchmarks.outbox_append`, docs/performance.md)."""
    per_minute = count if rate is None else min(count, rate * 60)
    most = math.ceil(per_minute / webhooks) + (1 if count > per_minute else 0)
    if rate_limited and most > RATE_LIMIT_PER_MINUTE:
        raise ValueError(
            f"{per_minute:.0f} requests a minute over {webhooks} webhooks is over "
            f"{RATE_LIMIT_PER_MINUTE}/min each"
        )
    order = spread_order(tag, webhooks, count)
    return Plan("spread", tuple((w, f"{tag}-{i}") for i, w in enumerate(order)))


def spread_order(tag: str, webhooks: int, count: int) -> list[int]:
    """`count` webhook indexes: passes over all `webhooks`, each in an order of its own."""
    shuffle = random.Random(tag).shuffle
    order: list[int] = []
    while len(order) < count:
        one_pass = list(range(webhooks))
        shuffle(one_pass)
        order += one_pass[: count - len(order)]
    return order


def provider_plan(tag: str, connections: int, count: int) -> Plan:
    """`spread_plan` over the provider connections: GitHub deliveries (write_requests)."""
    spread = spread_plan(tag, connections, count)
    return Plan("provider", spread.targets)


def flood_plan(tag: str, count: int) -> Plan:
    """Everything to webhook 0 with unique ids: 60 accepted, the rest 429."""
    return Plan("flood", tuple((0, f"{tag}-f{i}") for i in range(count)))


def duplicate_plan(tag: str, webhooks: int, count: int) -> Plan:
    """Round-robin over `webhooks` webhooks, one delivery id each, repeated: one accepted per
    webhook, the rest duplicates. At most 60 per webhook, as the Redis backend counts duplicates
    in the rate window (the embedded one does not)."""
    count = min(count, webhooks * RATE_LIMIT_PER_MINUTE)
    return Plan("duplicate", tuple((i % webhooks, f"{tag}-d{i % webhooks}") for i in range(count)))


# a type no seeded automation's filter names: the evaluator logs the delivery, starts nothing
NO_MATCH_TYPE = "bench.nomatch"


def payload(size: int, seq: int, matching: bool = True) -> bytes:
    """A JSON object of exactly `size` bytes whose type matches one automation per webhook
    (`matching`) or none of them."""
    kind = MATCH_TYPE if matching else NO_MATCH_TYPE
    base = {"type": kind, "seq": seq, "source": "benchmarks", "pad": ""}
    empty = len(orjson.dumps(base))
    base["pad"] = "x" * max(0, size - empty)
    return orjson.dumps(base)


def github_payload(size: int, seq: int, matching: bool = True) -> bytes:
    """A GitHub `issues` `labeled` delivery of exactly `size` bytes whose label one automation
    of the team matches (`matching`) or none does."""
    base = {
        "action": "labeled",
        "label": {"name": MATCH_LABEL if matching else "bench-nomatch"},
        "issue": {"number": seq, "title": "Widgets fail to render", "user": {"login": "hubot"}},
        "repository": {"full_name": PROVIDER_REPOSITORY},
        "sender": {"login": "octocat"},
        "pad": "",
    }
    empty = len(orjson.dumps(base))
    base["pad"] = "x" * max(0, size - empty)
    return orjson.dumps(base)


def write_requests(
    path: Path,
    plan: Plan,
    webhooks: Sequence[Webhook],
    auth_mode: AuthMode,
    body_size: int,
    host: str,
    matching: bool = True,
    signed_at: datetime | None = None,
) -> None:
    """`signed_at`: the signatures' time (default now). The gateway accepts it for 5 minutes
    either side, so a run longer than that signs at its middle."""
    count = min(MAX_BODIES, max(1, len(plan.targets)))
    github = plan.name == "provider"
    make = github_payload if github else payload
    bodies = [make(body_size, i, matching) for i in range(count)]
    digests = {}  # (connection, body) -> its signature header
    signers: dict[int, Signer] = {}
    now = signed_at or datetime.now(UTC)
    stamp = str(int(now.timestamp()))
    with path.open("wb") as out:
        out.write(b"%d %d\n" % (len(bodies), len(plan.targets)))
        for body in bodies:
            out.write(b"%d\n" % len(body))
            out.write(body)
        for i, (index, delivery_id) in enumerate(plan.targets):
            hook = webhooks[index]
            body_index = i % len(bodies)
            body = bodies[body_index]
            lines = [
                f"POST /webhooks/{'p' if github else 'w'}/{hook.uid} HTTP/1.1",
                f"Host: {host}",
                "Content-Type: application/json",
                f"Content-Length: {len(body)}",
            ]
            if github:
                key = (index, body_index)
                signature = digests.get(key)
                if signature is None:
                    mac = hmac.new(hook.credential.encode(), body, hashlib.sha256).hexdigest()
                    signature = digests[key] = f"sha256={mac}"
                lines += [
                    "User-Agent: GitHub-Hookshot/bench",
                    "X-GitHub-Event: issues",
                    f"X-GitHub-Delivery: {delivery_id}",
                    f"X-Hub-Signature-256: {signature}",
                ]
            elif auth_mode == "token":
                lines.append(f"Authorization: Bearer {hook.credential}")
                lines.append(f"X-Service-Delivery-Id: {delivery_id}")
            else:
                signer = signers.get(index)
                if signer is None:
                    signer = signers[index] = Signer(hook.credential)
                msg_id = f"msg_{delivery_id}"
                signature = signer.sign(msg_id, now, body.decode())
                lines += [
                    f"webhook-id: {msg_id}",
                    f"webhook-timestamp: {stamp}",
                    f"webhook-signature: {signature}",
                ]
            head = ("\r\n".join(lines) + "\r\n\r\n").encode()
            out.write(b"%d %d\n" % (body_index + 1, len(head)))  # Lua tables count from 1
            out.write(head)


def signed_at() -> float:
    return time.time()
