"""CPU of the live scheduler's per-pod steps outside the scheduling cycle, one at a time, on one thread.

    python benchmarks/live_path_costs.py

End to end (``live_scheduler.py``) the machine's other jobs move the figures by tens of percent; these
steps run alone on one thread and are timed by that thread's CPU clock (``time.thread_time``), the
best of three rounds, so a change to one of them shows:

- a binding confirmation on the scheduling thread: the pod's MODIFIED event as an API server sends it
  after a binding (``spec.nodeName`` set, a new ``resourceVersion``, the ``PodScheduled`` condition)
  handled by ``Scheduler._handle_pod``, which confirms the assumed pod in the cache;
- a Binding POST through ``PodBinder`` and a ``Scheduled`` Event built and POSTed by
  ``EventRecorder``, against the API-server test double in its own process (the client's CPU only).
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from extender import ApiServer

from harmonic.api.node import parse_node
from harmonic.api.pod import Pod, parse_pod
from harmonic.cluster.binding import PodBinder
from harmonic.cluster.events import EventRecorder
from harmonic.cluster.memory import InMemoryCluster
from harmonic.cluster.transport import Transport, load_client
from harmonic.framework.config import load_config
from harmonic.perf.templates import named, node_template, pod_template
from harmonic.plugins.registry import default_registry
from harmonic.scheduler.scheduler import Scheduler, _with_node

ROUNDS = 3


def best_per_item(items: list[Any], step: Callable[[Any], None]) -> float:
    """The lowest CPU seconds per item over ``ROUNDS`` equal slices of ``items``."""
    size = len(items) // ROUNDS
    best = float("inf")
    for r in range(ROUNDS):
        t0 = time.thread_time()
        for it in items[r * size : (r + 1) * size]:
            step(it)
        best = min(best, (time.thread_time() - t0) / size)
    return best


def confirmation_cost(n: int) -> float:
    registry = default_registry()
    s = Scheduler(load_config(None, registry), registry, InMemoryCluster())
    for i in range(100):
        s.cache.update_node(parse_node(named(node_template(), f"node-{i}")))
    for i in range(n):
        raw = named(pod_template(), f"pod-{i}", "default")
        raw["metadata"].update(uid=f"uid-{i}", resourceVersion=str(10 + i))
        s.on_pod(None, raw)
    s.drain()
    confirmations = []
    for i in range(n):
        qp = s.queue.pop()
        assert qp is not None
        assumed = _with_node(qp.pod, f"node-{i % 100}")
        s.cache.assume(assumed, assumed.node_name)
        s.cache.finish_binding(assumed)
        s.queue.done(assumed.uid)
        new: dict[str, Any] = copy.deepcopy(dict(qp.pod.raw))
        new["spec"]["nodeName"] = assumed.node_name
        new["metadata"]["resourceVersion"] = str(100_000 + i)
        condition = {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        new["status"] = {"phase": "Pending", "conditions": [condition]}
        confirmations.append((qp.pod.raw, new))
    cost = best_per_item(confirmations, lambda c: s._handle_pod(*c))
    assert all(s.cache.pod(f"uid-{i}") is not None and not s.cache.is_assumed(f"uid-{i}") for i in range(n))
    return cost


class _AnyNode:
    def get(self, key: str) -> dict[str, Any]:
        return {"metadata": {"name": key}}


def request_costs(n: int) -> tuple[float, float]:
    api = ApiServer()
    try:
        kubeconfig = api.kubeconfig(Path(tempfile.mkdtemp()))
        t = Transport(load_client(str(kubeconfig)), qps=-1, burst=1)
        pods = [named(pod_template(), f"p-{i}", "default") for i in range(n)]
        t.request("POST", "/_harmonic/objects", body={"resource": "pods", "items": pods})
        listed = [parse_pod(p) for p in t.request("GET", "/api/v1/namespaces/default/pods")["items"]]
        binder = PodBinder(t, _AnyNode())
        recorder = EventRecorder(t, api="events.k8s.io/v1")

        def bind(p: Pod) -> None:
            assert binder.bind(p, "node-1") is None

        def event(p: Pod) -> None:
            note = f"Successfully assigned {p.key} to node-1"
            recorder._record(
                recorder._expand((p.raw, "Normal", "Scheduled", "Binding", note, "harmonic", time.time()))
            )

        return best_per_item(listed, bind), best_per_item(listed, event)
    finally:
        api.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=3000, help="items per measurement (three rounds)")
    args = ap.parse_args()
    confirm = confirmation_cost(args.pods)
    bind, event = request_costs(args.pods)
    print(f"per pod, CPU of one thread (thread_time), best of {ROUNDS} rounds of {args.pods // ROUNDS}:")
    print(f"  binding confirmation on the scheduling thread  {confirm * 1e6:7.1f} us")
    print(f"  Binding POST (client side)                      {bind * 1e6:7.1f} us")
    print(f"  Scheduled Event built and POSTed (client side)  {event * 1e6:7.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
