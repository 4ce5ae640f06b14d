"""Workload classes for interference modelling, and the rules that infer a pod's class.

Classes:
- ``latency-critical``: serves requests with a latency objective (web, RPC, caches, databases);
- ``batch-cpu``: throughput work bound by CPU (compute jobs, CPU training, transcoding);
- ``batch-memory``: throughput work bound by memory bandwidth / cache (analytics, large joins);
- ``batch-io``: throughput work bound by disk or network I/O (ETL, backups, bulk copies);
- ``best-effort``: pods with no requests or limits (QoS BestEffort), no objective;
- ``general``: anything the rules cannot place.

Rules, first match wins:
1. annotation (or label) ``harmonic.dev/class`` naming one of the classes above;
2. QoS class BestEffort (no container sets requests or limits) -> ``best-effort``;
3. owned by a Job (or CronJob): ``batch-io`` if annotated ``harmonic.dev/io-intensive: "true"``,
   ``batch-memory`` if it requests more than ``MEMORY_HEAVY_BYTES_PER_CORE`` of memory per CPU core,
   else ``batch-cpu``;
4. owned by a Deployment's ReplicaSet, a ReplicaSet or a StatefulSet (long-running, request serving)
   -> ``latency-critical``;
5. otherwise (bare pods, DaemonSets, unknown controllers) -> ``general``.
"""

from __future__ import annotations

from enum import StrEnum

from harmonic.api.pod import Pod

CLASS_KEY = "harmonic.dev/class"
IO_INTENSIVE_KEY = "harmonic.dev/io-intensive"
#: Above this much memory per requested CPU core, a batch pod counts as memory-bound.
MEMORY_HEAVY_BYTES_PER_CORE = 8 * 2**30


class WorkloadClass(StrEnum):
    LATENCY_CRITICAL = "latency-critical"
    BATCH_CPU = "batch-cpu"
    BATCH_MEMORY = "batch-memory"
    BATCH_IO = "batch-io"
    BEST_EFFORT = "best-effort"
    GENERAL = "general"


CLASSES: tuple[WorkloadClass, ...] = tuple(WorkloadClass)
CLASS_INDEX = {c: i for i, c in enumerate(CLASSES)}


def _is_best_effort(pod: Pod) -> bool:
    """QoS BestEffort: no container requests or limits anything (zero quantities do not count)."""
    if any(v > 0 for v in pod.requests.values()):
        return False
    for c in [*(pod.spec.get("containers") or ()), *(pod.spec.get("initContainers") or ())]:
        res = c.get("resources") or {}
        if res.get("requests") or res.get("limits"):
            return False
    return True


def classify(pod: Pod) -> WorkloadClass:
    cached = pod.extra.get(CLASS_KEY)
    if cached is not None:
        cls: WorkloadClass = cached
        return cls
    cls = _classify(pod)
    pod.extra[CLASS_KEY] = cls
    return cls


def _classify(pod: Pod) -> WorkloadClass:
    explicit = pod.annotations.get(CLASS_KEY) or pod.labels.get(CLASS_KEY)
    if explicit:
        try:
            return WorkloadClass(explicit)
        except ValueError:
            pass  # an unknown class name falls through to inference rather than failing the pod
    if _is_best_effort(pod):
        return WorkloadClass.BEST_EFFORT
    owner = pod.controller
    kind = owner.kind if owner is not None else ""
    if kind in ("Job", "CronJob"):
        if (pod.annotations.get(IO_INTENSIVE_KEY) or "").lower() == "true":
            return WorkloadClass.BATCH_IO
        cpu = pod.requests.get("cpu", 0)
        mem = pod.requests.get("memory", 0)
        if mem > 0 and (cpu == 0 or mem * 1000 / cpu > MEMORY_HEAVY_BYTES_PER_CORE):
            return WorkloadClass.BATCH_MEMORY
        return WorkloadClass.BATCH_CPU
    if kind in ("ReplicaSet", "StatefulSet", "Deployment"):
        return WorkloadClass.LATENCY_CRITICAL
    return WorkloadClass.GENERAL
