"""The console's path of one piece of work: a delivery names the automations that matched (and
why the others did not) and links its runs; a run's page shows its state, status, transcript and
the delivery back; the runs list filters; Cancel needs the form's CSRF token. SQLite and
PostgreSQL, with a runner driving the run through the protocol."""

from __future__ import annotations

from tests.console.test_console_pages import csrf_of, login
from tests.deliveries.test_delivery_explain_replay import Hook
from tests.platform.runners.test_runner_api import Runner, claim_dispatched, new_run
from tests.support import World


def test_a_delivery_its_automations_by_name_and_its_run_to_the_end(world: World) -> None:
    hook = Hook(world)
    delivery_id = hook.send({"action": "opened", "n": 1})
    record = hook.evaluated(delivery_id)
    [run_id] = [run["run_id"] for run in record["runs"]]
    client = world.client
    login(client, world.user_key)

    page = client.get(f"/console/f/{world.factory_uid}/w/{hook.uid}/d/{delivery_id}")
    assert page.status_code == 200
    text = page.text
    triage, closer = hook.automations["triage"], hook.automations["closer"]
    assert f'<span title="{triage}">triage</span>' in text  # the name, the id on hover
    assert f'<span title="{closer}">closer</span>' in text
    assert "$.action" in text  # why closer did not match
    assert f'href="/console/runs/{run_id}"' in text
    live = client.get(f"/console/f/{world.factory_uid}/w/{hook.uid}/d/{delivery_id}/live")
    assert live.status_code == 200 and "QUEUED" in live.text and "data-final" not in live.text

    run_page = client.get(f"/console/runs/{run_id}")
    assert run_page.status_code == 200
    assert 'data-state="QUEUED"' in run_page.text and "Cancel the run" in run_page.text
    assert f'href="/console/f/{world.factory_uid}/w/{hook.uid}/d/{delivery_id}"' in run_page.text
    assert f'title="{triage}">triage</a>' in run_page.text

    runner = Runner(world)
    assert claim_dispatched(runner, 1) == [run_id]
    runner.on(run_id, "progress", state="INPROGRESS", status_message="reading the issue")
    runner.on(run_id, "messages", messages=[{"role": "agent", "text": "looking at it"}])
    middle = client.get(f"/console/runs/{run_id}/live").text
    assert 'data-state="INPROGRESS"' in middle and "reading the issue" in middle
    assert "looking at it" in middle
    runner.on(run_id, "finish", outcome="SUCCEEDED", status_message="all done")

    done = client.get(f"/console/runs/{run_id}/live").text
    assert 'data-state="SUCCEEDED"' in done and "all done" in done and "data-final" in done
    assert "Cancel the run" not in done
    final = client.get(f"/console/f/{world.factory_uid}/w/{hook.uid}/d/{delivery_id}/live")
    assert 'data-state="SUCCEEDED"' in final.text and "data-final" in final.text

    listed = client.get("/console/runs", params={"state": "SUCCEEDED", "automation": triage})
    assert f'href="/console/runs/{run_id}"' in listed.text
    # the automation filter offers them by name, under their factory's
    assert f'<option value="{triage}" selected>triage</option>' in listed.text
    assert f'<option value="{closer}">closer</option>' in listed.text
    for query in ({"state": "FAILED"}, {"automation": closer}, {"factory": "fac_none"}):
        assert (
            f'href="/console/runs/{run_id}"' not in client.get("/console/runs", params=query).text
        )
    recent = client.get("/console/runs", params={"since": "hour", "state": "bogus"})
    assert recent.status_code == 200 and f'href="/console/runs/{run_id}"' in recent.text


def test_cancel_needs_the_token_and_other_teams_see_no_run(world: World) -> None:
    run_id = new_run(world)
    client = world.client
    login(client, world.user_key)
    path = f"/console/runs/{run_id}"
    missing = client.post(f"{path}/cancel", data={})
    assert missing.status_code == 403 and "CSRF" in missing.text
    token = csrf_of(client, path)
    foreign = client.post(
        f"{path}/cancel", data={"csrf": token}, headers={"Origin": "https://evil.test"}
    )
    assert foreign.status_code == 403
    done = client.post(f"{path}/cancel", data={"csrf": token})
    assert done.status_code == 200 and done.url.path == path
    assert 'data-state="CANCELLED"' in done.text
    again = client.post(f"{path}/cancel", data={"csrf": token})
    assert again.status_code == 400 and "already ended" in again.text

    login(client, world.stranger_key)
    hidden = client.get(path)
    assert hidden.status_code == 404 and "not found" in hidden.text  # as the API answers
    assert "Cancel the run" not in hidden.text
    assert run_id not in client.get("/console/runs").text
