"""Extender latency: filter + prioritize for one pod against N nodes, over real HTTP, both modes.

    python benchmarks/extender.py --nodes 5000 --pods 200            # both modes
    python benchmarks/extender.py --mode names --init-pods 1000 --json
    python benchmarks/extender.py --mode names --churn 50             # pods bound meanwhile, 50/s
    python benchmarks/extender.py --mode names --churn 50 --pin       # the extender on a core of its own
    python benchmarks/extender.py --in-process                        # the verbs' compute, no HTTP
    python benchmarks/extender.py --mode names --profile /tmp/ext.txt # py-spy the extender meanwhile

The server is ``harmonic extender`` itself, in its own process (as in its own pod), with the default
profile:

- ``names`` (kube-scheduler ``nodeCacheCapable: true``): the API-server test double runs in a third
  process holding the N nodes and ``--init-pods`` bound pods; the extender is started with
  ``--kubeconfig`` pointing at it, so its cache is filled by its informers (list, then watch), and
  measuring starts once ``/readyz`` answers 200. Each request carries the pod and N node names.
  ``--churn R`` creates R bound pods per second in the API server while measuring, so watch events
  reach the extender's cache between and during requests.
- ``nodes`` (``nodeCacheCapable: false``): the extender is started without any cluster
  configuration, so it has no cache; each request carries N full ``v1.Node`` objects shaped as
  kube-scheduler marshals them (kubelet labels, conditions, node info, ``--images`` images).

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
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from profile_top import start_profiler

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


class ApiServer:
    """The API-server test double in its own process, filled through its admin endpoint."""

    def __init__(self, cpus: list[str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [*(cpus or []), sys.executable, "-m", "harmonic.testing.apiserver", "--bookmark-interval", "5"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url, self.token = self.proc.stdout.readline().split()

    def admin(self, path: str, body: Any) -> Any:
        req = urllib.request.Request(
            f"{self.url}/_harmonic/{path}",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=600) as resp:
            return json.loads(resp.read())

    def populate(self, nodes: list[dict[str, Any]], init_pods: int) -> None:
        for at in range(0, len(nodes), 500):
            self.admin("objects", {"resource": "nodes", "items": nodes[at : at + 500]})
        pods = [make_pod(f"init-{i}", nodes[i % len(nodes)]["metadata"]["name"]) for i in range(init_pods)]
        for at in range(0, len(pods), 1000):
            self.admin("objects", {"resource": "pods", "items": pods[at : at + 1000]})

    def kubeconfig(self, directory: Path) -> Path:
        path = directory / "kubeconfig"
        user = {"token": self.token} if self.token else {}
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "double", "cluster": {"server": self.url}}],
                    "users": [{"name": "bench", "user": user}],
                    "contexts": [{"name": "double", "context": {"cluster": "double", "user": "bench"}}],
                    "current-context": "double",
                }
            )
        )
        return path

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


class Churn:
    """Bound pods created in the API server at ``rate`` per second while measuring (names mode), so
    the extender's informer applies watch events between and during requests, as in a live cluster."""

    def __init__(self, api: ApiServer, rate: float, node_names: list[str]) -> None:
        self.api, self.rate, self.node_names = api, rate, node_names
        self.created = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        if self.rate > 0:
            self._thread.start()

    def _run(self) -> None:
        period = 0.1
        t0 = time.perf_counter()
        while not self._stop.wait(period):
            due = int((time.perf_counter() - t0) * self.rate) - self.created
            if due <= 0:
                continue
            batch = [
                make_pod(f"churn-{i}", self.node_names[i % len(self.node_names)])
                for i in range(self.created, self.created + due)
            ]
            self.api.admin("objects", {"resource": "pods", "items": batch})
            self.created += due

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)


