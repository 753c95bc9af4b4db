"""The console's event stream (GET /console/events/stream): authorised by the console's session
cookie (what a page's EventSource sends), never by an API key; the events of the key's teams,
as the API's stream has them; nothing without a session."""

from __future__ import annotations

import httpx

from tests.console.test_console_pages import login
from tests.platform.runs.runs_support import new_run
from tests.subscriptions.served import served
from tests.subscriptions.test_event_stream import messages
from tests.support import World, scaled


def test_the_console_streams_its_teams_events_to_a_session(world: World) -> None:
    login(world.client, world.user_key)
    cookies = dict(world.client.cookies)
    with (
        served(world.client) as port,
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=scaled(30)) as http,
    ):
        bearer = http.get("/console/events/stream", headers=world.user, follow_redirects=False)
        assert bearer.status_code == 303  # an API key is no session: to the login page
        with http.stream("GET", "/console/events/stream", cookies=cookies) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            lines = stream.iter_lines()
            run_id = new_run(world)["run_id"]
            (created,) = messages(lines, 1)
        assert created["event"] == "run.created" and created["data"]["data"]["run_id"] == run_id
    page = world.client.get("/console/runs").text
    assert 'data-stream="/console/events/stream"' in page and "run.succeeded" in page
