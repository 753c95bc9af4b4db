"""A tree built to cost the server: eight runner files of 85,000 YAML aliases each (2 MB, under
every size limit), or of 40,000 duplicate keys. It was answered with 680,008 diagnostics (a
106 MB 422) after tens of seconds of parsing on the event loop that serves ingress, which
waited meanwhile. Now: at most 20 problems of a file, the first 100 of the tree and a count of
the rest, and trees parsed in a child process, so /healthz and ingress answer at once."""

from __future__ import annotations

import asyncio
import base64
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from testbed.procs import free_port
from tests.conftest import make_settings
from tests.ingress.hooks import gateway_env, prepare_world, serve_gateway, stop_gateway
from tests.platform.factory_files.support import post
from tests.platform.factory_files.trees import minimal
from tests.support import World

ALIASES = "x: &x 1\ny: [" + ",".join(["*x"] * 85_000) + "]\n"  # 255 KB
DUPLICATES = "k: 1\n" * 40_000


def _hostile(runner: str) -> dict[str, str]:
    return minimal("hostile") | {f"runners/r{i}.yaml": runner for i in range(8)}


def test_the_answer_lists_the_first_100_problems_and_counts_the_rest(world: World) -> None:
    for runner in (ALIASES, DUPLICATES):
        answer = post(world, "plan", _hostile(runner))
        assert answer.status_code == 422, answer.text
        assert len(answer.content) < 64_000  # it was 106 MB
        body = answer.json()
        listed: list[dict[str, Any]] = body["diagnostics"]
        assert len(listed) == 100
        assert [(d["path"], d["line"]) for d in listed] == sorted(
            (d["path"], d["line"]) for d in listed
        )
        per_file = {d["path"] for d in listed}
        assert per_file == {f"runners/r{i}.yaml" for i in range(5)}  # 20 each, in file order
        # 8 files x 20 kept, less the 100 listed, plus what each file counted past its 20
        assert body["diagnostics_omitted"] >= 8 * 20 - 100 + 8
        assert f"(and {99 + body['diagnostics_omitted']} more)" in body["detail"]
    small = post(world, "plan", minimal("fine") | {"runners/r.yaml": "x: &x 1\n"})
    assert small.status_code == 422 and "diagnostics_omitted" not in small.json()


@pytest.mark.slow  # starts `gateway serve`
@pytest.mark.service
def test_hostile_trees_are_answered_soon_and_ingress_is_not_held(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/gw.db"
    token = uuid.uuid4().hex
    prepared = asyncio.run(prepare_world(make_settings(url), token))
    env = gateway_env(
        database_url=url,
        secret_key=base64.urlsafe_b64encode(b"k" * 32).decode(),
        evaluator="off",
        access_log="off",
    )
    port = free_port()
    proc = serve_gateway(env, port, tmp_path / "serve.log")
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {prepared.user_key}"}
    waits: dict[str, list[float]] = {"healthz": [], "ingress": []}
    answers: list[tuple[int, float, int]] = []
    done = threading.Event()

    def probe() -> None:
        with httpx.Client(base_url=base, timeout=60) as client:
            sent = 0
            while not done.is_set():
                started = time.monotonic()
                assert client.get("/healthz").status_code == 200
                waits["healthz"].append(time.monotonic() - started)
                if sent < 50:  # the webhook's rate limit is 60 a minute
                    started = time.monotonic()
                    accepted = client.post(
                        f"/webhooks/w/{prepared.webhook_uid}",
                        content=b"{}",
                        headers={
                            "Authorization": f"Bearer {token}",
                            "X-Service-Delivery-Id": f"d{sent}",
                        },
                    )
                    waits["ingress"].append(time.monotonic() - started)
                    assert accepted.status_code == 202, accepted.text
                    sent += 1
                time.sleep(0.05)

    def plan(runner: str) -> None:
        files = _hostile(runner)
        started = time.monotonic()
        answer = httpx.post(
            f"{base}/api/v1/factory-files/plan", json={"files": files}, headers=auth, timeout=120
        )
        answers.append((answer.status_code, time.monotonic() - started, len(answer.content)))

    try:
        # the first plan of a process starts its parser's child: not what is measured here
        warm = httpx.post(
            f"{base}/api/v1/factory-files/plan", json={"files": minimal()}, headers=auth, timeout=60
        )
        assert warm.status_code == 200, warm.text
        prober = threading.Thread(target=probe)
        prober.start()
        time.sleep(0.5)
        planners = [
            threading.Thread(target=plan, args=(r,)) for r in (ALIASES, ALIASES, DUPLICATES)
        ]
        for planner in planners:
            planner.start()
        for planner in planners:
            planner.join(180)
        time.sleep(0.5)
        done.set()
        prober.join(60)
    finally:
        done.set()
        stop_gateway(proc)
    assert [status for status, _s, _n in answers] == [422, 422, 422]
    # within a second or so on a quiet host; generous here: the suite runs on busy ones
    assert max(seconds for _st, seconds, _n in answers) < 15, answers
    assert max(size for _st, _s, size in answers) < 64_000, answers
    assert waits["ingress"] and waits["healthz"]
    # tens of seconds before; the bound holds on a 2-core host at a load average near 20
    assert max(waits["healthz"]) < 1.0, waits
    assert max(waits["ingress"]) < 1.0, waits


def test_trees_are_parsed_one_at_a_time_and_few_wait(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parse holds its turn; MAX_WAITING more wait for theirs; the next one is a 503."""
    import gateway.platform.factory_files.parsing as parsing
    from gateway.platform.factory_files.posted import parse_posted

    release = threading.Event()
    started: list[int] = []

    def held(files: Any) -> Any:
        started.append(1)
        release.wait(60)
        return parse_posted(files)

    async def close(_services: Any) -> None:  # a pool of the module's earlier tests, if any
        earlier = parsing._PARSERS.get(id(world.client.services))
        if earlier is not None:
            await earlier.close()

    world.client.run(close)
    monkeypatch.setattr(parsing, "MODE", "thread")  # a child process would not see `held`
    monkeypatch.setattr(parsing, "parse_posted", held)
    answers: list[int] = []

    def plan() -> None:
        answers.append(post(world, "plan", minimal("turns")).status_code)

    first = threading.Thread(target=plan)
    first.start()
    deadline = time.monotonic() + 30
    while not started:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    waiting = [threading.Thread(target=plan) for _ in range(parsing.MAX_WAITING)]
    for thread in waiting:
        thread.start()
    deadline = time.monotonic() + 30
    while True:  # every one of them waits for its turn
        parser = parsing._PARSERS[id(world.client.services)]
        if parser.waiting == parsing.MAX_WAITING:
            break
        assert time.monotonic() < deadline
        time.sleep(0.01)
    refused = post(world, "plan", minimal("turns"))
    assert refused.status_code == 503, refused.text
    assert refused.json()["code"] == "unavailable" and refused.headers["Retry-After"] == "2"
    assert len(started) == 1  # one parse at a time
    release.set()
    for thread in [first, *waiting]:
        thread.join(60)
    assert answers == [200] * (1 + parsing.MAX_WAITING)
    world.client.run(close)  # the module's next tests: a process pool again
