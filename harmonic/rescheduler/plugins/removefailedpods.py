"""RemoveFailedPods — deschedule. Evicts pods in phase Failed, node by node, older than
``minPodLifetimeSeconds`` (default 3600), optionally only with given ``reasons`` or ``exitCodes`` and
without owners of ``excludeOwnerKinds``. Evicts by design: no placement simulation.

Args: ``namespaces``, ``labelSelector``, ``excludeOwnerKinds``, ``minPodLifetimeSeconds`` (3600),
``reasons``, ``exitCodes``, ``includingInitContainers``.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.rescheduler.args import FilteredArgs
from harmonic.rescheduler.framework import DeschedulePlugin, evict_each
from harmonic.rescheduler.plugins.common import filtered, terminated, waiting_reasons
from harmonic.rescheduler.state import container_statuses, created_at


class RemoveFailedPodsArgs(FilteredArgs):
    exclude_owner_kinds: tuple[str, ...] = ()
    min_pod_lifetime_seconds: int = Field(default=3600, ge=0)
    reasons: tuple[str, ...] = ()
    exit_codes: tuple[int, ...] = ()
    including_init_containers: bool = False


class RemoveFailedPods(DeschedulePlugin):
    NAME: ClassVar[str] = "RemoveFailedPods"
    Args = RemoveFailedPodsArgs
    args: RemoveFailedPodsArgs

    def _can_evict(self, p: Pod) -> bool:
        a = self.args
        born = created_at(p)
        age = int(self.handle.state.now - born) if born is not None else 0
        if age < a.min_pod_lifetime_seconds:
            return False
        if any(o.kind in a.exclude_owner_kinds for o in p.owners):
            return False
        statuses = container_statuses(p)
        if a.including_init_containers:
            statuses += container_statuses(p, "initContainerStatuses")
        if a.reasons:
            reasons = waiting_reasons(statuses) + [str(t.get("reason", "")) for t in terminated(statuses)]
            if p.phase == "Failed" and (p.raw.get("status") or {}).get("reason"):
                reasons.append(str(p.raw["status"]["reason"]))
            if not set(reasons) & set(a.reasons):
                return False
        codes = {t.get("exitCode") for t in terminated(statuses)}
        return not a.exit_codes or bool(codes & set(a.exit_codes))

    def deschedule(self, nodes: list[Node]) -> None:
        keep = filtered(self.handle, self.args)
        for n in nodes:
            pods = [
                p
                for p in self.handle.pods_on(n.name, terminal=True)
                if p.phase == "Failed" and keep(p) and self._can_evict(p)
            ]
            if not evict_each(self.handle, pods, self.NAME, "pod failed", move=False):
                return
