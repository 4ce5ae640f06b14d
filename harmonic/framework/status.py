"""Plugin result codes and statuses (framework.Code / framework.Status)."""

from __future__ import annotations

from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def wire_name(self) -> str:
        """The name kube-scheduler prints (``Unschedulable``, ``UnschedulableAndUnresolvable``...)."""
        return _WIRE[self]

    @classmethod
    def from_wire(cls, name: str) -> Code:
        for code, wire in _WIRE.items():
            if wire == name:
                return code
        raise ValueError(f"unknown status code {name!r}")


_WIRE = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


class Status:
    """A non-nil framework status. Success is represented by ``None`` in plugin results, as Go uses nil."""

    __slots__ = ("code", "plugin", "reasons")

    def __init__(self, code: Code, *reasons: str, plugin: str = "") -> None:
        self.code = code
        self.reasons: tuple[str, ...] = reasons
        self.plugin = plugin

    def __repr__(self) -> str:
        who = f" from {self.plugin}" if self.plugin else ""
        return f"Status({self.code.wire_name}{who}: {', '.join(self.reasons)})"

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    @property
    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def with_plugin(self, plugin: str) -> Status:
        if not self.plugin:
            self.plugin = plugin
        return self


def error(message: str, plugin: str = "") -> Status:
    return Status(Code.ERROR, message, plugin=plugin)


def unschedulable(*reasons: str, plugin: str = "") -> Status:
    return Status(Code.UNSCHEDULABLE, *reasons, plugin=plugin)


def unresolvable(*reasons: str, plugin: str = "") -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons, plugin=plugin)


def skip(plugin: str = "") -> Status:
    return Status(Code.SKIP, plugin=plugin)
