"""``read_cluster``: what ``harmonic snapshot`` reads, against the API-server double."""

from __future__ import annotations

import pytest

from harmonic.cluster.listing import PAGE, read_cluster
from harmonic.cluster.transport import ApiStatusError, Transport
from harmonic.testing.apiserver import ApiServerDouble
from harmonic.testing.builders import node, pod


@pytest.mark.parametrize(
    ("namespaces", "want"),
    [
        ((), {"a/p1", "b/p2", "c/p3"}),
        (("a",), {"a/p1"}),
        (("a", "c"), {"a/p1", "c/p3"}),
    ],
)
def test_namespaces_filter_pods_but_never_nodes(
    api: ApiServerDouble, transport: Transport, namespaces: tuple[str, ...], want: set[str]
) -> None:
    for ns in ("a", "b", "c"):
        api.create("namespaces", {"metadata": {"name": ns}})
    api.create("nodes", node("n1").obj())
    for ns, name in (("a", "p1"), ("b", "p2"), ("c", "p3")):
        api.create("pods", pod(name).ns(ns).obj())
    listing = read_cluster(transport, namespaces)
    got = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in listing.of("Pod")}
    assert got == want
    assert [n["metadata"]["name"] for n in listing.of("Node")] == ["n1"]
    assert all(p["kind"] == "Pod" and p["apiVersion"] == "v1" for p in listing.of("Pod"))


def test_pages_are_followed(api: ApiServerDouble, transport: Transport) -> None:
    api.create_many("pods", [pod(f"p{i}").obj() for i in range(PAGE + 7)])
    assert len(read_cluster(transport).of("Pod")) == PAGE + 7


def test_404_is_recorded_other_errors_raise(api: ApiServerDouble, transport: Transport) -> None:
    listing = read_cluster(transport)
    # The double serves neither Deployments nor Jobs: as a server without those resources would.
    assert {"Deployment", "Job"} <= set(listing.not_served)
    assert "Pod" not in listing.not_served and "PodGroup" not in listing.not_served
    api.inject(status=403, path="/pods")
    with pytest.raises(ApiStatusError) as e:
        read_cluster(transport)
    assert e.value.code == 403
