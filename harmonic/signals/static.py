"""Static traffic seeds: an application topology file, or scheduler-plugins' AppGroup resources.

These give the affinity graph a starting point before (or instead of) live mesh telemetry.

- Topology files (the format of ``shared/data/topologies``): each edge's ``weight`` is calls per user
  action; times ``user_rate`` (user actions per second) it becomes requests/s from ``src`` to ``dst``.
- AppGroup (``appgroup.diktyo.x-k8s.io/v1alpha1``, used by the NetworkOverhead plugin): each workload
  dependency becomes an edge of ``dependency_rate`` requests/s, and its ``minBandwidth`` quantity
  becomes the edge's byte rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from harmonic import safeyaml
from harmonic.api.errors import ObjectError
from harmonic.api.quantity import QuantityError, parse_quantity, value
from harmonic.signals.identity import WorkloadKey
from harmonic.signals.telemetry import Reading, TrafficSample

#: Calls per user action an edge may carry, and user actions per second a topology may be driven at:
#: far beyond any application (the bundled topologies' weights are below 20), and small enough that
#: the rates they make (and the byte rates the simulator derives from them) stay finite numbers.
MAX_EDGE_WEIGHT = 1e6
MAX_USER_RATE = 1e6


def check_user_rate(rate: float) -> None:
    """Raises ValueError when ``rate`` is not a finite number in [0, MAX_USER_RATE]."""
    if not (math.isfinite(rate) and 0 <= rate <= MAX_USER_RATE):
        raise ValueError(f"{rate!r} must be a number from 0 to {MAX_USER_RATE:g} (user actions per second)")


def load_topology(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        data = safeyaml.load_json(p.read_text())
    except OSError as e:
        raise ObjectError(f"topology {p}", "", f"cannot read: {e.strerror}") from None
    except (ValueError, yaml.YAMLError) as e:
        why = safeyaml.problem(e) if isinstance(e, yaml.YAMLError) else str(e)
        raise ObjectError(f"topology {p}", "", f"not valid JSON: {why}") from None
    validate_topology(data, f"topology {p}")
    return data


def validate_topology(data: Any, obj: str) -> None:
    if not isinstance(data, Mapping):
        raise ObjectError(obj, "", "must be a JSON object with services and edges")
    services = data.get("services")
    if not isinstance(services, list) or not services:
        raise ObjectError(obj, "services", "must be a non-empty list")
    names = set()
    for i, s in enumerate(services):
        if not isinstance(s, Mapping) or not isinstance(s.get("name"), str) or not s["name"]:
            raise ObjectError(obj, f"services[{i}].name", "is required")
        names.add(s["name"])
    edges = data.get("edges")
    if not isinstance(edges, list):
        raise ObjectError(obj, "edges", "must be a list")
    for i, e in enumerate(edges):
        if not isinstance(e, Mapping):
            raise ObjectError(obj, f"edges[{i}]", "must be an object with src, dst, weight")
        for end in ("src", "dst"):
            if e.get(end) not in names:
                raise ObjectError(
                    obj, f"edges[{i}].{end}", f"{e.get(end)!r} is not a service of this topology"
                )
        w = e.get("weight")
        if (
            not isinstance(w, (int, float))
            or isinstance(w, bool)
            or not (math.isfinite(w) and 0 <= w <= MAX_EDGE_WEIGHT)
        ):
            raise ObjectError(
                obj,
                f"edges[{i}].weight",
                f"{w!r} must be a number from 0 to {MAX_EDGE_WEIGHT:g} (calls per user action)",
            )


class TopologySource:
    """Traffic from a topology file at ``user_rate`` user actions per second."""

    def __init__(
        self, topology: Mapping[str, Any], namespace: str = "default", user_rate: float = 1.0
    ) -> None:
        validate_topology(topology, f"topology {topology.get('name', '')}".strip())
        check_user_rate(user_rate)
        self.name = f"topology/{topology.get('name', 'unnamed')}"
        self._samples = tuple(
            TrafficSample(
                WorkloadKey(namespace, e["src"]),
                WorkloadKey(namespace, e["dst"]),
                float(e["weight"]) * user_rate,
            )
            for e in topology["edges"]
            if e["src"] != e["dst"]
        )

    def read(self) -> Reading:
        return Reading(self._samples) if self._samples else Reading.no_signal("topology has no edges")


class AppGroupSource:
    """Traffic edges from AppGroup objects (``dependency_rate`` requests/s per dependency)."""

    def __init__(self, appgroups: Sequence[Mapping[str, Any]], dependency_rate: float = 1.0) -> None:
        self.name = "appgroup"
        samples: list[TrafficSample] = []
        for i, ag in enumerate(appgroups):
            meta = ag.get("metadata") or {}
            obj = f"AppGroup {meta.get('namespace', 'default')}/{meta.get('name', f'#{i}')}"
            if ag.get("kind", "AppGroup") != "AppGroup":
                raise ObjectError(obj, "kind", f"expected AppGroup, got {ag.get('kind')!r}")
            ns = str(meta.get("namespace") or "default")
            workloads = (ag.get("spec") or {}).get("workloads")
            if not isinstance(workloads, list):
                raise ObjectError(obj, "spec.workloads", "must be a list")
            for j, w in enumerate(workloads):
                src = _workload(
                    obj,
                    f"spec.workloads[{j}].workload",
                    w.get("workload") if isinstance(w, Mapping) else None,
                    ns,
                )
                for k, dep in enumerate(w.get("dependencies") or ()):
                    field = f"spec.workloads[{j}].dependencies[{k}]"
                    dst = _workload(obj, f"{field}.workload", dep.get("workload"), ns)
                    bw = 0.0
                    if dep.get("minBandwidth") is not None:
                        try:
                            bw = float(value(parse_quantity(dep["minBandwidth"])))
                        except QuantityError as e:
                            raise ObjectError(obj, f"{field}.minBandwidth", str(e)) from None
                    if src != dst:
                        samples.append(TrafficSample(src, dst, dependency_rate, bw))
        self._samples = tuple(samples)

    @classmethod
    def from_file(cls, path: str | Path, dependency_rate: float = 1.0) -> AppGroupSource:
        p = Path(path)
        try:
            docs = [d for d in safeyaml.load_all(p.read_text()) if d]
        except OSError as e:
            raise ObjectError(f"AppGroup file {p}", "", f"cannot read: {e.strerror}") from None
        except yaml.YAMLError as e:
            raise ObjectError(f"AppGroup file {p}", "", f"not valid YAML: {safeyaml.problem(e)}") from None
        return cls(docs, dependency_rate)

    def read(self) -> Reading:
        return Reading(self._samples) if self._samples else Reading.no_signal("no AppGroup dependencies")


def _workload(obj: str, field: str, raw: Any, namespace: str) -> WorkloadKey:
    if not isinstance(raw, Mapping) or not raw.get("name"):
        raise ObjectError(obj, f"{field}.name", "is required")
    return WorkloadKey(str(raw.get("namespace") or namespace), str(raw["name"]))
