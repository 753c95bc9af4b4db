"""Request bodies through a real `gateway serve`, on each backend: the
answer never depends on how the bytes arrive (a body in the same write as its head, split
anywhere, pipelined; raw sockets and real clients), on the ingress and the API alike; trailers
are bounded like a head and never read as request headers; after an early answer the rest of a
body has a deadline, then the connection is closed."""

from __future__ import annotations

import http.client
import socket
import subprocess
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.foundation.api.decoding import MAX_API_BODY
from gateway.webhook_gateway.ingress.body import MAX_BODY
from tests.examples import examples
from tests.ingress.hooks import (
    SERVED_BACKENDS,
    Served,
    served_gateway,
    tree_peak_rss_kib,
)
from tests.ingress.raw_http import (
    Answer,
    chunked,
    closed_by_server,
    connection,
    exchange,
    read_answer,
    request,
)

pytestmark = pytest.mark.slow  # starts processes of its own

TOKEN = "wht_bodies_token"
DEADLINE_S = 2  # GATEWAY_HEADER_TIMEOUT and GATEWAY_BODY_TIMEOUT of the served gateways
KB = 1024
SIZES = (1, 48 * KB, 64 * KB, 128 * KB, 200 * KB, MAX_BODY, MAX_BODY + 1)


def expected_status(size: int) -> int:
    return 202 if size <= MAX_BODY else 413


@pytest.fixture(
    scope="module",
    params=SERVED_BACKENDS,
)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, redis_prefix: str
) -> Iterator[Served]:
    backend = request.param
    timeouts = {"header_timeout": str(DEADLINE_S), "body_timeout": str(DEADLINE_S)}
    tmp = tmp_path_factory.mktemp(backend)
    with served_gateway(backend, tmp, TOKEN, redis_prefix, **timeouts) as gateway:
        yield gateway


def json_body(size: int, fill: bytes = b"a") -> bytes:
    """Valid JSON of exactly `size` bytes (a number, or a string of `fill`)."""
    return b"1" if size == 1 else b'"' + fill * (size - 2) + b'"'


def delivery(served: Served, body: bytes) -> bytes:
    path = f"/webhooks/w/{served.prepared.webhook_uid}"
    return request("POST", path, {"Authorization": f"Bearer {TOKEN}"}, body)


@pytest.fixture(scope="module")
def one_write(served: Served) -> dict[int, Answer]:
    """The answer to each body of SIZES sent with its head in one write (the same bodies sent
    again are duplicates: answered alike, the first delivery's id, and no rate slot taken)."""
    return {size: exchange(served.port, delivery(served, json_body(size)))[0] for size in SIZES}


def test_a_body_sent_with_its_head_in_one_write_gets_its_own_answer(
    one_write: dict[int, Answer],
) -> None:
    assert {size: answer.status for size, answer in one_write.items()} == {
        size: expected_status(size) for size in SIZES
    }
    accepted = [answer.json() for answer in one_write.values() if answer.status == 202]
    assert len({str(each) for each in accepted}) == len(accepted)  # each a delivery of its own


@settings(max_examples=examples(30))
@given(data=st.data())
def test_the_same_bodies_split_anywhere_get_the_same_answers(
    served: Served, one_write: dict[int, Answer], data: st.DataObject
) -> None:
    """Each body of SIZES, with a Content-Length or in chunks, cut into writes anywhere (most
    often close to the end of its head): the answer of its one-write delivery."""
    size = data.draw(st.sampled_from(SIZES), label="size")
    body = json_body(size)
    chunk_cuts = data.draw(st.none() | st.lists(st.integers(0, size), max_size=3), label="chunks")
    if chunk_cuts is None:
        wire = delivery(served, body)
    else:
        ends = [0, *sorted(chunk_cuts), size]
        pieces = [body[start:end] for start, end in pairwise(ends)]
        hook = f"/webhooks/w/{served.prepared.webhook_uid}"
        wire = chunked("POST", hook, {"Authorization": f"Bearer {TOKEN}"}, pieces, b"")
    head_end = wire.index(b"\r\n\r\n") + 4
    near_the_head_end = st.integers(max(1, head_end - 6), head_end + 6)
    cut = st.one_of(near_the_head_end, st.integers(1, len(wire) - 1))
    cuts = data.draw(st.lists(cut, max_size=4), label="cuts")
    answer = exchange(served.port, wire, cuts)[0]
    assert (answer.status, answer.body) == (one_write[size].status, one_write[size].body)


