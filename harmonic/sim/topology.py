"""Application topologies (the JSON format of ``harmonic/data/topologies/``) and their traffic.

Each service becomes a Deployment ``<service>`` in the topology's namespace: ``replicas`` pods with one
container requesting ``cpu_request``/``memory_request``, labelled ``app``, ``app.kubernetes.io/name``,
``app.kubernetes.io/part-of`` (the topology) and ``app.kubernetes.io/component`` (the service's kind).

Each edge may give ``bytes``: what one call moves, request and response (for the NIC load of
``usage.bandwidth``, docs/load-aware.md). Each service may give ``service_time_ms``: the time one call takes at an idle, undisturbed replica (the
ground truth's default when absent). How calls spread over replicas, and what they cost, is the ground
truth's business (``harmonic.sim.truth``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harmonic import safeyaml
from harmonic.api.quantity import QuantityError
from harmonic.api.resources import CPU, MEMORY, to_units
from harmonic.signals.static import MAX_EDGE_WEIGHT
from harmonic.sim.errors import ScenarioError

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "data" / "topologies"
_NAME_OK = set("abcdefghijklmnopqrstuvwxyz0123456789-")


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    #: Calls per user action.
    weight: float
    #: Bytes one call moves, request and response (``bytes``; the scenario's default when absent).
    bytes: float | None = None


@dataclass(frozen=True)
class TopologyInstance:
    """One topology placed in a namespace at a user request rate."""

    name: str
    namespace: str
    user_rate: float
    services: tuple[str, ...]
    edges: tuple[Edge, ...]
    #: How a call picks a replica of its callee: random, preferZone or preferNode.
    routing: str = "random"
    #: Per service, its own service time in ms when the topology gives one.
    service_time_ms: tuple[tuple[str, float], ...] = ()

    def workload(self, service: str) -> str:
        """The key of the Deployment that runs ``service`` (the engine's workload identity)."""
        return f"Deployment/{self.namespace}/{service}"

    def calls_per_second(self, service: str) -> float:
        """Calls into ``service`` per second at the topology's user rate."""
        return self.user_rate * sum(e.weight for e in self.edges if e.dst == service)

    def traffic_bytes_per_second(self, service: str, default_bytes: float) -> float:
        """Bytes per second ``service`` sends and receives on its edges, every call counted."""
        return self.user_rate * sum(
            e.weight
            * (e.bytes if e.bytes is not None else default_bytes)
            * ((e.src == service) + (e.dst == service))
            for e in self.edges
        )


def bundled_topologies() -> list[str]:
    return sorted(p.stem for p in BUNDLED_DIR.glob("*.json"))


def load_topology(ref: str, base_dir: Path, source: str, path: str) -> tuple[dict[str, Any], str]:
    """A bundled topology by name, or a JSON file (relative to the scenario). Returns (data, file)."""
    bundled = BUNDLED_DIR / f"{ref}.json"
    file = bundled if "/" not in ref and not ref.endswith(".json") and bundled.exists() else base_dir / ref
    if not file.exists():
        raise ScenarioError(
            source,
            path,
            f"{ref!r} is neither a bundled topology ({', '.join(bundled_topologies())}) nor a file",
        )
    try:
        data = safeyaml.load_json(file.read_text())
    except (OSError, ValueError) as e:  # ValueError: JSONDecodeError and UnicodeDecodeError
        raise ScenarioError(str(file), "", f"not a readable JSON topology: {e}") from None
    except yaml.YAMLError as e:
        raise ScenarioError(str(file), "", f"not a readable JSON topology: {safeyaml.problem(e)}") from None
    validate_topology(data, str(file))
    return data, str(file)


def validate_topology(data: Any, source: str) -> None:
    if not isinstance(data, Mapping):
        raise ScenarioError(source, "", "must be a JSON object with services and edges")
    services = data.get("services")
    if not isinstance(services, list) or not services:
        raise ScenarioError(source, "services", "must be a non-empty list")
    names: set[str] = set()
    for i, s in enumerate(services):
        where = f"services[{i}]"
        if not isinstance(s, Mapping):
            raise ScenarioError(source, where, "must be an object")
        name = s.get("name")
        if not isinstance(name, str) or not name or not set(name) <= _NAME_OK or len(name) > 63:
            raise ScenarioError(source, f"{where}.name", f"{name!r} is not a valid service name")
        if name in names:
            raise ScenarioError(source, f"{where}.name", f"duplicate service {name!r}")
        names.add(name)
        for key, resource in (("cpu_request", CPU), ("memory_request", MEMORY)):
            if key in s:
                try:
                    to_units(resource, s[key])  # what the pod made from it must be a valid pod
                except QuantityError as e:
                    raise ScenarioError(source, f"{where}.{key}", str(e)) from None
        st = s.get("service_time_ms")
        if st is not None and (not isinstance(st, int | float) or isinstance(st, bool) or not 0 < st < 1e6):
            raise ScenarioError(source, f"{where}.service_time_ms", f"{st!r} must be a number of ms > 0")
        r = s.get("replicas", 1)
        if not isinstance(r, int) or isinstance(r, bool) or r < 0:
            raise ScenarioError(source, f"{where}.replicas", f"{r!r} must be a non-negative integer")
    edges = data.get("edges")
    if not isinstance(edges, list):
        raise ScenarioError(source, "edges", "must be a list")
    for i, edge in enumerate(edges):
        if not isinstance(edge, Mapping):
            raise ScenarioError(source, f"edges[{i}]", "must be an object with src, dst, weight")
        for end in ("src", "dst"):
            if not isinstance(edge.get(end), str) or edge.get(end) not in names:
                raise ScenarioError(
                    source, f"edges[{i}].{end}", f"{edge.get(end)!r} is not a service of this topology"
                )
        w = edge.get("weight")
        if not isinstance(w, int | float) or isinstance(w, bool) or not 0 <= w <= MAX_EDGE_WEIGHT:
            raise ScenarioError(
                source,
                f"edges[{i}].weight",
                f"{w!r} must be a number from 0 to {MAX_EDGE_WEIGHT:g} (calls per user action)",
            )
        b = edge.get("bytes")
        if b is not None and (not isinstance(b, int | float) or isinstance(b, bool) or not 0 <= b < 1e12):
            raise ScenarioError(source, f"edges[{i}].bytes", f"{b!r} must be a number of bytes >= 0")


def instance(
    data: Mapping[str, Any], namespace: str, user_rate: float, routing: str = "random"
) -> TopologyInstance:
    return TopologyInstance(
        name=str(data.get("name") or namespace),
        namespace=namespace,
        user_rate=user_rate,
        services=tuple(str(s["name"]) for s in data["services"]),
        edges=tuple(
            Edge(
                str(e["src"]), str(e["dst"]), float(e["weight"]), float(e["bytes"]) if "bytes" in e else None
            )
            for e in data["edges"]
        ),
        routing=routing,
        service_time_ms=tuple(
            (str(s["name"]), float(s["service_time_ms"])) for s in data["services"] if "service_time_ms" in s
        ),
    )


def deployments(
    data: Mapping[str, Any],
    namespace: str,
    replicas: int | None,
    annotations: Mapping[str, Mapping[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """The Deployment manifests of a topology's services; ``annotations`` (service -> annotations) go on
    their pods."""
    part_of = str(data.get("name") or namespace)
    out = []
    for s in data["services"]:
        name = str(s["name"])
        labels = {
            "app": name,
            "app.kubernetes.io/name": name,
            "app.kubernetes.io/part-of": part_of,
        }
        if s.get("kind"):
            labels["app.kubernetes.io/component"] = str(s["kind"])
        requests = {}
        if "cpu_request" in s:
            requests["cpu"] = str(s["cpu_request"])
        if "memory_request" in s:
            requests["memory"] = str(s["memory_request"])
        container: dict[str, Any] = {"name": "server", "image": f"{part_of}/{name}"}
        template_meta: dict[str, Any] = {"labels": labels}
        if annotations and annotations.get(name):
            template_meta["annotations"] = dict(annotations[name])
        if requests:
            container["resources"] = {"requests": requests}
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
                "spec": {
                    "replicas": replicas if replicas is not None else int(s.get("replicas", 1)),
                    "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": template_meta, "spec": {"containers": [container]}},
                },
            }
        )
    return out
