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


def test_the_stub_of_an_unparsable_pod_has_every_pod_attribute():
    """The stub reported for a pod parse_pod refuses once lacked schedulerName, and the live client's
    report_failure raised AttributeError on it (issue 33)."""
    from harmonic.api.pod import Pod
    from harmonic.scheduler.scheduler import _stub_pod

    raw = pod("bad").scheduler("harmonic").req(cpu="1e100").obj()
    stub = _stub_pod(raw)
    missing = [a for a in Pod.__slots__ if not hasattr(stub, a)]
    assert missing == []
    assert (stub.key, stub.scheduler_name) == ("default/bad", "harmonic")


@pytest.mark.parametrize(
    "requests",
    [
        {"cpu": "1e100"},  # accepted by kube-apiserver; not an int64 of millicores
        {"memory": "1e400"},
        {"example.com/x": "1e19"},
        {"cpu": "1", "memory": "99999999999999999999"},
    ],
)
def test_a_pod_that_cannot_be_compiled_is_reported_once_and_not_retried(caplog, requests):
    h = Harness()
    h.add_nodes([node("n").obj()])
    bad = pod("bad").obj()
    bad["spec"]["containers"][0]["resources"] = {"requests": requests}
    with caplog.at_level(logging.ERROR):
        h.add_pods([bad, pod("ok").obj()])
        h.schedule()
        h.settle(30)  # backoffs and flushes pass: nothing brings the bad pod back
    assert h.placement() == {"default/ok": "n"}
    assert [reason for reason, _ in h.events("bad")] == ["FailedScheduling"]
    cond = h.condition("bad")
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "SchedulerError")
    named = [r for r in caplog.records if r.levelno >= logging.ERROR and "default/bad" in r.getMessage()]
    assert len(named) == 1
    assert not h.scheduler.queue.has("uid-bad")


def test_an_exception_handling_one_pod_event_is_logged_by_name_and_the_others_go_on(caplog, monkeypatch):
    from harmonic.scheduler import scheduler as sched_mod

    real = sched_mod.parse_pod

    def parse(raw):
        if raw["metadata"]["name"] == "cursed":
            raise RuntimeError("boom")
        return real(raw)

    monkeypatch.setattr(sched_mod, "parse_pod", parse)
    h = Harness()
    h.add_nodes([node("n").obj()])
    with caplog.at_level(logging.ERROR):
        h.add_pods([pod("cursed").obj(), pod("ok").obj()])
        h.schedule()
    assert h.placement() == {"default/ok": "n"}
    (rec,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "Pod default/cursed" in rec.getMessage() and rec.exc_info is not None


def test_a_failure_to_report_a_failure_loses_only_the_report(caplog, monkeypatch):
    h = Harness()
    h.add_nodes([node("n").cap(cpu="1").obj()])
    calls: list[str] = []

    def report_failure(p, reason, message):
        calls.append(p.key)
        raise RuntimeError("event sink down")

    monkeypatch.setattr(h.cluster, "report_failure", report_failure)
    h.add_pods([pod("big").req(cpu="2").obj()])
    with caplog.at_level(logging.ERROR):
        h.schedule()
    assert calls == ["default/big"]
    assert any("default/big" in r.getMessage() and r.exc_info for r in caplog.records)
    assert h.scheduler.queue.has("uid-big")


def test_an_attempt_that_breaks_off_backs_the_pod_off(caplog, monkeypatch):
    """An exception escaping an attempt (here: handling its failure) is logged naming the pod; the pod
    backs off and is retried later, not at once and not never; the live loop survives it."""
    import threading

    h = Harness()
    h.add_nodes([node("n").cap(cpu="1").obj()])
    attempts = []

    def failed(fw, qp, *args):
        attempts.append(qp.pod.key)
        raise RuntimeError("bug")

    monkeypatch.setattr(h.scheduler, "_failed", failed)
    h.add_pods([pod("big").req(cpu="2").obj()])
    with caplog.at_level(logging.ERROR):
        h.schedule()
        tried = len(attempts)
        h.schedule()  # nothing due: the pod is backing off
        assert len(attempts) == tried
        assert h.scheduler.queue.has("uid-big")
        h.clock.advance(15)
        h.schedule()
        assert len(attempts) > tried
    assert any("scheduling default/big failed" in r.getMessage() for r in caplog.records)
    stop = threading.Event()
    monkeypatch.setattr(h.scheduler, "schedule_one", lambda: (stop.set(), 1 / 0))
    h.scheduler.run(stop, idle_wait=0)
    assert any("scheduling loop failed" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("cpu", ["-4", "1e100", "9223372036854775808"])
def test_a_node_kube_apiserver_would_refuse_or_that_cannot_fit_is_one_error_line(caplog, cpu):
    h = Harness()
    bad = node("bad").obj()
    bad["status"]["allocatable"]["cpu"] = cpu
    with caplog.at_level(logging.ERROR):
        h.add_nodes([bad, node("good").obj()])
        for i in range(3):  # status updates bring the same node back
            h.cluster.update_node({**bad, "metadata": {**bad["metadata"], "labels": {"beat": str(i)}}})
        h.add_pods([pod("p").obj()])
        h.schedule()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "Node bad: status.allocatable.cpu" in errors[0]
    assert h.placement() == {"default/p": "good"}