def test_three_pipelined_100_kb_deliveries_get_three_202s(served: Served) -> None:
    bodies = [json_body(100 * KB, fill) for fill in (b"x", b"y", b"z")]
    wire = b"".join(delivery(served, body) for body in bodies)
    answers = exchange(served.port, wire, answers=3)
    assert [answer.status for answer in answers] == [202, 202, 202]
    assert len({answer.body for answer in answers}) == 3  # three deliveries, in order


@pytest.mark.parametrize("size", [200 * KB, MAX_BODY + 1])
def test_real_clients_get_the_same_answers(
    served: Served, one_write: dict[int, Answer], size: int, tmp_path: Path
) -> None:
    body = json_body(size)
    path = f"/webhooks/w/{served.prepared.webhook_uid}"
    url = f"http://127.0.0.1:{served.port}{path}"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    expected = (one_write[size].status, one_write[size].body)

    answer = httpx.post(url, content=body, headers=auth, timeout=30)
    assert (answer.status_code, answer.content) == expected

    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        connection.request("POST", path, body=body, headers=auth)  # head and body: one write
        response = connection.getresponse()
        assert (response.status, response.read()) == expected
    finally:
        connection.close()

    (tmp_path / "body.json").write_bytes(body)
    curl = subprocess.run(
        ["curl", "-sS", "--data-binary", f"@{tmp_path / 'body.json'}", "-H",
         f"Authorization: Bearer {TOKEN}", "-w", "\n%{http_code}", url],
        capture_output=True, check=True, timeout=30,
    )  # fmt: skip
    content, _, status = curl.stdout.rpartition(b"\n")
    assert (int(status), content) == expected


