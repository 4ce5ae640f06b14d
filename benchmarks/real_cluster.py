"""Harmonic beside kube-scheduler on a real kube-apiserver, and both against the limit.

    python benchmarks/real_cluster.py                          # 500 nodes, 5,000 pods, QPS 50 and 5000
    python benchmarks/real_cluster.py --nodes 5000 --pods 20000 --qps 5000 --json

Each row runs alone on a fresh control plane (etcd + kube-apiserver from ``HARMONIC_KUBE_ASSETS`` or
``../shared/kube``; see ``harmonic.testing.kube``) holding the same nodes and the same pending pods:
every pod is created, with a ``schedulerName`` that nothing serves, before the measured scheduler
starts, so the figure is scheduling alone, not how fast a driver can create pods. Timed from the
scheduler's start to the last binding seen by a watch. Rows:

- ``null``: the limit: a binder with Harmonic's HTTP client, QPS and 16 binding threads that binds
  every pending pod round-robin without looking at it (the fastest any scheduler can bind through
  this API server on this machine);
- ``kube-scheduler``: the reference binary with its default profile;
- ``harmonic``: ``harmonic run`` with the same (default) profile;
- ``harmonic-profile``: ``harmonic run`` with the bundled ``harmonic`` profile, its affinity graph
  read from the Online Boutique topology file the pods are labelled after.

All schedulers use the same identity (``system:kube-scheduler``: the same API Priority and Fairness
level) and ``clientConnection`` qps/burst. A share of the pods (``--infeasible``) ask for more CPU
than any node has and a share (``--zonal``) select one zone of three, so the rows can be checked to
agree on which pods fit: ``agrees`` compares each row's set of bound pods with kube-scheduler's.
CPU seconds are each process's user+system time over the measured window (Linux /proc).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from harmonic.cluster.transport import ApiStatusError, Transport, TransportError, load_client, object_path
from harmonic.perf.templates import named, node_template, pod_template
from harmonic.sim.profiles import BUNDLED_PROFILES_DIR
from harmonic.testing.kube import AssetsMissing, ControlPlane, locate, prepare

ROOT = Path(__file__).resolve().parents[1]
#: Where the project keeps Kubernetes binaries beside the repository (as tests/e2e does).
DEFAULT_ASSETS = ROOT.parent / "shared" / "kube"
TOPOLOGY = ROOT / "harmonic" / "data" / "topologies" / "online-boutique.json"
NAMESPACE = "bench"
#: What the measured scheduler serves; nothing serves it while the pods are created.
SCHEDULER_NAME = "bench-scheduler"
ZONES = ("zone-a", "zone-b", "zone-c")
ROWS = ("null", "kube-scheduler", "harmonic", "harmonic-profile")
BIND_THREADS = 16


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def services() -> list[str]:
    doc = json.loads(TOPOLOGY.read_text())
    return [s if isinstance(s, str) else s["name"] for s in doc["services"]]


def nodes(n: int) -> list[dict[str, Any]]:
    alloc = node_template()["status"]["capacity"]
    return [{"name": f"node-{i}", "allocatable": alloc, "zone": ZONES[i % len(ZONES)]} for i in range(n)]


def pods(n: int, infeasible: float, zonal: float) -> tuple[list[dict[str, Any]], set[str]]:
    """The pods (scheduler_perf's pod-default, labelled round-robin after the topology's services) and
    the names of those that fit nowhere by construction (a CPU request above every node's 4 cores)."""
    template = pod_template()
    template["spec"]["schedulerName"] = SCHEDULER_NAME
    apps = services()
    out, misfits = [], set()
    every_infeasible = round(1 / infeasible) if infeasible > 0 else 0
    every_zonal = round(1 / zonal) if zonal > 0 else 0
    for i in range(n):
        p = named(template, f"pod-{i}", NAMESPACE)
        p["metadata"]["labels"] = {"app": apps[i % len(apps)]}
        spec = p["spec"] = dict(p["spec"])
        if every_infeasible and i % every_infeasible == every_infeasible - 1:
            big = {"cpu": "5", "memory": "500Mi"}
            spec["containers"] = [{**spec["containers"][0], "resources": {"requests": big, "limits": big}}]
            misfits.add(p["metadata"]["name"])
        elif every_zonal and i % every_zonal == 0:
            spec["nodeSelector"] = {"topology.kubernetes.io/zone": ZONES[0]}
        out.append(p)
    return out, misfits


def scheduler_config(row: str, qps: float, burst: int, kubeconfig: Path) -> dict[str, Any]:
    profile: dict[str, Any] = {"schedulerName": SCHEDULER_NAME}
    if row == "harmonic-profile":
        doc = yaml.safe_load((BUNDLED_PROFILES_DIR / "harmonic.yaml").read_text())
        profile = {**next(p for p in doc["profiles"] if p["schedulerName"] == "harmonic"), **profile}
        for pc in profile["pluginConfig"]:
            if pc["name"] == "CommunicationAffinity":
                pc["args"]["telemetry"] = {
                    "topologies": [{"file": str(TOPOLOGY), "namespace": NAMESPACE, "userRate": 50}]
                }
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": qps, "burst": burst},
        "profiles": [profile],
    }


