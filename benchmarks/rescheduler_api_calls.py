"""API requests per live rescheduler cycle: listing the cluster every cycle versus the informer cache.

    python benchmarks/rescheduler_api_calls.py --nodes 200 --pods-per-node 10 --cycles 5

Loads N nodes and N x K pods (ReplicaSet-owned, a PodDisruptionBudget per 50 pods) into the API-server
test double (in this process, over real HTTP on loopback), then runs ``--cycles`` dry-run cycles of a
RemovePodsViolatingNodeTaints + LowNodeUtilization policy twice: as ``--once`` does (``LiveRescheduler``
listing nodes, pods, PDBs and namespaces) and as loop mode does (a ``ClusterCache``: informers listing
once, then watching). Between cycles one pod is created, so the cache has watch events to apply.
Prints, per mode, the read requests the server counted (list / watch / get; a watch the server
closed and the informer reopened counts too), the objects received per cycle (list items, or watch
events the informers applied) and this process's CPU seconds per cycle
(``time.process_time``; the double runs in this process, so its serving time is included). The machine
is shared: wall time is not reported. Figures are printed, never assumed.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from harmonic.cluster.informer import Backoff
from harmonic.cluster.transport import Transport, load_client
from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.rescheduler.cache import ClusterCache
from harmonic.rescheduler.live import LiveRescheduler
from harmonic.rescheduler.policy import load_policy
from harmonic.testing.apiserver import ApiServerDouble

POLICY = {
    "apiVersion": "descheduler/v1alpha2",
    "kind": "DeschedulerPolicy",
    "profiles": [
        {
            "name": "p",
            "pluginConfig": [
                {
                    "name": "LowNodeUtilization",
                    "args": {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 70}},
                }
            ],
            "plugins": {
                "deschedule": {"enabled": ["RemovePodsViolatingNodeTaints"]},
                "balance": {"enabled": ["LowNodeUtilization"]},
            },
        }
    ],
}


def node(i: int) -> dict[str, Any]:
    alloc = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    return {
        "metadata": {"name": f"n{i:04d}", "labels": {"kubernetes.io/hostname": f"n{i:04d}"}},
        "status": {
            "capacity": alloc,
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(i: int, on: str) -> dict[str, Any]:
    app = f"app-{i // 50}"
    return {
        "metadata": {
            "name": f"p{i:06d}",
            "namespace": "default",
            "labels": {"app": app},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app, "uid": f"rs-{app}"}
            ],
        },
        "spec": {
            "nodeName": on,
            "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
            ],
        },
    }


def pdb(app: str) -> dict[str, Any]:
    return {
        "metadata": {"name": app, "namespace": "default"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
    }


def reads(api: ApiServerDouble) -> Counter[str]:
    return Counter(
        {k: v for k, v in api.stats().requests.items() if k.split(" ")[0] in ("list", "watch", "get")}
    )


def measure(
    api: ApiServerDouble, transport: Transport, cycles: int, cached: bool, extra: int
) -> dict[str, Any]:
    prof = load_config(None, default_registry()).profiles[0]
    cache = ClusterCache(transport, backoff=lambda: Backoff(0.05, 1.0)) if cached else None
    setup: Counter[str] = Counter()
    events = [0]
    if cache is not None:
        api.reset_stats()
        cache.start()
        assert cache.wait_for_sync(120), "cache did not sync"
        setup = reads(api)
        for inf in cache.informers.values():
            inf.add_handler(lambda old, new: events.__setitem__(0, events[0] + 1))
    lr = LiveRescheduler(transport, load_policy(POLICY), prof, default_registry(), dry_run=True, cache=cache)
    api.reset_stats()
    cpu = 0.0
    for c in range(cycles):
        api.create("pods", pod(extra + c, "n0000"))
        if cache is not None:
            deadline = time.monotonic() + 30
            while (
                cache.informers["pods"].get(f"default/p{extra + c:06d}") is None
                and time.monotonic() < deadline
            ):
                time.sleep(0.01)
        t = time.process_time()
        report = lr.cycle()
        cpu += time.process_time() - t
        assert not report.error, report.error
    per_cycle = reads(api)
    if cache is not None:
        cache.stop()
        objects = events[0]
    else:
        objects = cycles * sum(
            len(api.list(r)) for r in ("nodes", "pods", "poddisruptionbudgets", "namespaces")
        )
    return {
        "setup": dict(setup),
        "cycles": dict(per_cycle),
        "cpu_per_cycle": cpu / cycles,
        "objects_per_cycle": objects / cycles,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--pods-per-node", type=int, default=10)
    ap.add_argument("--cycles", type=int, default=5)
    a = ap.parse_args()
    with ApiServerDouble() as api, tempfile.TemporaryDirectory() as tmp:
        api.create_many("nodes", [node(i) for i in range(a.nodes)])
        n_pods = a.nodes * a.pods_per_node
        api.create_many("pods", [pod(i, f"n{i % a.nodes:04d}") for i in range(n_pods)])
        api.create_many("poddisruptionbudgets", [pdb(f"app-{k}") for k in range(n_pods // 50)])
        transport = Transport(load_client(str(api.kubeconfig(Path(tmp) / "kubeconfig"))), qps=-1)
        print(f"{a.nodes} nodes, {n_pods} pods, {n_pods // 50} PDBs; {a.cycles} dry-run cycles per mode")
        for name, cached in (("list every cycle", False), ("informer cache", True)):
            r = measure(api, transport, a.cycles, cached, n_pods + (a.cycles if cached else 0))
            total = sum(r["cycles"].values())
            print(f"\n{name}:")
            if r["setup"]:
                print(f"  once, at start: {sum(r['setup'].values())} requests {r['setup']}")
            print(f"  during {a.cycles} cycles: {total} read requests {r['cycles']}")
            print(f"  read requests per cycle: {total / a.cycles:.1f}")
            print(f"  objects received per cycle (list items or watch events): {r['objects_per_cycle']:.0f}")
            print(f"  CPU s per cycle (rescheduler and double together): {r['cpu_per_cycle']:.3f}")


if __name__ == "__main__":
    main()
