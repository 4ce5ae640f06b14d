"""CapacityScheduling — PreFilter (with AddPod/RemovePod), PostFilter, Reserve (scheduler-plugins).

Each namespace may have one ``ElasticQuota``: ``spec.min`` is guaranteed, ``spec.max`` is a ceiling,
and what a namespace uses beyond its min is borrowed from other namespaces' unused min.

- PreFilter: the pod is Unschedulable when its namespace's usage plus the pod (plus pods nominated in
  that namespace with at least its priority) would exceed ``max``, or when the usage of all quotas
  plus the pod (plus those nominated pods and the pods nominated in namespaces still under their
  min) would exceed the sum of all mins. Pods of namespaces without a quota pass.
- PostFilter: preemption through the shared evaluator, victims chosen as upstream does: a preemptor
  whose namespace would still be within min reclaims from namespaces using more than their min (any
  priority); otherwise it may only preempt lower-priority pods of its own namespace. Pods without a
  quota preempt lower-priority pods without a quota. Victims are reprieved most important first, PDB
  violators before the others, while the pod fits and the quotas hold.
- Reserve/Unreserve: the pod's request is added to / removed from its namespace's usage, so the
  accounting is exact between assume and bind; bound pods are accounted from the pod lister.

No args. ElasticQuotas are read from the ``"batch"`` handle service, pods from ``"pods"``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from harmonic.api.batch import ELASTIC_QUOTA, BatchObjects, ElasticQuota
from harmonic.api.pdb import PodDisruptionBudget
from harmonic.api.pod import Pod
from harmonic.api.resources import Resources
from harmonic.framework.args import NoArgs, PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.diagnosis import Diagnosis
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Resource
from harmonic.framework.interface import (
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
)
from harmonic.framework.preemption import (
    Candidate,
    Evaluator,
    VictimSelection,
    filter_pods_with_pdb_violation,
    importance_key,
)
from harmonic.framework.services import BATCH, NOMINATOR, PODS, PREEMPTION_NEEDS, Need
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.plugins.capacityscheduling.quota import QuotaInfo, QuotaInfos, add
from harmonic.plugins.defaultpreemption import _Removals, _status_at

PRE_FILTER_KEY = "PreFilterCapacityScheduling"
SNAPSHOT_KEY = "ElasticQuotaSnapshot"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."


class _PreFilterState:
    __slots__ = ("in_eq", "pod_req", "with_all")

    def __init__(self, pod_req: Resources, in_eq: Resources, with_all: Resources) -> None:
        self.pod_req = pod_req
        #: The pod plus nominated pods of its namespace with at least its priority.
        self.in_eq = in_eq
        #: ``in_eq`` plus nominated pods of other namespaces still within their min.
        self.with_all = with_all

    def clone(self) -> _PreFilterState:
        return self


class _QuotaSnapshot:
    """Quotas by namespace, copied on write: the plugin's live quotas and each cycle's copy of them.
    Preemption clones the cycle state once per node, and a copy of every namespace's quota each time
    made an attempt cost nodes x quotas (seconds per pod with a few hundred ElasticQuotas, which anyone
    allowed to create them could do); PreFilter's copy cost quotas per attempt."""

    __slots__ = ("_owned", "infos")

    def __init__(self, infos: QuotaInfos, owned: set[str] | None = None) -> None:
        self.infos = infos
        #: Namespaces whose QuotaInfo this snapshot may change in place (None: all of them).
        self._owned = owned

    def clone(self) -> _QuotaSnapshot:
        # Both sides now share every QuotaInfo; each copies one before its first change.
        self._owned = set()
        return _QuotaSnapshot(QuotaInfos(self.infos), set())

    def writable(self, namespace: str) -> QuotaInfo | None:
        """The namespace's QuotaInfo, this snapshot's own to change (None: no quota there)."""
        info = self.infos.get(namespace)
        if info is None or self._owned is None or namespace in self._owned:
            return info
        info = self.infos[namespace] = info.clone()
        self._owned.add(namespace)
        return info

    def put(self, namespace: str, info: QuotaInfo) -> None:
        """Set a namespace's QuotaInfo (a new object, this snapshot's own)."""
        self.infos[namespace] = info
        if self._owned is not None:
            self._owned.add(namespace)


