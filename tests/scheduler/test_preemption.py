"""Preemption end to end: the scheduler nominates the preemptor, the victims are evicted through the
cluster, nominated pods keep their room, and the preemptor lands on its nominated node."""

from __future__ import annotations

from typing import ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmonic.framework.interface import PermitPlugin
from harmonic.framework.status import Code, Status
from harmonic.plugins.registry import default_registry
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness


def low(name, cpu="1", prio=0, **labels):
    return pod(name).priority(prio).req(cpu=cpu).labels(labels).obj()


def nominated_node(h, name):
    return (h.cluster.pods[f"default/{name}"].get("status") or {}).get("nominatedNodeName")


def preempted(h):
    return sorted(e.name for e in h.cluster.events if e.reason == "Preempted")


def test_preemptor_is_nominated_victims_are_evicted_and_it_binds_there():
    h = Harness()
    h.add_nodes([node("n1").cap(cpu="2").obj(), node("n2").cap(cpu="2").obj()])
    h.add_pods([low(f"low{i}") for i in range(4)])
    h.schedule()
    before = h.placement()
    h.add_pods([pod("high").priority(100).req(cpu="2").obj()])
    h.schedule()
    target = nominated_node(h, "high")
    assert target in ("n1", "n2")
    assert preempted(h) == sorted(k.split("/")[1] for k, n in before.items() if n == target)
    assert h.failure("high") == "0/2 nodes are available: 2 Insufficient cpu."
    messages = {e.message for e in h.cluster.events if e.reason == "Preempted"}
    assert messages == {f"Preempted by pod uid-high on node {target}"}
    h.settle(5)
    assert h.placement()["default/high"] == target
    assert len(h.scheduler.nominator) == 0


def test_a_lower_priority_pod_does_not_take_the_room_of_a_nominated_pod():
    h = Harness()
    h.add_nodes([node("n1").cap(cpu="2").obj()])
    h.add_pods([low("victim", cpu="2")])
    h.schedule()
    h.add_pods([pod("high").priority(100).req(cpu="2").obj()])
    h.schedule()
    assert nominated_node(h, "high") == "n1" and preempted(h) == ["victim"]
    h.add_pods([pod("mid").priority(50).req(cpu="1").obj()])
    h.schedule()
    assert "default/mid" not in h.placement()
    assert h.failure("mid") == (
        "0/1 nodes are available: 1 Insufficient cpu."
        " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    h.settle(10)
    assert h.placement() == {"default/high": "n1"}


def test_a_higher_priority_pod_ignores_a_lower_nomination_which_is_then_cleared():
    h = Harness()
    h.add_nodes([node("n1").cap(cpu="2").obj()])
    h.add_pods([low("victim", cpu="2")])
    h.schedule()
    h.add_pods([pod("high").priority(100).req(cpu="2").obj()])
    h.scheduler.schedule_one()  # "high" preempts the victim and is nominated
    # "top" arrives before "high" is retried (activeQ comes before backoffQ).
    h.add_pods([pod("top").priority(200).req(cpu="2").obj()])
    h.schedule()
    assert h.placement() == {"default/top": "n1"}
    h.settle(10)
    # "high" found its nominated node taken and nothing it may preempt: the nomination is cleared.
    assert nominated_node(h, "high") is None
    assert h.scheduler.nominator.node_of("uid-high") is None
    assert "preemption: 0/1 nodes are available: 1 No preemption victims found" in h.failure("high")


def test_the_nominated_node_is_tried_first():
    h = Harness()
    h.add_nodes([node("small").cap(cpu="4").obj(), node("big").cap(cpu="64").obj()])
    h.add_pods([pod("p").req(cpu="1").nominated("small").obj(), pod("q").req(cpu="1").obj()])
    h.schedule()
    # Scoring (LeastAllocated) prefers "big"; the pod nominated to "small" goes there.
    assert h.placement() == {"default/p": "small", "default/q": "big"}


def test_preemption_clears_lower_priority_nominations_on_the_chosen_node():
    h = Harness()
    h.add_nodes([node("n1").cap(cpu="3").obj()])
    h.add_pods([low("l1", cpu="2"), low("l2", cpu="1")])
    h.schedule()
    h.add_pods([pod("mid").priority(50).req(cpu="2").obj()])
    h.scheduler.schedule_one()
    assert nominated_node(h, "mid") == "n1" and preempted(h) == ["l1"]
    # "high" is tried before "mid" is retried (activeQ comes before backoffQ).
    h.add_pods([pod("high").priority(100).req(cpu="3").obj()])
    h.schedule()
    assert preempted(h) == ["l1", "l2"]
    assert nominated_node(h, "high") == "n1"
    assert nominated_node(h, "mid") is None
    h.settle(10)
    assert h.placement() == {"default/high": "n1"}


def test_preemption_policy_never_preempts_nothing():
    h = Harness()
    h.add_nodes([node("n1").cap(cpu="1").obj()])
    h.add_pods([low("victim")])
    h.schedule()
    h.add_pods([pod("polite").priority(100).req(cpu="1").preemption_policy("Never").obj()])
    h.schedule()
    assert preempted(h) == []
    assert h.failure("polite") == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    )


def web_budget(allowed):
    return {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": allowed},
    }


def test_a_node_whose_victims_violate_no_budget_is_preferred():
    h = Harness()
    h.cluster.add_pdb(web_budget(0))
    h.add_nodes([node("n1").cap(cpu="2").obj(), node("n2").cap(cpu="2").obj()])
    h.add_pods([low("web", cpu="2", app="web"), low("db", cpu="2", app="db")])
    h.schedule()
    web_node = h.placement()["default/web"]
    h.add_pods([pod("high").priority(100).req(cpu="2").obj()])
    h.settle(5)
    assert preempted(h) == ["db"]
    assert h.placement()["default/web"] == web_node
    assert h.placement()["default/high"] != web_node


