"""Right-sizing inside the simulator (``feedback.rightsizing``) and the loop's moves (``feedback.moves``)."""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest

from harmonic.sim.errors import ScenarioError
from harmonic.sim.metrics import summarize
from tests.sim.helpers import deployment, objects, plan_of, run, scenario

SLO = {"harmonic.dev/flourish-target": "2"}
AUTO = {**SLO, "harmonic.dev/resize": "auto"}


def _service(name: str, replicas: int, cpu: str, annotations: dict[str, str]) -> dict[str, Any]:
    d = deployment(name, replicas, cpu=cpu, memory="2Gi")
    d["spec"]["template"]["metadata"]["annotations"] = annotations
    return d


def _scenario(*services: dict[str, Any], recommender: str = "harmonic", **feedback: Any) -> dict[str, Any]:
    return scenario(
        [objects(*services, namespace="svc")],
        nodes=4,
        cpu="32",
        memory="128Gi",
        seed=2,
        duration="1h",
        usage={"default": {"cpu": 0.25, "memory": 0.3, "amplitude": 0, "noise": 0.05}},
        feedback={
            "interval": "1m",
            "noise": 0.05,
            "rightsizing": {"interval": "5m", "recommender": recommender},
            **feedback,
        },
    )


def _block(sc: dict[str, Any]) -> dict[str, Any]:
    rs: dict[str, Any] = summarize(run(sc))["feedback"]["rightsizing"]
    return rs


def test_over_requested_services_are_resized_in_place_toward_the_smallest_slo_keeping_request() -> None:
    # 3 cores used of 12 requested: the smallest request keeping the SLO is about 4 cores
    rs = _block(_scenario(_service("api", 3, "12", AUTO)))
    w = rs["workloads"]["svc/api"]
    assert rs["resizes"] > 0 and rs["recommendations"] == 0
    assert w["rounds_to_within_20pct"] is not None and w["rounds_to_within_20pct"] <= 10
    assert 0.95 <= w["final_over_smallest"] <= 1.2
    # the search breaks the SLO while it probes below the smallest request (reverted within two
    # reports' time); over an hour that stays far below the VPA baseline's (next test). The two-hour,
    # ten-seed figures (under 5%) are benchmarks/rightsizing.py's.
    assert w["violation_share"] < 0.15
    assert rs["slack_final"] < rs["slack_initial"] - 0.3
    _floors_bound_what_any_request_can_do(rs)


def _floors_bound_what_any_request_can_do(rs: dict[str, Any]) -> None:
    floors = rs["slack_at_violation_share"]
    # breaking the SLO less often needs more room
    assert floors["0.05"] <= floors["0.01"] <= floors["0"]
    # a request leaving less slack than the floor for a share breaks the SLO more often than that
    for share, floor in floors.items():
        if rs["slack_final"] < floor - 0.005:
            assert rs["violation_share_final"] > float(share), share
    assert 0 < rs["slack_final_memory"] < 1


def test_the_vpa_baseline_cuts_without_seeing_the_slo() -> None:
    rs = _block(_scenario(_service("api", 3, "12", AUTO), recommender="vpa"))
    w = rs["workloads"]["svc/api"]
    # P90 of use + 15% is below what the SLO needs: the SLO breaks most of the time after it
    assert w["final_over_smallest"] < 0.95
    assert w["violation_share"] > 0.3 and rs["reverts"] == 0
    assert rs["slack_final"] < rs["slack_at_violation_share"]["0.05"]
    _floors_bound_what_any_request_can_do(rs)


def test_a_workload_that_did_not_opt_in_gets_recommendations_never_resizes() -> None:
    rs = _block(_scenario(_service("db", 2, "12", SLO)))
    assert rs["resizes"] == 0 and rs["recommendations"] > 0
    assert rs["workloads"]["svc/db"]["final_cpu_millis"] == 12000


def test_an_infeasible_resize_asks_the_rescheduler_for_a_move() -> None:
    # 1 core requested, 4 used: the right-sizer grows it past what a 4-core node holds
    sc = _scenario(_service("hot", 2, "1", AUTO), moves={"maxPerRound": 1})
    sc["cluster"]["nodePools"][0]["allocatable"]["cpu"] = "4"
    sc["cluster"]["nodePools"][0]["count"] = 6
    sc["usage"]["default"]["cpu"] = 2.5
    fb = summarize(run(sc))["feedback"]
    assert fb["rightsizing"]["infeasible"] + fb["rightsizing"]["deferred"] > 0
    assert fb["moves"]["asked"] > 0
    # a move only lands where the replacement fits; on a cluster of equal nodes none does better
    assert fb["moves"]["executed"] + fb["moves"]["refused"] == fb["moves"]["asked"]


