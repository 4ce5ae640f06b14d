"""Helpers shared by the plugin tests."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.framework.config import ConfigError, load_config
from harmonic.plugins.registry import default_registry


def plugin_config(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [{"name": name, "args": args}]}],
    }


def config_error(name: str, args: dict[str, Any]) -> str:
    """The one-line error loading ``args`` for plugin ``name`` gives."""
    with pytest.raises(ConfigError) as e:
        load_config(plugin_config(name, args), default_registry())
    return str(e.value)
