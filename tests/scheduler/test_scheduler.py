from harmonic.testing import node, pod
from harmonic.testing.harness import Harness


def test_fit_error_message_counts_reasons_like_kube_scheduler():
    h = Harness()
    h.add_nodes(
        [
            node("a").cap(cpu="1", memory="1Gi").obj(),
            node("b").cap(cpu="1", memory="1Gi").obj(),
            node("c").cap(cpu="1", memory="8Gi").obj(),
            node("d").taint("dedicated", "gpu").obj(),
            node("e").taint("dedicated", "gpu").obj(),
        ]
    )
    h.add_pods([pod("big").req(cpu="2", memory="2Gi").obj()])
    h.schedule()
    assert h.placement() == {}
    # Go's sort.Strings over "<count> <reason>": byte order, so "2 I..." < "2 n..." < "3 I...".
    # DefaultPreemption (default profile) appends its own FitError: every rejection is unresolvable (the
    # taints, and a request beyond a node's whole allocatable), so preemption cannot help anywhere.
    assert h.failure("big") == (
        "0/5 nodes are available: 2 Insufficient memory, 2 node(s) had untolerated taint(s), 3 Insufficient cpu."
        " preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."
    )


def test_pods_spread_by_least_allocated_and_never_overcommit():
    h = Harness()
    h.add_nodes([node(f"n{i}").cap(cpu="2", memory="4Gi", pods=110).obj() for i in range(3)])
    h.add_pods([pod(f"p{i}").req(cpu="1", memory="1Gi").obj() for i in range(7)])
    h.schedule()
    placed = h.placement()
    assert len(placed) == 6
    per_node = {n: list(placed.values()).count(n) for n in ("n0", "n1", "n2")}
    assert per_node == {"n0": 2, "n1": 2, "n2": 2}
    pending = [k for k in (f"default/p{i}" for i in range(7)) if k not in placed]
    assert len(pending) == 1
    name = pending[0].split("/")[1]
    assert h.failure(name) == (
        "0/3 nodes are available: 3 Insufficient cpu."
        " preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )


def test_same_seed_same_decisions():
    def run(seed):
        h = Harness(seed=seed)
        h.add_nodes([node(f"n{i}").obj() for i in range(20)])
        h.add_pods([pod(f"p{i}").req(cpu="100m").obj() for i in range(50)])
        h.schedule()
        return h.placement()

    assert run(7) == run(7)


def test_binding_failure_requeues_and_pod_lands_elsewhere():
    h = Harness()
    h.add_nodes([node("bad").cap(cpu="8").obj(), node("good").cap(cpu="2").obj()])
    h.cluster.refuse_binding["bad"] = "conflict"
    h.add_pods([pod("p").req(cpu="1").obj()])
    h.schedule()
    assert h.placement() == {}  # least allocated picked "bad", binding failed
    h.cluster.refuse_binding.clear()
    h.settle(30)
    assert h.placement() == {"default/p": "bad"}


def test_pod_deleted_frees_room_for_unschedulable_pod():
    h = Harness()
    h.add_nodes([node("n").cap(cpu="1").obj()])
    h.add_pods([pod("first").req(cpu="1").obj(), pod("second").req(cpu="1").obj()])
    h.schedule()
    assert list(h.placement()) == ["default/first"]
    h.cluster.delete_pod("default", "first")
    h.clock.advance(15)  # past the backoff
    h.schedule()
    assert h.placement() == {"default/second": "n"}


def test_gated_pod_waits_until_gates_removed():
    h = Harness()
    h.add_nodes([node("n").obj()])
    gated = pod("g").gate("example.com/wait").obj()
    h.add_pods([gated])
    h.schedule()
    assert h.placement() == {}
    stored = h.cluster.pods["default/g"]
    h.cluster.update_pod({**stored, "spec": {**stored["spec"], "schedulingGates": []}})
    h.schedule()
    assert h.placement() == {"default/g": "n"}


def test_malformed_pod_gets_a_failed_scheduling_event_not_a_crash():
    h = Harness()
    h.add_nodes([node("n").obj()])
    h.add_pods([pod("bad").req(cpu="a lot").obj(), pod("ok").obj()])
    h.schedule()
    assert h.placement() == {"default/ok": "n"}
    assert "spec.containers[0].resources.requests.cpu" in (h.failure("bad") or "")


def test_status_only_update_does_not_retry_an_unschedulable_pod():
    h = Harness()
    h.add_nodes([node("n").cap(cpu="1").obj()])
    h.add_pods([pod("big").req(cpu="2").obj()])
    h.schedule()
    attempts = h.scheduler.queue.scheduling_cycle
    old = h.cluster.pods["default/big"]
    h.cluster.update_pod(
        {**old, "status": {**old["status"], "conditions": [{"type": "PodScheduled", "status": "False"}]}}
    )
    h.clock.advance(15)
    h.schedule()
    assert h.scheduler.queue.scheduling_cycle == attempts  # still parked as unschedulable
    # A label change is an UpdatePodLabel event: NodeResourcesFit, which rejected the pod, does not
    # register it, so the pod stays parked (queueing hints; upstream no longer retries on any spec change).
    h.cluster.update_pod({**old, "metadata": {**old["metadata"], "labels": {"x": "y"}}})
    h.clock.advance(15)
    h.schedule()
    assert h.scheduler.queue.scheduling_cycle == attempts
    # Its own scale-down is what NodeResourcesFit's hint looks for: retried, and now it fits.
    smaller = pod("big").req(cpu="500m").obj()
    h.cluster.update_pod({**old, "spec": smaller["spec"]})
    h.clock.advance(15)
    h.schedule()
    assert h.scheduler.queue.scheduling_cycle == attempts + 1
    assert h.placement() == {"default/big": "n"}


def test_extension_point_recorder_sees_points_and_sampled_plugins():
    from harmonic.scheduler.metrics import SchedulerMetrics

    metrics = SchedulerMetrics(plugin_sample_percent=100)
    h = Harness()
    h.scheduler = type(h.scheduler)(
        h.config, h.registry, h.cluster, clock=h.clock, observer=metrics, recorder=metrics
    )
    h.cluster.connect(h.scheduler)
    h.add_nodes([node("n").obj()])
    h.add_pods([pod("p").req(cpu="1").obj()])
    h.schedule()
    text = metrics.exposition().decode()
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0' in text
    assert 'extension_point="Bind",profile="default-scheduler",status="Success"} 1.0' in text
    assert (
        'scheduler_plugin_execution_duration_seconds_count{extension_point="Filter",plugin="NodeResourcesFit",status="Success"} 1.0'
        in text
    )
