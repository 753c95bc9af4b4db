"""`gateway apply DIR`: create, then update in place with stable uids; errors name file and key."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.test_cli import admin, gateway


def apply(tmp_path: Path, folder: Path, factory: str) -> dict[str, Any]:
    result = gateway(tmp_path, "apply", str(folder), "--factory", factory)
    value: dict[str, Any] = json.loads(result.stdout)
    return value


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_apply_creates_then_updates_in_place(tmp_path: Path) -> None:
    demo = admin(tmp_path, "demo")
    factory = demo["factory_uid"]
    folder = tmp_path / "defs"
    write(folder / "webhooks" / "plain.yaml", "authMode: token\n")
    write(
        folder / "webhooks" / "stripe.yaml",
        "authMode: signature\nsignatureScheme: stripe\nsecretName: demo-secret\n",
    )

    first = apply(tmp_path, folder, factory)
    by_name = {w["name"]: w for w in first["webhooks"]}
    assert {w["action"] for w in first["webhooks"]} == {"created"}
    assert by_name["plain"]["secret"].startswith("wht_")  # generated, shown once
    assert "secret" not in by_name["stripe"]

    plain_uid = by_name["plain"]["uid"]
    write(
        folder / "automations" / "triage.yaml",
        "prompt: Triage the event\ntriggers:\n  - provider: webhook\n    event: received\n"
        f"    filter:\n      webhook_ids: [{plain_uid}]\n"
        "      payload:\n        action: [opened]\n",
    )
    second = apply(tmp_path, folder, factory)
    assert [w["action"] for w in second["webhooks"]] == ["unchanged", "unchanged"]
    assert [w["uid"] for w in second["webhooks"]] == [w["uid"] for w in first["webhooks"]]
    assert second["automations"][0]["action"] == "created"
    automation_uid = second["automations"][0]["uid"]

    write(
        folder / "webhooks" / "plain.yaml",
        "authMode: token\nenabled: false\ndeliveryIdHeader: X-Event-Id\n",
    )
    third = apply(tmp_path, folder, factory)
    assert {w["name"]: w["action"] for w in third["webhooks"]} == {
        "plain": "updated",
        "stripe": "unchanged",
    }
    assert third["automations"] == [
        {"name": "triage", "uid": automation_uid, "action": "unchanged"}
    ]


def test_errors_name_the_file_and_key_and_change_nothing(tmp_path: Path) -> None:
    demo = admin(tmp_path, "demo")
    folder = tmp_path / "defs"
    write(folder / "webhooks" / "a.yaml", "authMode: token\n")
    write(folder / "webhooks" / "b.yaml", "authMode: signature\n")  # scheme missing
    result = gateway(tmp_path, "apply", str(folder), "--factory", demo["factory_uid"], check=False)
    assert result.returncode == 1
    assert "b.yaml" in result.stderr and "signatureScheme" in result.stderr

    write(folder / "webhooks" / "b.yaml", "authMode: token\nsecretName: no-such-secret\n")
    result = gateway(tmp_path, "apply", str(folder), "--factory", demo["factory_uid"], check=False)
    assert result.returncode == 1
    assert "webhooks/b.yaml: secret_name" in result.stderr

    (folder / "webhooks" / "b.yaml").unlink()
    created = apply(tmp_path, folder, demo["factory_uid"])
    assert created["webhooks"][0]["action"] == "created"  # the failed runs left nothing behind

    result = gateway(tmp_path, "apply", str(folder), "--factory", "fac_missing", check=False)
    assert result.returncode == 1 and "--factory" in result.stderr


def test_signature_schemes_as_files_name_them_and_the_hyphenated_alias(tmp_path: Path) -> None:
    demo = admin(tmp_path, "demo")
    team, factory = demo["team_uid"], demo["factory_uid"]
    whsec = "whsec_" + base64.b64encode(b"k" * 32).decode()
    admin(tmp_path, "set-secret", "--team", team, "--name", "sw-signing", "--value", whsec)
    folder = tmp_path / "defs"
    write(
        folder / "webhooks" / "svix.yaml",
        "authMode: signature\nsignatureScheme: standard-webhooks\nsecretName: sw-signing\n",
    )
    for scheme in ("standard_webhooks", "pagerduty", "sentry", "vercel"):
        secret = "sw-signing" if scheme == "standard_webhooks" else "demo-secret"
        write(
            folder / "webhooks" / f"{scheme}.yaml",
            f"authMode: signature\nsignatureScheme: {scheme}\nsecretName: {secret}\n",
        )
    first = apply(tmp_path, folder, factory)
    assert {w["action"] for w in first["webhooks"]} == {"created"}
    with sqlite3.connect(tmp_path / "cli.db") as db:
        stored = dict(db.execute("SELECT definition_name, signature_scheme FROM webhooks"))
    assert stored == {
        "svix": "standard_webhooks",  # the alias is stored under the scheme's own name
        "standard_webhooks": "standard_webhooks",
        "pagerduty": "pagerduty",
        "sentry": "sentry",
        "vercel": "vercel",
    }
    again = apply(tmp_path, folder, factory)  # the alias in the file is no change
    assert {w["action"] for w in again["webhooks"]} == {"unchanged"}
