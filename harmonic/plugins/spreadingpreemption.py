"""SpreadingPreemption — PostFilter (DefaultPreemption that keeps a workload spread over zones).

kube-scheduler's DefaultPreemption picks the node to make room on by the victims alone (fewest budget
violations, lowest highest priority, smallest priority sum, fewest victims, latest start), blind to
where the preemptor's own workload already runs. On a cluster full of batch, a service replica
recreated after a node or zone failure is placed by preemption, not by scoring, and can land in the
zone that already holds its siblings: the next zone outage then takes them all. This plugin is
DefaultPreemption with two more criteria, tried after "fewest victims" and before "latest start": the
candidate whose zone holds the fewest running replicas of the preemptor's workload; then the candidate
whose victims leave the fewest serving workloads (ReplicaSets, StatefulSets) without a running replica
in that zone, so that when batch outranks services, preemption takes a service's spare replica
before the last one a zone has. Victims are chosen exactly as DefaultPreemption chooses them, and no
more are evicted; only which of equally cheap candidates is used changes. Pods of no workload (bare
pods) and nodes without a zone label leave the choice to DefaultPreemption's last criterion.

Use it instead of DefaultPreemption in a profile (disable DefaultPreemption). Args: DefaultPreemption's
(``minCandidateNodesPercentage`` 10, ``minCandidateNodesAbsolute`` 100) and ``zoneLabel``
(``topology.kubernetes.io/zone``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from harmonic.api.node import ZONE_LABEL
from harmonic.api.pod import Pod
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.diagnosis import Diagnosis
from harmonic.framework.interface import PostFilterResult
from harmonic.framework.preemption import DEFAULT_SCORE_FUNCS, Candidate
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Status
from harmonic.plugins.defaultpreemption import DefaultPreemption, DefaultPreemptionArgs
from harmonic.signals.identity import workload_id

#: Owners whose replicas serve requests, so that losing a zone's last one is an availability loss.
_SERVING = frozenset({"ReplicaSet", "StatefulSet"})


class SpreadingPreemptionArgs(DefaultPreemptionArgs):
    zone_label: str = Field(default=ZONE_LABEL, min_length=1)


class _WorkloadSlots:
    """Running replicas of each workload per node slot, kept by snapshot events, so choosing among
    candidates reads the preemptor's siblings without walking every pod of the cluster."""

    def __init__(self, snap: Snapshot) -> None:
        self.replicas: dict[int, Counter[int]] = {}
        for slot, pod in snap.all_pods():
            self.pod_added(snap, slot, pod)
        snap.listeners.append(self)

    def pod_added(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        if pod.controller is not None:
            self.replicas.setdefault(workload_id(pod), Counter())[slot] += 1

    def pod_removed(self, snap: Snapshot, slot: int, pod: Pod) -> None:
        if pod.controller is not None:
            slots = self.replicas.get(workload_id(pod))
            if slots is not None:
                slots[slot] -= 1
                if slots[slot] <= 0:
                    del slots[slot]

    def node_changed(self, snap: Snapshot, slot: int, old: Any, new: Any) -> None:
        return None


class SpreadingPreemption(DefaultPreemption):
    NAME: ClassVar[str] = "SpreadingPreemption"
    Args: ClassVar[type[PluginArgs]] = SpreadingPreemptionArgs

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self.zone_label: str = args.zone_label
        self._preemptor: Pod | None = None
        self._siblings = _WorkloadSlots(handle.snapshot)

    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        self._preemptor = pod
        try:
            return super().post_filter(state, pod, diagnosis)
        finally:
            self._preemptor = None

    def _replicas_per_zone(self, pod: Pod) -> tuple[np.ndarray, np.ndarray]:
        """(zone code per node slot, running replicas of ``pod``'s workload per zone code)."""
        codes = self.handle.snapshot.label(self.zone_label).codes
        counts = np.zeros(int(codes.max(initial=-1)) + 1, dtype=np.int64)
        for slot, n in self._siblings.replicas.get(workload_id(pod), Counter()).items():
            zone = int(codes[slot])
            if zone >= 0:
                counts[zone] += n
        return codes, counts

    def _zones_emptied(self, c: Candidate) -> float:
        """Minus the number of serving workloads (ReplicaSets, StatefulSets) among ``c``'s victims that
        would have no running replica left in the candidate's zone."""
        codes = self.handle.snapshot.label(self.zone_label).codes
        zone = int(codes[c.slot])
        if zone < 0:
            return 0.0
        taken = Counter(
            workload_id(v) for v in c.victims if v.controller is not None and v.controller.kind in _SERVING
        )
        emptied = 0
        for workload, k in taken.items():
            slots = self._siblings.replicas.get(workload, Counter())
            if sum(n for slot, n in slots.items() if codes[slot] == zone) <= k:
                emptied += 1
        return -float(emptied)

    def ordered_score_funcs(self, candidates: Sequence[Candidate]) -> list[Callable[[Candidate], float]]:
        *cheapest, latest_start = DEFAULT_SCORE_FUNCS
        funcs: list[Callable[[Candidate], float]] = list(cheapest)
        pod = self._preemptor
        if pod is not None and pod.controller is not None:
            codes, counts = self._replicas_per_zone(pod)
            if counts.any():
                # Unlabelled nodes rank with the most crowded zone: nothing says they spread the workload.
                crowded = int(counts.max())

                def fewest_siblings_in_zone(c: Candidate) -> float:
                    zone = int(codes[c.slot])
                    return -float(counts[zone] if zone >= 0 else crowded)

                funcs.append(fewest_siblings_in_zone)
        funcs.append(self._zones_emptied)
        funcs.append(latest_start)
        return funcs
