from __future__ import annotations

from tests.platform.runs.runs_support import advance, new_run, prepare_uploaded, upload
from tests.support import World


def test_prepare_then_follow_up(world: World) -> None:
    run = new_run(world)
    base = f"/agent/conversations/{run['conversation_id']}"
    prepared = world.api("POST", f"{base}/attachments/prepare", json={"files": [{"name": "a.txt"}]})
    assert prepared.status_code == 200
    body = prepared.json()
    assert body["run_id"] == run["run_id"] and len(body["attachments"]) == 1
    attachment = body["attachments"][0]["attachment_id"]
    upload(world, body["attachments"][0])
    ok = world.api(
        "POST", f"{base}/followups", json={"message": "see", "attachments": [attachment]}
    )
    assert ok.status_code == 200 and ok.json()["routing"] == "queued"
    assert ok.json()["run_id"] == run["run_id"]


def test_attachment_of_an_older_run_is_unknown(world: World) -> None:
    run = new_run(world)
    base = f"/agent/conversations/{run['conversation_id']}"
    old = world.api("POST", f"{base}/attachments/prepare").json()["attachments"][0]
    upload(world, old)
    newer = new_run(world, conversation_id=run["conversation_id"])
    response = world.api(
        "POST", f"{base}/followups", json={"message": "x", "attachments": [old["attachment_id"]]}
    )
    assert response.status_code == 422 and response.json()["code"] == "unknown_attachment"
    assert response.json()["detail"].startswith("attachments")
    fresh = world.api("POST", f"{base}/attachments/prepare").json()
    assert fresh["run_id"] == newer["run_id"]
    upload(world, fresh["attachments"][0])
    response = world.api(
        "POST",
        f"{base}/followups",
        json={"message": "x", "attachments": [fresh["attachments"][0]["attachment_id"]]},
    )
    assert response.status_code == 200 and response.json()["run_id"] == newer["run_id"]


def test_conversation_interrupt_and_errors(world: World) -> None:
    run = new_run(world)
    base = f"/agent/conversations/{run['conversation_id']}"
    assert world.api("POST", f"{base}/interrupt").status_code == 409
    advance(world, run["run_id"], "claim", "start")
    assert world.api("POST", f"{base}/interrupt").status_code == 202
    assert world.api("POST", f"{base}/interrupt", headers=world.stranger).status_code == 404
    assert world.api("POST", "/agent/conversations/nope/interrupt").status_code == 404
    assert (
        world.api("POST", f"{base}/followups", json={"message": "x"}, headers={}).status_code == 401
    )
    for bad in ({"files": "a"}, {"files": [{"name": 1}]}, {"files": []}, {"other": 1}):
        response = world.api("POST", f"{base}/attachments/prepare", json=bad)
        assert response.status_code == 400, bad
    assert world.api("POST", f"{base}/followups", json={"message": " "}).status_code == 400


def test_prepare_by_run(world: World) -> None:
    run = new_run(world)
    at = f"/agent/runs/{run['run_id']}/attachments/prepare"
    prepared = world.api("POST", at, json={"files": [{"name": "log.txt"}, {}]})
    assert prepared.status_code == 200
    body = prepared.json()
    assert body["run_id"] == run["run_id"] and body["conversation_id"] == run["conversation_id"]
    assert [a["name"] for a in body["attachments"]] == ["log.txt", None]
    ids = [a["attachment_id"] for a in body["attachments"]]
    for attachment in body["attachments"]:
        upload(world, attachment)
    followup = f"/agent/runs/{run['run_id']}/followups"
    accepted = world.api("POST", followup, json={"message": "see", "attachments": ids})
    assert accepted.status_code == 200 and accepted.json()["run_id"] == run["run_id"]
    assert len(world.api("POST", at).json()["attachments"]) == 1  # no body: one, unnamed
    assert world.api("POST", at, json={"files": []}).status_code == 400
    assert world.api("POST", at, headers={}).status_code == 401
    assert world.api("POST", at, headers=world.stranger).status_code == 404
    assert world.api("POST", "/agent/runs/nope/attachments/prepare").status_code == 404


def test_ids_prepared_for_an_older_run_stay_unknown_to_the_conversation(world: World) -> None:
    """Spec 4.8: a conversation follow-up resolves to the newest run; ids prepared by run for an
    older one of the conversation answer 422 unknown_attachment, as ids prepared by
    conversation before the newer run appeared do."""
    run = new_run(world)
    older = prepare_uploaded(world, f"/agent/runs/{run['run_id']}/attachments/prepare")
    newer = new_run(world, conversation_id=run["conversation_id"])
    body = {"message": "x", "attachments": older}
    refused = world.api(
        "POST", f"/agent/conversations/{run['conversation_id']}/followups", json=body
    )
    assert refused.status_code == 422 and refused.json()["code"] == "unknown_attachment"
    # by run, for the newest run, they work through the conversation
    body["attachments"] = prepare_uploaded(
        world, f"/agent/runs/{newer['run_id']}/attachments/prepare"
    )
    accepted = world.api(
        "POST", f"/agent/conversations/{run['conversation_id']}/followups", json=body
    )
    assert accepted.status_code == 200 and accepted.json()["run_id"] == newer["run_id"]
