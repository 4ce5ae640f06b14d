"""Bad ground-truth, routing and zone-event input: a ScenarioError naming the file and the field."""

from __future__ import annotations

import pytest

from harmonic.sim.errors import ScenarioError
from harmonic.sim.plan import FailZone, RestoreZone

from ..helpers import deployment, job, objects, plan_of, scenario

WEB = [objects(deployment("web", 1)), objects(job("etl"), duration=60)]
LATE_NODE_D = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "late-0", "labels": {"topology.kubernetes.io/zone": "d"}},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}
TOPO = {"type": "topology", "topology": "online-boutique", "userRate": 1}

BAD = {
    "unknown pressure class": (
        scenario(groundTruth={"pressure": {"gpu-heavy": {"cpu": 1}}}),
        r"^test\.yaml: groundTruth\.pressure: unknown workload class 'gpu-heavy'",
    ),
    "unknown sensitivity class": (
        scenario(groundTruth={"sensitivity": {"interactive": {"cpu": 1}}}),
        r"^test\.yaml: groundTruth\.sensitivity: unknown workload class 'interactive'",
    ),
    "unknown resource": (
        scenario(groundTruth={"pressure": {"batch-cpu": {"gpu": 1}}}),
        r"^test\.yaml: groundTruth\.pressure\.batch-cpu\.gpu: unknown field",
    ),
    "negative class sensitivity": (
        scenario(groundTruth={"sensitivity": {"batch-cpu": {"memoryBandwidth": -0.1}}}),
        r"^test\.yaml: groundTruth\.sensitivity\.batch-cpu\.memoryBandwidth: .*greater than or equal to 0",
    ),
    "negative pressure": (
        scenario(groundTruth={"pressure": {"batch-io": {"io": -1}}}),
        r"^test\.yaml: groundTruth\.pressure\.batch-io\.io: .*greater than or equal to 0",
    ),
    "negative workload sensitivity": (
        scenario(WEB, groundTruth={"workloads": [{"workload": "default/web", "sensitivity": -0.5}]}),
        r"^test\.yaml: groundTruth\.workloads\[0\]\.sensitivity: .*greater than or equal to 0",
    ),
    "unknown workload class": (
        scenario(WEB, groundTruth={"workloads": [{"workload": "default/web", "class": "gpu"}]}),
        r"^test\.yaml: groundTruth\.workloads\[0\]\.class: unknown workload class 'gpu'",
    ),
    "negative convexity": (
        scenario(groundTruth={"convexity": -1}),
        r"^test\.yaml: groundTruth\.convexity: ",
    ),
    "typo in groundTruth": (
        scenario(groundTruth={"convexty": 1}),
        r"^test\.yaml: groundTruth\.convexty: unknown field",
    ),
    "unknown routing": (
        scenario(routing="nearest"),
        r"^test\.yaml: routing: .*'random', 'preferZone' or 'preferNode'",
    ),
    "unknown topology routing": (
        scenario([{**TOPO, "routing": "PreferClose"}]),
        r"^test\.yaml: workloads\[0\]\.routing: .*'random', 'preferZone' or 'preferNode'",
    ),
    "zoneFailed in an unknown zone": (
        scenario(events=[{"type": "zoneFailed", "at": 10, "zone": "x"}]),
        r"^test\.yaml: events\[0\]\.zone: no node in zone 'x'",
    ),
    "zoneRestored in an unknown zone": (
        scenario(
            events=[
                {"type": "zoneFailed", "at": 5, "zone": "a"},
                {"type": "zoneRestored", "at": 10, "zone": "y"},
            ]
        ),
        r"^test\.yaml: events\[1\]\.zone: no node in zone 'y'",
    ),
    "zoneFailed before the zone's first node": (
        scenario(
            events=[
                {"type": "zoneFailed", "at": 10, "zone": "d"},
                {
                    "type": "nodeAdded",
                    "at": 20,
                    "nodes": [LATE_NODE_D],
                },
            ]
        ),
        r"^test\.yaml: events\[0\]\.zone: no node in zone 'd' at 10s",
    ),
    "zoneFailed without a zone": (
        scenario(events=[{"type": "zoneFailed", "at": 10}]),
        r"^test\.yaml: events\[0\]\.zone: ",
    ),
    "groundTruth.workloads naming no workload": (
        scenario(WEB, groundTruth={"workloads": [{"workload": "default/api"}]}),
        r"^test\.yaml: groundTruth\.workloads\[0\]\.workload: 'default/api' matches no workload",
    ),
    "groundTruth.workloads with the wrong kind": (
        scenario(
            WEB, groundTruth={"workloads": [{"workload": "default/etl"}, {"workload": "Job/default/web"}]}
        ),
        r"^test\.yaml: groundTruth\.workloads\[1\]\.workload: 'Job/default/web' matches no workload",
    ),
    "groundTruth.workloads in another namespace": (
        scenario(WEB, groundTruth={"workloads": [{"workload": "prod/*"}]}),
        r"^test\.yaml: groundTruth\.workloads\[0\]\.workload: 'prod/\*' matches no workload",
    ),
}


@pytest.mark.parametrize(("sc", "message"), BAD.values(), ids=BAD.keys())
def test_bad_input_names_the_field(sc, message):
    with pytest.raises(ScenarioError, match=message):
        plan_of(sc)


def test_good_ground_truth_plans():
    sc = scenario(
        [*WEB, TOPO],
        routing="preferZone",
        groundTruth={
            "pressure": {"batch-cpu": {"cpu": 2}},
            "sensitivity": {"latency-critical": {"memoryBandwidth": 1.5}},
            "workloads": [
                {"workload": "default/web", "sensitivity": 2},
                {"workload": "Job/default/etl", "class": "batch-io"},
                {"workload": "online-boutique/front*"},
                {"workload": "*/cartservice", "class": "batch-memory"},
            ],
        },
        events=[
            {"type": "zoneFailed", "at": 60, "zone": "b"},
            {"type": "zoneRestored", "at": 120, "zone": "b"},
            {
                "type": "nodeAdded",
                "at": 130,
                "nodes": [LATE_NODE_D],
            },
            {"type": "zoneFailed", "at": 140, "zone": "d"},
        ],
    )
    plan = plan_of(sc)
    actions = [(t.time, t.action) for t in plan.timeline if isinstance(t.action, FailZone | RestoreZone)]
    assert actions == [(60, FailZone("b")), (120, RestoreZone("b")), (140, FailZone("d"))]
    assert plan.has_zone_outage
    assert plan.ground_truth.pressure_of("batch-cpu") == (2.0, 0.0, 0.0)
    assert {t.routing for t in plan.topologies} == {"preferZone"}
    # A topology's own routing wins over the scenario's.
    plan = plan_of(scenario([{**TOPO, "routing": "preferNode"}], routing="preferZone"))
    assert plan.topologies[0].routing == "preferNode"
    assert plan_of(scenario([TOPO])).topologies[0].routing == "random"
    assert not plan_of(scenario([TOPO])).has_zone_outage
