"""Pod status patches never contradict what the API server holds (issue 33)."""

from __future__ import annotations

import pytest

from harmonic.cluster.podstatus import StatusPatch, StatusPatcher
from harmonic.cluster.transport import Transport
from harmonic.testing import pod
from harmonic.testing.apiserver import ApiServerDouble

FAILED = {
    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulerError", "message": "x"}]
}
NOMINATED = {"nominatedNodeName": "n1"}


def _bind(api: ApiServerDouble, transport: Transport, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"name": "n1"}}
    transport.request("POST", f"/api/v1/namespaces/default/pods/{name}/binding", body=body, decode=False)


def _scheduled(api: ApiServerDouble, name: str) -> str | None:
    conds = api.get("pods", name, "default")["status"].get("conditions") or []
    return next((c["status"] for c in conds if c["type"] == "PodScheduled"), None)


@pytest.mark.parametrize(
    ("status", "bound_after_decision", "informer_sees_bound", "in_flight", "expect"),
    [
        # The pod is still pending: the patch lands.
        (FAILED, False, False, False, "applied"),
        # A retried Binding succeeded after the failure was decided; the informer has not seen it:
        # the resourceVersion precondition refuses the patch (409), the read-back shows it bound.
        (FAILED, True, False, False, "dropped"),
        # The informer already shows the pod bound: nothing is sent.
        (FAILED, True, True, False, "dropped"),
        # The pod's Binding is in flight: nothing is sent.
        (FAILED, False, False, True, "dropped"),
        # A nomination decided before the pod was bound (preemption, then a bind): dropped, not 422.
        (NOMINATED, True, False, False, "dropped"),
    ],
)
def test_a_patch_decided_on_an_older_pod_is_dropped_once_it_is_bound(
    api: ApiServerDouble,
    transport: Transport,
    status,
    bound_after_decision,
    informer_sees_bound,
    in_flight,
    expect,
):
    api.create("pods", pod("p").obj())
    decided_on = api.get("pods", "p", "default")
    if bound_after_decision:
        _bind(api, transport, "p")
    seen = api.get("pods", "p", "default") if informer_sees_bound else decided_on
    patcher = StatusPatcher(transport, latest=lambda key: seen, binding=lambda key: in_flight)
    patcher.apply(StatusPatch("default", "p", status, decided_on["metadata"]["resourceVersion"]))
    after = api.get("pods", "p", "default")
    assert patcher.failed == 0
    assert (patcher.dropped, expect) in ((0, "applied"), (1, "dropped"))
    if bound_after_decision:
        assert _scheduled(api, "p") == "True" and not after["status"].get("nominatedNodeName")
    elif expect == "applied":
        assert _scheduled(api, "p") == "False"


def test_a_pod_changed_but_still_pending_is_patched_at_its_new_version(api: ApiServerDouble, transport):
    api.create("pods", pod("p").obj())
    decided_on = api.get("pods", "p", "default")
    api.set_status("pods", "p", {"phase": "Pending", "message": "someone else wrote"}, "default")
    patcher = StatusPatcher(transport, latest=lambda key: decided_on)
    patcher.apply(StatusPatch("default", "p", FAILED, decided_on["metadata"]["resourceVersion"]))
    assert (patcher.failed, patcher.dropped) == (0, 0)
    assert _scheduled(api, "p") == "False"


def test_a_nomination_the_server_refuses_on_a_bound_pod_is_harmless(api: ApiServerDouble, transport):
    """Without a resourceVersion to check, kube-apiserver itself refuses the late nomination (422)."""
    api.create("pods", pod("p").obj())
    pending = api.get("pods", "p", "default")
    _bind(api, transport, "p")
    patcher = StatusPatcher(transport, latest=lambda key: pending)
    patcher.apply(StatusPatch("default", "p", NOMINATED))
    assert (patcher.failed, patcher.dropped) == (0, 1)