def test_an_eviction_refused_by_a_budget_fails_the_attempt_and_keeps_the_victim():
    h = Harness()
    h.cluster.add_pdb(web_budget(0))
    h.add_nodes([node("n1").cap(cpu="2").obj()])
    h.add_pods([low("web", cpu="2", app="web")])
    h.schedule()
    h.add_pods([pod("high").priority(100).req(cpu="2").obj()])
    h.schedule()
    assert preempted(h) == []
    assert h.placement() == {"default/web": "n1"}
    assert nominated_node(h, "high") is None
    assert h.failure("high") == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: evicting pod default/web: 429 TooManyRequests:"
        " Cannot evict pod as it would violate the pod's disruption budget."
        " The disruption budget web needs 0 healthy pods and has 0 currently"
    )
    # Budget changes are no scheduling events: the pod waits for the unschedulable-pool flush (5 min),
    # as upstream's would, and then succeeds once the budget allows a disruption.
    h.cluster.update_pdb(web_budget(1))
    h.settle(400, step=10)
    assert h.placement() == {"default/high": "n1"}


def test_a_deleted_nominated_pod_leaves_the_nominator():
    h = Harness()
    h.add_nodes([node("n1").cap(cpu="1").obj()])
    h.add_pods([low("victim")])
    h.schedule()
    h.add_pods([pod("high").priority(100).req(cpu="1").obj()])
    h.scheduler.schedule_one()
    assert h.scheduler.nominator.node_of("uid-high") == "n1"
    h.cluster.delete_pod("default", "high")
    h.schedule()
    assert len(h.scheduler.nominator) == 0


@st.composite
def clusters(draw):
    """Nodes, a first wave of pods that fills them, then waves that lean towards higher priorities."""
    nodes = [
        node(f"n{i}").cap(cpu=str(draw(st.integers(1, 4)))).obj() for i in range(draw(st.integers(1, 3)))
    ]
    waves = [
        [
            pod(f"w{w}p{i}")
            .priority(draw(st.sampled_from([0, 10, 100][w:])))
            .req(cpu=draw(st.sampled_from(["500m", "1", "2"])))
            .labels({"app": draw(st.sampled_from(["a", "b"]))})
            .obj()
            for i in range(draw(st.integers(2 if w == 0 else 1, 6)))
        ]
        for w in range(draw(st.integers(2, 3)))
    ]
    budget = draw(st.none() | st.integers(0, 2))
    return nodes, waves, budget


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_preemption_only_evicts_lower_priority_pods_within_budgets(scenario):
    nodes, waves, budget = scenario
    h = Harness()
    if budget is not None:
        h.cluster.add_pdb(
            {
                "metadata": {"name": "a"},
                "spec": {"selector": {"matchLabels": {"app": "a"}}},
                "status": {"disruptionsAllowed": budget},
            }
        )
    h.add_nodes(nodes)
    priority = {}
    for wave in waves:
        for p in wave:
            priority[p["metadata"]["uid"]] = priority[p["metadata"]["name"]] = p["spec"]["priority"]
        h.add_pods(wave)
        h.settle(3)
    app_a_evicted = 0
    for e in h.cluster.events:
        if e.reason != "Preempted":
            continue
        preemptor = e.message.split()[3]
        assert priority[e.name] < priority[preemptor]
        app_a_evicted += e.name in {
            p["metadata"]["name"] for w in waves for p in w if p["metadata"]["labels"]["app"] == "a"
        }
    if budget is not None:
        assert app_a_evicted <= budget
    # No node is committed beyond its capacity, counting assumed pods.
    snap = h.scheduler.cache.snapshot
    assert (snap.requested[: snap.capacity] <= snap.allocatable[: snap.capacity]).all() or not snap.num_nodes


def test_preempting_for_a_host_port():
    if "NodePorts" not in default_registry():
        pytest.skip("NodePorts is not implemented yet")
    h = Harness()
    h.add_nodes([node("n1").obj(), node("n2").obj()])
    h.add_pods(
        [pod("a").host_port(80).node("n1").obj(), pod("b").priority(50).host_port(80).node("n2").obj()]
    )
    h.schedule()
    h.add_pods([pod("web").priority(100).host_port(80).obj()])
    h.settle(5)
    # Both nodes free the port by evicting one pod; the lower victim priority decides.
    assert preempted(h) == ["a"]
    assert h.placement()["default/web"] == "n1"


class _WaitForever(PermitPlugin):
    NAME: ClassVar[str] = "WaitForever"

    def permit(self, state, pod, node_name):
        return Status(Code.WAIT), 600.0


def test_a_victim_waiting_at_permit_is_rejected_not_evicted():
    registry = default_registry().merged([_WaitForever])
    config = {"profiles": [{"plugins": {"permit": {"enabled": [{"name": "WaitForever"}]}}}]}
    h = Harness(config, registry)
    h.add_nodes([node("n1").cap(cpu="1").obj()])
    h.add_pods([low("waiter")])
    h.schedule()
    assert h.scheduler.waiting_pods.keys() == {"uid-waiter"}
    h.add_pods([pod("high").priority(100).req(cpu="1").obj()])
    h.scheduler.schedule_one()
    h.scheduler.drain()
    assert preempted(h) == []
    assert "default/waiter" in h.cluster.pods and not h.scheduler.waiting_pods
    assert nominated_node(h, "high") == "n1"
