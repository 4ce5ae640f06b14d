"""Repeated failures: a pod's failed attempt remembered while nothing it read has changed.

kube-scheduler retries an unschedulable pod whenever a queueing hint says a cluster event may help it,
and some hints cannot tell where the pod may go: NodeResourcesFit's queues the pod on the deletion of
any scheduled pod. A DaemonSet pod pinned to a full node is then retried on every pod deletion in the
cluster (with SchedulerPopFromBackoffQ, at once when activeQ is empty), and fails the same way each
time. In a simulation of a busy cluster these retries are most of the attempts.

The attempt still happens as upstream makes it: the pod is popped, counted, reported, requeued and backs
off exactly as before. What is skipped is re-deriving its outcome. When the failed attempt ran only
``NODE_LOCAL`` plugins (PreFilter reading the pod, Filter reading the pod and the node's row, PostFilter
nominating nothing), its outcome is a function of the pod, the rows of the nodes it evaluated, the
nominations and the node set. While those are unchanged — the same ``Pod`` object, every evaluated
slot's version (bumped by a snapshot listener on each pod added or removed and each node change), the
nominator's and the snapshot's node generation — the next attempt replays the remembered outcome: the
same message and rejecting plugins, the rotation index advanced by the same number of nodes, and the
random preemption offsets drawn again (``DefaultPreemption.replay_offsets``), so every later decision is
the one the full cycle would have made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.runtime import Framework
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Status
from harmonic.scheduler.nominator import Nominator


class _ReplaysOffsets(Protocol):
    offset_draws: list[int]

    def replay_offsets(self, draws: Sequence[int]) -> None: ...


@dataclass(slots=True)
class Failure:
    """What a failed attempt concluded, and the state it concluded it from."""

    pod: Pod
    profile: str
    node_generation: int
    nominations: int
    slots: np.ndarray
    versions: list[int]
    #: Nodes the attempt processed (what it advanced the rotating start index by).
    processed: int
    status: Status
    message: str
    unschedulable_plugins: frozenset[str]
    pending_plugins: frozenset[str]
    #: The nomination ``_fail`` recorded (None keeps the pod's, "" clears it).
    nominated: str | None
    #: PostFilter plugin -> sizes of the random offsets it drew.
    offset_draws: tuple[tuple[_ReplaysOffsets, tuple[int, ...]], ...]


class SlotVersions:
    """A version per snapshot slot, changed whenever a pod is added to or removed from the slot or its
    node changes (a SnapshotListener)."""

    def __init__(self, snap: Snapshot) -> None:
        self._snap = snap
        self.versions = np.zeros(snap.capacity, dtype=np.int64)
        self._counter = 0
        snap.listeners.append(self)

    def _grow(self, size: int) -> None:
        grown = np.zeros(max(size, 2 * len(self.versions)), dtype=np.int64)
        grown[: len(self.versions)] = self.versions
        self.versions = grown

    def _bump(self, slot: int) -> None:
        if slot >= len(self.versions):
            self._grow(slot + 1)
        self._counter += 1
        self.versions[slot] = self._counter

    def pod_added(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._bump(slot)

    def pod_removed(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        self._bump(slot)

    def node_changed(self, snap: Snapshot, slot: int, old: Node | None, new: Node | None) -> None:
        self._bump(slot)

    def of(self, slots: np.ndarray) -> list[int]:
        if len(self.versions) < self._snap.capacity:
            self._grow(self._snap.capacity)
        out: list[int] = self.versions[slots].tolist()
        return out


class RepeatedFailures:
    """The latest failure of each pending pod whose failure can be replayed, by uid."""

    def __init__(self, snap: Snapshot, nominator: Nominator) -> None:
        self._snap = snap
        self._nominator = nominator
        self._slots = SlotVersions(snap)
        self._failures: dict[str, Failure] = {}
        #: Replays made (for tests and benchmarks).
        self.replayed = 0

    def __len__(self) -> int:
        return len(self._failures)

    @staticmethod
    def replayable(fw: Framework, state: CycleState) -> bool:
        """Did this cycle run only NODE_LOCAL plugins up to and including PostFilter?"""
        skipped = state.skip_filter
        return (
            all(pl.node_local for pl in fw.pre_filter_plugins if pl.name not in skipped)
            and all(pl.node_local for pl in fw.filter_plugins if pl.name not in skipped)
            and all(pl.node_local and hasattr(pl, "replay_offsets") for pl in fw.post_filter_plugins)
        )

    def remember(
        self,
        fw: Framework,
        pod: Pod,
        slots: np.ndarray,
        processed: int,
        status: Status,
        message: str,
        unschedulable: set[str],
        pending: set[str],
        nominated: str | None,
    ) -> None:
        """Called at the end of the failed attempt, once PostFilter has restored what it tried."""
        draws: list[tuple[Any, tuple[int, ...]]] = [
            (pl, tuple(getattr(pl, "offset_draws", ()))) for pl in fw.post_filter_plugins
        ]
        self._failures[pod.uid] = Failure(
            pod,
            fw.name,
            self._snap.node_generation,
            self._nominator.version,
            slots,
            self._slots.of(slots),
            processed,
            status,
            message,
            frozenset(unschedulable),
            frozenset(pending),
            nominated,
            tuple(draws),
        )

    def recall(self, pod: Pod, profile: str) -> Failure | None:
        """The pod's last failure if this attempt would conclude the same (it is then forgotten: the
        replay remembers it again)."""
        f = self._failures.pop(pod.uid, None)
        if (
            f is None
            or f.pod is not pod
            or f.profile != profile
            or f.node_generation != self._snap.node_generation
            or f.nominations != self._nominator.version
            or self._slots.of(f.slots) != f.versions
        ):
            return None
        return f

    def replayed_again(self, f: Failure) -> None:
        """The failure was replayed: draw its offsets again and keep it for the next attempt."""
        for pl, draws in f.offset_draws:
            pl.replay_offsets(draws)
        self.replayed += 1
        # Nothing it read changed: the replay adds and removes no pod and nominates nobody.
        self._failures[f.pod.uid] = f

    def forget(self, uid: str) -> None:
        self._failures.pop(uid, None)
