"""Faults between and around cycles: nothing crashes the loop, no pod is lost, freed room is reused."""

from __future__ import annotations

import logging

import pytest

from harmonic.testing import node, pod
from harmonic.testing.harness import DeferredBinder, Harness
from tests.scheduler import plugins as tp


@pytest.fixture(autouse=True)
def _reset_test_plugins():
    tp.reset()
    yield
    tp.reset()


def test_node_deleted_between_scheduling_and_binding():
    binder = DeferredBinder()
    h = Harness(binder=binder)
    h.add_nodes([node("doomed").cap(cpu="4").obj()])
    h.add_pods([pod("p").req(cpu="1").obj()])
    h.schedule()
    assert h.scheduler.cache.is_assumed("uid-p")
    h.cluster.delete_node("doomed")
    h.scheduler.drain()
    binder.run()
    h.schedule()
    assert h.placement() == {}
    assert h.failure("p") == 'Binding rejected: running Bind plugin "DefaultBinder": nodes "doomed" not found'
    assert not h.scheduler.cache.is_assumed("uid-p")
    h.add_nodes([node("spare").obj()])
    h.settle(15)
    binder.run()
    h.schedule()
    assert h.placement() == {"default/p": "spare"}


def test_pod_deleted_while_waiting_at_permit_frees_its_room():
    h = Harness(tp.enable(permit=["Waiter"], reserve=["Reserver"]), registry=tp.registry())
    h.add_nodes([node("a").cap(cpu="1").obj()])
    h.add_pods([pod("first").req(cpu="1").obj()])
    h.schedule()
    assert "uid-first" in h.scheduler.waiting_pods
    h.add_pods([pod("second").req(cpu="1").obj()])
    h.schedule()
    assert h.failure("second") is not None  # the assumed pod holds the only CPU
    h.cluster.delete_pod("default", "first")
    h.schedule()
    assert "unreserve first a" in tp.LOG
    assert "uid-first" not in h.scheduler.waiting_pods
    assert not h.scheduler.cache.is_assumed("uid-first")
    assert all(qp.pod.name != "first" for qp in h.scheduler.queue.pending_pods())
    # The room is back: the deletion (an AssignedPodDelete) sent "second" to backoffQ, and with
    # activeQ empty it is tried at once; now it is the one waiting at Permit.
    assert "uid-second" in h.scheduler.waiting_pods


def test_pod_deleted_while_binding_is_forgotten_at_once_and_not_requeued():
    binder = DeferredBinder()
    h = Harness(binder=binder)
    h.add_nodes([node("a").cap(cpu="1").obj()])
    h.add_pods([pod("first").req(cpu="1").obj()])
    h.schedule()
    h.cluster.delete_pod("default", "first")
    h.add_pods([pod("second").req(cpu="1").obj()])
    h.schedule()
    assert not h.scheduler.cache.is_assumed("uid-first")
    assert h.scheduler.cache.is_assumed("uid-second")
    binder.run()
    h.schedule()
    assert h.placement() == {"default/second": "a"}
    assert h.scheduler.queue.pending_pods() == []
    assert len(h.scheduler.queue) == 0


def test_malformed_node_is_one_error_and_the_others_are_used(caplog):
    h = Harness()
    bad = node("bad").obj()
    bad["status"]["allocatable"]["cpu"] = "lots"
    with caplog.at_level(logging.ERROR):
        h.add_nodes([bad, node("good").obj()])
        h.add_pods([pod("p").obj()])
        h.schedule()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [
        "ignoring node: Node bad: status.allocatable.cpu: 'lots' is not a quantity (expected e.g. '500m', '2Gi', '1.5', '1e3')"
    ]
    assert h.placement() == {"default/p": "good"}


def test_malformed_node_update_keeps_the_last_good_version():
    h = Harness()
    h.add_nodes([node("n").cap(cpu="2").obj()])
    h.schedule()
    stored = h.cluster.nodes["n"]
    h.cluster.update_node({**stored, "spec": {"taints": "not a list"}})
    h.add_pods([pod("p").req(cpu="1").obj()])
    h.schedule()
    assert h.placement() == {"default/p": "n"}


def test_malformed_pod_update_takes_the_old_version_out_of_the_queue():
    h = Harness()
    h.add_pods([pod("p").req(cpu="1").obj()])
    h.schedule()  # no nodes: the pod waits in the queue
    assert h.scheduler.queue.has("uid-p")
    stored = h.cluster.pods["default/p"]
    spec = {**stored["spec"], "priority": "high"}
    h.cluster.update_pod({**stored, "spec": spec})
    h.add_nodes([node("n").obj()])
    h.settle(15)
    assert h.placement() == {}
    assert not h.scheduler.queue.has("uid-p")
    assert h.failure("p") == "Pod default/p: spec.priority: 'high' is not an integer"
    assert h.condition("p")["reason"] == "SchedulerError"  # type: ignore[index]


def test_plugin_bug_costs_one_attempt_not_the_loop(caplog):
    tp.Boom.fail = True
    h = Harness(tp.enable(filter=["Boom"]), registry=tp.registry())
    h.add_nodes([node("n").obj()])
    h.add_pods([pod("a").obj(), pod("b").obj()])
    with caplog.at_level(logging.CRITICAL):
        h.schedule()
    assert h.failure("a") == "internal error: division by zero"
    assert h.failure("b") == "internal error: division by zero"
    assert h.condition("a")["reason"] == "SchedulerError"  # type: ignore[index]
    tp.Boom.fail = False
    h.settle(15)
    assert h.placement() == {"default/a": "n", "default/b": "n"}


def test_binding_adapter_exception_requeues(caplog):
    h = Harness()
    h.add_nodes([node("n").obj()])

    def explode(p, node_name):
        raise ConnectionError("API server unreachable")

    real_bind = h.cluster.bind
    h.cluster.bind = explode  # type: ignore[method-assign]
    h.add_pods([pod("p").obj()])
    with caplog.at_level(logging.CRITICAL):
        h.schedule()
    assert h.failure("p") == "binding failed: API server unreachable"
    h.cluster.bind = real_bind  # type: ignore[method-assign]
    h.settle(15)
    assert h.placement() == {"default/p": "n"}


def test_pod_bound_by_someone_else_leaves_the_queue():
    h = Harness()
    h.add_pods([pod("p").obj()])
    h.schedule()
    assert h.scheduler.queue.has("uid-p")
    stored = h.cluster.pods["default/p"]
    h.cluster.update_pod({**stored, "spec": {**stored["spec"], "nodeName": "elsewhere"}})
    h.schedule()
    assert not h.scheduler.queue.has("uid-p")
    assert h.scheduler.cache.pod("uid-p") is not None
