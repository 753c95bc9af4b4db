"""The agent config every way of creating a run checks (spec 2.2): what a request may set, an
enabled model, a valid skill spec."""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import UNSET, structs

from gateway.kernel.catalog import ModelSpec, check_model
from gateway.kernel.errors import InvalidRequest
from gateway.platform.runs.record.models import AgentConfig
from gateway.platform.runs.skills.specs import parse_skill_spec


def parse_config(
    config: AgentConfig | None, models: Sequence[ModelSpec], field: str = "config"
) -> AgentConfig | None:
    """The run's agent config without null values: `model_id` one of `models` and enabled, a
    valid `skill_spec`, whose skill names the run unless `name` is given (spec 2.2)."""
    if config is None:
        return None
    config = structs.replace(config)  # a copy, its nulls dropped
    for name in config.__struct_fields__:
        if getattr(config, name) is None:
            setattr(config, name, UNSET)
    for name in AgentConfig.SERVICE_SET:
        if getattr(config, name) is not UNSET:
            raise InvalidRequest(f"{field}.{name}: set by the service, not by a request")
    if isinstance(config.model_id, str):
        check_model(models, config.model_id, f"{field}.model_id")
    if isinstance(config.skill_spec, str):
        skill = parse_skill_spec(config.skill_spec, f"{field}.skill_spec")
        if config.name is UNSET:
            config.name = skill.name
    return config
