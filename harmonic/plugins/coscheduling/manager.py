"""The PodGroup manager behind Coscheduling (scheduler-plugins pkg/coscheduling/core).

It knows each gang's pods (from the scheduler's pod lister, like upstream's pod informer), which of
them are assigned (assumed at Permit or bound), which gangs recently passed the minResources check
(``permittedPG``, kept for the schedule timeout) or failed (``backedOffPG``, kept for the backoff), and
when a gang last failed: the queue sorts a failed gang by that time instead of its creation, so it
does not block the head of the queue (GetCreationTimestamp).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from harmonic.api.batch import BatchObjects, PodGroup, pod_group_name
from harmonic.api.pod import Pod
from harmonic.api.resources import PODS
from harmonic.framework.snapshot import Snapshot

# core.Status values of Permit.
POD_GROUP_NOT_SPECIFIED = "PodGroup not specified"
POD_GROUP_NOT_FOUND = "PodGroup not found"
SUCCESS = "Success"
WAIT = "Wait"

#: util.DefaultWaitTime: the Permit wait when neither the PodGroup nor the args give one.
DEFAULT_WAIT_SECONDS = 60.0


def wait_time_seconds(pg: PodGroup | None, schedule_timeout: float) -> float:
    """How long a gang member waits at Permit (Permit with util.GetWaitTimeDuration).

    The PodGroup's ``scheduleTimeoutSeconds`` wins when set; otherwise the args' non-zero
    ``permitWaitingTimeSeconds``, else 60 s. Permit ignores a zero from that lookup and keeps the
    args' value, so ``scheduleTimeoutSeconds: 0`` means "the plugin's timeout", not "no wait".
    """
    if pg is not None and pg.schedule_timeout_seconds is not None:
        wait = float(pg.schedule_timeout_seconds)
    elif schedule_timeout != 0:
        wait = schedule_timeout
    else:
        wait = DEFAULT_WAIT_SECONDS
    return wait if wait != 0 else schedule_timeout


class TTLSet:
    """Names that expire (go-cache with a per-item TTL), on the scheduler's clock."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._until: dict[str, float] = {}

    def add(self, name: str, ttl: float) -> None:
        self._until[name] = self._now() + ttl

    def has(self, name: str) -> bool:
        until = self._until.get(name)
        if until is None:
            return False
        if self._now() >= until:
            del self._until[name]
            return False
        return True

    def delete(self, name: str) -> None:
        self._until.pop(name, None)


def full_name(pod: Pod) -> str:
    """``namespace/group`` of the pod's PodGroup (util.GetPodGroupFullName); "" when it names none."""
    name = pod_group_name(pod.labels)
    return f"{pod.namespace}/{name}" if name else ""


