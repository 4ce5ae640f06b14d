"""Test doubles of upstream's pkg/scheduler/testing/framework fake plugins, for preemption tests."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from harmonic.api.pod import Pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import FilterPlugin, PreFilterPlugin, PreFilterResult
from harmonic.framework.registry import Registry
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.plugins.registry import default_registry

ERR_REASON_FAKE = "Nodes failed the fake plugin"


class FalseFilter(FilterPlugin):
    NAME: ClassVar[str] = "FalseFilter"

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        return Verdicts.all(len(slots), Code.UNSCHEDULABLE, ERR_REASON_FAKE)


class TrueFilter(FilterPlugin):
    NAME: ClassVar[str] = "TrueFilter"

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        return None


class MatchFilter(FilterPlugin):
    """Passes only the node named like the pod."""

    NAME: ClassVar[str] = "MatchFilter"

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        names = np.asarray(snap.node_names(slots), dtype=object)
        return Verdicts.failing(names != pod.name, Code.UNSCHEDULABLE, ERR_REASON_FAKE)


class FakeFilter(FilterPlugin):
    """Counts the nodes it filters; fails the nodes in ``codes`` with the code given there."""

    NAME: ClassVar[str] = "FakeFilter"
    #: Shared by the instance a test creates (the framework constructs plugins itself).
    codes: ClassVar[dict[str, Code]] = {}
    calls: ClassVar[int] = 0

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        FakeFilter.calls += len(slots)
        names = snap.node_names(slots)
        codes = np.asarray([int(self.codes.get(n, Code.SUCCESS)) for n in names], dtype=np.int8)
        return Verdicts(
            codes, np.zeros(len(slots), dtype=np.int32), [(f"injecting failure for pod {pod.name}",)]
        )


class ExtensionsPlugin(PreFilterPlugin, FilterPlugin):
    """upstream's TestPlugin: AddPod/RemovePod fail on nodes labelled ``error=true``."""

    NAME: ClassVar[str] = "test-plugin"

    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, slot: int) -> Status | None:
        if self.handle.snapshot.node(slot).labels.get("error") == "true":
            return Status(Code.ERROR, f"failed to add pod: {pod.name}")
        return None

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, slot: int) -> Status | None:
        if self.handle.snapshot.node(slot).labels.get("error") == "true":
            return Status(Code.ERROR, f"failed to remove pod: {pod.name}")
        return None

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        return None


def registry_with_fakes() -> Registry:
    return default_registry().merged([FalseFilter, TrueFilter, MatchFilter, FakeFilter, ExtensionsPlugin])
