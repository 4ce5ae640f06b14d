"""RemovePodsViolatingNodeTaints — deschedule. Evicts pods that do not tolerate a NoSchedule taint of
their node (PreferNoSchedule too with ``includePreferNoSchedule``), limited to ``includedTaints`` or
minus ``excludedTaints`` (``key`` or ``key=value``). A move: the replacement must land elsewhere.

Args: ``namespaces``, ``labelSelector``, ``includePreferNoSchedule`` (false), ``excludedTaints``,
``includedTaints`` (only one of the two).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import model_validator

from harmonic.api.node import Node
from harmonic.api.taints import NO_SCHEDULE, PREFER_NO_SCHEDULE, Taint, tolerated
from harmonic.rescheduler.args import FilteredArgs
from harmonic.rescheduler.framework import DeschedulePlugin, evict_each
from harmonic.rescheduler.plugins.common import filtered


class RemovePodsViolatingNodeTaintsArgs(FilteredArgs):
    include_prefer_no_schedule: bool = False
    excluded_taints: tuple[str, ...] = ()
    included_taints: tuple[str, ...] | None = None

    @model_validator(mode="after")
    def _one(self) -> RemovePodsViolatingNodeTaintsArgs:
        if self.excluded_taints and self.included_taints:
            raise ValueError("either includedTaints or excludedTaints can be set, but not both")
        return self


def _named(taint: Taint, names: tuple[str, ...]) -> bool:
    return taint.key in names or (taint.value != "" and f"{taint.key}={taint.value}" in names)


class RemovePodsViolatingNodeTaints(DeschedulePlugin):
    NAME: ClassVar[str] = "RemovePodsViolatingNodeTaints"
    Args = RemovePodsViolatingNodeTaintsArgs
    args: RemovePodsViolatingNodeTaintsArgs

    def _counts(self, t: Taint) -> bool:
        a = self.args
        effects = (NO_SCHEDULE, PREFER_NO_SCHEDULE) if a.include_prefer_no_schedule else (NO_SCHEDULE,)
        if t.effect not in effects or _named(t, a.excluded_taints):
            return False
        return a.included_taints is None or _named(t, a.included_taints)

    def deschedule(self, nodes: list[Node]) -> None:
        keep = filtered(self.handle, self.args)
        for n in nodes:
            taints = [t for t in n.taints if self._counts(t)]
            if not taints:
                continue
            pods = [
                p
                for p in self.handle.pods_on(n.name)
                if keep(p) and not all(tolerated(p.tolerations, t) for t in taints)
            ]
            if not evict_each(
                self.handle, pods, self.NAME, "does not tolerate a taint of its node", move=True
            ):
                return
