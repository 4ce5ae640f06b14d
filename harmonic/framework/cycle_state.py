"""Per-pod scheduling-cycle state shared between a profile's extension points."""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


class PluginError(RuntimeError):
    """Raised by a plugin for an internal error; becomes an Error status naming the plugin."""


class CycleState:
    """Data one plugin computes at one extension point and reads at a later one, for one pod's cycle.

    Keys are plugin-chosen strings (by convention ``"PreFilter" + plugin name``). ``skip_filter`` and
    ``skip_score`` hold the plugins whose PreFilter/PreScore returned Skip.
    """

    __slots__ = ("_data", "cycle", "skip_filter", "skip_score")

    def __init__(self, cycle: int = 0) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()
        self.cycle = cycle

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        """The value written under ``key``; ``KeyError`` if the producing extension point did not run."""
        return self._data[key]

    def read_as(self, key: str, kind: type[T], context: str = "reading") -> T:
        """The ``kind`` value under ``key``, or a ``PluginError`` worded as upstream's
        ``<context> "<key>" from cycleState: not found``."""
        value = self._data.get(key)
        if not isinstance(value, kind):
            raise PluginError(f'{context} "{key}" from cycleState: not found')
        return value

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        """A copy whose values are cloned where they define ``clone()`` (used by preemption dry runs)."""
        c = CycleState(self.cycle)
        c._data = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in self._data.items()}
        c.skip_filter = set(self.skip_filter)
        c.skip_score = set(self.skip_score)
        return c
