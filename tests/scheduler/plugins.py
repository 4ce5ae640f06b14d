"""Test plugins for scheduling-cycle tests: each implements one extension point in a controllable way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from harmonic.api.pod import Pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import EventWithHint
from harmonic.framework.interface import (
    FilterPlugin,
    PermitPlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    ScorePlugin,
)
from harmonic.framework.registry import Registry
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.plugins.registry import in_tree_registry

#: What the test plugins did, in order (shared, cleared by each test through ``reset``).
LOG: list[str] = []


def reset() -> None:
    LOG.clear()
    Waiter.answer = ("wait", 10.0)
    Reserver.reject = set()
    Narrow.nodes = None
    Boom.fail = False


class Waiter(PermitPlugin):
    """Permit: answers ``answer`` (``("wait", seconds)``, ``("allow", 0)`` or ``("reject", 0)``)."""

    NAME: ClassVar[str] = "Waiter"
    answer: ClassVar[tuple[str, float]] = ("wait", 10.0)

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        LOG.append(f"permit {pod.name} {node_name}")
        kind, timeout = self.answer
        if kind == "wait":
            return Status(Code.WAIT), timeout
        if kind == "reject":
            return Status(Code.UNSCHEDULABLE, "not now"), 0.0
        return None, 0.0

    def events_to_register(self) -> Sequence[EventWithHint]:
        return ()


class Reserver(ReservePlugin):
    """Reserve: logs reserve/unreserve; rejects pods named in ``reject``."""

    NAME: ClassVar[str] = "Reserver"
    reject: ClassVar[set[str]] = set()

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        LOG.append(f"reserve {pod.name} {node_name}")
        if pod.name in self.reject:
            return Status(Code.UNSCHEDULABLE, "reserve refused")
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        LOG.append(f"unreserve {pod.name} {node_name}")


class SecondReserver(Reserver):
    NAME: ClassVar[str] = "SecondReserver"

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        LOG.append(f"reserve2 {pod.name} {node_name}")
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        LOG.append(f"unreserve2 {pod.name} {node_name}")


class Narrow(PreFilterPlugin):
    """PreFilter: restricts pods to ``nodes`` (None: all nodes)."""

    NAME: ClassVar[str] = "Narrow"
    nodes: ClassVar[frozenset[str] | None] = None

    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        return PreFilterResult(self.nodes), None


class Narrow2(Narrow):
    NAME: ClassVar[str] = "Narrow2"


class Boom(FilterPlugin):
    """Filter: raises an unexpected exception while ``fail`` is set (a plugin bug)."""

    NAME: ClassVar[str] = "Boom"
    fail: ClassVar[bool] = False

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        if self.fail:
            raise ZeroDivisionError("division by zero")
        return None


class BadScore(ScorePlugin):
    """Score: returns 101 everywhere (out of range)."""

    NAME: ClassVar[str] = "BadScore"

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        return np.full(len(slots), 101, dtype=np.int64)


def registry() -> Registry:
    return in_tree_registry().merged([Waiter, Reserver, SecondReserver, Narrow, Narrow2, Boom, BadScore])


def enable(**points: list[str]) -> dict[str, Any]:
    """A one-profile config enabling test plugins at extension points (``permit=["Waiter"]``)."""
    plugins = {point: {"enabled": [{"name": n} for n in names]} for point, names in points.items()}
    return {"profiles": [{"plugins": plugins}]}
