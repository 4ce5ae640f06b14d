"""The secondary scheduler end to end over HTTP, with faults: every pod ends bound exactly once, or
pending with a FailedScheduling reason."""

from __future__ import annotations

import time
from collections import Counter

from harmonic.testing import node, pod
from harmonic.testing.apiserver import ApiServerDouble

from .conftest import scheduler_config, scheduling, wait_until


def _nodes(api: ApiServerDouble, n: int, cpu: str = "4") -> None:
    api.create_many("nodes", [node(f"n{i}").cap(cpu=cpu, memory="16Gi", pods=110).obj() for i in range(n)])


def _pods(api: ApiServerDouble, names, cpu: str = "100m", **kw) -> None:
    api.create_many("pods", [pod(n).req(cpu=cpu).scheduler("harmonic").obj() for n in names])


def _assert_bound_exactly_once(api: ApiServerDouble, names) -> None:
    placement = api.pod_placement()
    assert sorted(placement) == sorted(f"default/{n}" for n in names)
    per_pod = Counter(b.pod for b in api.bindings())
    assert set(per_pod.values()) == {1}, per_pod.most_common(3)


def _all_bound(api: ApiServerDouble, n: int):
    return lambda: len(api.pod_placement()) >= n


def test_schedules_writes_events_and_conditions(api: ApiServerDouble, start_scheduler):
    _nodes(api, 3, cpu="2")
    _pods(api, [f"p{i}" for i in range(6)], cpu="1")
    _pods(api, ["too-big"], cpu="3")
    api.create("pods", pod("not-ours").req(cpu="1").obj())  # default-scheduler's pod: left alone
    with scheduling(start_scheduler):
        wait_until(_all_bound(api, 6))
        failed = wait_until(lambda: api.events("FailedScheduling"), what="FailedScheduling")
        wait_until(lambda: len(api.events("Scheduled")) == 6)
        cond = wait_until(
            lambda: (api.get("pods", "too-big", "default")["status"].get("conditions") or [None])[0]
        )
    _assert_bound_exactly_once(api, [f"p{i}" for i in range(6)])
    (ev,) = failed
    assert ev["note"] == (
        "0/3 nodes are available: 3 Insufficient cpu."
        # 3 CPUs exceed every node's whole allocatable: unresolvable, so preemption cannot help.
        " preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert (
        ev["type"] == "Warning" and ev["action"] == "Scheduling" and ev["reportingController"] == "harmonic"
    )
    assert ev["regarding"]["name"] == "too-big" and ev["regarding"]["kind"] == "Pod"
    sched = api.events("Scheduled")[0]
    node_name = api.pod_placement()[f"default/{sched['regarding']['name']}"]
    assert sched["note"] == f"Successfully assigned default/{sched['regarding']['name']} to {node_name}"
    assert sched["action"] == "Binding" and sched["type"] == "Normal"
    assert cond["type"] == "PodScheduled" and cond["status"] == "False"
    assert cond["reason"] == "Unschedulable" and cond["message"] == ev["note"]
    assert "not-ours" not in {k.split("/")[1] for k in api.pod_placement()}
    # The status patch did not send the pod round again: one attempt, one event, one patch.
    assert api.stats().requests["patch pods/status"] == 1


def test_watch_dropped_mid_stream(api: ApiServerDouble, start_scheduler):
    _nodes(api, 4)
    names = [f"p{i}" for i in range(60)]
    with scheduling(start_scheduler) as r:
        for k in range(0, 60, 10):
            _pods(api, names[k : k + 10])
            api.drop_watches("pods", after_events=3)
            api.drop_watches("nodes")
        wait_until(_all_bound(api, 60))
        assert r.live.informers["pods"].watches > 1
    _assert_bound_exactly_once(api, names)


def test_410_on_reconnect(api: ApiServerDouble, start_scheduler):
    _nodes(api, 4)
    names = [f"p{i}" for i in range(30)]
    with scheduling(start_scheduler) as r:
        api.inject(status=500, method="GET", path="/api/v1/pods$", times=5)
        api.drop_watches("pods")
        _pods(api, names)
        api.expire_history()
        api.expire_history("pods", watches=1)
        wait_until(_all_bound(api, 30))
        assert r.live.informers["pods"].relists_on_gone >= 1
    _assert_bound_exactly_once(api, names)


