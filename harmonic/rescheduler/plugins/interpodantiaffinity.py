"""RemovePodsViolatingInterPodAntiAffinity — deschedule. Evicts pods whose own required pod
anti-affinity is violated on their node (lowest priority first; an evicted pod no longer counts
against the others). The check is the profile's InterPodAffinity filter itself, run for the pod's
replacement on its own node with the pod removed: the rescheduler and the scheduler cannot disagree.
A move: the replacement must land elsewhere.

Args: ``namespaces``, ``labelSelector``.
"""

from __future__ import annotations

from typing import ClassVar

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.plugins.interpodaffinity import ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH
from harmonic.rescheduler.args import FilteredArgs
from harmonic.rescheduler.budget import EvictionLimitError
from harmonic.rescheduler.framework import DeschedulePlugin
from harmonic.rescheduler.plugins.common import filtered, priority_low_to_high
from harmonic.rescheduler.whatif import replacement


class RemovePodsViolatingInterPodAntiAffinityArgs(FilteredArgs):
    pass


def has_required_anti_affinity(p: Pod) -> bool:
    anti = (p.spec.get("affinity") or {}).get("podAntiAffinity") or {}
    return bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))


class RemovePodsViolatingInterPodAntiAffinity(DeschedulePlugin):
    NAME: ClassVar[str] = "RemovePodsViolatingInterPodAntiAffinity"
    Args = RemovePodsViolatingInterPodAntiAffinityArgs
    args: RemovePodsViolatingInterPodAntiAffinityArgs

    def violates(self, p: Pod, node: str) -> bool:
        w = self.handle.whatif
        mark = w.checkpoint()
        w.remove(p)
        try:
            return ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH in w.reasons_on(replacement(p), node)
        finally:
            w.undo(mark)

    def deschedule(self, nodes: list[Node]) -> None:
        keep = filtered(self.handle, self.args)
        for n in nodes:
            pods = priority_low_to_high(
                p for p in self.handle.pods_on(n.name) if keep(p) and has_required_anti_affinity(p)
            )
            for p in pods:
                if not self.violates(p, n.name):
                    continue
                try:
                    self.handle.evictor.evict(p, self.NAME, "violates its pod anti-affinity", move=True)
                except EvictionLimitError as e:
                    if e.scope == "total":
                        return
                    if e.scope == "node":
                        break
