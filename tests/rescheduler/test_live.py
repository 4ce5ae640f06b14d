"""The live rescheduler against the API-server double over HTTP: dry runs write nothing; evictions go
through the Eviction API with Events and descheduler's metrics; plans nominate first and stop cleanly
at a surprise (429, a pod gone, the pending pod deleted, the lease lost), losing no pod."""

from __future__ import annotations

import copy
from typing import Any

from harmonic.cluster.events import EventRecorder
from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.rescheduler.live import LiveRescheduler
from harmonic.rescheduler.policy import load_policy
from tests.cluster.conftest import wait_until
from tests.rescheduler.helpers import policy, profile
from tests.rescheduler.test_makeroom import fragmented, pending
from tests.rescheduler.test_plugins import N, P

TAINTS = policy(profile("deschedule", "RemovePodsViolatingNodeTaints"), evictionFailureEventNotification=True)
# The double stamps creationTimestamp with the real clock, so pods are pending from "now".
MAKE_ROOM = policy(profile("balance", "MakeRoomForPending", {"solver": "greedy", "pendingThreshold": "0s"}))


def _clean(o: dict[str, Any]) -> dict[str, Any]:
    o = copy.deepcopy(o)
    o.pop("kind", None)
    o["metadata"].pop("uid", None)
    return o


def load(api, objs) -> None:
    for o in objs:
        kind = o["kind"]
        resource = {"Node": "nodes", "Pod": "pods", "PodDisruptionBudget": "poddisruptionbudgets"}[kind]
        created = api.create(resource, _clean(o))
        if kind == "Pod" and o.get("status"):
            api.set_status(
                "pods", created["metadata"]["name"], o["status"], namespace=created["metadata"]["namespace"]
            )


def live(transport, pol, dry_run=False, **kw) -> LiveRescheduler:
    prof = load_config(None, default_registry()).profiles[0]
    return LiveRescheduler(transport, load_policy(pol), prof, default_registry(), dry_run=dry_run, **kw)


def tainted() -> list[dict]:
    return [N("n1", taint=("t", "x")), N("n2"), P("a", "n1")]


def test_dry_run_writes_nothing(api, transport):
    load(api, tainted())
    api.reset_stats()
    r = live(transport, TAINTS, dry_run=True).cycle()
    assert [(e.pod.name, e.to) for e in r.result.log.evictions] == [("a", "n2")]
    writes = {k: v for k, v in api.stats().requests.items() if not k.startswith(("get", "list", "watch"))}
    assert writes == {}
    assert api.get("pods", "a", "default") is not None


def test_eviction_with_event_and_metrics(api, transport):
    load(api, tainted())
    events = EventRecorder(transport, api="events.k8s.io/v1")
    events.start()
    lr = live(transport, TAINTS, events=events)
    r = lr.cycle()
    assert [e.pod.name for e in r.evicted] == ["a"]
    assert api.get("pods", "a", "default") is None
    evs = wait_until(
        lambda: [e for e in api.list("events.k8s.io/events") if e.get("reason") == "Descheduled"],
        what="event",
    )
    assert evs[0]["regarding"]["name"] == "a"
    events.stop()
    text = lr.metrics().decode()
    assert (
        'descheduler_pods_evicted{namespace="default",node="n1",profile="p",result="success",strategy="RemovePodsViolatingNodeTaints"} 1.0'
        in text
    )
    assert "descheduler_loop_duration_seconds_count" in text
    assert lr.healthz() is None


def test_plan_nominates_then_evicts(api, transport):
    load(api, [*fragmented(), pending("big", "2")])
    r = live(transport, MAKE_ROOM).cycle()
    assert len(r.evicted) == 1 and r.aborted == []
    target = r.nominated[0].node
    assert api.get("pods", "big", "default")["status"]["nominatedNodeName"] == target
    assert api.get("pods", r.evicted[0].pod.name, "default") is None


