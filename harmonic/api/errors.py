"""Errors that say which object and which field were wrong."""

from __future__ import annotations


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
