"""RestoreZoneSpread — balance. Gives back to a workload the zone spread a failure took from it: when
every running replica of one controller (at least ``minReplicas`` of them) sits in a single zone while
the cluster's nodes span several, one replica is moved, but only if the scheduler would put its
replacement in another zone. That happens after a zone outage: the replicas evicted from the failed
zone are recreated in the zones left, often beside their siblings, and nothing moves them back once
the zone returns (the default spreading constraints, zone ``maxSkew`` 5, do not count a workload of two
replicas in one zone as skewed, so RemovePodsViolatingTopologySpreadConstraint leaves it alone).

One replica per workload per run, the youngest (the one the outage recreated), then the next run looks
again. Disruption budgets, the evictor's limits and the move cool-down apply as to every move.

Args: ``namespaces``, ``labelSelector``, ``minReplicas`` (2), ``zoneLabel``
(``topology.kubernetes.io/zone``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import ClassVar

from pydantic import Field

from harmonic.api.node import ZONE_LABEL, Node
from harmonic.api.pod import Pod
from harmonic.rescheduler.args import FilteredArgs
from harmonic.rescheduler.budget import EvictionLimitError
from harmonic.rescheduler.framework import BalancePlugin
from harmonic.rescheduler.plugins.common import pod_filter
from harmonic.rescheduler.state import created_at
from harmonic.rescheduler.whatif import replacement

Workload = tuple[str, str, str]


class RestoreZoneSpreadArgs(FilteredArgs):
    min_replicas: int = Field(default=2, ge=2)
    zone_label: str = Field(default=ZONE_LABEL, min_length=1)


class RestoreZoneSpread(BalancePlugin):
    NAME: ClassVar[str] = "RestoreZoneSpread"
    Args = RestoreZoneSpreadArgs
    args: RestoreZoneSpreadArgs

    def balance(self, nodes: list[Node]) -> None:
        label = self.args.zone_label
        zone_of = {n.name: n.labels[label] for n in nodes if label in n.labels}
        if len(set(zone_of.values())) < 2:
            return
        keep = pod_filter(self.handle, self.args.namespaces, self.args.label_selector, pre_eviction=False)
        replicas: dict[Workload, list[Pod]] = defaultdict(list)
        for n in nodes:
            for p in self.handle.pods_on(n.name):
                if p.owners and not p.deleting and keep(p):
                    owner = p.owners[0]
                    replicas[(p.namespace, owner.kind, owner.name)].append(p)
        ev = self.handle.evictor
        for (namespace, kind, name), pods in sorted(replicas.items()):
            # A replica on a node without the zone label leaves the workload's zones unknown: skip it.
            zones = {zone_of.get(p.node_name, "") for p in pods}
            if len(pods) < self.args.min_replicas or len(zones) != 1 or "" in zones:
                continue
            (zone,) = zones
            for p in sorted(pods, key=lambda p: (created_at(p) or 0.0, p.name), reverse=True):
                if not ev.pre_eviction_filter(p) or not self._lands_elsewhere(p, zone, zone_of):
                    continue
                try:
                    moved = ev.evict(
                        p,
                        self.NAME,
                        f"all {len(pods)} running replicas of {kind} {namespace}/{name} are in zone {zone}",
                        move=True,
                    )
                except EvictionLimitError as e:
                    if e.scope == "total":
                        return
                    continue
                if moved:
                    break

    def _lands_elsewhere(self, pod: Pod, zone: str, zone_of: dict[str, str]) -> bool:
        """Whether the scheduler would put the pod's replacement in a zone other than ``zone`` (asked of
        the what-if, then undone: the evictor places it for real)."""
        w = self.handle.whatif
        mark = w.checkpoint()
        try:
            w.remove(pod)
            dest, _ = w.place(replacement(pod))
        finally:
            w.undo(mark)
        return dest is not None and zone_of.get(dest, zone) != zone
