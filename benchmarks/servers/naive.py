"""The naive receiver: FastAPI + pydantic, written the obvious way.

Same work as the gateway's ingress, one redis-py asyncio call per step: authenticate (bearer
token hash or the `standardwebhooks` package), rate limit (INCR + EXPIRE, fixed 60 s window),
de-duplicate (SET NX EX), log (XADD). Webhook credentials are loaded once at start-up from the
benchmark's SQLite file (env NAIVE_DATABASE, NAIVE_REDIS_URL, GATEWAY_SECRET_KEY).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fastapi import FastAPI, HTTPException, Request
from pydantic import BaseModel
from redis.asyncio import Redis
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from gateway.kernel.security import SecretBox

RATE_LIMIT = 60
DEDUP_TTL_S = 7 * 24 * 3600


@dataclass(frozen=True, slots=True)
class Hook:
    token_hash: str | None
    verifier: Webhook | None


class Accepted(BaseModel):
    delivery_id: str


def load_hooks(path: str, key: bytes) -> dict[str, Hook]:
    box = SecretBox(key)
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT uid, auth_mode, token_hash, secret_encrypted FROM webhooks WHERE enabled"
        ).fetchall()
    hooks: dict[str, Hook] = {}
    for uid, mode, token_hash, secret in rows:
        verifier = Webhook(box.decrypt(secret)) if mode == "signature" else None
        hooks[uid] = Hook(token_hash, verifier)
    return hooks


def create_app() -> FastAPI:
    state: dict[str, object] = {}

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        raw_key = os.environ["GATEWAY_SECRET_KEY"]
        key = base64.urlsafe_b64decode(raw_key + "=" * (-len(raw_key) % 4))
        state["hooks"] = load_hooks(os.environ["NAIVE_DATABASE"], key)
        redis = Redis.from_url(os.environ["NAIVE_REDIS_URL"])
        state["redis"] = redis
        yield
        await redis.aclose()

    app = FastAPI(lifespan=lifespan)

    @app.post("/webhooks/w/{uid}", status_code=202, response_model=Accepted)
    async def receive(uid: str, request: Request) -> Accepted:
        hooks: dict[str, Hook] = state["hooks"]  # type: ignore[assignment]
        redis: Redis = state["redis"]  # type: ignore[assignment]
        hook = hooks.get(uid)
        if hook is None:
            raise HTTPException(404, "unknown webhook")
        body = await request.body()
        identity = authenticate(hook, request, body)
        try:
            json.loads(body)
        except ValueError as exc:
            raise HTTPException(400, "invalid JSON") from exc
        count = await redis.incr(f"naive:rate:{uid}")
        if count == 1:
            await redis.expire(f"naive:rate:{uid}", 60)
        if count > RATE_LIMIT:
            raise HTTPException(429, "rate limited", headers={"Retry-After": "60"})
        delivery_id = "dlv_" + uuid.uuid4().hex
        if identity is None:
            identity = "sha256:" + hashlib.sha256(body).hexdigest()
        fresh = await redis.set(
            f"naive:seen:{uid}:{identity}", delivery_id, nx=True, ex=DEDUP_TTL_S
        )
        if not fresh:
            first = await redis.get(f"naive:seen:{uid}:{identity}")
            return Accepted(delivery_id=first.decode() if isinstance(first, bytes) else delivery_id)
        await redis.xadd(
            "naive:log", {"delivery_id": delivery_id, "webhook_uid": uid, "payload": body}
        )
        return Accepted(delivery_id=delivery_id)

    return app


def authenticate(hook: Hook, request: Request, body: bytes) -> str | None:
    """The delivery identity the sender gave, after checking its credentials; 401 otherwise."""
    if hook.verifier is not None:
        try:
            hook.verifier.verify(body, dict(request.headers))
        except WebhookVerificationError as exc:
            raise HTTPException(401, "bad signature") from exc
        return request.headers.get("webhook-id")
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    presented = hashlib.sha256(token.strip().encode()).hexdigest()
    if scheme.lower() != "bearer" or not hmac.compare_digest(presented, hook.token_hash or ""):
        raise HTTPException(401, "bad token")
    return request.headers.get("x-service-delivery-id")