class PodGroupManager:
    def __init__(self, batch: BatchObjects, now: Callable[[], float], schedule_timeout: float) -> None:
        self.batch = batch
        self.now = now
        self.schedule_timeout = schedule_timeout
        self.permitted = TTLSet(now)
        self.backed_off = TTLSet(now)
        self.last_failed: dict[str, float] = {}
        #: Pods assumed or bound per gang, by pod name (assignedPodsByPG).
        self.assigned: dict[str, set[str]] = {}
        #: Every known pod per gang (the pod lister's label index): name -> pod.
        self.members: dict[str, dict[str, Pod]] = {}

    # ------------------------------------------------------------------ pod lister events
    def on_pod(self, old: Pod | None, new: Pod | None) -> None:
        """Keep the gang index; an assigned pod seen for the first time counts as assigned (AddPodFactory),
        a deleted assigned pod no longer does."""
        if old is not None and (new is None or full_name(old) != full_name(new)):
            g = full_name(old)
            if g:
                pods = self.members.get(g)
                if pods is not None:
                    pods.pop(old.name, None)
                    if not pods:
                        del self.members[g]
                if new is None and old.node_name:
                    self.unreserve(old)
        if new is not None:
            g = full_name(new)
            if g:
                self.members.setdefault(g, {})[new.name] = new
                if old is None and new.node_name:
                    self.assigned.setdefault(g, set()).add(new.name)

    # ------------------------------------------------------------------ lookups
    def get_pod_group(self, pod: Pod) -> tuple[str, PodGroup | None]:
        name = pod_group_name(pod.labels)
        if not name:
            return "", None
        return f"{pod.namespace}/{name}", self.batch.pod_group(pod.namespace, name)

    def pods_of(self, full: str) -> list[Pod]:
        return list(self.members.get(full, {}).values())

    def assigned_count(self, full: str) -> int:
        return len(self.assigned.get(full, ()))

    def creation_timestamp(self, pod: Pod, ts: float) -> float:
        """The time the queue sorts ``pod`` by: its gang's last failure, else the PodGroup's creation,
        else ``ts`` (GetCreationTimestamp)."""
        name = pod_group_name(pod.labels)
        if not name:
            return ts
        full = f"{pod.namespace}/{name}"
        failed = self.last_failed.get(full)
        if failed is not None:
            return failed
        pg = self.batch.pod_group(pod.namespace, name)
        return pg.created if pg is not None else ts

    # ------------------------------------------------------------------ PreFilter
    def pre_filter(self, pod: Pod, snap: Snapshot) -> str | None:
        """The reason the pod's gang cannot be scheduled now, or None (PodGroupManager.PreFilter)."""
        full, pg = self.get_pod_group(pod)
        if pg is None:
            return None
        if self.backed_off.has(full):
            return f"podGroup {full} failed recently"
        pods = self.pods_of(full)
        gap = pg.min_member - len(pods)
        if gap > 0:
            return (
                f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                f"current pods number: {len(pods)}, minMember of group: {pg.min_member}"
            )
        gap += sum(1 for p in pods if p.scheduling_gates)
        if gap > 0:
            return f"pre-filter pod {pod.name} cannot proceed due to gated pods in the same PodGroup"
        if not pg.min_resources or self.permitted.has(full):
            return None
        need = {**pg.min_resources, PODS: pg.min_member}
        gap_msg = check_cluster_resource(snap, need, pods)
        if gap_msg is not None:
            return gap_msg
        self.permitted.add(full, self.schedule_timeout)
        return None

    # ------------------------------------------------------------------ Permit / Unreserve
    def permit(self, pod: Pod) -> tuple[str, int]:
        """(core.Status, number assigned including this pod)."""
        full, pg = self.get_pod_group(pod)
        if not full:
            return POD_GROUP_NOT_SPECIFIED, 0
        if pg is None:
            return POD_GROUP_NOT_FOUND, 0
        assigned = self.assigned.setdefault(full, set())
        assigned.add(pod.name)
        return (SUCCESS if len(assigned) >= pg.min_member else WAIT), len(assigned)

    def unreserve(self, pod: Pod) -> None:
        full = full_name(pod)
        assigned = self.assigned.get(full)
        if assigned is not None:
            assigned.discard(pod.name)
            if not assigned:
                del self.assigned[full]

    def backoff(self, full: str, seconds: float) -> None:
        if seconds:
            self.backed_off.add(full, seconds)

    def mark_failure(self, full: str) -> None:
        self.last_failed[full] = self.now()

    def clear_failure(self, full: str) -> None:
        self.last_failed.pop(full, None)


def check_cluster_resource(snap: Snapshot, need: dict[str, int], group_pods: Sequence[Pod]) -> str | None:
    """CheckClusterResource: walking the nodes in order, does the room left on them (the gang's own
    pods not counted) add up to ``need`` for every resource? Returns the gap message, or None.

    Upstream subtracts node by node and drops a resource once covered, so a resource is covered iff
    some prefix of the walk sums to at least its need; a node with negative room counts against it."""
    slots = snap.order
    names = sorted(need)
    cols = [snap.column(r) for r in names]
    free = np.zeros((len(slots), len(names)), dtype=np.int64)
    known = [i for i, c in enumerate(cols) if c is not None]
    if len(slots) and known:
        idx = np.asarray([c for c in cols if c is not None], dtype=np.int64)
        rows = np.ix_(slots, idx)
        room: np.ndarray = snap.allocatable[rows] - snap.requested[rows]
        free[:, known] = room
        # The gang's own pods already on nodes do not count against it.
        pos = {int(s): i for i, s in enumerate(slots.tolist())}
        for p in group_pods:
            if p.node_name and snap.has_node(p.node_name) and p.uid in snap.pods[snap.slot(p.node_name)]:
                vec = snap.pod_vector(p)
                free[pos[snap.slot(p.node_name)], known] += vec[idx]
    best = free.cumsum(axis=0).max(axis=0) if len(slots) else np.zeros(len(names), dtype=np.int64)
    needed = np.array([need[r] for r in names], dtype=np.int64)
    short = best < needed
    if not short.any():
        return None
    gap = ", ".join(f"{r}:{int(needed[i] - max(best[i], 0))}" for i, r in enumerate(names) if short[i])
    return f"resource gap: map[{gap}]"


def gang_key(pod: Pod, pg: PodGroup | None) -> tuple[int, float]:
    """Seniority of a gang, most senior first: higher priority, then created earlier. Gangs that tie
    are equally senior: none takes the turn from another."""
    created = pg.created if pg is not None else 0.0
    return (-pod.priority, created)
