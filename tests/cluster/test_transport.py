"""The transport's retries of answers that ask for one (client-go's rest client: ``checkWait``)."""

from __future__ import annotations

import time

import pytest

from harmonic.cluster.transport import MAX_RETRIES, ApiStatusError, Transport
from harmonic.testing import pod
from harmonic.testing.apiserver import ApiServerDouble

BINDING = {
    "apiVersion": "v1",
    "kind": "Binding",
    "metadata": {"name": "p"},
    "target": {"kind": "Node", "name": "n1"},
}


def _recording(transport: Transport) -> list[float]:
    waits: list[float] = []
    transport.sleep = waits.append
    return waits


@pytest.mark.parametrize(
    ("status", "retry_after", "times", "expect_waits", "succeeds"),
    [
        # Throttled by API Priority and Fairness: wait as asked and send the same POST again.
        (429, 2, 2, [2.0, 2.0], True),
        # A 5xx that names a wait is retried the same way.
        (503, 1, 1, [1.0], True),
        # Without Retry-After the server did not ask for a retry: the caller sees the answer.
        (429, None, 1, [], False),
        (500, None, 1, [], False),
        # A retry-after of zero retries at once.
        (429, 0, 3, [0.0, 0.0, 0.0], True),
        # At most MAX_RETRIES retries, then the answer is the caller's.
        (429, 1, MAX_RETRIES + 5, [1.0] * MAX_RETRIES, False),
    ],
)
def test_binding_answers_asking_for_a_retry(
    api: ApiServerDouble, transport: Transport, status, retry_after, times, expect_waits, succeeds
):
    api.create("pods", pod("p").obj())
    api.inject(status=status, retry_after=retry_after, method="POST", path="/binding$", times=times)
    waits = _recording(transport)
    path = "/api/v1/namespaces/default/pods/p/binding"
    if succeeds:
        transport.request("POST", path, body=BINDING, decode=False)
        assert api.pod_placement() == {"default/p": "n1"}
    else:
        with pytest.raises(ApiStatusError) as err:
            transport.request("POST", path, body=BINDING, decode=False)
        assert err.value.code == status
        assert api.pod_placement() == {}
    assert waits == expect_waits
    assert api.stats().requests["create pods/binding"] == len(expect_waits) + 1


def test_a_wait_past_the_deadline_is_not_waited(api: ApiServerDouble, transport: Transport):
    api.inject(status=429, retry_after=30, path="/api/v1/nodes$", times=1)
    waits = _recording(transport)
    with pytest.raises(ApiStatusError):
        transport.request("GET", "/api/v1/nodes", deadline=time.monotonic() + 5)
    assert waits == []


def test_a_throttled_watch_waits_then_opens(api: ApiServerDouble, transport: Transport):
    api.inject(status=429, retry_after=3, path="/api/v1/nodes$", times=2)
    waits = _recording(transport)
    stream = transport.stream("/api/v1/nodes", {"resourceVersion": "0"}, read_timeout=5)
    stream.close()
    assert waits == [3.0, 3.0]


def test_too_large_resource_version_is_not_waited_out(api: ApiServerDouble, transport: Transport):
    """kube-apiserver sends it with Retry-After: 1, but a server behind us will not catch up."""
    waits = _recording(transport)
    with pytest.raises(ApiStatusError) as err:
        transport.request("GET", "/api/v1/pods", query={"resourceVersion": str(api.resource_version + 100)})
    assert err.value.too_large_resource_version and err.value.retry_after == 1.0
    assert waits == []
