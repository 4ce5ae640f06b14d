"""Replayed failures (harmonic.scheduler.repeat): a retry that must fail as the last attempt did is
replayed, never one that could end differently, and a replay leaves every later decision as the full
cycle would (placements, messages, the rotating start index, preemption's random offsets)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmonic.plugins.defaultpreemption import DefaultPreemption
from harmonic.scheduler.scheduler import ScheduleResult
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness

NODES = ("n0", "n1", "n2", "n3")


def pinned(name: str, to: str, cpu: str = "1", priority: int = 0) -> dict[str, Any]:
    """A pod pinned to one node the way the DaemonSet controller pins its pods."""
    return (
        pod(name).req(cpu=cpu).priority(priority).required_term(fields=[("metadata.name", "In", [to])]).obj()
    )


def full_cluster() -> Harness:
    """Three 2-CPU nodes, each full with two 1-CPU pods, and an agent pinned to n0 that cannot fit."""
    h = Harness()
    h.add_nodes([node(n).cap(cpu="2").obj() for n in NODES])
    h.add_pods([pod(f"{n}-{i}").req(cpu="1").node(n).obj() for n in NODES for i in range(2)])
    h.add_pods([pinned("agent", "n0")])
    h.schedule()
    assert h.placement().get("default/agent") is None
    return h


def _delete(name: str) -> Callable[[Harness], None]:
    return lambda h: h.cluster.delete_pod("default", name)


def _replace_on_n0(h: Harness) -> None:
    h.cluster.delete_pod("default", "n0-0")
    h.add_pods([pod("n0-new").req(cpu="1").node("n0").obj()])


def _grow(h: Harness) -> None:
    h.cluster.update_node(node("n0").cap(cpu="4").obj())


@pytest.mark.parametrize(
    ("change", "replayed", "placed_on"),
    [
        pytest.param(_delete("n1-0"), 1, None, id="a pod deleted on another node: replayed"),
        pytest.param(_delete("n0-0"), 0, "n0", id="a pod deleted on its node: run, and it fits"),
        pytest.param(_replace_on_n0, 0, None, id="its node's pods changed: run again, still no room"),
        pytest.param(_grow, 0, "n0", id="its node grew: run, and it fits"),
    ],
)
def test_a_retry_is_replayed_only_while_what_it_read_is_unchanged(
    change: Callable[[Harness], None], replayed: int, placed_on: str | None
) -> None:
    h = full_cluster()
    repeats = h.scheduler.repeats
    assert repeats is not None and len(repeats) == 1
    before = h.condition("agent")
    change(h)
    h.schedule()
    assert repeats.replayed == replayed
    assert h.placement().get("default/agent") == placed_on
    if placed_on is None:
        assert h.condition("agent") == before


def test_a_replay_is_an_attempt_like_any_other() -> None:
    h = full_cluster()
    results: list[ScheduleResult] = []
    h.scheduler.results = results.append
    h.cluster.delete_pod("default", "n1-0")
    h.cluster.delete_pod("default", "n2-0")
    h.schedule()
    # Each deletion requeued it (NodeResourcesFit's hint queues any deletion of a scheduled pod);
    # both deletions arrived before the next pop, so one attempt, replayed, reported as before.
    assert [(r.pod.name, r.node) for r in results] == [("agent", None)]
    assert results[0].message == h.condition("agent")["message"]
    failed = [m for reason, m in h.events("agent") if reason == "FailedScheduling"]
    assert len(failed) == 2 and failed[0] == failed[1]


def test_plugins_that_read_beyond_the_node_keep_the_full_cycle() -> None:
    h = Harness()
    h.add_nodes([node(n).cap(cpu="2").label("kubernetes.io/hostname", n).obj() for n in NODES])
    h.add_pods([pod(f"{n}-{i}").req(cpu="1").node(n).obj() for n in NODES for i in range(2)])
    spread = pinned("agent", "n0")
    spread["metadata"]["labels"] = {"app": "agent"}
    spread["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "agent"}},
        }
    ]
    h.add_pods([spread])
    h.schedule()
    h.cluster.delete_pod("default", "n1-0")
    h.schedule()
    assert h.scheduler.repeats is not None and h.scheduler.repeats.replayed == 0


# ---------------------------------------------------------------------------------------------- property
Op = tuple[str, int, int, int]

OPS = st.lists(
    st.tuples(
        st.sampled_from(("pinned", "pinned", "free", "delete", "delete", "wait")),
        st.integers(0, len(NODES) - 1),
        st.integers(1, 3),  # CPU (cores) or seconds
        st.sampled_from((0, 0, 10)),  # priority: preemption happens, and draws offsets
    ),
    min_size=8,
    max_size=40,
)


def _run(ops: list[Op], replay: bool) -> tuple[list[tuple[str, str | None, str]], Any, int, list[Any]]:
    h = Harness(seed=5)
    if not replay:
        h.scheduler.repeats = None
    h.add_nodes([node(n).cap(cpu="4").obj() for n in NODES])
    # Full nodes to start with, so pinned pods wait and deletions elsewhere retry them.
    h.add_pods([pod(f"{n}-{i}").req(cpu="2").node(n).obj() for n in NODES for i in range(2)])
    results: list[tuple[str, str | None, str]] = []
    h.scheduler.results = lambda r: results.append((r.pod.name, r.node, r.message))
    pick = random.Random(1)
    for i, (kind, n, size, priority) in enumerate(ops):
        if kind == "pinned":
            h.add_pods([pinned(f"p{i}", NODES[n], cpu=str(size), priority=priority)])
        elif kind == "free":
            h.add_pods([pod(f"f{i}").req(cpu=str(size)).priority(priority).obj()])
        elif kind == "delete" and h.cluster.pods:
            ns, name = sorted(h.cluster.pods)[pick.randrange(len(h.cluster.pods))].split("/")
            h.cluster.delete_pod(ns, name)
        else:
            h.clock.advance(size)
        h.schedule()
    preemption = next(
        pl
        for pl in h.scheduler.frameworks["default-scheduler"].post_filter_plugins
        if isinstance(pl, DefaultPreemption)
    )
    offsets = preemption.offset_rand.__self__.getstate()  # type: ignore[attr-defined]
    return results, offsets, h.scheduler.next_start_node_index, list(h.cluster.events)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_replaying_changes_no_decision(ops: list[Op]) -> None:
    assert _run(ops, replay=True) == _run(ops, replay=False)