def test_500s_from_the_api(api: ApiServerDouble, start_scheduler):
    _nodes(api, 4)
    names = [f"p{i}" for i in range(20)]
    api.inject(status=500, path="/binding$", times=15)
    api.inject(status=500, path="/events$", times=10)
    with scheduling(start_scheduler) as r:
        _pods(api, names)
        wait_until(_all_bound(api, 20), timeout=20)
        attempts = r.live.metrics.schedule_attempts
        assert attempts.labels("error", "harmonic")._value.get() == 15  # each failed bind counted once
        wait_until(lambda: len(api.events("Scheduled")) == 20)  # events retried until written
    _assert_bound_exactly_once(api, names)


def test_bind_conflict_with_another_binder(api: ApiServerDouble, start_scheduler, transport):
    _nodes(api, 2)
    _pods(api, ["contested"])
    uid = api.get("pods", "contested", "default")["metadata"]["uid"]
    # Someone else binds the pod while our bind is on its way: ours gets 409.
    api.inject(status=0, delay=0.3, path="/binding$", agent="harmonic-a", times=1)
    with scheduling(start_scheduler) as r:
        time.sleep(0.1)
        body = {"metadata": {"name": "contested", "uid": uid}, "target": {"kind": "Node", "name": "n0"}}
        transport.request("POST", "/api/v1/namespaces/default/pods/contested/binding", body=body)
        wait_until(lambda: api.stats().binding_conflicts == 1)
        time.sleep(0.3)
        assert not r.live.scheduler.queue.has(uid)  # dropped, not retried against a bound pod
    assert api.pod_placement() == {"default/contested": "n0"}
    assert len(api.bindings()) == 1


def test_node_deleted_between_scheduling_and_binding(api: ApiServerDouble, start_scheduler):
    api.create("nodes", node("roomy").cap(cpu="8", memory="16Gi", pods=110).obj())
    api.create("nodes", node("small").cap(cpu="2", memory="16Gi", pods=110).obj())
    # The scheduler picks "roomy" (least allocated); the node disappears before the bind is sent.
    api.inject(status=0, delay=0.5, path="/binding$", times=1)
    with scheduling(start_scheduler) as r:
        _pods(api, ["p"], cpu="1")
        wait_until(lambda: api.stats().requests["create pods/binding"] >= 1)
        api.delete("nodes", "roomy")
        wait_until(_all_bound(api, 1), timeout=15)
        # The attempt is counted after the binding call returns, which can lag the API server's view.
        attempts = r.live.metrics.schedule_attempts.labels("scheduled", "harmonic")
        wait_until(lambda: attempts._value.get() >= 1)
    # Bound to roomy before it vanished (the API server does not check nodes), or re-placed.
    assert api.pod_placement()["default/p"] in ("roomy", "small")
    assert len(api.bindings()) == 1


def test_bind_to_node_gone_from_the_informer_is_refused_and_retried(api: ApiServerDouble, start_scheduler):
    api.create("nodes", node("roomy").cap(cpu="8", memory="16Gi", pods=110).obj())
    api.create("nodes", node("small").cap(cpu="2", memory="16Gi", pods=110).obj())
    with scheduling(start_scheduler) as r:
        real_bind = r.live.client.bind

        def bind_after_node_deleted(p, node_name):
            if node_name == "roomy":
                api.delete("nodes", "roomy")
                wait_until(lambda: r.live.informers["nodes"].get("roomy") is None)
            return real_bind(p, node_name)

        r.live.client.bind = bind_after_node_deleted  # type: ignore[method-assign]
        _pods(api, ["p"], cpu="1")
        wait_until(_all_bound(api, 1), timeout=15)
    assert api.pod_placement() == {"default/p": "small"}
    assert api.stats().requests["create pods/binding"] == 1  # the doomed bind never left


