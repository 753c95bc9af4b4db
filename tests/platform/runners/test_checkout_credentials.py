"""The checkout credential a claim hands over (docs/runners.md#a-working-copy), on SQLite and
PostgreSQL: a run a GitLab connection with an api_token started comes with that token for the
project its event names; one a connection without credentials started, and one no connection
started, come with none. The token is in the claim's answer alone."""

from __future__ import annotations

from typing import Any

from tests.connections.provider_world import (
    automation,
    connect,
    deliver,
    evaluated,
    runs,
    set_repositories,
    trigger,
)
from tests.connections.signing import gitlab
from tests.platform.runners.test_runner_api import Runner, new_run
from tests.providers.conftest import fixture
from tests.support import World, eventually

GITLAB_TOKEN = "glpat-connection-t0ken"


def _run_of(world: World, connection: dict[str, Any], iid: int) -> str:
    """The run GitLab's merge request example starts, as merge request `iid` (one merge
    request is one work item: a second delivery of it follows its run up)."""
    opened = fixture("gitlab", "merge_request_open")
    opened["object_attributes"]["iid"] = iid
    opened["object_attributes"]["id"] = 1000 + iid
    sent = gitlab(connection["secret"], opened)
    delivery_id = deliver(world.client, connection, sent)
    evaluated(world, connection, delivery_id)
    (run,) = eventually(lambda: runs(world.client, delivery_id))
    return str(run.run_id)


def test_a_claim_hands_over_the_connections_token_for_its_runs_repository(world: World) -> None:
    set_repositories(world.client, world.factory_uid, "gitlabhq/gitlab-test")
    automation(world, world.factory_uid, "opened", trigger("gitlab", "merge_request"))
    with_token = connect(world, "gitlab", name="with token", api_token=GITLAB_TOKEN)
    receiving = connect(world, "gitlab", name="receives only")
    tokened, bare = _run_of(world, with_token, 1), _run_of(world, receiving, 2)
    plain = new_run(world)
    runner = Runner(world)
    claimed = {run["run_id"]: run for run in runner.claim(max_runs=3)}
    assert set(claimed) == {tokened, bare, plain}
    assert claimed[tokened]["checkout_credential"] == {
        "provider": "gitlab",
        "repository": "gitlabhq/gitlab-test",
        "token": GITLAB_TOKEN,
        "expires_at": None,
        "connection_uid": with_token["uid"],
    }
    assert claimed[bare]["checkout_credential"] is None
    assert claimed[plain]["checkout_credential"] is None
    for run_id in claimed:
        for path in (f"/agent/runs/{run_id}", "/agent/runs", f"/agent/runs/{run_id}/timeline"):
            assert GITLAB_TOKEN not in world.api("GET", path).text
    shown = world.api("GET", f"/provider-connections/{with_token['uid']}").text
    assert GITLAB_TOKEN not in shown
