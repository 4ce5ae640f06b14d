"""MakeRoomForPending — balance (Harmonic). The baseline of Kubernetes' rescheduler proposal: for a pod
pending longer than ``pendingThreshold`` that fits no node now, find a node and a set of running pods
to move so that the pending pod fits there and every moved pod fits elsewhere — fewest moves first,
then lowest priority, then least requested resources. A moved pod that fits nowhere may itself make
room by moving one more pod (a second hop, ``maxHops: 2``). The target node is then reserved for the
pending pod (the runner nominates it) before the first eviction, so evicted pods cannot take the room.

Search: with ``solver: cp-sat`` (the default, needs the ``rescheduler`` extra) an exact CP-SAT model
over the candidate nodes and the roomiest ``destinationNodes`` (see ``harmonic.rescheduler.solver``),
under ``solverTimeLimit`` per round; the greedy search below when it finds nothing or ortools is
absent, and alone with ``solver: greedy``. Candidate nodes are those where the pending pod passes every filter once its requests are
ignored (a zero-request probe through the profile's own PreFilter/Filter) and whose allocatable minus
the requests of the pods that may not move covers it (numpy over all nodes); the ``candidateNodes``
nodes with the smallest shortfall are tried, greedily choosing victims on each, and the cheapest valid
plan wins. Each plan is applied to the what-if snapshot and checked there (pending pod and every moved
pod pass PreFilter/Filter where the plan puts them) before anything is evicted, and must fit the
remaining budgets as a whole.

A run searches once per kind of pending pod: a pod that differs from one already found unresolvable (or
over budget) in the same run only in the labels its controller stamps on each instance (``job-name``,
``pod-template-hash``...) — same namespace, priority, requests, and the same nodes passing its
resource-independent filters — gets that pod's outcome without a search. A Job backlog is one search a
run, not one per pod (the exact search spends up to ``solverTimeLimit`` proving there is no plan). Pods
with pod (anti-)affinity, hard topology spread constraints, persistent volume claims or resource claims
are always searched: their own constraints can differ where their requests do not.

Args (all defaulted): ``pendingThreshold`` ("1m"), ``maxMovesPerPod`` (5), ``maxHops`` (2, greedy
only), ``candidateNodes`` (16), ``maxPlansInFlight`` (1 per run), ``solver`` ("cp-sat"),
``solverTimeLimit`` ("1s"), ``destinationNodes`` (32), ``namespaces``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from harmonic.api.node import Node
from harmonic.api.pod import Pod, clone_pod
from harmonic.framework.args import PluginArgs
from harmonic.rescheduler import solver
from harmonic.rescheduler.args import Namespaces, parse_duration
from harmonic.rescheduler.framework import BalancePlugin, Nomination
from harmonic.rescheduler.plugins.common import pod_filter
from harmonic.rescheduler.state import created_at
from harmonic.rescheduler.whatif import replacement


class MakeRoomForPendingArgs(PluginArgs):
    pending_threshold: str = "1m"
    max_moves_per_pod: int = Field(default=5, ge=1)
    max_hops: int = Field(default=2, ge=1, le=2)
    candidate_nodes: int = Field(default=16, ge=1)
    max_plans_in_flight: int = Field(default=1, ge=1)
    solver: Literal["cp-sat", "greedy"] = "cp-sat"
    solver_time_limit: str = "1s"
    destination_nodes: int = Field(default=32, ge=1)
    namespaces: Namespaces | None = None

    @field_validator("pending_threshold", "solver_time_limit")
    @classmethod
    def _duration(cls, v: str) -> str:
        parse_duration(v)
        return v


@dataclass
class Plan:
    pending: Pod
    node: str
    #: (pod, from, to) in execution order (second hops before the pod they make room for).
    moves: list[tuple[Pod, str, str]] = field(default_factory=list)

    def cost(self) -> tuple[int, int, int]:
        return (
            len(self.moves),
            sum(p.priority for p, _, _ in self.moves),
            sum(p.requests.get("cpu", 0) + p.requests.get("memory", 0) // 2**20 for p, _, _ in self.moves),
        )


#: Labels that controllers set per instance (per Job, per ReplicaSet revision, per StatefulSet ordinal):
#: pods of two Jobs stamped from one template differ in these and nothing the search looks at.
INSTANCE_LABELS = frozenset(
    {
        "controller-uid",
        "job-name",
        "batch.kubernetes.io/controller-uid",
        "batch.kubernetes.io/job-name",
        "batch.kubernetes.io/job-completion-index",
        "pod-template-hash",
        "controller-revision-hash",
        "statefulset.kubernetes.io/pod-name",
        "apps.kubernetes.io/pod-index",
    }
)


def _own_constraints(pod: Pod) -> bool:
    """Whether the pod carries constraints of its own that the search's outcome depends on beyond its
    requests and the nodes its probe passes."""
    spec = pod.spec
    affinity = spec.get("affinity") or {}
    hard_spread = any(
        (c or {}).get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
        for c in spec.get("topologySpreadConstraints") or ()
    )
    claims = any(
        "persistentVolumeClaim" in (v or {}) or "ephemeral" in (v or {}) for v in spec.get("volumes") or ()
    )
    return bool(
        affinity.get("podAffinity") or affinity.get("podAntiAffinity") or hard_spread or claims
    ) or bool(spec.get("resourceClaims"))


def probe(pod: Pod) -> Pod:
    """The pod without requests: passes exactly the filters that do not depend on free resources."""
    p = clone_pod(pod)
    p.extra = {}
    p.requests = {}
    p.node_name = ""
    p.uid = f"{pod.uid}#probe"
    return p


class MakeRoomForPending(BalancePlugin):
    NAME: ClassVar[str] = "MakeRoomForPending"
    Args = MakeRoomForPendingArgs
    args: MakeRoomForPendingArgs

    def balance(self, nodes: list[Node]) -> None:
        h, a = self.handle, self.args
        threshold = parse_duration(a.pending_threshold)
        self.movable = pod_filter(h, a.namespaces)
        allowed = {n.name for n in nodes}
        pending = [
            p
            for p in h.state.pending()
            if (created_at(p) is not None and h.state.now - (created_at(p) or 0.0) >= threshold)
            and not p.scheduling_gates
        ]
        pending.sort(key=lambda p: (-p.priority, created_at(p) or 0.0))
        started = 0
        #: Outcome (state, reason) of each kind of pod searched in vain this run.
        settled: dict[tuple[object, ...], tuple[str, str]] = {}
        for p in pending:
            if started >= a.max_plans_in_flight:
                return
            plan_id = f"{self.NAME}/{p.key}"
            w = h.whatif
            if w.place(p)[0] is not None:
                continue  # it fits now: the scheduler will place it
            kind = self.kind(p)
            if kind is not None and kind in settled:
                state, reason = settled[kind]
                h.log.plans.append((plan_id, state, reason))
                continue
            mark = w.checkpoint()
            plan = self.search(p, allowed)
            if plan is None:
                w.undo(mark)
                h.log.plans.append((plan_id, "unresolvable", "no plan within maxMovesPerPod/maxHops"))
                if kind is not None:
                    settled[kind] = ("unresolvable", f"as {p.key}: no plan within maxMovesPerPod/maxHops")
                continue
            why = h.evictor.budget.can_take([m for m, _, _ in plan.moves])
            if why:
                w.undo(mark)
                h.log.plans.append((plan_id, "over budget", why))
                if kind is not None:
                    settled[kind] = ("over budget", f"as {p.key}: {why}")
                continue
            started += 1
            h.log.nominations.append(Nomination(p, plan.node, plan_id))
            h.log.plans.append(
                (plan_id, "started", f"{p.key} -> {plan.node} moving {len(plan.moves)} pod(s)")
            )
            for m, src, dst in plan.moves:
                h.evictor.record_move(m, src, dst, self.NAME, f"make room on {src} for {p.key}", plan_id)

    def kind(self, pod: Pod) -> tuple[object, ...] | None:
        """What the search's outcome for ``pod`` depends on (module docstring); None when the pod has
        constraints of its own and is always searched."""
        if _own_constraints(pod):
            return None
        w = self.handle.whatif
        ok, _ = w.feasible(probe(pod))
        labels = frozenset((k, v) for k, v in pod.labels.items() if k not in INSTANCE_LABELS)
        need = w.snapshot.pod_vector(pod)
        return (pod.namespace, pod.priority, labels, need.tobytes(), np.sort(ok).tobytes())

    # ------------------------------------------------------------------ search
    def candidates(self, pod: Pod, allowed: set[str], exclude: set[str]) -> list[str]:
        """Nodes where ``pod`` passes the resource-independent filters and could fit if the pods that
        may move left, by increasing shortfall."""
        w = self.handle.whatif
        snap = w.snapshot
        ok, _ = w.feasible(probe(pod))
        names = snap.names()
        ok = np.asarray(
            [s for s in ok.tolist() if names[s] in allowed and names[s] not in exclude], dtype=np.int64
        )
        if len(ok) == 0:
            return []
        need = snap.pod_vector(pod)
        k = len(need)
        movable = np.zeros((len(ok), k), dtype=np.int64)
        for i, s in enumerate(ok.tolist()):
            for q in snap.pods[s].values():
                if self._may_move(q):
                    movable[i, : len(snap.pod_vector(q))] += snap.pod_vector(q)[:k]
        free = snap.allocatable[ok, :k] - snap.requested[ok, :k]
        possible = ((free + movable) >= need).all(axis=1)
        shortfall = np.clip(need - free, 0, None)
        scale = np.maximum(snap.allocatable[ok, :k], 1)
        rank = (shortfall / scale).sum(axis=1)
        order = np.flatnonzero(possible)[np.argsort(rank[possible], kind="stable")]
        return [str(names[ok[i]]) for i in order[: self.args.candidate_nodes]]

    def _may_move(self, q: Pod) -> bool:
        return (
            self.movable(q)
            and not self.handle.evictor.cooling(q)
            and q.uid not in self.handle.evictor.evicted
        )

    def search(self, pod: Pod, allowed: set[str]) -> Plan | None:
        """The cheapest valid plan found, left applied on the what-if snapshot."""
        a = self.args
        if a.solver == "cp-sat" and solver.AVAILABLE:
            found = solver.solve(
                self.handle.whatif,
                pod,
                self.candidates(pod, allowed, set()),
                self._may_move,
                probe,
                max_moves=a.max_moves_per_pod,
                destinations=a.destination_nodes,
                time_limit=parse_duration(a.solver_time_limit),
            )
            if found is not None:
                self.handle.log.plans.append(
                    (
                        f"{self.NAME}/{pod.key}",
                        "solved",
                        "optimal" if found.optimal else "feasible (time limit)",
                    )
                )
                return self.replay(Plan(pod, found.node, found.moves))
        return self.greedy(pod, allowed)

    def greedy(self, pod: Pod, allowed: set[str]) -> Plan | None:
        """The cheapest greedy plan over the candidate nodes, left applied on the what-if snapshot."""
        w = self.handle.whatif
        best: Plan | None = None
        base = w.checkpoint()
        for node in self.candidates(pod, allowed, set()):
            plan = self.plan_on(pod, node, allowed)
            if plan is not None and (best is None or plan.cost() < best.cost()):
                best = plan
            w.undo(base)
            if best is not None and len(best.moves) == 1:
                break
        if best is None:
            return None
        plan = self.plan_on(pod, best.node, allowed)
        assert plan is not None, "plans are deterministic"
        return self.replay(plan)

    def victims(self, pod: Pod, node: str) -> list[Pod] | None:
        """Pods to take off ``node`` so that ``pod`` passes the filters there: lowest priority first,
        then the smallest pod that closes the remaining shortfall, else the largest."""
        w = self.handle.whatif
        snap = w.snapshot
        slot = snap.slot_of[node]
        need = snap.pod_vector(pod)
        k = len(need)
        pool = [q for q in list(snap.pods[slot].values()) if self._may_move(q)]
        chosen: list[Pod] = []
        inv = 1.0 / np.maximum(snap.allocatable[slot, :k], 1)

        def size(q: Pod) -> float:
            return float(snap.pod_vector(q)[:k] @ inv)

        while not w.fits(pod, node):
            if not pool or len(chosen) >= self.args.max_moves_per_pod:
                return None
            short = np.clip(need - (snap.allocatable[slot, :k] - snap.requested[slot, :k]), 0, None)
            low = min(q.priority for q in pool)
            tier = [q for q in pool if q.priority == low]
            closing = [q for q in tier if (snap.pod_vector(q)[:k] >= short).all()]
            q = min(closing, key=size) if closing else max(tier, key=size)
            pool.remove(q)
            chosen.append(q)
            w.remove(q)
        return chosen

    def plan_on(self, pod: Pod, node: str, allowed: set[str]) -> Plan | None:
        w = self.handle.whatif
        chosen = self.victims(pod, node)
        if chosen is None:
            return None
        w.add(pod, node)  # reserved: the moved pods cannot land back here
        plan = Plan(pod, node)
        for v in chosen:
            repl = replacement(v)
            dest, _ = w.place(repl)
            if dest is None and self.args.max_hops >= 2:
                dest = self.second_hop(repl, {node}, allowed, plan)
            if dest is None or len(plan.moves) >= self.args.max_moves_per_pod:
                return None
            w.add(repl, dest)
            plan.moves.append((v, node, dest))
        return plan

    def second_hop(self, pod: Pod, exclude: set[str], allowed: set[str], plan: Plan) -> str | None:
        """Make room for ``pod`` by moving one pod off another node to wherever the scheduler puts it."""
        w = self.handle.whatif
        for m in self.candidates(pod, allowed, exclude):
            mark = w.checkpoint()
            moved = self.victims(pod, m)
            if moved is not None and len(moved) == 1:
                x = moved[0]
                w.add(pod, m)
                dest, _ = w.place(replacement(x), exclude={m} | exclude)
                w.remove(pod)
                if dest is not None:
                    w.add(replacement(x), dest)
                    plan.moves.append((x, m, dest))
                    return m
            w.undo(mark)
        return None

    def replay(self, plan: Plan) -> Plan:
        """Check the plan on the snapshot with every move applied: each pod passes PreFilter/Filter
        where the plan puts it (itself taken out first). The moves stay applied; a failure is a bug in
        the search and raises."""
        w = self.handle.whatif
        placed = [(plan.pending, plan.node)] + [(replacement(m), dst) for m, _, dst in plan.moves]
        for p, dst in placed:
            mark = w.checkpoint()
            w.remove(p)
            ok = w.fits(p, dst)
            w.undo(mark)
            if not ok:
                raise AssertionError(f"plan for {plan.pending.key}: {p.key} does not fit on {dst}")
        return plan