class BindWatch:
    """Counts bindings in the namespace from a watch, with the time of each."""

    def __init__(self, transport: Transport, resource_version: str) -> None:
        self.transport, self.rv = transport, resource_version
        self.bound: dict[str, float] = {}
        self.lock = threading.Lock()
        self.stream: Any = None
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="bind-watch", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        path = object_path("v1", "pods", NAMESPACE)
        while not self.stopped.is_set():
            try:
                self.stream = self.transport.stream(
                    path, {"resourceVersion": self.rv, "allowWatchBookmarks": "true"}, read_timeout=60
                )
                for ev in self.stream:
                    obj = ev.get("object") or {}
                    self.rv = (obj.get("metadata") or {}).get("resourceVersion", self.rv)
                    if ev.get("type") == "MODIFIED" and (obj.get("spec") or {}).get("nodeName"):
                        with self.lock:
                            self.bound.setdefault(obj["metadata"]["name"], time.monotonic())
            except (TransportError, ApiStatusError, OSError):
                if self.stopped.is_set():
                    return
                time.sleep(0.2)

    def count(self) -> int:
        with self.lock:
            return len(self.bound)

    def stop(self) -> None:
        self.stopped.set()
        if self.stream is not None:
            self.stream.close()


def start_scheduler(
    row: str, cp: ControlPlane, folder: Path, qps: float, burst: int
) -> tuple[int, subprocess.Popen[bytes] | None]:
    """Start the row's scheduler; its pid (and Popen when this script owns the process)."""
    kubeconfig = cp.kubeconfigs["kube-scheduler"]
    if row == "kube-scheduler":
        cfg = scheduler_config(row, qps, burst, kubeconfig)
        proc = cp.start_kube_scheduler({k: v for k, v in cfg.items() if k not in ("apiVersion", "kind")})
        assert proc.popen is not None
        return proc.popen.pid, None
    log = (folder / f"{row}.log").open("wb")
    if row == "null":
        argv = [sys.executable, __file__, "--null-binder", str(kubeconfig), "--qps", str(qps)]
        argv += ["--burst", str(burst)]
    else:
        config = folder / f"{row}.yaml"
        config.write_text(yaml.safe_dump(scheduler_config(row, qps, burst, kubeconfig)))
        argv = [sys.executable, "-m", "harmonic", "run", "--config", str(config), "--metrics-port", "0"]
        argv += ["--log-format", "text"]
    popen = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return popen.pid, popen