def test_rightsizing_needs_usage_and_valid_args() -> None:
    sc = _scenario(_service("api", 1, "1", AUTO))
    del sc["usage"]
    with pytest.raises(ScenarioError, match="usage"):
        plan_of(sc)
    sc = _scenario(_service("api", 1, "1", AUTO))
    sc["feedback"]["rightsizing"]["args"] = {"maxStepDown": 2}
    with pytest.raises(ScenarioError, match="maxStepDown"):
        plan_of(sc)


def test_moves_the_learnt_model_asks_for_are_carried_out_through_the_evictor() -> None:
    from tests.sim.test_feedback import antagonist

    world = run(antagonist(moves={"maxPerRound": 1}))
    moves = summarize(world)["feedback"]["moves"]
    assert moves["executed"] > 0 and moves["executed"] + moves["refused"] == moves["asked"]
    moved = [text for _, text in world.feedback.decisions() if ": moved, replacement reserved on " in text]
    assert len(moved) == moves["executed"]
    # each with its figures: predicted slowdown here and there, gain against the restart's cost
    assert all("predicted slowdown" in t and "restart cost" in t for t in moved)
    # the cool-down holds: one workload, at most one move per 10 minutes
    times = [float(t.split(" ", 1)[0][2:]) for t in moved]
    assert all(b - a >= 600 for a, b in itertools.pairwise(times))
    # per workload, the same counts; "home": refused because the profile's scheduler would put the
    # replacement back where the pod runs, as the decision log says
    per = moves["workloads"]
    for key in ("asked", "executed", "refused"):
        assert sum(c[key] for c in per.values()) == moves[key]
    back = re.compile(r" from (\S+) \(best.*not moved \(the scheduler would place it on (\S+), ")
    home = [m for _, t in world.feedback.decisions() if (m := back.search(t)) and m[1] == m[2]]
    assert sum(c["home"] for c in per.values()) == len(home)
    assert 1 <= moves["target_nodes"] <= moves["executed"]


def test_without_the_moves_key_asks_are_only_recommended() -> None:
    from tests.sim.test_feedback import antagonist

    world = run(antagonist())
    moves = summarize(world)["feedback"]["moves"]
    assert moves["executed"] == 0 and moves["asked"] > 0 and "workloads" not in moves
    assert all("recommended" in text for _, text in world.feedback.decisions())


def test_a_moved_pods_replacement_is_reserved_the_what_ifs_node_and_lands_there() -> None:
    from tests.sim.test_feedback import antagonist

    world = run(antagonist(moves={"maxPerRound": 1}))
    moves = summarize(world)["feedback"]["moves"]
    reserved = moves["reservations"]
    # every executed move reserved exactly one node; each reservation ended in one outcome or is open
    assert sum(reserved.values()) == moves["executed"] > 0
    assert reserved["landed"] > 0 and reserved["cancelled"] == 0
    texts = [t for _, t in world.feedback.decisions()]
    reserved_on = {m[1] for t in texts if (m := re.search(r": moved, replacement reserved on (\S+) for ", t))}
    pattern = re.compile(r"replacement (\S+) of \S+ bound to (\S+): landed on the reserved node$")
    landed = [m.groups() for t in texts if (m := pattern.search(t))]
    assert len(landed) == reserved["landed"]
    for replacement, node in landed:
        # a node a move reserved, and where the cluster bound the replacement
        assert node in reserved_on
        pod = world.cluster.pods.get(replacement)
        if pod is not None:  # still running (not moved again or finished since)
            assert pod["spec"]["nodeName"] == node


def test_without_a_reservation_time_the_replacement_is_scheduled_normally() -> None:
    from tests.sim.test_feedback import antagonist

    world = run(antagonist(moves={"maxPerRound": 1, "reservationSeconds": 0}))
    moves = summarize(world)["feedback"]["moves"]
    assert moves["executed"] > 0 and sum(moves["reservations"].values()) == 0
    moved = [t for _, t in world.feedback.decisions() if ": moved, " in t]
    assert len(moved) == moves["executed"]
    assert all("replacement not reserved (the what-if placed it on " in t for t in moved)