def test_429_stops_the_plan_and_loses_no_pod(api, transport):
    load(api, [*fragmented(), pending("big", "2")])
    fault = api.inject(status=429, method="POST", path=r"/eviction$", message="too many requests")
    lr = live(transport, MAKE_ROOM)
    r = lr.cycle()
    assert fault.hits == 1
    assert r.evicted == [] and len(r.aborted) == 1 and "429" in r.aborted[0][1]
    assert len([p for p in api.list("pods") if p["spec"].get("nodeName")]) == 9
    assert 'harmonic_rescheduler_plans{outcome="aborted"} 1.0' in lr.metrics().decode()


def test_pending_pod_deleted_mid_plan_aborts_before_evicting(api, transport):
    load(api, [*fragmented(), pending("big", "2")])
    lr = live(transport, MAKE_ROOM)
    planned = live(transport, MAKE_ROOM, dry_run=True).cycle()
    api.delete("pods", "big", "default")
    from harmonic.rescheduler.live import CycleReport

    report = CycleReport()
    lr.execute(planned.result, lr.snapshot(), report)
    assert report.evicted == [] and "was deleted" in report.aborted[0][1]
    assert len(api.list("pods")) == 9


def test_moved_pod_gone_is_reported(api, transport):
    load(api, tainted())
    planned = live(transport, TAINTS, dry_run=True).cycle()
    api.delete("pods", "a", "default")
    lr = live(transport, TAINTS)
    from harmonic.rescheduler.live import CycleReport

    report = CycleReport()
    lr.execute(planned.result, lr.snapshot(), report)
    assert report.evicted == [] and "is gone" in report.failed[0][1]


class _LostLease:
    is_leader = True

    def remaining(self):
        return None


def test_lost_lease_writes_nothing(api, transport):
    load(api, tainted())
    api.reset_stats()
    r = live(transport, TAINTS, leader=_LostLease()).cycle()
    assert r.evicted == [] and r.failed[0][1] == "lease lost"
    assert api.get("pods", "a", "default") is not None


def test_api_errors_fail_healthz(api, transport):
    load(api, tainted())
    api.inject(status=500, method="GET", path=r"/nodes$")
    lr = live(transport, TAINTS)
    r = lr.cycle()
    assert r.error and "reading the cluster" in (lr.healthz() or "")


def test_cli_once_against_the_api_server(api, tmp_path):
    import json

    import yaml
    from click.testing import CliRunner

    from harmonic.cli import main

    load(api, tainted())
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    pol = tmp_path / "policy.yaml"
    pol.write_text(yaml.safe_dump(TAINTS))
    dry = CliRunner().invoke(
        main,
        [
            "reschedule",
            "--policy",
            str(pol),
            "--once",
            "--dry-run",
            "--json",
            "--kubeconfig",
            str(kubeconfig),
        ],
    )
    assert dry.exit_code == 0, dry.output
    assert [e["pod"] for e in json.loads(dry.output)["evictions"]] == ["default/a"]
    assert api.get("pods", "a", "default") is not None
    real = CliRunner().invoke(
        main, ["reschedule", "--policy", str(pol), "--once", "--kubeconfig", str(kubeconfig)]
    )
    assert real.exit_code == 0, real.output
    assert api.get("pods", "a", "default") is None


def test_restore_zone_spread_evicts_through_the_eviction_api(api, transport):
    load(api, [N("a1", zone="a"), N("a2", zone="a"), N("b1", zone="b"), P("w0", "a1"), P("w1", "a2")])
    lr = live(transport, policy(profile("balance", "RestoreZoneSpread")))
    r = lr.cycle()
    assert [(e.pod.name in ("w0", "w1"), e.to) for e in r.evicted] == [(True, "b1")]
    gone = r.evicted[0].pod.name
    assert api.get("pods", gone, "default") is None
    assert {p["metadata"]["name"] for p in api.list("pods")} == {"w0", "w1"} - {gone}
    assert 'result="success",strategy="RestoreZoneSpread"} 1.0' in lr.metrics().decode()
