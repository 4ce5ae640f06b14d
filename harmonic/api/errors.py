"""Errors that say which object and which field were wrong."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ObjectError(ValueError):
    """A Kubernetes object (or config) that cannot be understood.

    ``obj`` names the object (``Pod default/web-1``), ``field`` is the JSON path of the offending field.
    """

    def __init__(self, obj: str, field: str, message: str) -> None:
        self.obj = obj
        self.field = field
        self.message = message
        where = f"{obj}: {field}" if field else obj
        super().__init__(f"{where}: {message}")


def as_mapping(obj: str, field: str, raw: Any) -> Mapping[str, Any]:
    """``raw`` as an object (absent: empty), or an ``ObjectError`` naming the field."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ObjectError(obj, field, f"must be an object, not {type(raw).__name__}")
    return raw


def as_list(obj: str, field: str, raw: Any) -> list[Any]:
    """``raw`` as a list (absent: empty), or an ``ObjectError`` naming the field."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ObjectError(obj, field, f"must be a list, not {type(raw).__name__}")
    return raw