class ExtenderProcess:
    """``harmonic extender --port 0 [--kubeconfig K]``; its URL read from its JSON log."""

    def __init__(self, kubeconfig: Path | None, home: Path, cpus: list[str] | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
        env["HOME"] = str(home)  # no ~/.kube/config: without --kubeconfig, no cluster at all
        args = [*(cpus or []), sys.executable, "-m", "harmonic", "extender", "--port", "0"]
        if kubeconfig is not None:
            args += ["--kubeconfig", str(kubeconfig)]
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=env)
        self.logs: list[dict[str, Any]] = []
        self._url: str | None = None
        self._have_url = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if not line.startswith("{"):
                sys.stderr.write(line)
                continue
            rec = json.loads(line)
            self.logs.append(rec)
            if rec.get("msg") == "serving the extender verbs":
                self._url = str(rec["url"])
                self._have_url.set()
        self._have_url.set()

    def wait_ready(self, timeout: float = 600) -> tuple[str, int, float]:
        """(host, port, seconds from start to /readyz 200)."""
        if not self._have_url.wait(timeout) or self._url is None:
            raise SystemExit(f"harmonic extender exited with {self.proc.poll()}")
        base = self._url.removesuffix("/scheduler")
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(base + "/readyz", timeout=10) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit("harmonic extender did not become ready")
            time.sleep(0.05)
        host, port = base.removeprefix("http://").rsplit(":", 1)
        return host, int(port), time.perf_counter() - self.started

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def cpu_seconds(pid: int) -> float:
    """User+system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def run(
    mode: str,
    nodes: int,
    pods: int,
    warmup: int,
    images: int,
    init_pods: int,
    churn: float = 0,
    profile: str | None = None,
    pin: bool = False,
) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp())
    if pin:
        os.sched_setaffinity(0, {1})  # this client (and the churn) beside the API server, on CPU 1
    api = ApiServer(["taskset", "-c", "1"] if pin else None) if mode == "names" else None
    ext: ExtenderProcess | None = None
    churner: Churn | None = None
    spy: subprocess.Popen[bytes] | None = None
    try:
        if api is not None:
            api.populate(make_nodes(nodes, images), init_pods)
        ext = ExtenderProcess(
            api.kubeconfig(tmp) if api is not None else None, tmp, ["taskset", "-c", "0"] if pin else None
        )
        host, port, ready_s = ext.wait_ready()
        conn = http.client.HTTPConnection(host, port, timeout=120)
        node_objs = make_nodes(nodes, images) if mode == "nodes" else None
        names = [f"node-{i:05d}" for i in range(nodes)]
        filt: list[float] = []
        prio: list[float] = []
        pair: list[float] = []
        sizes: dict[str, int] = {}
        # The client's own garbage (28 MiB responses parsed in nodes mode) is collected between
        # requests, never inside a timed round trip; the server process runs with default GC.
        gc.disable()
        if api is not None:
            churner = Churn(api, churn, names)
        cpu0 = 0.0
        for k in range(warmup + pods):
            if k == warmup:
                cpu0 = cpu_seconds(ext.proc.pid)
                if profile:
                    spy = start_profiler(ext.proc.pid, profile)
                if churner is not None:
                    churner.start()
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
        # The extender's CPU over the measured pairs (and the churn it absorbed meanwhile): on a
        # shared machine the latencies above include waiting for a core, this does not.
        cpu_per_pair = (cpu_seconds(ext.proc.pid) - cpu0) / max(1, pods)
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
        conn.close()
    finally:
        gc.enable()
        if churner is not None:
            churner.stop()
        if ext is not None:
            ext.stop()
        if api is not None:
            api.close()
    synced = next((r for r in ext.logs if r["msg"] == "extender cache synced"), None)
    return {
        "mode": mode,
        "nodes": nodes,
        "pods": pods,
        "init_pods": init_pods if mode == "names" else 0,
        "images_per_node": images,
        # Start of the process to /readyz 200 (names: the informers' initial lists are in the cache).
        "ready_s": round(ready_s, 2),
        "churn_pods_created": churner.created if churner is not None else 0,
        "cache": {k: synced[k] for k in ("nodes", "pods")} if synced else None,
        **sizes,
        "filter": summary(filt),
        "prioritize": summary(prio),
        "pair": summary(pair),
        "extender_cpu_ms_per_pair": round(cpu_per_pair * 1e3, 2),
        "pinned": pin,
    }


def run_in_process(
    mode: str, nodes: int, pods: int, warmup: int, images: int, init_pods: int
) -> dict[str, Any]:
    """The extender's own compute (decode, framework, encode), no HTTP: ``Extender.filter`` and
    ``Extender.prioritize`` called directly with the same bodies (names: the cache filled by a
    ``LiveCluster``'s informers from the API-server double, as ``harmonic extender`` fills it)."""
    from harmonic.cluster.transport import Transport, load_client
    from harmonic.extender.engine import Extender
    from harmonic.extender.live import LiveCluster
    from harmonic.framework.config import load_config
    from harmonic.plugins.registry import default_registry

    registry = default_registry()
    api = ApiServer() if mode == "names" else None
    live = None
    if api is not None:
        api.populate(make_nodes(nodes, images), init_pods)
        live = LiveCluster(Transport(load_client(str(api.kubeconfig(Path(tempfile.mkdtemp()))))))
        live.start()
        if not live.cache.wait_synced(600):
            raise SystemExit("the informers did not sync")
    ext = Extender(
        load_config(None, registry),
        registry,
        cache=live.cache if live else None,
        services=live.services if live else None,
    )
    node_objs = make_nodes(nodes, images) if mode == "nodes" else None
    names = [f"node-{i:05d}" for i in range(nodes)]
    filt: list[float] = []
    prio: list[float] = []
    pair: list[float] = []
    cpu = 0.0
    for k in range(warmup + pods):
        p = make_pod(f"bench-{k}")
        args = (
            extender_args(p, nodes=node_objs) if node_objs is not None else extender_args(p, node_names=names)
        )
        body = marshal(args)
        c = time.thread_time()
        t = time.perf_counter()
        ext.filter(body)
        t1 = time.perf_counter()
        ext.prioritize(body)
        t2 = time.perf_counter()
        if k >= warmup:
            cpu += time.thread_time() - c
            filt.append(t1 - t)
            prio.append(t2 - t1)
            pair.append(t2 - t)
    if live is not None:
        live.stop()
    if api is not None:
        api.close()
    return {
        "mode": mode,
        "in_process": True,
        "nodes": nodes,
        "pods": pods,
        "filter": summary(filt),
        "prioritize": summary(prio),
        "pair": summary(pair),
        # This thread's CPU over the measured pairs: the verbs' own work (no informer, no HTTP).
        "cpu_ms_per_pair": round(cpu / max(1, pods) * 1e3, 3),
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
    ap.add_argument(
        "--churn",
        type=float,
        default=0,
        help="names mode: bound pods created per second in the API server while measuring",
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--profile", metavar="FILE", help="py-spy the extender over the measured pairs")
    ap.add_argument(
        "--pin",
        action="store_true",
        help="run the extender on CPU 0 and the API server, client and churn on CPU 1 (taskset)",
    )
    a = ap.parse_args(argv)
    modes = ("names", "nodes") if a.mode == "both" else (a.mode,)
    for mode in modes:
        if a.in_process:
            r = run_in_process(mode, a.nodes, a.pods, a.warmup, a.images, a.init_pods)
            where = f"in-process, {r['cpu_ms_per_pair']} CPU ms per pair"
        else:
            r = run(mode, a.nodes, a.pods, a.warmup, a.images, a.init_pods, a.churn, a.profile, a.pin)
            where = (
                ("extender alone on CPU 0, " if a.pin else "")
                + f"request {r['filter_request_bytes'] / 1024:,.0f} KiB, ready after {r['ready_s']} s,"
                f" extender CPU {r['extender_cpu_ms_per_pair']} ms per pair"
            )
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
