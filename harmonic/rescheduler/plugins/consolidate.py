"""Consolidate — balance (Harmonic). Empties under-used nodes so they can be scaled down: a node whose
requested CPU and memory are both below ``utilizationThreshold`` percent of allocatable is emptied
when *every* pod on it (DaemonSet pods aside, they leave with the node) may be evicted and the
profile's scheduler, simulated pod after pod, places each replacement on another node. All or nothing:
a node that cannot be emptied entirely is left alone. Emptiest nodes first, at most
``maxNodesPerRun`` per run, never leaving fewer than ``minNodes`` nodes with pods. The plan must fit
the remaining budgets as a whole. Placement follows the profile's scoring, so use a bin-packing
profile (NodeResourcesFit ``MostAllocated``), as with HighNodeUtilization.

Args (all defaulted): ``utilizationThreshold`` (50), ``maxNodesPerRun`` (1), ``minNodes`` (1).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.framework.args import PluginArgs
from harmonic.framework.snapshot import CPU_COL, MEMORY_COL
from harmonic.rescheduler.framework import BalancePlugin
from harmonic.rescheduler.plugins.common import pod_filter
from harmonic.rescheduler.whatif import replacement


class ConsolidateArgs(PluginArgs):
    utilization_threshold: float = Field(default=50.0, ge=0, le=100)
    max_nodes_per_run: int = Field(default=1, ge=1)
    min_nodes: int = Field(default=1, ge=0)


def _daemon(p: Pod) -> bool:
    return any(o.kind == "DaemonSet" for o in p.owners)


class Consolidate(BalancePlugin):
    NAME: ClassVar[str] = "Consolidate"
    Args = ConsolidateArgs
    args: ConsolidateArgs

    def balance(self, nodes: list[Node]) -> None:
        h, a = self.handle, self.args
        w = h.whatif
        snap = w.snapshot
        slots = np.asarray([snap.slot_of[n.name] for n in nodes], dtype=np.int64)
        alloc = np.maximum(snap.allocatable[slots][:, [CPU_COL, MEMORY_COL]], 1)
        pct = snap.requested[slots][:, [CPU_COL, MEMORY_COL]] * 100.0 / alloc
        used = np.array(
            [any(not _daemon(p) for p in snap.pods[s].values()) for s in slots.tolist()], dtype=bool
        )
        under = used & (pct < a.utilization_threshold).all(axis=1)
        order = np.flatnonzero(under)[np.argsort(pct[under].sum(axis=1), kind="stable")]
        keep = pod_filter(h)
        busy = int(used.sum())
        emptied = 0
        for i in order.tolist():
            if emptied >= a.max_nodes_per_run or busy - 1 < a.min_nodes:
                return
            node = nodes[i].name
            plan_id = f"{self.NAME}/{node}"
            pods = [p for p in h.pods_on(node) if not _daemon(p)]
            if not all(keep(p) and not h.evictor.cooling(p) for p in pods):
                h.log.plans.append((plan_id, "skipped", "a pod on the node may not be evicted"))
                continue
            mark = w.checkpoint()
            moves = self._empty(node, pods)
            if moves is None:
                w.undo(mark)
                h.log.plans.append((plan_id, "skipped", "not every pod would be placed on another node"))
                continue
            why = h.evictor.budget.can_take(pods)
            if why:
                w.undo(mark)
                h.log.plans.append((plan_id, "over budget", why))
                continue
            h.log.plans.append((plan_id, "started", f"empty {node}: {len(moves)} pod(s)"))
            for p, dst in moves:
                h.evictor.record_move(p, node, dst, self.NAME, f"empty under-used node {node}", plan_id)
            emptied += 1
            busy -= 1

    def _empty(self, node: str, pods: list[Pod]) -> list[tuple[Pod, str]] | None:
        w = self.handle.whatif
        moves = []
        for p in sorted(pods, key=lambda p: -sum(p.requests.values())):
            w.remove(p)
            repl = replacement(p)
            dest, _ = w.place(repl)
            if dest is None or dest == node:
                return None
            w.add(repl, dest)
            moves.append((p, dest))
        return moves