def run_row(row: str, args: argparse.Namespace, qps: float, burst: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix=f"real-cluster-{row}-"))
    with ControlPlane(prepare(locate(DEFAULT_ASSETS)), folder) as cp:
        kube = cp.client()
        kube.namespace(NAMESPACE)
        for zone in ZONES:
            names = [n["name"] for n in nodes(args.nodes) if n["zone"] == zone]
            kube.ready_nodes(
                names,
                allocatable=node_template()["status"]["capacity"],
                labels={"topology.kubernetes.io/zone": zone},
            )
        bodies, misfits = pods(args.pods, args.infeasible, args.zonal)
        kube.create_all(object_path("v1", "pods", NAMESPACE), bodies)
        listed = kube.get(object_path("v1", "pods", NAMESPACE), limit=1)
        watch = BindWatch(cp.transport(), listed["metadata"]["resourceVersion"])
        expected = args.pods - len(misfits)
        api_pid, etcd_pid = cp.apiserver.popen.pid, cp.etcd.popen.pid  # type: ignore[union-attr]
        cpu0 = {"apiserver": cpu_seconds(api_pid), "etcd": cpu_seconds(etcd_pid)}
        t0 = time.monotonic()
        pid, popen = start_scheduler(row, cp, folder, qps, burst)
        cpu_at_last: dict[str, float] = {}
        last_count, last_change = -1, t0
        try:
            while True:
                time.sleep(0.2)
                n = watch.count()
                now = time.monotonic()
                if n != last_count:
                    last_count, last_change = n, now
                    cpu_at_last = {
                        "scheduler": cpu_seconds(pid),
                        "apiserver": cpu_seconds(api_pid),
                        "etcd": cpu_seconds(etcd_pid),
                    }
                if popen is not None and popen.poll() is not None and row != "null":
                    raise SystemExit(f"{row} exited with {popen.returncode}; log in {folder}")
                # Settled: every pod that fits is bound and nothing more came for a while, or nothing
                # came at all for long enough (a stuck scheduler).
                quiet = now - last_change
                if (n >= expected and quiet >= args.settle) or quiet >= args.stall or now - t0 > args.timeout:
                    break
        finally:
            watch.stop()
            if popen is not None:
                popen.terminate()
                popen.wait(30)
        bound = dict(watch.bound)
    seconds = (max(bound.values()) - t0) if bound else float("nan")
    n = len(bound)
    cpu = {k: cpu_at_last.get(k, 0.0) - cpu0.get(k, 0.0) for k in ("apiserver", "etcd")}
    cpu["scheduler"] = cpu_at_last.get("scheduler", 0.0)
    return {
        "row": row,
        "qps": qps,
        "nodes": args.nodes,
        "pods": args.pods,
        "fit": expected,
        "bound": n,
        "misfits_bound": len(misfits & bound.keys()),
        "seconds": round(seconds, 2),
        "first_binding_seconds": round(min(bound.values()) - t0, 2) if bound else None,
        "pods_per_second": round(n / seconds, 1) if n else 0.0,
        "cpu_seconds": {k: round(v, 2) for k, v in cpu.items()},
        "cpu_ms_per_pod": round(1000 * cpu["scheduler"] / n, 3) if n else None,
        "apiserver_cpu_ms_per_pod": round(1000 * cpu["apiserver"] / n, 3) if n else None,
        "etcd_cpu_ms_per_pod": round(1000 * cpu["etcd"] / n, 3) if n else None,
        "bound_names": sorted(bound),
    }


