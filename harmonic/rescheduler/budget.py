"""Eviction budgets: descheduler's limits (per node, per namespace, total), a global rate, and
PodDisruptionBudgets as the Eviction API applies them.

A PDB's allowance is the ``status.disruptionsAllowed`` the disruption controller wrote; a budget without
a status (a manifest not yet seen by the controller) is computed the controller's way from ``spec``:
healthy matching pods minus the desired healthy count (``minAvailable``, or the matching pods minus
``maxUnavailable``; percentages round up). Every eviction the rescheduler makes, dry runs included,
spends the allowance, so nothing it plans can go past a budget.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harmonic.api.pdb import PodDisruptionBudget
from harmonic.api.pod import Pod


class EvictionLimitError(Exception):
    """A descheduler eviction limit was reached; ``scope`` is "node", "namespace" or "total"."""

    def __init__(self, scope: str, message: str) -> None:
        super().__init__(message)
        self.scope = scope


@dataclass(frozen=True)
class Limits:
    per_node: int | None = None
    per_namespace: int | None = None
    total: int | None = None
    #: Evictions per run (``--interval``) across every plugin; None: unlimited.
    rate: int | None = None


def _scaled(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        pct = int(value[:-1])
        exact = pct * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value)


def _healthy(p: Pod) -> bool:
    if p.phase != "Running" or p.deleting:
        return False
    for c in (p.raw.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return True


def disruptions_allowed(pdb: PodDisruptionBudget, pods: Iterable[Pod]) -> int:
    status = pdb.raw.get("status")
    if isinstance(status, Mapping) and "disruptionsAllowed" in status:
        return pdb.disruptions_allowed
    spec = pdb.raw.get("spec") or {}
    matching = [p for p in pods if pdb.covers(p) and not p.is_terminal]
    healthy = sum(1 for p in matching if _healthy(p))
    expected = len(matching)
    if spec.get("maxUnavailable") is not None:
        desired = expected - _scaled(spec["maxUnavailable"], expected, round_up=True)
    elif spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected, round_up=True)
    else:
        desired = expected
    return max(0, healthy - max(desired, 0))


class Budget:
    """What may still be evicted in this run."""

    def __init__(self, limits: Limits, pdbs: Iterable[PodDisruptionBudget], pods: Iterable[Pod]) -> None:
        pods = list(pods)
        self.limits = limits
        self.pdbs = list(pdbs)
        self.allowed = {b.key: disruptions_allowed(b, pods) for b in self.pdbs}
        self.per_node: Counter[str] = Counter()
        self.per_namespace: Counter[str] = Counter()
        self.total = 0
        #: Evictions that would have gone past a PDB had they been made (always 0: they are refused).
        self.violations = 0

    def check_limits(self, pod: Pod) -> None:
        """Raise ``EvictionLimitError`` if evicting ``pod`` would pass a limit (PodEvictor.EvictPod order)."""
        lim = self.limits
        if lim.total is not None and self.total + 1 > lim.total:
            raise EvictionLimitError("total", f"total eviction limit exceeded ({lim.total})")
        if lim.rate is not None and self.total + 1 > lim.rate:
            raise EvictionLimitError("total", f"eviction rate limit exceeded ({lim.rate} per run)")
        if pod.node_name and lim.per_node is not None and self.per_node[pod.node_name] + 1 > lim.per_node:
            raise EvictionLimitError("node", f"node eviction limit exceeded ({lim.per_node})")
        if lim.per_namespace is not None and self.per_namespace[pod.namespace] + 1 > lim.per_namespace:
            raise EvictionLimitError("namespace", f"namespace eviction limit exceeded ({lim.per_namespace})")

    def pdb_refusal(self, pod: Pod) -> str | None:
        """Why the Eviction API would refuse ``pod`` now (429 / 500), or None."""
        covering = [b for b in self.pdbs if b.covers(pod)]
        if len(covering) > 1:
            return "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
        if covering and self.allowed[covering[0].key] <= 0:
            return f"Cannot evict pod as it would violate the pod's disruption budget {covering[0].key}."
        return None

    def can_take(self, pods: Iterable[Pod]) -> str | None:
        """Whether every pod of a plan fits the remaining budgets together; the first reason if not."""
        need: Counter[str] = Counter()
        per_node: Counter[str] = Counter()
        per_ns: Counter[str] = Counter()
        pods = list(pods)
        lim = self.limits
        for p in pods:
            covering = [b for b in self.pdbs if b.covers(p)]
            if len(covering) > 1:
                return f"{p.key} is covered by more than one PodDisruptionBudget"
            for b in covering:
                need[b.key] += 1
            per_node[p.node_name] += 1
            per_ns[p.namespace] += 1
        for key, n in need.items():
            if n > self.allowed[key]:
                return (
                    f"PodDisruptionBudget {key} allows {self.allowed[key]} disruption(s), the plan needs {n}"
                )
        for cap in (lim.total, lim.rate):
            if cap is not None and self.total + len(pods) > cap:
                return f"the plan needs {len(pods)} evictions, {cap - self.total} left in this run"
        if lim.per_node is not None:
            for node, n in per_node.items():
                if self.per_node[node] + n > lim.per_node:
                    return f"node {node}: the plan needs {n} evictions past maxNoOfPodsToEvictPerNode"
        if lim.per_namespace is not None:
            for ns, n in per_ns.items():
                if self.per_namespace[ns] + n > lim.per_namespace:
                    return f"namespace {ns}: the plan needs {n} evictions past maxNoOfPodsToEvictPerNamespace"
        return None

    def record(self, pod: Pod) -> None:
        for b in self.pdbs:
            if b.covers(pod):
                if self.allowed[b.key] <= 0:
                    self.violations += 1
                self.allowed[b.key] -= 1
        if pod.node_name:
            self.per_node[pod.node_name] += 1
        self.per_namespace[pod.namespace] += 1
        self.total += 1
