"""What the simulator keeps of each pod it created: a module of its own, so that what reads the records
(the ground truth, the metrics) does not import the engine that writes them."""

from __future__ import annotations

from dataclasses import dataclass

from harmonic.sim import workloads as wl


@dataclass(slots=True)
class PodRecord:
    key: str
    uid: str
    seq: int
    created_at: float
    owner: wl.Controller | None
    #: Workload identity: the top-level object (``Deployment/ns/name`` for its ReplicaSet's pods).
    workload: str
    run_for: float | None
    daemon: bool
    bound_at: float | None = None
    node: str | None = None