def null_binder(kubeconfig: str, qps: float, burst: int) -> int:
    """Bind every pending pod of ``SCHEDULER_NAME`` to the nodes in turn; nothing else."""
    transport = Transport(load_client(kubeconfig), qps=qps, burst=burst, user_agent="null-binder")
    names = [n["metadata"]["name"] for n in transport.request("GET", "/api/v1/nodes")["items"]]
    pending = transport.request(
        "GET",
        object_path("v1", "pods", NAMESPACE),
        query={"fieldSelector": f"spec.schedulerName={SCHEDULER_NAME},spec.nodeName="},
    )["items"]

    def bind(i: int) -> None:
        pod = pending[i]["metadata"]
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod["name"], "namespace": NAMESPACE, "uid": pod["uid"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": names[i % len(names)]},
        }
        path = object_path("v1", "pods", NAMESPACE, pod["name"]) + "/binding"
        try:
            transport.request("POST", path, body=body, decode=False)
        except (ApiStatusError, TransportError) as e:
            print(f"bind {pod['name']}: {e}", file=sys.stderr)

    with ThreadPoolExecutor(BIND_THREADS) as pool:
        list(pool.map(bind, range(len(pending))))
    # Stay up like a scheduler would, so the measuring side stops every row the same way.
    threading.Event().wait()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--pods", type=int, default=5000)
    ap.add_argument("--qps", default="50,5000", help="clientConnection.qps values, comma-separated")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, of {', '.join(ROWS)}")
    ap.add_argument("--infeasible", type=float, default=0.01, help="share of pods that fit no node")
    ap.add_argument("--zonal", type=float, default=0.1, help="share of pods that select one zone of three")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds without a binding that end a row")
    ap.add_argument("--stall", type=float, default=60.0, help="end a row after this long without progress")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--json", action="store_true", help="end with one JSON line of the figures")
    ap.add_argument("--null-binder", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    ap.add_argument("--burst", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.null_binder:
        return null_binder(args.null_binder, float(args.qps), args.burst)
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    if bad := [r for r in rows if r not in ROWS]:
        ap.error(f"--rows: unknown {', '.join(bad)} (known: {', '.join(ROWS)})")
    if not 0 <= args.infeasible < 1 or not 0 <= args.zonal < 1:
        ap.error("--infeasible and --zonal are shares in [0, 1)")
    try:
        locate(DEFAULT_ASSETS)
    except AssetsMissing as e:
        print(f"no Kubernetes binaries: {e}", file=sys.stderr)
        return 2
    results: dict[float, dict[str, dict[str, Any]]] = {}
    for qps in (float(q) for q in args.qps.split(",")):
        # kube-scheduler's defaults are qps 50 / burst 100; a lifted limit gets a burst as large.
        burst = 100 if qps <= 50 else int(qps)
        results[qps] = {}
        for row in rows:
            r = results[qps][row] = run_row(row, args, qps, burst)
            print(
                f"qps {qps:g} {row:17s} bound {r['bound']}/{r['fit']} in {r['seconds']:.1f} s:"
                f" {r['pods_per_second']:.1f} pods/s; CPU s scheduler {r['cpu_seconds']['scheduler']:.1f}"
                f" ({r['cpu_ms_per_pod']} ms/pod), apiserver {r['cpu_seconds']['apiserver']:.1f},"
                f" etcd {r['cpu_seconds']['etcd']:.1f}",
                flush=True,
            )
    print(
        f"\n{args.nodes} nodes, {args.pods} pods ({args.infeasible:.0%} fit nowhere, {args.zonal:.0%} zonal)"
    )
    header = (
        "| qps | row | pods/s | x null | x kube-scheduler | first binding s | CPU ms/pod | apiserver ms/pod"
        " | etcd ms/pod | bound | agrees |"
    )
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    summary: dict[str, dict[str, Any]] = {}
    for qps, by_row in results.items():
        null, ks = by_row.get("null"), by_row.get("kube-scheduler")
        for row, r in by_row.items():
            vs_null = (
                r["pods_per_second"] / null["pods_per_second"] if null and null["pods_per_second"] else None
            )
            vs_ks = r["pods_per_second"] / ks["pods_per_second"] if ks and ks["pods_per_second"] else None
            agrees = None if ks is None or row == "null" else r["bound_names"] == ks["bound_names"]
            r.update(x_null=vs_null, x_kube_scheduler=vs_ks, agrees=agrees)
            print(
                f"| {qps:g} | {row} | {r['pods_per_second']:.1f} | {_x(vs_null)} | {_x(vs_ks)} |"
                f" {r['first_binding_seconds']} |"
                f" {r['cpu_ms_per_pod']} | {r['apiserver_cpu_ms_per_pod']} | {r['etcd_cpu_ms_per_pod']} |"
                f" {r['bound']}/{r['fit']} | {'-' if agrees is None else 'yes' if agrees else 'NO'} |"
            )
    high = max(results)
    for row, r in results[high].items():
        summary[row] = {
            "qps": high,
            "pods_per_second": r["pods_per_second"],
            "cpu_ms_per_pod": r["cpu_ms_per_pod"],
            "x_null": r["x_null"],
            "x_kube_scheduler": r["x_kube_scheduler"],
            "agrees": r["agrees"],
            "by_qps": {
                f"{q:g}": {k: results[q][row][k] for k in ("pods_per_second", "cpu_ms_per_pod", "bound")}
                for q in results
                if row in results[q]
            },
        }
    if args.json:
        print(json.dumps(summary))
    return 0


def _x(v: float | None) -> str:
    return "-" if v is None else f"x{v:.2f}"


if __name__ == "__main__":
    sys.exit(main())
