"""The evaluator builds a webhook run's rows as encoded tuples (delivery_runs._start); they must
be exactly what the general run and task code makes of the same run, on both drivers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import msgspec
import pytest
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect

from gateway.platform.run_start import PLATFORM
from gateway.platform.runs.creation.new_runs import NewRun, run_values
from gateway.platform.runs.record.models import file_artifact
from gateway.platform.tasks.models import TaskSeed
from gateway.platform.tasks.tasks import task_values
from gateway.webhook_gateway.automations.prompts import Automation
from gateway.webhook_gateway.evaluator import delivery_runs as wr


class _Hook(NamedTuple):
    uid: str
    name: str
    factory_uid: str
    team_uid: str
    foreman_agent_uid: str


DIALECTS = [sqlite.dialect(), postgresql.asyncpg.dialect()]  # type: ignore[attr-defined]


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_tuples_are_the_rows_run_values_and_task_values_make(dialect: Dialect) -> None:
    hook = _Hook("whk_1", "Forge events", "fac_1", "team_1", "agt_foreman")
    automation = Automation("aut_1", "Triage", "Look at this.", 0)
    delivery = wr.AcceptedDelivery("dlv_1", hook.uid, datetime.now(UTC), b'{"a": 1}')
    at = datetime(2026, 11, 25, 7, 0, 0, 123456, tzinfo=UTC)
    encode = wr.Encoders.of(dialect, PLATFORM)
    prompt = automation.prompt + wr.webhook_envelope(hook.name, hook.uid, delivery.delivery_id)

    target = wr.Target(automation.uid, hook.team_uid, hook.factory_uid, hook.foreman_agent_uid)
    source = {"webhook_uid": hook.uid}
    config = wr._config(automation, target, {})  # an agent the batch found no configuration of
    moment = encode.moment(at)
    started = wr._start(delivery, target, automation, config, prompt, source, moment, encode)

    run = dict(zip(PLATFORM.delivery_runs.columns, started.run, strict=True))
    attachment = dict(zip(wr.ATTACHMENTS.columns, started.attachment, strict=True))
    task = dict(zip(wr.TASKS.columns, started.task, strict=True))
    new = NewRun(
        prompt=prompt,
        title=automation.name,
        team_uid=hook.team_uid,
        factory_uid=hook.factory_uid,
        source="WEBHOOK",
        metadata={"automation_id": "aut_1", "webhook_uid": "whk_1", "delivery_id": "dlv_1"},
        artifacts=[
            file_artifact(
                attachment["attachment_id"],
                at,
                wr.PAYLOAD_NAME,
                "application/json",
                len(delivery.payload),
            )
        ],
        agent_uid=hook.foreman_agent_uid,
        conversation_id=run["conversation_id"],
    )
    expected_run = run_values(new, run["run_id"], at) | {
        "delivery_id": "dlv_1",
        "automation_uid": "aut_1",
    }
    assert started.run == PLATFORM.delivery_runs.encode(dialect, [expected_run])[0]
    seed = TaskSeed(
        expected_run["conversation_id"], expected_run["creator_uid"], expected_run["ticket_ref"]
    )
    expected_task = task_values(hook.factory_uid, automation.name, "TRIAGE", seed, at)
    expected_task["uid"] = task["uid"]
    assert started.task == wr.TASKS.encode(dialect, [expected_task])[0]
    expected_attachment = {
        "attachment_id": attachment["attachment_id"],
        "conversation_id": run["conversation_id"],
        "run_id": run["run_id"],
        "file_name": wr.PAYLOAD_NAME,
        "content_type": "application/json",
        "size": len(delivery.payload),
        "delivery_id": "dlv_1",
        "created_at": at,
    }
    assert started.attachment == wr.ATTACHMENTS.encode(dialect, [expected_attachment])[0]
    assert run["agent_uid"] == "agt_foreman"  # the foreman executes webhook runs
    assert run["run_id"] != run["conversation_id"]


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_a_file_automation_gives_its_runs_its_agent_and_configuration(dialect: Dialect) -> None:
    from gateway.foundation.store.bulk import json_value
    from gateway.platform.runs.record.models import AgentConfig, RunHarness

    config = AgentConfig(
        agent_uid="agt_reviewer",
        model_id="auto-genius",
        harness=RunHarness(type="oz", model="auto-genius"),
        runner="linux-build",
        worker_host="factory-worker",
    )
    stored = msgspec.json.decode(msgspec.json.encode(config))  # as the JSON column reads back
    hook = _Hook("whk_1", "Forge events", "fac_1", "team_1", "agt_foreman")
    automation = Automation("aut_1", "Review", "Review it.", 0, "agt_reviewer", json_value(stored))
    delivery = wr.AcceptedDelivery("dlv_1", hook.uid, datetime.now(UTC), b"{}")
    at = datetime(2026, 11, 25, 7, 0, 0, 123456, tzinfo=UTC)
    encode = wr.Encoders.of(dialect, PLATFORM)

    target = wr.Target(automation.uid, hook.team_uid, hook.factory_uid, hook.foreman_agent_uid)
    config_of_run = wr._config(automation, target, {})  # the automation's own
    source = {"webhook_uid": hook.uid}
    moment = encode.moment(at)
    started = wr._start(delivery, target, automation, config_of_run, "p", source, moment, encode)

    run = dict(zip(PLATFORM.delivery_runs.columns, started.run, strict=True))
    assert run["agent_uid"] == "agt_reviewer"  # the automation's agent, not the foreman
    new = NewRun(prompt="p", team_uid=hook.team_uid, agent_config=config)
    expected = PLATFORM.delivery_runs.encode(dialect, [run_values(new, "r", at)])[0]
    assert (
        run["agent_config"]
        == dict(zip(PLATFORM.delivery_runs.columns, expected, strict=True))["agent_config"]
    )
    assert msgspec.json.decode(run["agent_config"], type=AgentConfig) == config


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
@pytest.mark.parametrize("micro", [0, 1, 123456, 999_998])
def test_a_batch_s_run_times_are_what_the_slow_path_makes(dialect: Dialect, micro: int) -> None:
    """The batch's times formatted from their second's text (run_rows.RunTimes) equal each
    time added as a datetime and encoded, across the second's end too."""
    encode = wr.Encoders.of(dialect, PLATFORM)
    now = datetime(2026, 12, 31, 23, 59, 59, micro, tzinfo=UTC)
    times = encode.run_times(now)
    for offset in (0, 1, 2, 5, 1_000_001):
        expected = encode.moment(now + timedelta(microseconds=offset))
        assert times.at(offset) == expected


@pytest.mark.parametrize("micro", [0, 7, 120000, 999_999])
def test_run_created_events_show_stored_times_as_msgspec_does(micro: int) -> None:
    """run.created's times from SQLite's stored text equal msgspec's text of the same time."""
    from gateway.foundation.store.bulk import sqlite_time
    from gateway.platform.runs.record.run_events import _event_time

    at = datetime(2026, 12, 2, 10, 12, 6, micro, tzinfo=UTC)
    assert _event_time(sqlite_time(at)) == msgspec.to_builtins(at)  # type: ignore[arg-type]
    assert _event_time(at) == msgspec.to_builtins(at)
