"""RemovePodsViolatingTopologySpreadConstraint — balance. For every distinct topology spread
constraint of the evictable pods of a namespace (``DoNotSchedule`` ones by default, ``ScheduleAnyway``
too when listed in ``constraints``), counts matching pods per domain over the eligible nodes (node
inclusion policies honoured) and, where the skew passes ``maxSkew``, moves pods from the domains
above the ideal average towards those below it (descheduler's ``balanceDomains``). With
``topologyBalanceNodeFit`` (default true) a pod is chosen only if it fits a node of a domain below
the average — checked with the profile's own PreFilter/Filter plugins. A move: the replacement must
land on another node, where the scheduler (PodTopologySpread included) would put it.

Args: ``namespaces``, ``labelSelector``, ``constraints`` (default ``[DoNotSchedule]``),
``topologyBalanceNodeFit`` (true).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import ClassVar, Literal

import numpy as np
from pydantic import field_validator

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.api.taints import NO_EXECUTE, NO_SCHEDULE, tolerated
from harmonic.plugins.podtopologyspread.constraints import HONOR, Constraint, pod_constraints
from harmonic.rescheduler.args import FilteredArgs
from harmonic.rescheduler.budget import EvictionLimitError
from harmonic.rescheduler.framework import BalancePlugin
from harmonic.rescheduler.plugins.common import pod_filter
from harmonic.rescheduler.plugins.nodeaffinity import matches_required
from harmonic.rescheduler.whatif import replacement


class RemovePodsViolatingTopologySpreadConstraintArgs(FilteredArgs):
    constraints: tuple[Literal["DoNotSchedule", "ScheduleAnyway"], ...] = ("DoNotSchedule",)
    topology_balance_node_fit: bool = True

    @field_validator("constraints", mode="before")
    @classmethod
    def _unset(cls, v: object) -> object:
        # descheduler defaults a nil list (``constraints:`` with no value) as an absent one.
        return ("DoNotSchedule",) if v is None else v


#: A constraint with the owning pod's placement restrictions its inclusion policies honour.
Spread = tuple[Constraint, Pod | None, Pod | None]


def _key(s: Spread) -> tuple[object, ...]:
    c, aff, tol = s
    return (
        c,
        None if aff is None else (tuple(sorted(aff.node_selector.items())), repr(aff.required_affinity)),
        None if tol is None else frozenset(tol.tolerations),
    )


def _eligible(s: Spread, n: Node) -> bool:
    _, aff, tol = s
    if aff is not None and not matches_required(aff, n):
        return False
    if tol is not None:
        return all(tolerated(tol.tolerations, t) for t in n.taints if t.effect in (NO_SCHEDULE, NO_EXECUTE))
    return True


def _has_selector_or_affinity(p: Pod) -> bool:
    return "nodeSelector" in p.spec or bool((p.spec.get("affinity") or {}).get("nodeAffinity"))


def _domain_order(p: Pod) -> tuple[int, int]:
    # sortDomains: pods with a node selector or affinity first, then by priority ascending (pods
    # without one count lowest); balanceDomains evicts from the end of the list.
    has = "priority" in p.spec and p.spec.get("priority") is not None
    return (0 if _has_selector_or_affinity(p) else 1, p.priority if has else -(2**31))


class RemovePodsViolatingTopologySpreadConstraint(BalancePlugin):
    NAME: ClassVar[str] = "RemovePodsViolatingTopologySpreadConstraint"
    Args = RemovePodsViolatingTopologySpreadConstraintArgs
    args: RemovePodsViolatingTopologySpreadConstraintArgs

    def balance(self, nodes: list[Node]) -> None:
        keep = pod_filter(self.handle, self.args.namespaces, self.args.label_selector, pre_eviction=False)
        node_map = {n.name: n for n in nodes}
        pods = [p for n in nodes for p in self.handle.pods_on(n.name) if keep(p)]
        by_ns: dict[str, list[Pod]] = defaultdict(list)
        for p in pods:
            by_ns[p.namespace].append(p)
        chosen: dict[str, Pod] = {}
        for ns_pods in by_ns.values():
            spreads: dict[tuple[object, ...], Spread] = {}
            for p in ns_pods:
                for action in self.args.constraints:
                    for c in pod_constraints(p, action):
                        s = (
                            c,
                            p if c.node_affinity_policy == HONOR else None,
                            p if c.node_taints_policy == HONOR else None,
                        )
                        spreads.setdefault(_key(s), s)
            for s in spreads.values():
                c = s[0]
                domains: dict[str, list[Pod]] = {
                    n.labels[c.topology_key]: []
                    for n in nodes
                    if c.topology_key in n.labels and _eligible(s, n)
                }
                total = 0
                for p in ns_pods:
                    n = node_map.get(p.node_name)
                    if (
                        p.deleting
                        or n is None
                        or c.topology_key not in n.labels
                        or not c.selector.matches(p.labels)
                    ):
                        continue
                    domains.setdefault(n.labels[c.topology_key], []).append(p)
                    total += 1
                sizes = [len(v) for v in domains.values()]
                if not sizes or max(sizes) - min(sizes) <= c.max_skew:
                    continue
                self._balance_domains(chosen, s, domains, total, nodes)
        self._evict(chosen)

    def _balance_domains(
        self, chosen: dict[str, Pod], s: Spread, domains: dict[str, list[Pod]], total: int, nodes: list[Node]
    ) -> None:
        c = s[0]
        ideal = total / len(domains)
        ordered = sorted(
            ((k, sorted(v, key=_domain_order)) for k, v in domains.items()), key=lambda kv: len(kv[1])
        )
        eligible = [n for n in nodes if _eligible(s, n) and c.topology_key in n.labels]
        below = {k for k, v in ordered if len(v) < ideal}
        targets = [n.name for n in eligible if n.labels[c.topology_key] in below]
        i, j = 0, len(ordered) - 1
        while i < j:
            if len(ordered[j][1]) <= ideal:
                j -= 1
            skew = len(ordered[j][1]) - len(ordered[i][1])
            if skew <= c.max_skew:
                i += 1
                continue
            above_avg = math.ceil(len(ordered[j][1]) - ideal)
            below_avg = math.ceil(ideal - len(ordered[i][1]))
            move = int(min(above_avg, below_avg, math.ceil((skew - c.max_skew) / 2)))
            if move <= 0:
                i += 1
                continue
            src = ordered[j][1]
            src.sort(key=lambda p: self._fits_below(p, targets))  # stable: pods that fit go last
            leaving = src[len(src) - move :]
            for p in leaving:
                if self.args.topology_balance_node_fit and not self._fits_below(p, targets):
                    continue
                chosen[p.uid] = p
            del src[len(src) - move :]
            ordered[i][1].extend(leaving)

    def _fits_below(self, p: Pod, targets: list[str]) -> bool:
        w = self.handle.whatif
        slots = np.asarray(
            [w.snapshot.slot_of[n] for n in targets if n != p.node_name and n in w.snapshot.slot_of],
            dtype=np.int64,
        )
        if len(slots) == 0:
            return False
        ok, _ = w.feasible(replacement(p), slots)
        return len(ok) > 0

    def _evict(self, chosen: dict[str, Pod]) -> None:
        ev = self.handle.evictor
        full: set[str] = set()
        for p in sorted(chosen.values(), key=lambda p: p.key):
            if p.node_name in full or not ev.pre_eviction_filter(p):
                continue
            try:
                ev.evict(
                    p,
                    self.NAME,
                    "topology spread skew above maxSkew",
                    move=True,
                    # descheduler: with topologyBalanceNodeFit false a pod that fits nowhere is
                    # evicted all the same, so that the autoscaler adds a node for it
                    unplaceable_ok=not self.args.topology_balance_node_fit,
                )
            except EvictionLimitError as e:
                if e.scope == "total":
                    return
                if e.scope == "node":
                    full.add(p.node_name)
