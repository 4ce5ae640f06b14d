"""RemovePodsViolatingNodeAffinity — deschedule. For ``requiredDuringSchedulingIgnoredDuringExecution``:
evicts pods whose node no longer matches their node selector / required node affinity, when the pod
fits some node. For ``preferredDuringSchedulingIgnoredDuringExecution``: evicts pods for which another
node that fits has a higher sum of matching preferred-term weights. A move: the replacement must land
elsewhere (Harmonic checks "fits some node" with the scheduler's own filters).

Args: ``namespaces``, ``labelSelector``, ``nodeAffinityType`` (required, a list of the two types).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import field_validator

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.rescheduler.args import FilteredArgs
from harmonic.rescheduler.framework import DeschedulePlugin, evict_each
from harmonic.rescheduler.plugins.common import filtered
from harmonic.rescheduler.whatif import replacement

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


class RemovePodsViolatingNodeAffinityArgs(FilteredArgs):
    node_affinity_type: tuple[
        Literal[
            "requiredDuringSchedulingIgnoredDuringExecution",
            "preferredDuringSchedulingIgnoredDuringExecution",
        ],
        ...,
    ] = ()

    @field_validator("node_affinity_type")
    @classmethod
    def _set(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v:
            raise ValueError("nodeAffinityType needs to be set")
        return v


def matches_required(pod: Pod, node: Node) -> bool:
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    return pod.required_affinity is None or pod.required_affinity.matches(node.labels, node.name)


def preferred_weight(pod: Pod, node: Node) -> int:
    return sum(
        t.weight
        for t in pod.preferred_affinity
        if t.term is not None and t.term.matches(node.labels, node.name)
    )


class RemovePodsViolatingNodeAffinity(DeschedulePlugin):
    NAME: ClassVar[str] = "RemovePodsViolatingNodeAffinity"
    Args = RemovePodsViolatingNodeAffinityArgs
    args: RemovePodsViolatingNodeAffinityArgs

    def _fitting_nodes(self, pod: Pod, nodes: list[Node]) -> list[Node]:
        w = self.handle.whatif
        ok, _ = w.feasible(replacement(pod))
        names = {str(w.snapshot.names()[s]) for s in ok.tolist()}
        return [n for n in nodes if n.name in names]

    def deschedule(self, nodes: list[Node]) -> None:
        keep = filtered(self.handle, self.args)
        for kind in self.args.node_affinity_type:
            for n in nodes:
                pods = []
                for p in self.handle.pods_on(n.name):
                    if not keep(p):
                        continue
                    if kind == REQUIRED:
                        if p.required_affinity is None or matches_required(p, n):
                            continue
                        if not self._fitting_nodes(p, nodes):
                            continue
                        pods.append(p)
                    else:
                        if not p.preferred_affinity:
                            continue
                        fitting = self._fitting_nodes(p, nodes)
                        best = max((preferred_weight(p, m) for m in fitting), default=0)
                        if fitting and best > preferred_weight(p, n):
                            pods.append(p)
                why = (
                    "node no longer matches the pod's required node affinity"
                    if kind == REQUIRED
                    else "a node it prefers more has room"
                )
                if not evict_each(self.handle, pods, self.NAME, why, move=True):
                    return
