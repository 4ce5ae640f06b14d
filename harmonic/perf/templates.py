"""Upstream scheduler_perf node and pod templates, shipped as package data."""

from __future__ import annotations

import copy
from functools import cache
from importlib import resources
from typing import Any

import yaml


@cache
def _template(name: str) -> dict[str, Any]:
    text = resources.files("harmonic.data").joinpath("scheduler_perf", name).read_text()
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def template(name: str) -> dict[str, Any]:
    """Any object template (Services, ...) by file name."""
    return copy.deepcopy(_template(name))


def node_template(name: str = "node-default.yaml") -> dict[str, Any]:
    return copy.deepcopy(_template(name))


def pod_template(name: str = "pod-default.yaml") -> dict[str, Any]:
    return copy.deepcopy(_template(name))


def named(template: dict[str, Any], name: str, namespace: str | None = None) -> dict[str, Any]:
    """The template with ``generateName`` replaced by ``name`` (shallow: templates are not mutated)."""
    meta = {k: v for k, v in (template.get("metadata") or {}).items() if k != "generateName"}
    meta["name"] = name
    if namespace is not None:
        meta["namespace"] = namespace
    return {**template, "metadata": meta}
