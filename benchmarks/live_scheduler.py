"""The secondary scheduler end to end against the API-server test double, over real HTTP.

    python benchmarks/live_scheduler.py --nodes 5000 --pods 10000

The double runs in its own process (as an API server would); the scheduler runs here exactly as
``harmonic run`` does (``tune_process`` and ``LiveScheduler``: informers, leader election,
thread-pool binder, Events, status patches, metrics), with ``clientConnection`` qps/burst lifted as scheduler_perf does (the
defaults, 50/100, would cap binding at 50 pods/s). Nodes (scheduler_perf's node-default) are created
and synced first; then all measured pods (pod-default, ``schedulerName: harmonic``) are created in
one bulk call. Measured: pods/s from that call to the last pod bound (polled from the server), and
API calls per pod counted by the server over the same window, by verb and resource.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from profile_top import py_spy, start_profiler

from harmonic.cluster.kube import LiveScheduler, tune_process
from harmonic.cluster.transport import Transport, load_client
from harmonic.framework.config import load_config
from harmonic.perf.templates import named, node_template, pod_template
from harmonic.perf.workloads.harmony import NAMESPACE, graph_service
from harmonic.plugins.registry import default_registry
from harmonic.sim.profiles import BUNDLED_PROFILES_DIR


def harmonic_profile() -> dict[str, Any]:
    """The bundled ``harmonic`` profile (plugins, weights, args)."""
    doc = yaml.safe_load((BUNDLED_PROFILES_DIR / "harmonic.yaml").read_text())
    return next(p for p in doc["profiles"] if p["schedulerName"] == "harmonic")


def _admin(url: str, path: str, body: Any = None) -> Any:
    data = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        url + "/_harmonic/" + path,
        data=data,
        method="POST" if data is not None else "GET",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=300) as resp:
        return json.loads(resp.read())


def _cpu_seconds(pid: str) -> float:
    """User+system CPU time of a process (Linux /proc), to see which side is busy."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mib() -> tuple[float, float]:
    """(resident, peak resident) MiB of this process."""
    status = dict(
        line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line
    )
    return int(status["VmRSS"].split()[0]) / 1024, int(status["VmHWM"].split()[0]) / 1024


def _preemptions(name: str) -> int:
    """Involuntary context switches of this process's thread ``name`` (Linux /proc): how often the
    kernel took its core away while it could run, e.g. for a thread it had just woken."""
    for t in threading.enumerate():
        if t.name == name and t.native_id is not None:
            status = Path(f"/proc/self/task/{t.native_id}/status").read_text()
            return int(status.split("nonvoluntary_ctxt_switches:")[1].split()[0])
    return 0


