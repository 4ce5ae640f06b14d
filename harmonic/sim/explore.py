"""What ``harmonic simulate --record-decisions`` adds to the report folder, for ``harmonic ui --report``.

- ``decisions.msgpack``: the latest scheduling attempt of each pod in each profile's world
  (``profile`` names the world), for at most ``capacity`` pods per profile (the most recently decided;
  a pod still pending at the end was retried recently, so it is kept). A sequence of records, each a
  4-byte little-endian length and then that many bytes of MessagePack: the compact record of
  ``DecisionTrace.to_record`` (per-node numbers as the bytes of little-endian numpy arrays), which
  ``harmonic.framework.decisions.document`` turns into the same JSON document ``/debug/decisions``
  serves. Binary because a large simulation writes tens of thousands of decisions of hundreds of
  nodes each: as JSON, encoding them took longer than a fifth of the simulation.
- ``graph.json``: the affinity graph over time. ``workloads``: the scenario topologies' services (as
  ``Deployment/<namespace>/<service>``); ``edges``: their traffic (requests/s: edge weight times the
  topology's user rate); ``zones``: node -> zone for every node that existed; and per profile, at every
  metrics sample, which nodes the workloads' running replicas were on (``placement``: workload -> node ->
  replicas) and which nodes had failed.
- ``pending.json``: per profile, the pods (``namespace/name``) still pending when the run ended.

Recording hooks into a world before it runs: its scheduler gets a ``DecisionLog`` and its metrics
recorder's ``sample`` is wrapped to take the placement too, so nothing of the engine changes when
recording is off.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from harmonic.framework.decisions import DEFAULT_PODS_KEPT, DecisionLog
from harmonic.sim.engine import World
from harmonic.sim.plan import Plan

DECISIONS_FILE = "decisions.msgpack"
_LENGTH = struct.Struct("<I")
GRAPH_FILE = "graph.json"
PENDING_FILE = "pending.json"


class Exploration:
    """Records the decisions and the placement timeline of every world it is attached to."""

    def __init__(self, plan: Plan, capacity: int = DEFAULT_PODS_KEPT) -> None:
        self.plan = plan
        self.capacity = capacity
        self.logs: dict[str, DecisionLog] = {}
        self.samples: dict[str, list[dict[str, Any]]] = {}
        self.zones: dict[str, str] = {}
        self.worlds: dict[str, World] = {}
        self._workloads = {
            topo.workload(s): topo.namespace for topo in plan.topologies for s in topo.services
        }

    def attach(self, world: World) -> None:
        self.worlds[world.profile] = world
        log = self.logs[world.profile] = DecisionLog(self.capacity, per_pod=True)
        world.scheduler.decisions = log
        samples = self.samples[world.profile] = []
        sample = world.recorder.sample

        def sample_with_placement(t: float, final: bool = False) -> None:
            before = len(world.recorder.series.time)
            sample(t, final)
            if len(world.recorder.series.time) != before:
                samples.append(self._placement(world, t))

        # The engine calls ``world.recorder.sample``: taking the placement with each metrics sample keeps
        # the timeline aligned with the report's plots.
        setattr(world.recorder, "sample", sample_with_placement)  # noqa: B010

    def _placement(self, world: World, t: float) -> dict[str, Any]:
        self.zones.update(world.zone_of())
        placement = {
            w: dict(sorted(on.items()))
            for w, on in world.replicas_on.items()
            if w in self._workloads and any(on.values())
        }
        return {"time": t, "failedNodes": sorted(world.failed_nodes), "placement": placement}

    def graph_document(self) -> dict[str, Any]:
        edges = [
            {
                "src": topo.workload(e.src),
                "dst": topo.workload(e.dst),
                "requestsPerSecond": e.weight * topo.user_rate,
            }
            for topo in self.plan.topologies
            for e in topo.edges
            if e.src != e.dst
        ]
        return {
            "workloads": [{"id": w, "namespace": ns} for w, ns in self._workloads.items()],
            "edges": edges,
            "zones": dict(sorted(self.zones.items())),
            "profiles": self.samples,
        }

    def write(self, out_dir: str | Path) -> None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        encode = msgspec.msgpack.Encoder().encode
        with (out / DECISIONS_FILE).open("wb") as f:
            for log in self.logs.values():
                for trace in log.traces():
                    payload = encode(trace.to_record())
                    f.write(_LENGTH.pack(len(payload)))
                    f.write(payload)
        (out / GRAPH_FILE).write_text(json.dumps(self.graph_document(), separators=(",", ":")))
        pending = {name: sorted(r.key for r in w.pending()) for name, w in self.worlds.items()}
        (out / PENDING_FILE).write_text(json.dumps(pending, indent=1))


def read_records(path: Path) -> Iterator[tuple[int, bytes]]:
    """(offset of the payload, payload) of every record of a decisions file; ``ValueError`` naming the
    offset when the file is cut short."""
    with path.open("rb") as f:
        offset = 0
        while head := f.read(_LENGTH.size):
            if len(head) < _LENGTH.size:
                raise ValueError(f"truncated record length at byte {offset}")
            (n,) = _LENGTH.unpack(head)
            payload = f.read(n)
            if len(payload) < n:
                raise ValueError(f"record at byte {offset} is cut short ({len(payload)} of {n} bytes)")
            yield offset + _LENGTH.size, payload
            offset += _LENGTH.size + n
