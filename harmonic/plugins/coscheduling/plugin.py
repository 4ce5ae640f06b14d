"""Coscheduling — QueueSort, PreFilter, Filter, PostFilter, Permit, Reserve (scheduler-plugins).

All-or-nothing scheduling of gangs: pods labelled ``scheduling.x-k8s.io/pod-group: <name>`` belong to
that ``PodGroup`` of their namespace, which needs ``minMember`` of them placed at once.

- QueueSort: higher priority first, then the gang's creation time (the time of its last failure if
  it failed, so a failing gang does not block the queue head), then ``namespace/name`` of the pod (with
  the gang guard, the gang's ``namespace/name`` first, so gangs created at once do not interleave); a
  gang's pods therefore come out of the queue together.
- PreFilter: UnschedulableAndUnresolvable (no preemption) while the gang is backed off, has fewer
  than ``minMember`` pods, has gated pods keeping it below quorum, or its ``minResources`` exceed what
  the nodes have left (checked once per ``permitWaitingTimeSeconds``).
- PostFilter: a member that fits nowhere rejects the whole gang (its waiting pods are released), unless
  enough members are assigned already or at most ``podGroupRejectPercentage`` % of ``minMember`` are
  missing; the gang is then backed off for ``podGroupBackoffSeconds`` (0: not at all).
- Permit: Wait until ``minMember`` pods are assumed, for the PodGroup's ``spec.scheduleTimeoutSeconds``
  when set and non-zero, else ``permitWaitingTimeSeconds`` (60 s when that is 0); the pod that completes the quorum allows the waiting ones. A pod naming
  a PodGroup that does not exist is rejected ("PodGroup not found") and retried when one appears.
- Reserve/Unreserve: a member that fails or times out after Reserve rejects its waiting siblings.
- Filter (Harmonic, ``gangGuard``): see ``guard.py``; with ``gangGuard: false`` the plugin behaves as
  scheduler-plugins' does.

Args (CoschedulingArgs): ``permitWaitingTimeSeconds`` (60), ``podGroupBackoffSeconds`` (0),
``podGroupRejectPercentage`` (0..100, 10), ``gangGuard`` (true). PodGroups are read from the
``"batch"`` handle service, pods from ``"pods"``; ``"activate"`` and ``"waiting_pods"`` reach the
scheduler's queue and Permit (the extender has neither).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from harmonic.api.pod import Pod
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.diagnosis import Diagnosis
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Hint, Resource
from harmonic.framework.interface import (
    FilterPlugin,
    PermitPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
)
from harmonic.framework.services import ACTIVATE, BATCH, PODS, WAITING_PODS, Need, WaitingPodHandle
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.plugins.coscheduling.args import CoschedulingArgs
from harmonic.plugins.coscheduling.guard import GangGuard
from harmonic.plugins.coscheduling.manager import (
    POD_GROUP_NOT_FOUND,
    POD_GROUP_NOT_SPECIFIED,
    SUCCESS,
    PodGroupManager,
    full_name,
    gang_key,
    wait_time_seconds,
)

_TURN_KEY = "PreFilterCoscheduling/turn"


class Coscheduling(
    QueueSortPlugin, PreFilterPlugin, FilterPlugin, PostFilterPlugin, ReservePlugin, PermitPlugin
):
    NAME: ClassVar[str] = "Coscheduling"
    Args: ClassVar[type[PluginArgs]] = CoschedulingArgs
    NEEDS: ClassVar[tuple[Need, ...]] = (
        Need(BATCH),
        Need(PODS),
        Need(ACTIVATE, "a gang's pods turned away are retried on the next cluster event, not at once"),
        Need(WAITING_PODS, "a failing member releases no waiting siblings (no pod waits at Permit)"),
    )

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.cs_args: CoschedulingArgs = args
        batch = handle.service(BATCH)
        now = handle.clock.now
        self.timeout = float(args.permit_waiting_time_seconds)
        self.mgr = PodGroupManager(batch, now, self.timeout)
        self.reject_threshold = args.pod_group_reject_percentage / 100.0
        self.guard = GangGuard(now, self.timeout) if args.gang_guard else None
        self.pods = handle.service(PODS)
        self.pods.add_handler(self._on_pod)

    def _on_pod(self, old: Pod | None, new: Pod | None) -> None:
        self.mgr.on_pod(old, new)
        if old is None and new is not None and not new.node_name:
            # A new member may complete a gang that PreFilter turned away (the Pod/Add event).
            g = full_name(new)
            if g:
                self._activate(p for p in self.mgr.pods_of(g) if p.uid != new.uid and not p.node_name)
        if new is None and old is not None and self.guard is not None:
            g = full_name(old)
            if g and g not in self.mgr.members and self.guard.reserved == g:
                self.guard.clear_reservation(g)
                self._activate(self.guard.take_kept_out())

    def events_to_register(self) -> Sequence[EventWithHint]:
        events = [
            EventWithHint(ClusterEvent(Resource.POD, Action.ADD)),
            EventWithHint(ClusterEvent(Resource.POD_GROUP, Action.ADD | Action.UPDATE)),
        ]
        if self.guard is not None:
            # A gang turned away at Permit may fit once pods leave; upstream waits for the 5-minute flush.
            events.append(EventWithHint(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE), self._room_freed))
        return events

    def _room_freed(self, pod: Pod, old: Any, new: Any) -> Hint:
        """Only a pod that was bound frees room; an assumed pod let go at Permit does not (its gang's
        failure would otherwise requeue the gangs it just failed beside, without end)."""
        listed = self.pods.get(old.uid) if old is not None else None
        return Hint.SKIP if listed is not None and not listed.node_name else Hint.QUEUE

    # ------------------------------------------------------------------ QueueSort
    def sort_key(self, qp: QueuedPodInfo) -> tuple[Any, ...]:
        ts = qp.initial_attempt_timestamp if qp.initial_attempt_timestamp is not None else qp.timestamp
        created = self.mgr.creation_timestamp(qp.pod, ts)
        if self.guard is not None:
            # Gangs created at the same time stay contiguous (upstream interleaves them by pod name,
            # and with one gang assembling at a time the others' pods would be turned away).
            return (-qp.pod.priority, created, full_name(qp.pod), qp.pod.key)
        return (-qp.pod.priority, created, qp.pod.key)

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.sort_key(a) < self.sort_key(b)

    # ------------------------------------------------------------------ PreFilter / Filter
    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        reason = self.mgr.pre_filter(pod, snap)
        if reason is not None:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)
        if self.guard is not None:
            full, pg = self.mgr.get_pod_group(pod)
            if pg is not None and not self.guard.may_assemble(full, gang_key(pod, pg)):
                state.write(_TURN_KEY, True)
                msg = f"gang {self.guard.holder} is being assembled; gang {full} waits its turn"
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)
        return None, None

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        guard = self.guard
        if guard is None or guard.reserved is None:
            return None
        reserved = guard.reserved
        ns, _, name = reserved.partition("/")
        pg = self.mgr.batch.pod_group(ns, name)
        if pg is None or len(self.mgr.members.get(reserved, ())) < pg.min_member:
            # Gone, or short of members (a Job lost some for good): nothing to keep room for.
            guard.clear_reservation(reserved)
            self._activate(guard.take_kept_out())
            return None
        v = guard.filter(pod, full_name(pod), snap, slots, self.mgr.assigned_count(reserved))
        if v is not None:
            guard.kept_out[pod.uid] = pod
        return v

    # ------------------------------------------------------------------ PostFilter
    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        if state.get(_TURN_KEY):
            return PostFilterResult(), Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for its turn")
        full, pg = self.mgr.get_pod_group(pod)
        if not full:
            # Upstream answers "can not find pod group" here too, and its PostFilter aggregation appends
            # that to the FitError of every pod outside a gang, where it only misleads: a pod that names
            # no group gets a plain Unschedulable (same code, so the same queueing), without the message.
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        if pg is None:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE, "can not find pod group")
        assigned = self.mgr.assigned_count(full)
        if assigned >= pg.min_member:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        if (pg.min_member - assigned) / pg.min_member <= self.reject_threshold:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        self._reject_waiting(full, "optimistic rejection in PostFilter")
        if self.cs_args.pod_group_backoff_seconds and len(self.mgr.pods_of(full)) >= pg.min_member:
            self.mgr.backoff(full, self.cs_args.pod_group_backoff_seconds)
        self.mgr.permitted.delete(full)
        self.mgr.mark_failure(full)
        self._gang_failed(pod, full)
        return PostFilterResult(), Status(
            Code.UNSCHEDULABLE,
            f"PodGroup {full} gets rejected due to Pod {pod.name} is unschedulable even after PostFilter",
        )

    # ------------------------------------------------------------------ Permit
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        result, assigned = self.mgr.permit(pod)
        if result == POD_GROUP_NOT_SPECIFIED:
            return None, 0.0
        if result == POD_GROUP_NOT_FOUND:
            return Status(Code.UNSCHEDULABLE, POD_GROUP_NOT_FOUND), 0.0
        full, pg = self.mgr.get_pod_group(pod)
        if result == SUCCESS:
            self.mgr.clear_failure(full)
            for wp in self._waiting(full):
                wp.allow(self.NAME)
            if self.guard is not None:
                if self.guard.reserved == full:
                    self.guard.clear_reservation(full)
                    self._activate(self.guard.take_kept_out())
                self._activate_gangs(self.guard.release(full))
            return None, 0.0
        wait = wait_time_seconds(pg, self.timeout)
        if self.guard is not None:
            previous = self.guard.hold(full, gang_key(pod, pg))
            if previous is not None:
                self._reject_waiting(previous, f"released for the more senior gang {full}")
        if assigned == 1 and full not in self.mgr.last_failed:
            # The first member to wait brings its siblings back from backoff (ActivateSiblings). Not
            # after the gang failed: upstream does, and a gang that cannot fit then re-activates itself
            # forever without its pods ever backing off.
            self._activate(p for p in self.mgr.pods_of(full) if p.uid != pod.uid and not p.node_name)
        return Status(Code.WAIT), wait

    # ------------------------------------------------------------------ Reserve / Unreserve
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        full, pg = self.mgr.get_pod_group(pod)
        if pg is None:
            return
        self.mgr.unreserve(pod)
        self._reject_waiting(full, "rejection in Unreserve")
        self.mgr.permitted.delete(full)
        self.mgr.mark_failure(full)
        self._gang_failed(pod, full)

    # ------------------------------------------------------------------ helpers
    def _gang_failed(self, pod: Pod, full: str) -> None:
        guard = self.guard
        if guard is None:
            return
        _, pg = self.mgr.get_pod_group(pod)
        if pg is not None:
            guard.note_failure(
                full, gang_key(pod, pg), self.mgr.pods_of(full), pg.min_member, self.handle.snapshot
            )
        self._activate_gangs(guard.release(full))

    def _waiting(self, full: str) -> list[WaitingPodHandle]:
        waiting = self.handle.optional_service(WAITING_PODS)
        if waiting is None:
            return []
        return [wp for wp in waiting() if full_name(wp.pod) == full]

    def _reject_waiting(self, full: str, message: str) -> None:
        for wp in self._waiting(full):
            wp.reject(self.NAME, message)

    def _activate(self, pods: Iterable[Pod]) -> None:
        activate = self.handle.optional_service(ACTIVATE)
        if activate is not None:
            activate(list(pods))

    def _activate_gangs(self, gangs: set[str]) -> None:
        for g in sorted(gangs):
            self._activate(p for p in self.mgr.pods_of(g) if not p.node_name)
