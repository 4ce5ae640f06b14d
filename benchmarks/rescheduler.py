"""MakeRoomForPending on fragmented clusters: pods resolved, moves against the optimum, time per plan,
memory; descheduler's LowNodeUtilization on the same cluster beside it.

    python benchmarks/rescheduler.py --nodes 1000 --pending 20
    python benchmarks/rescheduler.py --small 40          # 40 small clusters against exhaustive search
    python benchmarks/rescheduler.py --backlog 10 --nodes 100   # 10 Jobs' pods pending, no plan exists

Fragmentation: every node (4 CPU, 16 GiB) is filled by a random mix of 1-, 2- and 3-CPU pods of a few
ReplicaSets to exactly 3 CPU, so each node has 1 CPU free and a 2-CPU pending pod fits nowhere although
the free capacity exists in aggregate. ``--small`` builds clusters of 3-5 nodes with random sizes and
compares the plan's moves with an exhaustive search over every set of up to 3 moves (resources only)
and with CP-SAT without a time limit. ``--backlog`` fills every node (8 CPU) to 7.5 CPU with 3-, 3- and
1.5-CPU pods and leaves 4 pods of each Job pending at 2 CPU: no plan exists (nothing moved fits
anywhere), which the exact search can take its whole time limit to prove; it prints how many searches
one run makes and its CPU time. Times are CPU seconds of this process (``time.process_time``):
the machine is shared, so wall time says little. Figures are printed, never assumed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import resource
import time
from typing import Any

from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.rescheduler.policy import load_policy
from harmonic.rescheduler.runner import RunOptions, run_once
from harmonic.rescheduler.state import ClusterState, from_manifests

NOW = 1_800_000_000.0
REGISTRY = default_registry()
PROFILE = load_config(None, REGISTRY).profiles[0]


def node(name: str, cpu: int) -> dict[str, Any]:
    alloc = {"cpu": str(cpu), "memory": "16Gi", "pods": "110"}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": alloc},
    }


def pod(
    name: str,
    cpu: int | str,
    on: str = "",
    owner: str = "",
    created: str = "2026-01-01T00:00:00Z",
    job: str = "",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": name, "creationTimestamp": created}
    if owner:
        meta["ownerReferences"] = [{"kind": "ReplicaSet", "name": owner, "uid": owner, "controller": True}]
    if job:
        # as the Job controller stamps them: one template, per-Job labels
        meta["labels"] = {"app": "etl", "job-name": job, "batch.kubernetes.io/job-name": job}
        meta["ownerReferences"] = [{"kind": "Job", "name": job, "uid": job, "controller": True}]
    spec: dict[str, Any] = {
        "containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"cpu": str(cpu), "memory": "1Gi"}}}
        ]
    }
    if on:
        spec["nodeName"] = on
    return {
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running" if on else "Pending"},
    }


def fragmented(nodes: int, pending: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objs = [node(f"n{i}", 4) for i in range(nodes)]
    k = 0
    for i in range(nodes):
        left = 3
        while left:
            c = rng.choice([s for s in (1, 2, 3) if s <= left])
            objs.append(pod(f"p{k}", c, f"n{i}", owner=f"rs{k % 50}"))
            left -= c
            k += 1
    objs += [pod(f"pending{j}", 2) for j in range(pending)]
    return objs


def backlog(nodes: int, jobs: int) -> list[dict[str, Any]]:
    objs = [node(f"n{i}", 8) for i in range(nodes)]
    for i in range(nodes):
        for k, c in enumerate(("3", "3", "1500m")):
            objs.append(pod(f"p{i}-{k}", c, f"n{i}", owner=f"rs{(i + k) % 50}"))
    objs += [pod(f"etl-{j}-{k}", 2, job=f"etl-{j}") for j in range(jobs) for k in range(4)]
    return objs


def bench_backlog(nodes: int, jobs: int) -> dict[str, Any]:
    objs = backlog(nodes, jobs)
    out: dict[str, Any] = {"nodes": nodes, "jobs": jobs, "pending": 4 * jobs}
    for solver in ("cp-sat", "greedy"):
        args = {"solver": solver, "pendingThreshold": "0s"}
        result, secs, _ = run(objs, "MakeRoomForPending", args)
        out[solver] = {
            "resolved": len(result.log.nominations),
            "searches": sum(1 for _, _, why in result.log.plans if not why.startswith("as ")),
            "settled_without_search": sum(1 for _, _, why in result.log.plans if why.startswith("as ")),
            "cpu_seconds_per_run": round(secs, 2),
        }
    return out


def small(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    n = rng.randint(3, 5)
    caps = [rng.randint(3, 6) for _ in range(n)]
    objs = [node(f"n{i}", c) for i, c in enumerate(caps)]
    k = 0
    for i, c in enumerate(caps):
        left = c - rng.randint(0, 2)
        while left > 0:
            s = rng.randint(1, min(3, left))
            objs.append(pod(f"p{k}", s, f"n{i}", owner=f"rs{k}"))
            left -= s
            k += 1
    objs.append(pod("pending", rng.randint(2, 4)))
    return objs


def policy(plugin: str, args: dict[str, Any]) -> Any:
    return load_policy(
        {
            "apiVersion": "descheduler/v1alpha2",
            "kind": "DeschedulerPolicy",
            "profiles": [
                {
                    "name": "bench",
                    "pluginConfig": [{"name": plugin, "args": args}],
                    "plugins": {"balance": {"enabled": [plugin]}},
                }
            ],
        }
    )


def run(objs: list[dict[str, Any]], plugin: str, args: dict[str, Any]) -> tuple[Any, float, ClusterState]:
    state = from_manifests(objs, now=NOW)
    t0 = time.process_time()
    result = run_once(policy(plugin, args), state, PROFILE, REGISTRY, options=RunOptions())
    return result, time.process_time() - t0, state


def exhaustive_min_moves(state: ClusterState, max_moves: int = 3) -> int | None:
    """Fewest moves (resources only, CPU) that let the pending pod fit on some node, every moved pod
    fitting on another node; None when no plan of up to ``max_moves`` exists."""
    (p,) = state.pending()
    need = p.requests.get("cpu", 0)
    cap = {n.name: n.allocatable.get("cpu", 0) for n in state.nodes}
    pods = [(q, q.node_name, q.requests.get("cpu", 0)) for q in state.pods if q.node_name]
    used0 = {n: sum(c for _, m, c in pods if m == n) for n in cap}
    for t in cap:
        if used0[t] + need <= cap[t]:
            return 0
    for k in range(1, max_moves + 1):
        for chosen in itertools.combinations(range(len(pods)), k):
            for dests in itertools.product(cap, repeat=k):
                if any(dests[i] == pods[c][1] for i, c in enumerate(chosen)):
                    continue
                used = dict(used0)
                for i, c in enumerate(chosen):
                    used[pods[c][1]] -= pods[c][2]
                    used[dests[i]] += pods[c][2]
                if any(used[n] > cap[n] for n in cap):
                    continue
                if any(used[t] + need <= cap[t] for t in cap):
                    return k
    return None


def bench_small(cases: int) -> dict[str, Any]:
    rows = []
    for seed in range(cases):
        objs = small(seed)
        state = from_manifests(objs, now=NOW)
        best = exhaustive_min_moves(state)
        out: dict[str, Any] = {"seed": seed, "exhaustive": best}
        for solver, limit in (("cp-sat", "1s"), ("cp-sat-unlimited", "1h"), ("greedy", "1s")):
            args = {
                "solver": "greedy" if solver == "greedy" else "cp-sat",
                "solverTimeLimit": limit,
                "pendingThreshold": "0s",
                "maxMovesPerPod": 3,
            }
            result, secs, _ = run(objs, "MakeRoomForPending", args)
            out[solver] = len(result.log.evictions) if result.log.nominations else None
            out[f"{solver}_cpu_s"] = round(secs, 3)
        rows.append(out)
    resolvable = [r for r in rows if r["exhaustive"]]
    summary = {
        "cases": cases,
        "resolvable_by_exhaustive_search": len(resolvable),
        "fit_without_moves": sum(1 for r in rows if r["exhaustive"] == 0),
    }
    for s in ("cp-sat", "cp-sat-unlimited", "greedy"):
        solved = [r for r in resolvable if r[s] is not None]
        summary[f"{s}_resolved"] = len(solved)
        summary[f"{s}_moves_over_optimum"] = sum(r[s] - r["exhaustive"] for r in solved)
        summary[f"{s}_worst_ratio"] = max((r[s] / r["exhaustive"] for r in solved), default=None)
        summary[f"{s}_found_plan_exhaustive_did_not"] = sum(1 for r in rows if not r["exhaustive"] and r[s])
    return {"summary": summary, "rows": rows}


def bench_large(nodes: int, pending: int, seed: int) -> dict[str, Any]:
    objs = fragmented(nodes, pending, seed)
    out: dict[str, Any] = {
        "nodes": nodes,
        "pods": sum(1 for o in objs if o["kind"] == "Pod"),
        "pending": pending,
    }
    for solver in ("cp-sat", "greedy"):
        args = {"solver": solver, "pendingThreshold": "0s", "maxPlansInFlight": pending}
        result, secs, _ = run(objs, "MakeRoomForPending", args)
        out[solver] = {
            "resolved": len(result.log.nominations),
            "evictions": len(result.log.evictions),
            "cpu_seconds": round(secs, 2),
            "cpu_seconds_per_pending_pod": round(secs / pending, 3),
            "budget_violations": result.budget_violations,
        }
    lnu = {
        "thresholds": {"cpu": 20, "memory": 20, "pods": 20},
        "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50},
    }
    result, secs, state = run(objs, "LowNodeUtilization", lnu)
    used = {n.name: 0 for n in state.nodes}
    for p in state.pods:
        if p.node_name:
            used[p.node_name] += p.requests.get("cpu", 0)
    under = sum(1 for n in state.nodes if used[n.name] * 100 <= 20 * n.allocatable["cpu"])
    out["LowNodeUtilization"] = {
        "evictions": len(result.log.evictions),
        "pending_pods_it_makes_room_for": 0
        if not result.log.evictions
        else "n/a (moves do not target pending pods)",
        "nodes_under_its_cpu_threshold": under,
        "cpu_seconds": round(secs, 2),
    }
    out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pending", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--small", type=int, default=0, help="Compare with exhaustive search on this many small clusters."
    )
    ap.add_argument(
        "--backlog", type=int, default=0, help="This many Jobs of 4 pods pending where no plan exists."
    )
    a = ap.parse_args()
    if a.backlog:
        print(json.dumps(bench_backlog(a.nodes, a.backlog), indent=2))
    elif a.small:
        print(json.dumps(bench_small(a.small)["summary"], indent=2))
    else:
        print(json.dumps(bench_large(a.nodes, a.pending, a.seed), indent=2))


if __name__ == "__main__":
    main()
