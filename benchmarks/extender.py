"""Extender latency: filter + prioritize for one pod against N nodes, over real HTTP, both modes.

    python benchmarks/extender.py --nodes 5000 --pods 200            # both modes
    python benchmarks/extender.py --mode names --init-pods 1000 --json
    python benchmarks/extender.py --in-process                        # the verbs' compute, no HTTP

The server runs in its own process (as it would in its own pod), started with the default profile:

- ``names`` (kube-scheduler ``nodeCacheCapable: true``): the server's ``ClusterCache`` is filled with
  the N nodes and ``--init-pods`` bound pods; each request carries the pod and N node names.
- ``nodes`` (``nodeCacheCapable: false``): no cache; each request carries N full ``v1.Node`` objects
  shaped as kube-scheduler marshals them (kubelet labels, conditions, node info, ``--images`` images).

The client keeps one connection alive, as Go's transport does, and sends bodies marshalled
beforehand (kube-scheduler's own marshalling is not the extender's time). Each measured pod is a new
pod (scheduler_perf's pod-default template) that fits every node, so prioritize gets all N nodes too.
A pair is one filter round trip plus one prioritize round trip. Figures are printed, never assumed.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import multiprocessing as mp
import statistics
import sys
import time
from typing import Any

from harmonic.perf.templates import named, node_template, pod_template
from harmonic.testing.kubeshape import api_node, api_pod, extender_args, marshal

ZONES = 3


def make_nodes(n: int, images: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        tpl = named(node_template(), f"node-{i:05d}")
        tpl["metadata"]["labels"] = {
            "topology.kubernetes.io/zone": f"zone-{i % ZONES}",
            "topology.kubernetes.io/region": "region-1",
        }
        out.append(api_node(tpl, rv=10_000 + i, images=images))
    return out


def make_pod(name: str, node_name: str = "") -> dict[str, Any]:
    raw = named(pod_template(), name, "default")
    raw["metadata"]["uid"] = f"uid-{name}"
    if node_name:
        raw["spec"] = {**raw["spec"], "nodeName": node_name}
    return api_pod(raw)


def build_extender(mode: str, nodes: int, images: int, init_pods: int) -> Any:
    from harmonic.extender.cache import ClusterCache
    from harmonic.extender.engine import Extender
    from harmonic.framework.config import load_config
    from harmonic.plugins.registry import default_registry

    registry = default_registry()
    cache = None
    if mode == "names":
        cache = ClusterCache()
        ns = make_nodes(nodes, images)
        for n in ns:
            cache.on_node(None, n)
        for i in range(init_pods):
            cache.on_pod(None, make_pod(f"init-{i}", ns[i % nodes]["metadata"]["name"]))
        cache.mark_synced()
    return Extender(load_config(None, registry), registry, cache=cache)


def serve(mode: str, nodes: int, images: int, init_pods: int, ready: Any) -> None:
    from harmonic.extender.server import ExtenderApp, ExtenderServer

    server = ExtenderServer(ExtenderApp(build_extender(mode, nodes, images, init_pods)), port=0)
    ready.put(server.port)
    server.run()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    ms = [v * 1e3 for v in values]
    return {
        "p50_ms": round(percentile(ms, 50), 2),
        "p90_ms": round(percentile(ms, 90), 2),
        "p99_ms": round(percentile(ms, 99), 2),
        "max_ms": round(max(ms), 2),
        "mean_ms": round(statistics.fmean(ms), 2),
    }


def post(conn: http.client.HTTPConnection, verb: str, body: bytes) -> tuple[float, Any]:
    t = time.perf_counter()
    conn.request("POST", f"/scheduler/{verb}", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    elapsed = time.perf_counter() - t
    if r.status != 200:
        raise SystemExit(f"{verb}: HTTP {r.status}: {data[:300]!r}")
    return elapsed, json.loads(data)


def run(mode: str, nodes: int, pods: int, warmup: int, images: int, init_pods: int) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    ready = ctx.Queue()
    proc = ctx.Process(target=serve, args=(mode, nodes, images, init_pods, ready), daemon=True)
    proc.start()
    try:
        port = ready.get(timeout=600)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        node_objs = make_nodes(nodes, images) if mode == "nodes" else None
        names = [f"node-{i:05d}" for i in range(nodes)]
        filt: list[float] = []
        prio: list[float] = []
        pair: list[float] = []
        sizes: dict[str, int] = {}
        # The client's own garbage (28 MiB responses parsed in nodes mode) is collected between
        # requests, never inside a timed round trip; the server process runs with default GC.
        gc.disable()
        for k in range(warmup + pods):
            gc.collect()
            p = make_pod(f"bench-{k}")
            if node_objs is not None:
                body = marshal(extender_args(p, nodes=node_objs))
            else:
                body = marshal(extender_args(p, node_names=names))
            tf, result = post(conn, "filter", body)
            if result["Error"]:
                raise SystemExit(f"filter: {result['Error']}")
            if node_objs is not None:
                passed = {n["metadata"]["name"] for n in result["Nodes"]["items"]}
                kept = [n for n in node_objs if n["metadata"]["name"] in passed]
                prio_body = marshal(extender_args(p, nodes=kept))
            else:
                prio_body = marshal(extender_args(p, node_names=result["NodeNames"]))
            if len(passed if node_objs is not None else result["NodeNames"]) != nodes:
                raise SystemExit("benchmark pods should fit every node")
            tp, scores = post(conn, "prioritize", prio_body)
            assert len(scores) == nodes
            sizes = {"filter_request_bytes": len(body), "prioritize_request_bytes": len(prio_body)}
            if k >= warmup:
                filt.append(tf)
                prio.append(tp)
                pair.append(tf + tp)
        conn.close()
    finally:
        gc.enable()
        proc.terminate()
        proc.join(10)
    return {
        "mode": mode,
        "nodes": nodes,
        "pods": pods,
        "init_pods": init_pods if mode == "names" else 0,
        "images_per_node": images,
        **sizes,
        "filter": summary(filt),
        "prioritize": summary(prio),
        "pair": summary(pair),
    }


def run_in_process(
    mode: str, nodes: int, pods: int, warmup: int, images: int, init_pods: int
) -> dict[str, Any]:
    """The extender's own compute (decode, framework, encode), no HTTP: ``Extender.filter`` and
    ``Extender.prioritize`` called directly with the same bodies."""
    ext = build_extender(mode, nodes, images, init_pods)
    node_objs = make_nodes(nodes, images) if mode == "nodes" else None
    names = [f"node-{i:05d}" for i in range(nodes)]
    filt: list[float] = []
    prio: list[float] = []
    pair: list[float] = []
    for k in range(warmup + pods):
        p = make_pod(f"bench-{k}")
        args = (
            extender_args(p, nodes=node_objs) if node_objs is not None else extender_args(p, node_names=names)
        )
        body = marshal(args)
        t = time.perf_counter()
        ext.filter(body)
        t1 = time.perf_counter()
        ext.prioritize(body)
        t2 = time.perf_counter()
        if k >= warmup:
            filt.append(t1 - t)
            prio.append(t2 - t1)
            pair.append(t2 - t)
    return {
        "mode": mode,
        "in_process": True,
        "nodes": nodes,
        "pods": pods,
        "filter": summary(filt),
        "prioritize": summary(prio),
        "pair": summary(pair),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=("names", "nodes", "both"), default="both")
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=200, help="measured pods")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--images", type=int, default=20, help="container images listed per node")
    ap.add_argument("--init-pods", type=int, default=1000, help="bound pods in the cache (names mode)")
    ap.add_argument("--in-process", action="store_true", help="time the verbs without HTTP")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    modes = ("names", "nodes") if a.mode == "both" else (a.mode,)
    for mode in modes:
        if a.in_process:
            r = run_in_process(mode, a.nodes, a.pods, a.warmup, a.images, a.init_pods)
            where = "in-process"
        else:
            r = run(mode, a.nodes, a.pods, a.warmup, a.images, a.init_pods)
            where = f"request {r['filter_request_bytes'] / 1024:,.0f} KiB"
        print(
            f"{mode:5s} {r['nodes']} nodes, {r['pods']} pods, {where}: "
            + "  ".join(
                f"{verb} p50 {r[verb]['p50_ms']} p99 {r[verb]['p99_ms']} max {r[verb]['max_ms']} ms"
                for verb in ("filter", "prioritize", "pair")
            )
        )
        if a.json:
            print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