def stdlib_status(
    port: int, method: str, path: str, headers: dict[str, str], body: bytes
) -> int | None:
    """The status `http.client` gets (head and body in one write), or None when the server
    closed the connection while the body was being sent."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers)
        return connection.getresponse().status
    except (BrokenPipeError, ConnectionResetError):
        return None
    finally:
        connection.close()


def api(served: Served, method: str, path: str, key: str, body: bytes) -> bytes:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    return request(method, f"/api/v1{path}", headers, body)


def test_api_bodies_get_their_own_answers_never_431(served: Served) -> None:
    prepared = served.prepared
    register = api(served, "POST", "/runner/register", prepared.agent_key, b'{"name":"r"}')
    registered = exchange(served.port, register)[0]
    assert registered.status == 201, registered.body
    runner_uid = orjson.loads(registered.body)["runner_uid"]
    transcript = {"run_id": "run_nosuch", "outcome": "SUCCEEDED", "transcript": "t" * 200_000}
    finish = orjson.dumps({"runner_uid": runner_uid, "runs": [transcript]})
    long_name = orjson.dumps({"name": "n" * 200_000, "auth_mode": "token"})
    cases = [  # (method, path, key, body, status)
        ("POST", "/runner/finish", prepared.agent_key, finish, 200),
        ("POST", f"/factory/{prepared.factory_uid}/webhooks", prepared.user_key, long_name, 400),
        ("POST", "/runner/finish", prepared.agent_key, b" " * (5 * MAX_API_BODY), 413),
    ]
    base = f"http://127.0.0.1:{served.port}/api/v1"
    raw_answers = []
    for method, path, key, body, status in cases:
        raw = exchange(served.port, api(served, method, path, key, body))[0]
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        client = httpx.request(method, base + path, content=body, headers=headers, timeout=30)
        stdlib = stdlib_status(served.port, method, f"/api/v1{path}", headers, body)
        assert (raw.status, client.status_code, stdlib) == (status, status, status), path
        raw_answers.append(raw.json())
    assert raw_answers[0]["finished"][0]["ok"] is False  # its own answer: no such run


def test_a_trailer_is_never_read_as_a_request_header(served: Served) -> None:
    hook = f"/webhooks/w/{served.prepared.webhook_uid}"
    in_trailer = chunked("POST", hook, {}, [b"{}"], f"Authorization: Bearer {TOKEN}\r\n".encode())
    assert exchange(served.port, in_trailer)[0].status == 401
    agent = f"Authorization: Bearer {served.prepared.agent_key}\r\n".encode()
    register = chunked("POST", "/api/v1/runner/register", {}, [b'{"name":"r"}'], agent)
    assert exchange(served.port, register)[0].status == 401
    in_head = chunked("POST", hook, {"Authorization": f"Bearer {TOKEN}"}, [b"[1]"], b"X-T: v\r\n")
    assert exchange(served.port, in_head)[0].status == 202  # a trailer is no reason to refuse


FLOOD_BYTES = 32 << 20  # ~300,000 trailer lines: hundreds of MB held if they were kept
FLOODS = {
    "lines": b"".join(b"x%d:%s\r\n" % (n, b"v" * 100) for n in range(1000)),
    "one endless line": b"x:" + b"v" * 100_000,  # repeated: one field that never ends
}


@pytest.mark.parametrize("flood", FLOODS)
@pytest.mark.parametrize("target", ["/webhooks/w/wh_nosuch", "/api/v1/runner/register"])
def test_a_trailer_flood_is_refused_without_being_held(
    served: Served, target: str, flood: str
) -> None:
    before = tree_peak_rss_kib(served.proc.pid)
    batch = FLOODS[flood]
    sent = 0
    with connection(served.port) as (sock, _):
        try:
            sock.sendall(chunked("POST", target, {}, [b"{}"], b"")[:-2])  # trailers left open
            while sent < FLOOD_BYTES:
                sock.sendall(batch)
                sent += len(batch)
        except ConnectionError:
            pass  # refused mid-way: the server closed or reset the connection
        assert sent < FLOOD_BYTES, "the server went on reading trailers"
        assert closed_by_server(sock, 30)
    grown_mib = (tree_peak_rss_kib(served.proc.pid) - before) / 1024
    assert grown_mib < 16, f"the server's peak RSS grew by {grown_mib:.0f} MiB"


def trickled_until_closed(sock: socket.socket, piece: bytes) -> bool:
    """Send `piece` every 0.25 s for 10 s (five times the deadline, swept every 1 s); whether
    the server closed the connection meanwhile."""
    for _ in range(40):
        try:
            sock.sendall(piece)
        except OSError:
            return True
        if closed_by_server(sock, 0.25):
            return True
    return False


def test_trickled_trailers_are_dropped(served: Served) -> None:
    hook = f"/webhooks/w/{served.prepared.webhook_uid}"
    with connection(served.port) as (sock, _):
        sock.sendall(chunked("POST", hook, {"Authorization": f"Bearer {TOKEN}"}, [b"{}"], b"")[:-2])
        assert trickled_until_closed(sock, b"x:v\r\n"), "trailers trickled for 10 s were read"


def test_after_an_early_answer_the_rest_of_the_body_has_a_deadline(served: Served) -> None:
    """A gigabyte announced to an unknown webhook: 404 at once; the sender then trickling its
    body is disconnected, while it still has bytes left to send."""
    head = b"POST /webhooks/w/wh_nosuch HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000000\r\n\r\n"
    with connection(served.port) as (sock, reader):
        sock.sendall(head + b"{")
        line = reader.readline()
        assert line.startswith(b"HTTP/1.1 404"), line
        assert trickled_until_closed(sock, b" "), "a body trickled after its answer was read"


def test_a_connection_answered_early_goes_on_once_the_body_is_in(
    served: Served, one_write: dict[int, Answer]
) -> None:
    """The rest of a body answered early (413) arrives in time: the connection serves the next
    request; then, idle, it is closed even while blank lines (which begin no request) arrive."""
    too_large = delivery(served, json_body(MAX_BODY + 1))
    accepted = delivery(served, json_body(1))
    with connection(served.port) as (sock, reader):
        sock.sendall(too_large)
        answer = read_answer(reader)
        assert answer is not None and answer.status == 413
        sock.sendall(accepted)
        answer = read_answer(reader)
        assert answer is not None, "closed after the early answer"
        assert (answer.status, answer.body) == (one_write[1].status, one_write[1].body)
        assert trickled_until_closed(sock, b"\r\n"), "blank lines held an idle connection"


def test_an_idle_connection_is_closed_while_blank_lines_arrive(served: Served) -> None:
    with connection(served.port) as (sock, reader):
        sock.sendall(delivery(served, json_body(1)))
        answer = read_answer(reader)
        assert answer is not None and answer.status == 202
        assert trickled_until_closed(sock, b"\r\n"), "blank lines held an idle connection"