def test_two_replicas_bind_each_pod_once(api: ApiServerDouble, start_scheduler):
    _nodes(api, 4)
    a = start_scheduler("a")
    b = start_scheduler("b")
    wait_until(lambda: a.live.is_leader or b.live.is_leader)
    names = [f"p{i}" for i in range(40)]
    _pods(api, names)
    wait_until(_all_bound(api, 40))
    leader, standby = (a, b) if a.live.is_leader else (b, a)
    assert {x.agent for x in api.bindings()} == {f"harmonic-{leader.live.identity}"}
    assert not standby.live.is_leader and standby.live.synced.is_set()
    _assert_bound_exactly_once(api, names)
    # A clean stop releases the lease: the standby takes over without waiting for expiry.
    assert leader.stop() == 0
    assert api.get("leases", "harmonic", "kube-system")["spec"]["holderIdentity"] in (
        "",
        standby.live.identity,
    )
    wait_until(lambda: standby.live.is_leader, timeout=2)
    _pods(api, ["after"])
    wait_until(_all_bound(api, 41))
    _assert_bound_exactly_once(api, [*names, "after"])


def test_leader_lost_mid_binding(api: ApiServerDouble, start_scheduler):
    _nodes(api, 4)
    a = start_scheduler("a")
    wait_until(lambda: a.live.is_leader and a.live.synced.is_set())
    b = start_scheduler("b")
    wait_until(lambda: b.live.synced.is_set())
    # Binds of a are slow; then a loses contact with its lease (but not with the rest of the API).
    api.inject(status=0, delay=0.4, path="/binding$", agent="harmonic-a")
    names = [f"p{i}" for i in range(30)]
    _pods(api, names)
    wait_until(lambda: api.bindings(), what="first binds")
    api.inject(status=500, path="/leases", agent="harmonic-a")
    wait_until(lambda: b.live.is_leader, timeout=10, what="takeover")
    took_over = time.monotonic()
    wait_until(lambda: not a.thread.is_alive(), what="a exits")
    assert a.live.exit_code == 1  # as kube-scheduler, a replica that lost its lease exits
    wait_until(_all_bound(api, 30), timeout=15)
    by_a = [x for x in api.bindings() if x.agent == "harmonic-a"]
    assert by_a, "a bound nothing before losing the lease: the test exercised nothing"
    assert max(x.at for x in by_a) < took_over  # every bind of a landed before b could act
    _assert_bound_exactly_once(api, names)


def test_unschedulable_pods_stay_pending_with_reason_and_retry_when_room_appears(
    api: ApiServerDouble, start_scheduler
):
    _nodes(api, 1, cpu="1")
    _pods(api, ["big"], cpu="2")
    with scheduling(start_scheduler):
        wait_until(lambda: api.events("FailedScheduling"))
        assert api.pod_placement() == {}
        api.create("nodes", node("large").cap(cpu="4", memory="16Gi", pods=110).obj())
        wait_until(_all_bound(api, 1), timeout=15)
    assert api.pod_placement() == {"default/big": "large"}


def test_metrics_and_health(api: ApiServerDouble, start_scheduler):
    from urllib.request import urlopen

    from harmonic.cluster.health import HealthServer

    _nodes(api, 2)
    with scheduling(start_scheduler) as r:
        live = r.live
        server = HealthServer(
            "127.0.0.1", 0, live.metrics.exposition, live.health_checks(), live.ready_checks()
        )
        server.start()
        try:
            _pods(api, ["p0", "p1"])
            wait_until(_all_bound(api, 2))
            base = f"http://127.0.0.1:{server.port}"
            wait_until(
                lambda: (
                    'scheduler_pending_pods{queue="active"} 0.0' in urlopen(base + "/metrics").read().decode()
                )
            )
            text = urlopen(base + "/metrics").read().decode()
            assert urlopen(base + "/healthz").read() == b"ok"
            assert urlopen(base + "/readyz").read() == b"ok"
        finally:
            server.stop()
    assert 'scheduler_schedule_attempts_total{profile="harmonic",result="scheduled"} 2.0' in text
    assert (
        'scheduler_scheduling_attempt_duration_seconds_count{profile="harmonic",result="scheduled"} 2.0'
        in text
    )
    assert (
        'scheduler_framework_extension_point_duration_seconds_count{extension_point="Bind",profile="harmonic",status="Success"} 2.0'
        in text
    )
    assert "scheduler_plugin_execution_duration_seconds" in text
    assert "_created" not in text


