"""`gateway apply DIR`: create, then update in place with stable uids; errors name file and key.
The commands run in this process (the `cli` fixture)."""

from __future__ import annotations

import base64
import sqlite3
from pathlib import Path
from typing import Any

from tests.support import Cli


def apply(cli: Cli, folder: Path, factory: str) -> dict[str, Any]:
    return cli.json("apply", str(folder), "--factory", factory)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_apply_creates_then_updates_in_place(cli: Cli, tmp_path: Path) -> None:
    demo = cli.admin("demo")
    factory = demo["factory_uid"]
    folder = tmp_path / "defs"
    write(folder / "webhooks" / "plain.yaml", "authMode: token\n")
    write(
        folder / "webhooks" / "stripe.yaml",
        "authMode: signature\nsignatureScheme: stripe\nsecretName: demo-secret\n",
    )

    first = apply(cli, folder, factory)
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
    second = apply(cli, folder, factory)
    assert [w["action"] for w in second["webhooks"]] == ["unchanged", "unchanged"]
    assert [w["uid"] for w in second["webhooks"]] == [w["uid"] for w in first["webhooks"]]
    assert second["automations"][0]["action"] == "created"
    automation_uid = second["automations"][0]["uid"]

    write(
        folder / "webhooks" / "plain.yaml",
        "authMode: token\nenabled: false\ndeliveryIdHeader: X-Event-Id\n",
    )
    third = apply(cli, folder, factory)
    assert {w["name"]: w["action"] for w in third["webhooks"]} == {
        "plain": "updated",
        "stripe": "unchanged",
    }
    assert third["automations"] == [
        {"name": "triage", "uid": automation_uid, "action": "unchanged"}
    ]


def test_errors_name_the_file_and_key_and_change_nothing(cli: Cli, tmp_path: Path) -> None:
    demo = cli.admin("demo")
    folder = tmp_path / "defs"
    write(folder / "webhooks" / "a.yaml", "authMode: token\n")
    write(folder / "webhooks" / "b.yaml", "authMode: signature\n")  # scheme missing
    code, _, err = cli.run("apply", str(folder), "--factory", demo["factory_uid"])
    assert code == 1
    assert "b.yaml" in err and "signatureScheme" in err

    write(folder / "webhooks" / "b.yaml", "authMode: token\nsecretName: no-such-secret\n")
    code, _, err = cli.run("apply", str(folder), "--factory", demo["factory_uid"])
    assert code == 1
    assert "webhooks/b.yaml: secret_name" in err

    (folder / "webhooks" / "b.yaml").unlink()
    created = apply(cli, folder, demo["factory_uid"])
    assert created["webhooks"][0]["action"] == "created"  # the failed runs left nothing behind

    code, _, err = cli.run("apply", str(folder), "--factory", "fac_missing")
    assert code == 1 and "--factory" in err


def test_signature_schemes_as_files_name_them_and_the_hyphenated_alias(
    cli: Cli, tmp_path: Path
) -> None:
    demo = cli.admin("demo")
    team, factory = demo["team_uid"], demo["factory_uid"]
    whsec = "whsec_" + base64.b64encode(b"k" * 32).decode()
    cli.admin("set-secret", "--team", team, "--name", "sw-signing", "--value", whsec)
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
    first = apply(cli, folder, factory)
    assert {w["action"] for w in first["webhooks"]} == {"created"}
    with sqlite3.connect(cli.store) as db:
        stored = dict(db.execute("SELECT definition_name, signature_scheme FROM webhooks"))
    assert stored == {
        "svix": "standard_webhooks",  # the alias is stored under the scheme's own name
        "standard_webhooks": "standard_webhooks",
        "pagerduty": "pagerduty",
        "sentry": "sentry",
        "vercel": "vercel",
    }
    again = apply(cli, folder, factory)  # the alias in the file is no change
    assert {w["action"] for w in again["webhooks"]} == {"unchanged"}
