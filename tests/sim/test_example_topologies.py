"""The application topologies under examples/topologies/: valid, documented as the bundled one is, and
each a connected call graph rooted at its frontend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harmonic.sim.topology import deployments, validate_topology

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = sorted((ROOT / "examples" / "topologies").glob("*.json"))


def test_the_generalisation_topologies_are_there():
    names = {p.stem for p in TOPOLOGIES}
    assert {"media-microservices", "social-network", "sock-shop", "train-ticket"} <= names


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.stem)
def test_topology_is_valid_and_documented(path):
    data = json.loads(path.read_text())
    validate_topology(data, str(path))
    assert data["name"] == path.stem
    assert data["source"] and data["unit"] and data["assumptions"]
    for s in data["services"]:
        assert {"name", "cpu_request", "memory_request", "replicas"} <= set(s), s["name"]
    assert len(deployments(data, "ns", 2)) == len(data["services"])


@pytest.mark.parametrize(
    "path", [p for p in TOPOLOGIES if p.stem != "hotel-reservation"], ids=lambda p: p.stem
)
def test_call_graph_is_rooted_at_its_entry_points_and_reaches_every_busy_service(path):
    data = json.loads(path.read_text())
    kinds = {s["name"]: s.get("kind") for s in data["services"]}
    edges = [(e["src"], e["dst"]) for e in data["edges"] if e["weight"] > 0]
    assert all(a != b for a, b in edges)
    called = {b for _, b in edges}
    roots = {a for a, _ in edges if a not in called}
    # a root is where user requests enter, or a consumer that only reads a queue (Sock Shop's queue-master)
    consumers = {r for r in roots if all(kinds[b] == "queue" for a, b in edges if a == r)}
    assert roots and all(kinds[r] == "frontend" for r in roots - consumers), roots
    reached, todo = set(roots), list(roots)
    while todo:
        n = todo.pop()
        for a, b in edges:
            if a == n and b not in reached:
                reached.add(b)
                todo.append(b)
    assert reached == {a for a, _ in edges} | called
