"""The tree's webhooks and automations, written through the rules of their own contexts
(gateway.webhook_gateway.webhooks, gateway.webhook_gateway.automations). A file automation's runs go
to its agent and carry its resolved configuration (run_configs.py), computed here once, never per
delivery."""

from __future__ import annotations

from factory_format import Automation, Webhook
from gateway.kernel.types import JsonObject
from gateway.platform.factory_files.run_configs import run_config
from gateway.platform.factory_files.writing import Writing
from gateway.webhook_gateway.automations import management as automations
from gateway.webhook_gateway.automations.models import FileLayers, json_form
from gateway.webhook_gateway.webhooks import management as webhooks
from gateway.webhook_gateway.webhooks.models import WebhookCreate


def automation_run_config(w: Writing, automation: Automation) -> JsonObject:
    """runs.agent_config of the runs `automation` starts (run_configs.py)."""
    assert w.tree is not None
    agent = next(agent for agent in w.tree.agents if agent.name == automation.agent)
    uid = w.agent_uid(agent.name)
    config: JsonObject = json_form(
        run_config(w.tree, agent, uid, automation.effective, w.credential_strategy)
    )
    return config


def _record(w: Writing, automation: Automation) -> automations.AutomationRecord:
    agent_uid = w.agent_uid(automation.agent)
    return automations.AutomationRecord(
        name=automation.name,
        prompt=automation.prompt,
        enabled=automation.enabled,
        triggers=list(automation.triggers),
        definition_name=automation.name,
        agent_uid=agent_uid,
        agent_config=automation_run_config(w, automation),
        layers=FileLayers(config=automation.config, effective=automation.effective),
    )


async def create_automation(w: Writing, automation: Automation) -> None:
    await automations.insert_automation(w.conn, w.factory_uid, _record(w, automation))


async def update_automation(w: Writing, uid: str, automation: Automation) -> None:
    await automations.rewrite_automation(w.conn, uid, _record(w, automation))


async def delete_automation(w: Writing, uid: str) -> None:
    await automations.remove_automation(w.conn, uid)


def _spec(hook: Webhook) -> WebhookCreate:
    return WebhookCreate(
        name=hook.name,
        auth_mode=hook.auth_mode,
        signature_scheme=hook.signature_scheme,
        secret_name=hook.secret_name,
        delivery_id_header=hook.delivery_id_header,
        enabled=hook.enabled,
    )


async def write_webhook(w: Writing, uid: str | None, hook: Webhook) -> str:
    """Created (`uid` None) or rewritten; its secret's value is read now."""
    return await webhooks.write_file_webhook(
        w.conn,
        w.services,
        w.factory_uid,
        _spec(hook),
        w.secret_values[hook.secret_name],
        uid=uid,
        definition_name=hook.name,
    )


async def delete_webhook(w: Writing, uid: str) -> None:
    await webhooks.delete_webhook(w.conn, w.services, w.factory_uid, uid)
