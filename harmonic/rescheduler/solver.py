"""MakeRoomForPending's exact search: a CP-SAT model over which pods leave which nodes.

One model per pending pod. Variables: ``y[t]`` — the pending pod goes to candidate node ``t`` (exactly
one); ``x[v, d]`` — movable pod ``v`` moves to node ``d`` (at most one destination each, and only to
nodes where it passes the resource-independent filters, found with the zero-request probe). Per node
and resource, what stays plus what arrives (the pending pod included) fits allocatable. Moves chain
freely, so multi-hop plans (A leaves n2 so that B can leave n1 for n2, making room on n1) are found
as readily as single moves. Objective, lexicographic by weights: fewest moves, then lowest-priority
pods (by priority rank), then least requested resources.

The model knows resources and the probe's pairwise feasibility only; inter-pod constraints between
moved pods are not in it. So each solution is then *executed* on the what-if snapshot as the cluster
would run it — the pending pod reserved on its node, moves in dependency order, each replacement placed
where the profile's scheduler puts it — and kept only if every pod lands and the pending pod fits. A
solution that fails is cut off and the model re-solved (a few rounds); callers fall back to greedy.

The model is restricted to the candidate targets and the ``destinations`` nodes with most free room,
and the pods on those, so its size does not grow with the cluster.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from harmonic.api.pod import Pod
from harmonic.rescheduler.whatif import WhatIf, replacement


#: The optional extra (pip install 'harmonic[rescheduler]'). Imported only when a search runs: ortools
#: brings pandas with it, over a second of start-up that every `harmonic` command would pay.
def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a finder that refuses the name outright (as an environment without it may)
        return False


AVAILABLE = _installed("ortools")
_MOVE = 1_000_000


@dataclass
class Solution:
    node: str
    #: (pod, from, to) in execution order.
    moves: list[tuple[Pod, str, str]]
    optimal: bool


def solve(
    w: WhatIf,
    pending: Pod,
    targets: Sequence[str],
    may_move: Callable[[Pod], bool],
    probe: Callable[[Pod], Pod],
    *,
    max_moves: int,
    destinations: int = 32,
    time_limit: float = 1.0,
    rounds: int = 3,
) -> Solution | None:
    """The cheapest plan found within ``time_limit`` seconds per round, left applied on ``w``; None
    when there is none (or ortools is not installed)."""
    if not AVAILABLE or not targets:
        return None
    from ortools.sat.python import cp_model

    snap = w.snapshot
    names = snap.names()
    k = len(snap.pod_vector(pending))
    order = snap.order
    free = (snap.allocatable[order, :k] - snap.requested[order, :k]) / np.maximum(
        snap.allocatable[order, :k], 1
    )
    roomy = [
        str(names[s]) for s in order[np.argsort(-free.sum(axis=1), kind="stable")][:destinations].tolist()
    ]
    nodes = list(dict.fromkeys([*targets, *roomy]))
    slot = {n: snap.slot_of[n] for n in nodes}
    pods = [(q, n) for n in nodes for q in snap.pods[slot[n]].values() if may_move(q)]
    allowed: dict[str, list[str]] = {}
    slots = np.asarray([slot[n] for n in nodes], dtype=np.int64)
    shape_cache: dict[str, list[str]] = {}
    for q, src in pods:
        ctrl = q.controller
        key = f"{ctrl.uid}" if ctrl is not None else q.uid
        if key not in shape_cache:
            ok, _ = w.feasible(probe(q), slots)
            shape_cache[key] = [str(names[s]) for s in ok.tolist()]
        allowed[q.uid] = [d for d in shape_cache[key] if d != src]
    prio_rank = {p: i for i, p in enumerate(sorted({q.priority for q, _ in pods}))}
    scale = np.maximum(snap.allocatable[slots, :k].max(axis=0), 1)

    m = cp_model.CpModel()
    y = {t: m.new_bool_var(f"y_{t}") for t in targets}
    m.add_exactly_one(y.values())
    x: dict[tuple[int, str], cp_model.IntVar] = {}
    for i, (q, _) in enumerate(pods):
        for d in allowed[q.uid]:
            x[i, d] = m.new_bool_var(f"x_{i}_{d}")
        if allowed[q.uid]:
            m.add_at_most_one(x[i, d] for d in allowed[q.uid])
    req = [snap.pod_vector(q)[:k].astype(np.int64) for q, _ in pods]
    need = snap.pod_vector(pending)[:k].astype(np.int64)
    for n in nodes:
        s = slot[n]
        cap = snap.allocatable[s, :k] - snap.requested[s, :k]
        for r in range(k):
            terms = []
            for i, (_, src) in enumerate(pods):
                if not req[i][r]:
                    continue
                if src == n:
                    terms += [-int(req[i][r]) * x[i, d] for d in allowed[pods[i][0].uid]]
                elif (i, n) in x:
                    terms.append(int(req[i][r]) * x[i, n])
            if n in y and need[r]:
                terms.append(int(need[r]) * y[n])
            if terms:
                m.add(sum(terms) <= int(cap[r]))
    m.add(sum(x.values()) <= max_moves)
    cost = []
    for (i, _d), var in x.items():
        q = pods[i][0]
        size = int(1000 * float((snap.pod_vector(q)[:k] / scale).sum()))
        cost.append((_MOVE + 10_000 * prio_rank[q.priority] + size) * var)
    m.minimize(sum(cost))

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    for _ in range(rounds):
        status = solver.solve(m)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None
        target = next(t for t in targets if solver.value(y[t]))
        chosen = [(i, d) for (i, d), var in x.items() if solver.value(var)]
        moves = [(pods[i][0], pods[i][1], d) for i, d in chosen]
        executed = execute(w, pending, target, moves)
        if executed is not None:
            return Solution(target, executed, status == cp_model.OPTIMAL)
        # Cut this exact choice off and ask again.
        m.add(sum(x[c] for c in chosen) + y[target] <= len(chosen))
    return None


def dependency_order(moves: list[tuple[Pod, str, str]]) -> list[tuple[Pod, str, str]] | None:
    """Moves so that every move *off* a node precedes moves *onto* it; None on a cycle (a swap)."""
    pending = list(moves)
    out: list[tuple[Pod, str, str]] = []
    while pending:
        leaving = {src for _, src, _ in pending}
        ready = [mv for mv in pending if mv[2] not in leaving]
        if not ready:
            return None
        out += ready
        pending = [mv for mv in pending if mv not in ready]
    return out


def execute(
    w: WhatIf, pending: Pod, target: str, moves: list[tuple[Pod, str, str]]
) -> list[tuple[Pod, str, str]] | None:
    """Run the plan as the cluster would: the pending pod reserved on ``target``, then each pod evicted
    in dependency order and its replacement placed where the scheduler puts it. The result (actual
    destinations) stays applied; None, with nothing applied, if a pod lands nowhere or the pending pod
    still does not fit."""
    ordered = dependency_order(moves)
    if ordered is None:
        return None
    mark = w.checkpoint()
    w.add(pending, target)
    done: list[tuple[Pod, str, str]] = []
    for q, src, _ in ordered:
        w.remove(q)
        repl = replacement(q)
        dest, _ = w.place(repl)
        if dest is None or dest == src:
            w.undo(mark)
            return None
        w.add(repl, dest)
        done.append((q, src, dest))
    w.remove(pending)
    ok = w.fits(pending, target)
    w.add(pending, target)
    if not ok:
        w.undo(mark)
        return None
    return done
