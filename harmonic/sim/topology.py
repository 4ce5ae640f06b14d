"""Application topologies (the JSON format of ``harmonic/data/topologies/``) and their traffic.

Each service becomes a Deployment ``<service>`` in the topology's namespace: ``replicas`` pods with one
container requesting ``cpu_request``/``memory_request``, labelled ``app``, ``app.kubernetes.io/name``,
``app.kubernetes.io/part-of`` (the topology) and ``app.kubernetes.io/component`` (the service's kind).

Traffic model: an edge ``src -> dst`` with ``weight`` w (calls per user action) carries
``w * userRate`` requests per second. Calls are spread evenly over the running replicas of the source
and each goes to a uniformly chosen running replica of the destination, so the pair (i, j) carries
``1 / (|S| |D|)`` of the edge's calls. A call crosses nodes (zones) when i and j run on different nodes
(zones). Over an edge, the share crossing nodes is ``1 - sum_n s_n d_n / (|S| |D|)`` with ``s_n``/``d_n``
the replicas on node n; zones likewise. An edge with no running replica at either end is *unserved*.

Latency model: a call adds ``sameNodeMs``, ``crossNodeMs`` (another node in the same zone) or
``crossZoneMs`` of round-trip network latency; a user action makes ``w`` calls on each edge, counted as
if made one after another (an upper bound: parallel calls overlap), so the added latency per user
request is ``sum_edges w * E[added latency of one call]``.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harmonic.api.quantity import QuantityError, parse_quantity
from harmonic.sim.errors import ScenarioError
from harmonic.sim.scenario import NetworkModel

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "data" / "topologies"
_NAME_OK = set("abcdefghijklmnopqrstuvwxyz0123456789-")


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    #: Calls per user action.
    weight: float


@dataclass(frozen=True)
class TopologyInstance:
    """One topology placed in a namespace at a user request rate."""

    name: str
    namespace: str
    user_rate: float
    services: tuple[str, ...]
    edges: tuple[Edge, ...]

    def workload(self, service: str) -> str:
        """The key of the Deployment that runs ``service`` (the engine's workload identity)."""
        return f"Deployment/{self.namespace}/{service}"


@dataclass(frozen=True)
class Locality:
    """Traffic-weighted placement quality of one topology at one instant."""

    requests_per_second: float
    served: float  # requests/s on edges with running replicas at both ends
    cross_node: float  # requests/s crossing nodes
    cross_zone: float  # requests/s crossing zones
    added_latency_ms: float  # per user request


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
        data = json.loads(file.read_text())
    except (OSError, ValueError) as e:  # ValueError: JSONDecodeError and UnicodeDecodeError
        raise ScenarioError(str(file), "", f"not a readable JSON topology: {e}") from None
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
        for key in ("cpu_request", "memory_request"):
            if key in s:
                try:
                    parse_quantity(s[key])
                except QuantityError as e:
                    raise ScenarioError(source, f"{where}.{key}", str(e)) from None
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
        if not isinstance(w, int | float) or isinstance(w, bool) or not 0 <= w < math.inf:
            raise ScenarioError(source, f"edges[{i}].weight", f"{w!r} must be a non-negative number")


def instance(data: Mapping[str, Any], namespace: str, user_rate: float) -> TopologyInstance:
    return TopologyInstance(
        name=str(data.get("name") or namespace),
        namespace=namespace,
        user_rate=user_rate,
        services=tuple(str(s["name"]) for s in data["services"]),
        edges=tuple(Edge(str(e["src"]), str(e["dst"]), float(e["weight"])) for e in data["edges"]),
    )


def deployments(data: Mapping[str, Any], namespace: str, replicas: int | None) -> list[dict[str, Any]]:
    """The Deployment manifests of a topology's services."""
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
                    "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
                },
            }
        )
    return out


def locality(
    topo: TopologyInstance,
    replicas_on: Mapping[str, Counter[str]],
    zone_of: Mapping[str, str],
    network: NetworkModel,
) -> Locality:
    """Where ``replicas_on[workload]`` counts the running replicas of each workload per node."""
    total = served = cross_node = cross_zone = latency = 0.0
    for e in topo.edges:
        rate = e.weight * topo.user_rate
        total += rate
        src = replicas_on.get(topo.workload(e.src))
        dst = replicas_on.get(topo.workload(e.dst))
        if not src or not dst:
            continue
        n_src, n_dst = sum(src.values()), sum(dst.values())
        pairs = n_src * n_dst
        same_node = sum(c * dst.get(n, 0) for n, c in src.items()) / pairs
        src_z: Counter[str] = Counter()
        dst_z: Counter[str] = Counter()
        for n, c in src.items():
            src_z[zone_of.get(n, "")] += c
        for n, c in dst.items():
            dst_z[zone_of.get(n, "")] += c
        same_zone = sum(c * dst_z.get(z, 0) for z, c in src_z.items()) / pairs
        p_zone = 1.0 - same_zone
        p_node_only = same_zone - same_node
        served += rate
        cross_node += rate * (1.0 - same_node)
        cross_zone += rate * p_zone
        latency += e.weight * (
            same_node * network.same_node_ms
            + p_node_only * network.cross_node_ms
            + p_zone * network.cross_zone_ms
        )
    return Locality(total, served, cross_node, cross_zone, latency)