def _thread_cpu() -> dict[str, float]:
    """CPU seconds by thread kind (pool threads "bind_3", "events-7" summed as "bind", "events")."""
    out: dict[str, float] = {}
    for t in threading.enumerate():
        try:
            cpu = _cpu_seconds(f"self/task/{t.native_id}")
        except OSError:
            continue
        kind = re.sub(r"[-_]\d+$", "", t.name)
        out[kind] = out.get(kind, 0.0) + cpu
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--qps", type=float, default=-1, help="clientConnection.qps (-1: no client-side limit)")
    ap.add_argument("--bind-workers", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", action="store_true", help="end with one JSON line of the figures")
    ap.add_argument("--verbose", action="store_true", help="print the progress timeline and the metrics")
    ap.add_argument(
        "--pin",
        action="store_true",
        help="run the double on CPU 1 and the scheduler on CPU 0 (taskset), instead of sharing both cores",
    )
    ap.add_argument("--profile", metavar="FILE", help="py-spy the scheduler over the measured window")
    ap.add_argument(
        "--harmony",
        type=int,
        default=0,
        metavar="WORKLOADS",
        help="schedule with the bundled harmonic profile, pods labelled round-robin for WORKLOADS "
        "workloads of an affinity graph (scheduler_perf's SchedulingBasicHarmony)",
    )
    ap.add_argument("--edges", type=int, default=20000, help="affinity-graph edges with --harmony")
    args = ap.parse_args()

    if args.profile:
        py_spy()  # fail before the set-up, not after it
    pin = ["taskset", "-c", "1"] if args.pin else []
    if args.pin:
        os.sched_setaffinity(0, {0})
    proc = subprocess.Popen(
        [*pin, sys.executable, "-m", "harmonic.testing.apiserver", "--bookmark-interval", "5"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    url, token = proc.stdout.readline().split()
    try:
        kubeconfig = Path(tempfile.mkdtemp()) / "kubeconfig"
        kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "double", "cluster": {"server": url}}],
                    "users": [{"name": "bench", "user": {"token": token}}],
                    "contexts": [{"name": "double", "context": {"cluster": "double", "user": "bench"}}],
                    "current-context": "double",
                }
            )
        )
        nt = node_template()
        _admin(
            url,
            "objects",
            {"resource": "nodes", "items": [named(nt, f"node-{i}") for i in range(args.nodes)]},
        )
        cfg = load_config(
            {
                "leaderElection": {
                    "leaderElect": True,
                    "resourceName": "harmonic",
                    "resourceNamespace": "kube-system",
                },
                "clientConnection": {"qps": args.qps, "burst": 1000},
                "profiles": [harmonic_profile() if args.harmony else {"schedulerName": "harmonic"}],
            },
            default_registry(),
            source="benchmark",
        )
        transport = Transport(
            load_client(str(kubeconfig)),
            qps=cfg.client_connection.qps,
            burst=cfg.client_connection.burst,
            user_agent="harmonic-benchmark",
        )
        tune_process()
        services = {"affinity_graph": graph_service(args.harmony, args.edges)} if args.harmony else None
        live = LiveScheduler(
            cfg, default_registry(), transport, bind_workers=args.bind_workers, services=services
        )
        runner = threading.Thread(target=live.run, name="live", daemon=True)
        runner.start()
        while not live.synced.is_set() or not live.is_leader:
            time.sleep(0.05)

        pt = pod_template()
        pt["spec"]["schedulerName"] = "harmonic"
        ns = NAMESPACE if args.harmony else "default"
        pods = [named(pt, f"pod-{i}", ns) for i in range(args.pods)]
        for i, p in enumerate(pods if args.harmony else ()):
            p["metadata"]["labels"] = {"app": f"w{i % args.harmony}"}
        # Encoded ahead: this driver thread's own CPU is left out of the scheduler's figure anyway.
        body = json.dumps({"resource": "pods", "items": pods}).encode()
        _admin(url, "reset-stats", {})
        prof = start_profiler(os.getpid(), args.profile) if args.profile else None
        cpu0_sched, cpu0_api = _cpu_seconds("self"), _cpu_seconds(str(proc.pid))
        cpu0_driver = time.thread_time()
        threads0 = _thread_cpu()
        preempted0 = _preemptions("scheduler")
        t0 = time.perf_counter()
        _admin(url, "objects", body)
        created = time.perf_counter() - t0
        bound = 0
        timeline: list[tuple[float, int]] = []
        while bound < args.pods and time.perf_counter() - t0 < args.timeout:
            time.sleep(0.05)
            bound = _admin(url, "bound")["bound"]
            timeline.append((round(time.perf_counter() - t0, 2), bound))
        elapsed = time.perf_counter() - t0
        # Events trail the binds: count their calls too (up to 60 s more).
        while live.events.pending and time.perf_counter() - t0 < elapsed + 60:
            time.sleep(0.05)
        time.sleep(0.5)
        drained = time.perf_counter() - t0
        stats = _admin(url, "stats")
        # The driver's copies of the pods go first: what stays is the scheduler's (its informers'
        # stores, cache, snapshot, queue).
        del pods, body
        gc.collect()
        rss, peak = _rss_mib()
        # The scheduler's threads only: this (driver) thread's polling and bulk create are not its work.
        cpu_driver = time.thread_time() - cpu0_driver
        threads = {k: v - threads0.get(k, 0.0) for k, v in _thread_cpu().items()}
        preempted = _preemptions("scheduler") - preempted0
        cpu_sched = _cpu_seconds("self") - cpu0_sched - cpu_driver
        cpu_api = _cpu_seconds(str(proc.pid)) - cpu0_api
        if prof is not None:
            prof.send_signal(signal.SIGINT)
            prof.wait(60)
        live.stop()
        runner.join(30)
    finally:
        proc.stdin.close()
        proc.wait(10)

    calls = {k: v for k, v in stats["requests"].items() if not k.startswith(("list ", "watch "))}
    total = sum(calls.values())
    result = {
        "nodes": args.nodes,
        "pods": args.pods,
        "bound": bound,
        "unbound": args.pods - bound,
        "timer": "wall (perf_counter)",
        "seconds": round(elapsed, 3),
        "create_seconds": round(created, 3),
        "pods_per_second": round(bound / elapsed, 1),
        "api_calls": total,
        "api_calls_per_pod": round(total / max(1, args.pods), 3),
        "calls_by_kind": calls,
        "binding_conflicts": stats["binding_conflicts"],
        "events_dropped": live.events.dropped,
        "seconds_until_events_written": round(drained, 3),
        "cpu_seconds_scheduler": round(cpu_sched, 2),
        "cpu_seconds_apiserver": round(cpu_api, 2),
        "cpu_ms_per_pod_scheduler": round(1000 * cpu_sched / max(1, bound), 3),
        "cpu_ms_per_pod_apiserver": round(1000 * cpu_api / max(1, bound), 3),
        "pinned": args.pin,
        "harmony_workloads": args.harmony,
        "rss_mib": round(rss, 1),
        "scheduling_thread_preemptions": preempted,
        "cpu_seconds_by_thread": {k: round(v, 2) for k, v in sorted(threads.items(), key=lambda kv: -kv[1])},
    }
    where = "double on CPU 1, scheduler on CPU 0" if args.pin else "sharing both cores"
    if args.harmony:
        where += f"; harmonic profile, {args.harmony} workloads, {args.edges} graph edges"
    print(
        f"live scheduler vs API-server double ({where}): {args.nodes} nodes, {args.pods} pods created at once"
    )
    print(
        f"  bound {bound}/{args.pods} ({args.pods - bound} unbound, not counted) in {elapsed:.2f} s wall"
        f" (perf_counter; bulk create took {created:.2f} s): {bound / elapsed:,.0f} bound pods/s"
    )
    print(
        f"  CPU over that window: scheduler {cpu_sched:.1f} CPU s ({result['cpu_ms_per_pod_scheduler']:.2f} CPU ms per"
        f" bound pod), API-server double {cpu_api:.1f} CPU s ({result['cpu_ms_per_pod_apiserver']:.2f} CPU ms per pod)"
    )
    print(
        "  scheduler CPU by thread:",
        ", ".join(f"{k} {v:.1f} s" for k, v in result["cpu_seconds_by_thread"].items() if v >= 0.05),
    )
    print(f"  scheduling thread preempted {preempted} times ({preempted / max(1, bound):.2f} per bound pod)")
    print(
        f"  memory: {rss:,.0f} MiB resident after binding (the driver's pod list freed; peak {peak:,.0f} MiB)"
    )
    print(f"  all Events written {drained:.2f} s after the create ({live.events.dropped} dropped)")
    print(f"  API calls (until the Events were written): {total} = {total / max(1, args.pods):.2f} per pod")
    for k, v in sorted(calls.items(), key=lambda kv: -kv[1]):
        print(f"    {k:45s} {v:7d}")
    if args.verbose:
        print("  timeline (s, bound):", timeline[:: max(1, len(timeline) // 40)] + timeline[-3:])
        print(live.metrics.exposition().decode())
    if args.json:
        print(json.dumps(result))
    return 0 if bound == args.pods else 1


if __name__ == "__main__":
    sys.exit(main())
