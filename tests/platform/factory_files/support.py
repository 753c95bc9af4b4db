"""Helpers of the plan/apply tests: the example trees, posting trees, team secrets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factory_format import read_directory
from gateway.foundation.accounts import identities
from gateway.foundation.services import Services
from tests.support import World

EXAMPLES = Path(__file__).parents[2] / "fixtures" / "warp-factory-examples" / "examples"
EXAMPLE_NAMES = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())
# the team secrets the examples name, made first as a user would (gateway admin set-secret)
EXAMPLE_SECRETS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")


def example_files(name: str) -> dict[str, str]:
    return read_directory(EXAMPLES / name).files


def set_secrets(world: World, values: dict[str, str]) -> None:
    async def run(services: Services) -> None:
        async with services.database.transaction() as conn:
            for name, value in values.items():
                await identities.set_team_secret(
                    conn, services.secret_box, world.team_uid, name, value
                )

    world.client.run(run)


def post(world: World, operation: str, files: dict[str, str], **extra: Any) -> Any:
    """POST /factory-files/{operation} (plan or apply)."""
    return world.api("POST", f"/factory-files/{operation}", json={"files": files, **extra})


def applied(world: World, files: dict[str, str], **extra: Any) -> dict[str, Any]:
    response = post(world, "apply", files, **extra)
    assert response.status_code == 200, response.json()
    body: dict[str, Any] = response.json()
    return body


def definition(world: World, factory_uid: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The stored definition: (kind, name) -> {uid, definition}."""
    response = world.api("GET", f"/factory/{factory_uid}/definition")
    assert response.status_code == 200, response.json()
    return {(r["kind"], r["name"]): r for r in response.json()["resources"]}
