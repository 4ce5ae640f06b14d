"""Base for typed plugin args: frozen, validated at load, with KubeSchedulerConfiguration field names."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class PluginArgs(BaseModel):
    """Plugin args as a frozen pydantic model. Field ``snake_case`` names map to the camelCase keys of
    the v1 config (``scoringStrategy``); unknown keys are errors. ``apiVersion``/``kind`` of a pluginConfig
    args block are checked by the config loader, not here."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        validate_default=True,
    )


class NoArgs(PluginArgs):
    """For plugins that take no args."""
