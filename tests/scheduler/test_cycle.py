"""The scheduling and binding cycles end to end against upstream behaviour (schedule_one.go,
framework.go): node sampling, PreFilter narrowing, FitError messages, Reserve/Permit, events and the
PodScheduled condition."""

from __future__ import annotations

import pytest

from harmonic.framework.events import ASSIGNED_POD_DELETE
from harmonic.scheduler.scheduler import num_feasible_nodes_to_find
from harmonic.scheduler.waiting import go_duration
from harmonic.testing import node, pod
from harmonic.testing.harness import DeferredBinder, Harness
from tests.scheduler import plugins as tp


@pytest.fixture(autouse=True)
def _reset_test_plugins():
    tp.reset()
    yield
    tp.reset()


# ---------------------------------------------------------------------- TestNumFeasibleNodesToFind
@pytest.mark.parametrize(
    ("percentage", "nodes", "want"),
    [(0, 10, 10), (40, 10, 10), (0, 1000, 420), (40, 1000, 400), (0, 6000, 300), (40, 6000, 2400)],
)
def test_num_feasible_nodes_to_find(percentage, nodes, want):
    assert num_feasible_nodes_to_find(percentage, nodes) == want


def test_fair_evaluation_rotates_the_start_index():
    """TestFairEvaluationForNodes: 500 nodes, 30% to score: every cycle finds 150 nodes and the next
    one starts where it stopped."""
    h = Harness({"percentageOfNodesToScore": 30})
    h.add_nodes(node(f"n{i}").cap(cpu="100", memory="100Gi", pods=1000).obj() for i in range(500))
    h.scheduler.drain()
    to_find = num_feasible_nodes_to_find(30, 500)
    assert to_find == 150
    for i in range(2 * (500 // to_find + 1)):
        h.add_pods([pod(f"p{i}").obj()])
        h.scheduler.drain()
        result = h.scheduler.schedule_one()
        assert result is not None and result.feasible_nodes == to_find
        assert h.scheduler.next_start_node_index == (i + 1) * to_find % 500


def test_without_score_plugins_the_first_feasible_node_is_taken():
    h = Harness({"profiles": [{"plugins": {"score": {"disabled": [{"name": "*"}]}}}]})
    h.add_nodes(node(f"n{i}").obj() for i in range(300))
    h.add_pods([pod("a").obj(), pod("b").obj()])
    results = []
    h.scheduler.results = results.append
    h.schedule()
    assert [(r.node, r.feasible_nodes) for r in results] == [("n0", 1), ("n1", 1)]
    assert h.scheduler.next_start_node_index == 2


# ---------------------------------------------------------------------- FitError messages
def test_prefilter_narrowing_counts_absent_nodes_with_the_plugins_named():
    tp.Narrow.nodes = frozenset({"a", "missing"})
    h = Harness(tp.enable(preFilter=["Narrow"]), registry=tp.registry())
    h.add_nodes([node("a").cap(cpu="1").obj(), node("b").obj(), node("c").obj()])
    h.add_pods([pod("p").req(cpu="2").obj()])
    h.schedule()
    assert h.failure("p") == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [Narrow]."
        " preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_prefilter_results_that_intersect_to_nothing():
    tp.Narrow.nodes = frozenset({"a"})
    tp.Narrow2.nodes = frozenset({"b"})
    h = Harness(tp.enable(preFilter=["Narrow", "Narrow2"]), registry=tp.registry())
    h.add_nodes([node("a").obj(), node("b").obj()])
    h.add_pods([pod("p").obj()])
    h.schedule()
    assert h.failure("p") == (
        "0/2 nodes are available: node(s) didn't satisfy plugin(s) [Narrow Narrow2] simultaneously."
        " preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    qp = h.scheduler.queue.pending_pods()[0]
    assert qp.unschedulable_plugins == {"Narrow", "Narrow2"}


def test_no_nodes():
    h = Harness()
    h.add_pods([pod("p").obj()])
    h.schedule()
    assert h.failure("p") == "no nodes available to schedule pods"
    assert h.condition("p") == {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "no nodes available to schedule pods",
    }
    # Not a FitError: no plugin to wait for, so the pod backs off and is retried.
    assert h.scheduler.queue.counts()["backoff"] == 1


def test_out_of_range_score_is_an_error():
    h = Harness(tp.enable(score=["BadScore"]), registry=tp.registry())
    h.add_nodes([node("a").obj(), node("b").obj()])
    h.add_pods([pod("p").obj()])
    h.schedule()
    assert h.failure("p") == (
        'applying score defaultWeights on Score plugins: plugin "BadScore" returns an invalid score 101, '
        "it should in the range of [0, 100] after normalizing"
    )
    assert h.condition("p")["reason"] == "SchedulerError"  # type: ignore[index]


def test_long_messages_are_truncated_in_events_only():
    h = Harness()
    many = [node(f"node-with-a-long-name-{i}").taint(f"key-{i}", "v").obj() for i in range(40)]
    h.add_nodes(many)
    h.add_pods([pod("p").obj()])
    h.schedule()
    event = h.failure("p")
    condition = h.condition("p")["message"]  # type: ignore[index]
    assert event is not None and condition.startswith("0/40 nodes are available:")
    assert len(event) <= 1024
    if len(condition) > 1024:
        assert event == condition[:1020] + " ..."
    else:
        assert event == condition


# ---------------------------------------------------------------------- Reserve / Permit
def test_reserve_rejection_unreserves_in_reverse_order():
    tp.Reserver.reject = {"p"}
    h = Harness(tp.enable(reserve=["SecondReserver", "Reserver"]), registry=tp.registry())
    h.add_nodes([node("a").obj()])
    h.add_pods([pod("p").obj()])
    h.schedule()
    assert tp.LOG == ["reserve2 p a", "reserve p a", "unreserve p a", "unreserve2 p a"]
    assert h.failure("p") == "0/1 nodes are available: 1 reserve refused."
    assert h.scheduler.cache.num_pods == 0
    assert h.scheduler.queue.pending_pods()[0].unschedulable_plugins == {"Reserver"}


def test_permit_wait_then_allow_binds():
    h = Harness(tp.enable(permit=["Waiter"]), registry=tp.registry())
    h.add_nodes([node("a").obj()])
    h.add_pods([pod("p").obj()])
    h.schedule()
    assert h.placement() == {}
    wp = h.scheduler.waiting_pods["uid-p"]
    assert wp.pending_plugins == ["Waiter"]
    assert h.scheduler.cache.is_assumed("uid-p")
    wp.allow("Waiter")
    h.schedule()
    assert h.placement() == {"default/p": "a"}
    assert h.events("p") == [("Scheduled", "Successfully assigned default/p to a")]


def test_permit_reject_through_the_handle():
    h = Harness(tp.enable(permit=["Waiter"], reserve=["Reserver"]), registry=tp.registry())
    h.add_nodes([node("a").obj()])
    h.add_pods([pod("p").obj()])
    h.schedule()
    handle = h.scheduler.frameworks["default-scheduler"].handle
    handle.waiting_pod("uid-p").reject("Waiter", "quota exceeded")
    h.schedule()
    assert h.placement() == {}
    assert h.failure("p") == "0/1 nodes are available: 1 quota exceeded."
    assert h.condition("p")["reason"] == "Unschedulable"  # type: ignore[index]
    assert tp.LOG[-1] == "unreserve p a"
    assert not h.scheduler.cache.is_assumed("uid-p")
    assert h.scheduler.queue.pending_pods()[0].unschedulable_plugins == {"Waiter"}


def test_permit_timeout_rejects_with_upstreams_message():
    tp.Waiter.answer = ("wait", 10.0)
    h = Harness(tp.enable(permit=["Waiter"]), registry=tp.registry())
    h.add_nodes([node("a").obj()])
    h.add_pods([pod("p").obj()])
    h.schedule()
    assert h.scheduler.next_wakeup() == 10.0
    h.clock.advance(9.5)
    h.schedule()
    assert "uid-p" in h.scheduler.waiting_pods
    h.clock.advance(0.5)
    h.schedule()
    assert (
        h.failure("p")
        == "0/1 nodes are available: 1 rejected due to timeout after waiting 10s at plugin Waiter."
    )


def test_permit_timeouts_are_capped_at_fifteen_minutes():
    tp.Waiter.answer = ("wait", 3600.0)
    h = Harness(tp.enable(permit=["Waiter"]), registry=tp.registry())
    h.add_nodes([node("a").obj()])
    h.add_pods([pod("p").obj()])
    h.schedule()
    h.clock.advance(900)
    h.schedule()
    assert (
        h.failure("p")
        == "0/1 nodes are available: 1 rejected due to timeout after waiting 15m0s at plugin Waiter."
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (10, "10s"),
        (900, "15m0s"),
        (90.5, "1m30.5s"),
        (0.25, "250ms"),
        (3600, "1h0m0s"),
        (0, "0s"),
        (1.5e-6, "1.5µs"),
    ],
)
def test_go_duration(seconds, text):
    assert go_duration(seconds) == text


def test_permit_rejection_at_once_fails_the_scheduling_cycle():
    tp.Waiter.answer = ("reject", 0)
    h = Harness(tp.enable(permit=["Waiter"], reserve=["Reserver"]), registry=tp.registry())
    h.add_nodes([node("a").obj()])
    h.add_pods([pod("p").obj()])
    h.schedule()
    assert tp.LOG == ["reserve p a", "permit p a", "unreserve p a"]
    assert h.failure("p") == "0/1 nodes are available: 1 not now."


# ---------------------------------------------------------------------- binding
def test_binding_error_backs_off_with_scheduler_error_and_frees_the_room():
    h = Harness(tp.enable(reserve=["Reserver"]), registry=tp.registry())
    h.add_nodes([node("a").cap(cpu="1").obj()])
    h.cluster.refuse_binding["a"] = "etcd is on fire"
    h.add_pods([pod("p").req(cpu="1").obj()])
    h.schedule()
    assert h.failure("p") == 'Binding rejected: running Bind plugin "DefaultBinder": etcd is on fire'
    assert h.condition("p")["reason"] == "SchedulerError"  # type: ignore[index]
    assert tp.LOG == ["reserve p a", "unreserve p a"]
    assert h.scheduler.cache.num_pods == 0
    assert h.scheduler.queue.counts()["backoff"] == 1
    h.cluster.refuse_binding.clear()
    h.settle(15)
    assert h.placement() == {"default/p": "a"}


def test_scheduled_pod_gets_scheduled_event_and_condition():
    h = Harness()
    h.add_nodes([node("a").obj()])
    h.add_pods([pod("p").obj()])
    h.schedule()
    assert h.events("p") == [("Scheduled", "Successfully assigned default/p to a")]
    assert h.condition("p") == {"type": "PodScheduled", "status": "True"}


def test_binding_confirmation_moves_pods_that_need_an_assigned_pod():
    """The AssignedPodAdd event of a confirmed binding reaches plugins that registered for it."""
    h = Harness()
    h.add_nodes([node("a").obj()])
    h.scheduler.drain()
    seen = []
    h.scheduler.queue.move_on_event = lambda event, old=None, new=None, pre_check=None: (
        seen.append(event) or 0
    )  # type: ignore[method-assign]
    h.add_pods([pod("p").obj()])
    h.schedule()
    assert [e.resource.value for e in seen] == ["AssignedPod"]
    assert ASSIGNED_POD_DELETE not in seen


def test_pod_updates_while_assumed_are_ignored_and_deleting_pods_are_skipped():
    binder = DeferredBinder()
    h = Harness(binder=binder)
    h.add_nodes([node("a").obj()])
    h.add_pods([pod("p").obj()])
    h.schedule()
    stored = h.cluster.pods["default/p"]
    h.cluster.update_pod({**stored, "metadata": {**stored["metadata"], "labels": {"x": "y"}}})
    h.schedule()
    assert h.scheduler.queue.pending_pods() == []
    binder.run()
    h.schedule()
    assert h.placement() == {"default/p": "a"}
    h.add_pods([pod("gone").obj()])
    stored = h.cluster.pods["default/gone"]
    h.cluster.update_pod(
        {**stored, "metadata": {**stored["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"}}
    )
    h.schedule()
    assert "default/gone" not in h.placement()


def test_bindings_do_not_rescan_the_unschedulable_pool(monkeypatch):
    """The Unschedulable workload's point: with a large pool rejected by NodeResourcesFit, binding
    other pods (AssignedPodAdd events) must not look at the pool's pods at all."""
    from harmonic.scheduler.queue import SchedulingQueue

    h = Harness()
    h.add_nodes(node(f"n{i}").cap(cpu="4").obj() for i in range(5))
    h.add_pods(pod(f"big-{i}").req(cpu="9").priority(10).obj() for i in range(200))
    h.schedule()
    assert h.scheduler.queue.counts()["unschedulable"] == 200
    looked = []
    real = SchedulingQueue._worth_requeuing
    monkeypatch.setattr(
        SchedulingQueue, "_worth_requeuing", lambda self, qp, *a: looked.append(qp) or real(self, qp, *a)
    )
    h.add_pods(pod(f"small-{i}").req(cpu="100m").obj() for i in range(50))
    h.schedule()
    assert len(h.placement()) == 50
    assert looked == []
    # A deletion, which NodeResourcesFit registered for, does reach them.
    h.cluster.delete_pod("default", "small-0")
    h.schedule()
    assert len(looked) == 200


def test_a_failing_scheduled_event_loses_no_pod(monkeypatch):
    """The Scheduled event is recorded in the binding cycle: when recording it fails, the pod is
    still bound and its binding confirmed in the cache (only the event is missing)."""
    h = Harness()
    h.add_nodes([node("a").obj()])
    h.add_pods([pod("p").obj(), pod("q").obj()])

    def broken(pod, node_name):
        raise RuntimeError("event sink down")

    monkeypatch.setattr(h.cluster, "report_scheduled", broken)
    h.schedule()
    assert h.placement() == {"default/p": "a", "default/q": "a"}
    assert not h.scheduler.cache.is_assumed("uid-p") and h.scheduler.cache.pod("uid-p") is not None
    assert h.events("p") == []
