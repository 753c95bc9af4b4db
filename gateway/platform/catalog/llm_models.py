"""The models runs and agents may select: the configured list (settings.models)."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.catalog import ModelSpec
from gateway.errors import InvalidRequest


def check_model(models: Sequence[ModelSpec], model_id: str, field: str) -> ModelSpec:
    """The model named `model_id`; a 400 naming `field` when it is unknown or disabled."""
    for model in models:
        if model.id == model_id:
            if model.disabled:
                reason = f": {model.disabled_reason}" if model.disabled_reason else ""
                raise InvalidRequest(f"{field}: model {model_id!r} is disabled{reason}")
            return model
    raise InvalidRequest(
        f"{field}: unknown model {model_id!r}; GET /api/v1/agent/models lists the models"
    )
