"""A factory file naming a model: the server runs no model (runners do), so a well-formed id
outside the catalogue is a warning of the plan (FF_UNLISTED_MODEL) and applies; an operator who
sets GATEWAY_STRICT_MODEL_CATALOGUE=1 gets the error instead. The catalogue lists the ids the
public examples name (warpdotdev-demos/warp-factories-setup's example-ticket-factory:
glm-5.3-fireworks)."""

from __future__ import annotations

from collections.abc import Callable

from tests.conftest import make_settings
from tests.platform.factory_files.support import applied, post
from tests.platform.factory_files.trees import minimal
from tests.support import GatewayClient, World

# example-ticket-factory's factory.yaml, its repository and runner renamed
TICKET_FACTORY = """\
schemaVersion: v1alpha1
name: Example Ticket Factory
alias: example-tickets
codeForges:
  - GITHUB
repositories:
  - owner: customer-org
    name: customer-repo
agentDefaults:
  model: glm-5.3-fireworks
  runner: small
"""


def _with_model(model: str) -> dict[str, str]:
    tree = minimal("models")
    tree["factory.yaml"] = tree["factory.yaml"].replace("model: auto", f"model: {model}")
    return tree


def test_the_public_ticket_factory_model_is_in_the_catalogue(world: World) -> None:
    tree = minimal("tickets") | {"factory.yaml": TICKET_FACTORY}
    plan = post(world, "plan", tree)
    assert plan.status_code == 200, plan.text
    assert plan.json()["warnings"] == []
    models = {m["id"] for m in world.api("GET", "/agent/models").json()["models"]}
    assert "glm-5.3-fireworks" in models


def test_a_model_outside_the_catalogue_is_a_warning_and_applies(world: World) -> None:
    tree = _with_model("kimi-k9-turbo")
    plan = post(world, "plan", tree)
    assert plan.status_code == 200, plan.text
    (warning,) = plan.json()["warnings"]
    assert (warning["path"], warning["line"], warning["column"]) == ("factory.yaml", 7, 10)
    assert warning["code"] == "FF_UNLISTED_MODEL" and "'kimi-k9-turbo'" in warning["message"]
    done = applied(world, tree)
    assert done["warnings"] == plan.json()["warnings"] and done["factory_uid"]
    again = post(world, "plan", tree).json()
    assert again["changes"] == [] and again["warnings"] == plan.json()["warnings"]
    # not a model id at all: an error whatever the setting
    refused = post(world, "plan", _with_model('"kimi k9"'))
    assert refused.status_code == 422, refused.text
    assert [d["code"] for d in refused.json()["diagnostics"]] == ["FF_INVALID_REFERENCE"]


def test_a_strict_catalogue_refuses_a_model_it_does_not_list(
    sqlite_store: Callable[..., str],
) -> None:
    settings = make_settings(sqlite_store(), strict_model_catalogue="1")
    assert settings.strict_model_catalogue
    with GatewayClient.running(settings) as client:
        world = World.create(client)
        refused = post(world, "plan", _with_model("kimi-k9-turbo"))
        assert refused.status_code == 422, refused.text
        (problem,) = refused.json()["diagnostics"]
        assert problem["code"] == "FF_INVALID_REFERENCE"
        assert "unknown model 'kimi-k9-turbo'" in problem["message"]
        listed = post(world, "plan", _with_model("glm-5.3-fireworks"))
        assert listed.status_code == 200 and listed.json()["warnings"] == []