def test_without_leader_election_schedules_at_once(api: ApiServerDouble, start_scheduler):
    _nodes(api, 1)
    r = start_scheduler(leader=False, config=scheduler_config(leader=False))
    _pods(api, ["p"])
    wait_until(_all_bound(api, 1))
    assert api.get("leases", "harmonic", "kube-system") is None
    assert r.stop() == 0


def test_saturated_event_pipeline_drops_events_never_pods(api: ApiServerDouble, start_scheduler, monkeypatch):
    """Events stall (the server answers them slowly) and their queue fills: Events are dropped and
    counted in harmonic_events_dropped_total, while every pod is still bound exactly once."""
    monkeypatch.setattr("harmonic.cluster.events.MAX_QUEUED", 3)
    _nodes(api, 4)
    names = [f"p{i}" for i in range(40)]
    api.inject(status=0, delay=2.0, path="/events$")
    with scheduling(start_scheduler) as r:
        _pods(api, names)
        wait_until(_all_bound(api, 40))
        dropped = r.live.events.dropped
        metrics = r.live.metrics.exposition().decode()
    _assert_bound_exactly_once(api, names)
    # 4 writers are stuck for 2 s each and 3 more Events wait: most of the 40 found no room.
    assert dropped >= 25
    assert f"harmonic_events_dropped_total {float(dropped)}" in metrics