class CapacityScheduling(PreFilterPlugin, PostFilterPlugin, ReservePlugin):
    NAME: ClassVar[str] = "CapacityScheduling"
    Args: ClassVar[type[PluginArgs]] = NoArgs
    NEEDS: ClassVar[tuple[Need, ...]] = (Need(BATCH), Need(PODS), *PREEMPTION_NEEDS)

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.batch: BatchObjects = handle.service(BATCH)
        self._live = _QuotaSnapshot(QuotaInfos())
        for eq in list(self.batch.quotas.values()):
            self._live.put(eq.namespace, QuotaInfo.of(eq))
        #: Quota changes from informer threads, applied on the scheduling thread before the next use.
        self._changes: deque[tuple[Any, Any]] = deque()
        self.batch.listen(self._on_batch)
        self.evaluator = Evaluator(self.NAME, handle, self)
        #: Metrics: preemptions run to reclaim borrowed capacity (victims in other namespaces).
        self.reclaim_preemptions = 0
        handle.service(PODS).add_handler(self._on_pod)

    # ------------------------------------------------------------------ informer handlers
    def _on_batch(self, kind: str, old: Any, new: Any) -> None:
        if kind == ELASTIC_QUOTA:
            self._changes.append((old, new))

    @property
    def infos(self) -> QuotaInfos:
        """The quotas by namespace, with every change reported so far applied (to read only: changes
        go through ``_writable``, as cycles may share the QuotaInfo objects)."""
        live = self._live
        while self._changes:
            old, new = self._changes.popleft()
            if new is None:
                live.infos.pop(old.namespace, None)
                continue
            eq: ElasticQuota = new
            info = QuotaInfo.of(eq)
            prev = live.infos.get(eq.namespace)
            if prev is not None:
                info.used, info.pods = dict(prev.used), set(prev.pods)
            live.put(eq.namespace, info)
        return live.infos

    @infos.setter
    def infos(self, value: QuotaInfos) -> None:
        self._live = _QuotaSnapshot(value)

    def _writable(self, namespace: str) -> QuotaInfo | None:
        """The live QuotaInfo of a namespace, safe to change (None: no quota there)."""
        self.infos  # noqa: B018 - applies the pending quota changes first
        return self._live.writable(namespace)

    def _on_pod(self, old: Pod | None, new: Pod | None) -> None:
        was = old is not None and bool(old.node_name)
        now = new is not None and bool(new.node_name)
        if now and not was:
            assert new is not None
            info = self._info_for(new.namespace)
            if info is not None:
                info.add_pod(new.uid, new.requests)
        elif was and not now:
            assert old is not None
            info = self._writable(old.namespace)
            if info is not None:
                info.remove_pod(old.uid, old.requests)
        elif was and now and new is not None and new.phase not in ("Running", "Pending", ""):
            info = self._writable(new.namespace)
            if info is not None:
                info.remove_pod(new.uid, new.requests)

    def _info_for(self, namespace: str) -> QuotaInfo | None:
        info = self._writable(namespace)
        if info is None:
            eq = self.batch.quotas.get(namespace)
            if eq is not None:
                info = QuotaInfo.of(eq)
                self._live.put(namespace, info)
        return info

    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            EventWithHint(ClusterEvent(Resource.POD, Action.DELETE)),
            EventWithHint(ClusterEvent(Resource.ELASTIC_QUOTA, Action.ALL)),
        )

    # ------------------------------------------------------------------ PreFilter
    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        self.infos  # noqa: B018 - applies the pending quota changes first
        quotas = self._live.clone()
        state.write(SNAPSHOT_KEY, quotas)
        infos = quotas.infos
        pod_req = dict(pod.requests)
        eq = infos.get(pod.namespace)
        if eq is None:
            state.write(PRE_FILTER_KEY, _PreFilterState(pod_req, {}, {}))
            return None, None
        in_eq: Resources = {}
        with_all: Resources = {}
        for p in self._nominated_pods():
            if p.uid == pod.uid:
                continue
            info = self.infos.get(p.namespace)
            if info is None:
                continue
            if p.namespace == pod.namespace and p.priority >= pod.priority:
                add(in_eq, p.requests)
                add(with_all, p.requests)
            elif p.namespace != pod.namespace and not info.used_over_min():
                add(with_all, p.requests)
        add(in_eq, pod_req)
        add(with_all, pod_req)
        state.write(PRE_FILTER_KEY, _PreFilterState(pod_req, in_eq, with_all))
        if eq.used_over_max_with(in_eq):
            return None, Status(
                Code.UNSCHEDULABLE,
                f"Pod {pod.namespace}/{pod.name} is rejected in PreFilter because ElasticQuota "
                f"{eq.namespace} is more than Max",
            )
        if infos.aggregated_used_over_min_with(with_all):
            return None, Status(
                Code.UNSCHEDULABLE,
                f"Pod {pod.namespace}/{pod.name} is rejected in PreFilter because total ElasticQuota "
                "used is more than min",
            )
        return None, None

    def _nominated_pods(self) -> Iterable[Pod]:
        nominator = self.handle.optional_service(NOMINATOR)
        if nominator is None:
            return
        for node in nominator.nodes():
            yield from nominator.nominated_pods_for_node(node)

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, slot: int) -> Status | None:
        return _in_snapshot(state, added, QuotaInfo.add_pod)

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, slot: int) -> Status | None:
        return _in_snapshot(state, removed, QuotaInfo.remove_pod)

    # ------------------------------------------------------------------ Reserve
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        info = self._writable(pod.namespace)
        if info is not None:
            info.add_pod(pod.uid, pod.requests)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        info = self._writable(pod.namespace)
        if info is not None:
            info.remove_pod(pod.uid, pod.requests)

    # ------------------------------------------------------------------ PostFilter (preemption)
    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        result, st = self.evaluator.preempt(state, pod, diagnosis)
        if result is not None and result.nominated_node_name and st is None:
            self.reclaim_preemptions += 1
        return result, st

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return 0, num_nodes

    def ordered_score_funcs(self, candidates: Sequence[Candidate]) -> list[Callable[[Candidate], float]]:
        return []

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_code: Code) -> tuple[bool, str]:
        if pod.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_NEVER
        # The cycle's PreFilter state is read through the evaluator's state (see select_victims).
        nnn = pod.nominated_node_name
        snap: Snapshot = self.handle.snapshot
        if not nnn:
            return True, ""
        if nominated_node_code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE or not snap.has_node(nnn):
            return True, ""
        infos = self.infos
        eq = infos.get(pod.namespace)
        for p in snap.pods_on(snap.slot(nnn)):
            if not p.deleting:
                continue
            other = infos.get(p.namespace)
            if eq is not None:
                if other is None:
                    continue
                if p.namespace == pod.namespace and p.priority < pod.priority:
                    return False, NOT_ELIGIBLE_TERMINATING
                if (
                    p.namespace != pod.namespace
                    and not eq.used_over_min_with(pod.requests)
                    and other.used_over_min()
                ):
                    return False, NOT_ELIGIBLE_TERMINATING
            elif other is None and p.priority < pod.priority:
                return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def select_victims_on_nodes(
        self, state: CycleState, pod: Pod, slots: np.ndarray, pdbs: Sequence[PodDisruptionBudget]
    ) -> Iterable[VictimSelection]:
        for slot in slots.tolist():
            yield self.select_victims_on_node(state.clone(), pod, int(slot), pdbs)

    def select_victims_on_node(
        self, state: CycleState, pod: Pod, slot: int, pdbs: Sequence[PodDisruptionBudget]
    ) -> VictimSelection:
        """SelectVictimsOnNode of CapacityScheduling's preemptor; ``state`` is the caller's copy."""
        quota = _snapshot_state(state)
        pre = state.get(PRE_FILTER_KEY)
        if quota is None or not isinstance(pre, _PreFilterState):
            return VictimSelection([], 0, Status(Code.UNSCHEDULABLE, "Failed to read cycleState"))
        snap: Snapshot = self.handle.snapshot
        runner = self.handle.runner
        infos = quota.infos
        # This node's own copy: the victims taken out below change it, and it is read after each.
        mine = quota.writable(pod.namespace)
        one = np.asarray([slot], dtype=np.int64)
        pods = sorted(snap.pods_on(slot), key=importance_key, reverse=True)
        potential: list[Pod] = []
        if mine is not None:
            over_min = mine.used_over_min_with(pre.in_eq)
            for p in pods:
                other = infos.get(p.namespace)
                if other is None:
                    continue
                if over_min:
                    if p.namespace == pod.namespace and p.priority < pod.priority:
                        potential.append(p)
                elif p.namespace != pod.namespace and other.used_over_min():
                    potential.append(p)
        else:
            potential = [p for p in pods if p.namespace not in infos and p.priority < pod.priority]
        if not potential:
            msg = f"No victims found on node {snap.node(slot).name} for preemptor pod {pod.name}"
            return VictimSelection([], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg))

        def filter_ok() -> Status | None:
            out, st = runner.run_filters_with_nominated_pods(state, pod, snap, one)
            return st if st is not None else _status_at(out, 0)

        with _Removals(snap, [slot]) as removals:

            def take(p: Pod) -> Status | None:
                removals.remove([(slot, p)])
                return runner.run_pre_filter_extension_remove_pod(state, pod, p, slot)

            def give_back(p: Pod) -> Status | None:
                removals.restore([(slot, p)])
                return runner.run_pre_filter_extension_add_pod(state, pod, p, slot)

            for p in potential:
                st = take(p)
                if st is not None:
                    return VictimSelection([], 0, st)
            st = filter_ok()
            if st is not None:
                return VictimSelection([], 0, st)
            if mine is not None and (
                mine.used_over_max_with(pre.pod_req) or infos.aggregated_used_over_min_with(pre.pod_req)
            ):
                return VictimSelection([], 0, Status(Code.UNSCHEDULABLE, "global quota max exceeded"))
            ordered = sorted(potential, key=importance_key)
            violating, others = filter_pods_with_pdb_violation(ordered, pdbs)
            victims: list[Pod] = []
            num_violating = 0
            for p, is_violating in [(p, True) for p in violating] + [(p, False) for p in others]:
                st = give_back(p)
                if st is not None:
                    return VictimSelection([], 0, st)
                fits = filter_ok() is None
                quota_broken = mine is not None and (
                    mine.used_over_max_with(pre.in_eq) or infos.aggregated_used_over_min_with(pre.with_all)
                )
                if fits and not quota_broken:
                    continue
                st = take(p)
                if st is not None:
                    return VictimSelection([], 0, st)
                victims.append(p)
                num_violating += is_violating and not fits
        if violating and others:
            victims.sort(key=importance_key)
        return VictimSelection(victims, num_violating)


def _in_snapshot(
    state: CycleState, pod: Pod, op: Callable[[QuotaInfo, str, Mapping[str, int]], None]
) -> Status | None:
    """Account ``pod`` in (or out of) the cycle's quota snapshot: the PreFilter extensions."""
    snap = _snapshot_state(state)
    if snap is None:
        return Status(Code.ERROR, f'error reading "{SNAPSHOT_KEY}" from cycleState: not found')
    info = snap.writable(pod.namespace)
    if info is not None:
        op(info, pod.uid, pod.requests)
    return None


def _snapshot_state(state: CycleState) -> _QuotaSnapshot | None:
    s = state.get(SNAPSHOT_KEY)
    return s if isinstance(s, _QuotaSnapshot) else None