def test_pod_with_a_bound_claim_is_scheduled_to_its_volumes_node(api: ApiServerDouble, start_scheduler):
    """Issue 34: without storage informers a claim was never found ('persistentvolumeclaim "claim1" not
    found') and such pods never scheduled."""
    _nodes(api, 2, cpu="2")
    affinity = {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}
    api.create(
        "persistentvolumes",
        {
            "metadata": {"name": "pv1"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "local": {"path": "/mnt/pv1"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [affinity]}]}},
                "claimRef": {"namespace": "default", "name": "claim1"},
            },
            "status": {"phase": "Bound"},
        },
    )
    api.create(
        "persistentvolumeclaims",
        {
            "metadata": {
                "name": "claim1",
                "namespace": "default",
                "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
            },
            "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "pv1", "storageClassName": ""},
            "status": {"phase": "Bound"},
        },
    )
    p = pod("p").scheduler("harmonic").obj()
    p["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "claim1"}}]
    api.create("pods", p)
    with scheduling(start_scheduler):
        wait_until(lambda: api.pod_placement() == {"default/p": "n1"}, what="p bound to n1")


def _hostile_pod(name: str, requests: dict[str, str]) -> dict:
    """A pod kube-apiserver accepts (checked against kube-apiserver 1.36) but Harmonic cannot compile:
    its requests do not fit in 64 bits. Extended resources need a limit equal to the request."""
    obj = pod(name).scheduler("harmonic").obj()
    limits = {k: v for k, v in requests.items() if "/" in k}
    obj["spec"]["containers"][0]["resources"] = {"requests": requests, "limits": limits}
    return obj


def test_a_pod_parse_pod_refuses_gets_an_event_and_scheduling_goes_on(
    api: ApiServerDouble, start_scheduler, caplog
):
    """Issue 33: a pod whose request does not fit in 64 bits crashed the scheduling loop (the stub pod
    built for its failure had no schedulerName) and the process exited."""
    _nodes(api, 1)
    api.create("pods", _hostile_pod("huge-cpu", {"cpu": "1e100"}))
    api.create("pods", _hostile_pod("huge-ext", {"example.com/x": "1e19"}))
    with scheduling(start_scheduler) as r:
        failed = wait_until(
            lambda: len(api.events("FailedScheduling")) == 2 and api.events("FailedScheduling")
        )
        _pods(api, ["after"])
        wait_until(_all_bound(api, 1), what="the pod created after the bad ones")
        conds = {
            name: wait_until(
                lambda n=name: (api.get("pods", n, "default")["status"].get("conditions") or [None])[0]
            )
            for name in ("huge-cpu", "huge-ext")
        }
        assert r.thread.is_alive()
    assert r.stop() == 0
    notes = {ev["regarding"]["name"]: ev["note"] for ev in failed}
    assert "spec.containers[0].resources.requests.cpu" in notes["huge-cpu"]
    assert "spec.containers[0].resources.requests.example.com/x" in notes["huge-ext"]
    for name, cond in conds.items():
        assert (cond["type"], cond["status"], cond["reason"]) == ("PodScheduled", "False", "SchedulerError")
        assert cond["message"] == notes[name]
    named = [rec for rec in caplog.records if rec.levelname == "ERROR" and "huge-cpu" in rec.getMessage()]
    assert len(named) == 1, [rec.getMessage() for rec in named]
    assert not [rec for rec in caplog.records if "crashed" in rec.getMessage()]


def test_server_recreated_with_older_state_is_relisted_and_scheduling_goes_on(
    api: ApiServerDouble, start_scheduler
):
    """etcd recreated (issue 33): the server comes back at a lower resourceVersion holding only the
    nodes and some pods. The scheduler relists, forgets what vanished and binds what is new."""
    _nodes(api, 2, cpu="1")
    _pods(api, [f"old{i}" for i in range(8)], cpu="200m")  # 1.6 of 2 CPUs taken
    with scheduling(start_scheduler) as r:
        wait_until(_all_bound(api, 8))
        api.too_large_retry_after = 0
        kept = {"old0", "old1"}
        api.recreate(keep=lambda res, o: res == "nodes" or o["metadata"]["name"] in kept)
        # Needs the room the vanished pods held: binds only once the scheduler saw them go.
        _pods(api, [f"new{i}" for i in range(8)], cpu="200m")
        wait_until(_all_bound(api, 10), timeout=20, what="new pods bound after the relist")
        wait_until(lambda: r.live.informers["pods"].healthy)
    _assert_bound_exactly_once(api, [*sorted(kept), *(f"new{i}" for i in range(8))])


def test_throttled_bindings_wait_as_asked_and_write_no_failure(api: ApiServerDouble, start_scheduler):
    """API Priority and Fairness throttles the binds (429 + Retry-After): client-go waits and sends
    the same Binding again; no FailedScheduling event, no PodScheduled=False, each pod bound once."""
    _nodes(api, 2)
    names = [f"p{i}" for i in range(6)]
    api.inject(status=429, retry_after=0, method="POST", path="/binding$", times=12)
    with scheduling(start_scheduler):
        _pods(api, names)
        wait_until(_all_bound(api, 6))
        wait_until(lambda: len(api.events("Scheduled")) == 6)
    _assert_bound_exactly_once(api, names)
    assert api.events("FailedScheduling") == []
    assert api.stats().requests["patch pods/status"] == 0
    assert api.stats().requests["create pods/binding"] == 6 + 12


def _scheduled_condition(api: ApiServerDouble, name: str) -> str | None:
    conds = (api.get("pods", name, "default") or {}).get("status", {}).get("conditions") or []
    return next((c["status"] for c in conds if c["type"] == "PodScheduled"), None)


def test_a_late_failure_patch_never_marks_a_bound_pod_unschedulable(api: ApiServerDouble, start_scheduler):
    """Issue 33's throttled run: a bind fails, its PodScheduled=False patch waits behind slow status
    writes, the retried bind succeeds first. The pod must not end bound but marked unschedulable."""
    _nodes(api, 2)
    names = [f"p{i}" for i in range(6)]
    api.inject(status=500, method="POST", path="/binding$", times=len(names))  # each pod's first bind
    api.inject(status=0, delay=0.4, method="PATCH", path="/status$")  # slow status writes
    with scheduling(start_scheduler) as r:
        _pods(api, names)
        wait_until(_all_bound(api, 6), timeout=20)
        r.stop()  # lets the status writer finish what is queued
        contradicted = [n for n in names if _scheduled_condition(api, n) != "True"]
    _assert_bound_exactly_once(api, names)
    assert contradicted == []
    assert len(api.events("FailedScheduling")) == len(names)
    assert all(
        e["note"].startswith('Binding rejected: running Bind plugin "DefaultBinder": ')
        for e in api.events("FailedScheduling")
    )
