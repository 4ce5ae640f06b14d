"""CapacityScheduling's quota accounting: scheduler-plugins' pkg/capacityscheduling/elasticquota_test.go
translated case for case against ``harmonic.plugins.capacityscheduling.quota``.

Translated: TestReserveResource, TestUnReserveResource, TestUsedOverMinWith, TestUsedOverMaxWith,
TestUsedOverMin, TestNewElasticQuotaInfo. Upstream's ``framework.Resource`` is a ``{resource: units}``
map here (millicores for cpu, bytes for memory and ephemeral-storage); a field upstream leaves at 0 is
a key left out, which ``over`` (upstream's ``cmp2``) reads as 0 for the core resources, as Go does.

Translation notes:
- Upstream's pods go through ``computePodResourceRequest``; here through ``parse_pod(...).requests``,
  the request Harmonic's Reserve uses, so the cases also check that the two agree.
- Upstream builds some ``ElasticQuotaInfo`` with a nil ``Min`` or ``Max`` (which ``newElasticQuotaInfo``
  never produces) and the methods special-case nil: no Min means "over min", no Max means "unlimited".
  Harmonic's ``QuotaInfo`` has no nil bounds; an absent min or max takes upstream's bound lists, as
  ``newElasticQuotaInfo`` does, and the cases assert upstream's expected verdict on that object.
- ``newElasticQuotaInfo``'s ``used`` argument: ``QuotaInfo`` starts with no usage; the cases set
  upstream's ``used`` (all zero) and compare usage with zero entries dropped.
"""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.api.batch import ElasticQuota
from harmonic.api.pod import parse_pod
from harmonic.api.resources import Resources
from harmonic.plugins.capacityscheduling.quota import QuotaInfo
from harmonic.testing import pod
from tests.plugins.batch_helpers import MAX_BOUNDS, MIN_BOUNDS

GPU = "nvidia.com/gpu"
MID = 100


def _make_pod(name: str, ns: str, mem: int, milli_cpu: int, gpu: int) -> Resources:
    """Upstream's makePod (memory in bytes, cpu in millicores, GPUs), reduced to its request."""
    obj = (
        pod(name)
        .ns(ns)
        .uid(name)
        .priority(MID)
        .node("node-a")
        .req(memory=str(mem), cpu=f"{milli_cpu}m", **{GPU: str(gpu)})
    )
    return dict(parse_pod(obj.obj()).requests)


def _info(used: Resources, lo: Resources | None = None, hi: Resources | None = None) -> QuotaInfo:
    q = QuotaInfo("ns1", lo, hi)
    q.used = dict(used)
    return q


def _nonzero(r: Resources) -> Resources:
    return {k: v for k, v in r.items() if v != 0}


_THREE_PODS = [
    ("t1-p1", "ns1", 50, 1000, 1),
    ("t1-p2", "ns2", 100, 2000, 0),
    ("t1-p3", "ns2", 0, 0, 2),
]


@pytest.mark.parametrize(
    ("name", "before", "pods", "sign", "expected"),
    [
        (
            "ElasticQuotaInfo ReserveResource",
            {"cpu": 1000, "memory": 200, GPU: 2},
            _THREE_PODS,
            1,
            {"cpu": 4000, "memory": 350, GPU: 5},
        ),
        (
            "ElasticQuotaInfo UnReserveResource",
            {"cpu": 4000, "memory": 200, GPU: 5},
            _THREE_PODS,
            -1,
            {"cpu": 1000, "memory": 50, GPU: 2},
        ),
    ],
)
def test_reserve_and_unreserve_resource(
    name: str, before: Resources, pods: list[tuple[str, str, int, int, int]], sign: int, expected: Resources
) -> None:
    """TestReserveResource / TestUnReserveResource: usage moves by each pod's request, whatever its
    namespace (the accounting primitive does not filter; the caller picks the quota)."""
    q = _info(before)
    for p in pods:
        uid = p[0]
        request = _make_pod(*p)
        # add_pod/remove_pod are reserveResource/unreserveResource behind the pod-set check.
        if sign > 0:
            q.add_pod(uid, request)
        else:
            q.pods.add(uid)
            q.remove_pod(uid, request)
    assert _nonzero(q.used) == expected


@pytest.mark.parametrize(
    ("bound", "name", "used", "limit", "pod_request", "expected"),
    [
        (
            "min",
            "ElasticQuotaInfo OverMinWith Sum Of PodRequest And Used Is Bigger Than Min",
            {"cpu": 4000, "memory": 200, GPU: 5},
            {"cpu": 3000, "memory": 100, GPU: 5},
            {"cpu": 1500, "memory": 100},
            True,
        ),
        (
            "min",
            "ElasticQuotaInfo OverMinWith Sum Of PodRequest And Used Is Not Bigger Than Min",
            {"cpu": 300, "memory": 100, GPU: 5},
            {"cpu": 4000, "memory": 200, GPU: 5},
            {"cpu": 100, "memory": 50},
            False,
        ),
        (
            "min",
            # Upstream's name says Max; the info has no Min, which is what the method reads.
            "ElasticQuotaInfo OverMinWith ElasticQuotaInfo Doesn't Have Max",
            {"cpu": 3900, "memory": 100, GPU: 5},
            None,
            {"cpu": 100, "memory": 100},
            True,
        ),
        (
            "min",
            "ElasticQuotaInfo OverMinWith Used And Min Don't Have GPU Value",
            {"cpu": 10, "memory": 10},
            {"cpu": 3000, "memory": 100},
            {"cpu": 10, "memory": 10, GPU: 5},
            True,
        ),
        (
            "min",
            "ElasticQuotaInfo OverMinWith EphemeralStorage",
            {"cpu": 10, "memory": 10, "ephemeral-storage": 10},
            {"cpu": 3000, "memory": 100, "ephemeral-storage": 100},
            {"cpu": 10, "memory": 10, "ephemeral-storage": 10},
            False,
        ),
        (
            "max",
            "ElasticQuotaInfo OverMaxWith Sum Of PodRequest And Used Is Bigger Than Max",
            {"cpu": 4000, "memory": 200, GPU: 5},
            {"cpu": 4000, "memory": 200, GPU: 5},
            {"cpu": 100, "memory": 100},
            True,
        ),
        (
            "max",
            "ElasticQuotaInfo OverMaxWith Sum Of PodRequest And Used Is Not Bigger Than Max",
            {"cpu": 3900, "memory": 100, GPU: 5},
            {"cpu": 4000, "memory": 200, GPU: 5},
            {"cpu": 100, "memory": 100},
            False,
        ),
        (
            "max",
            "ElasticQuotaInfo OverMaxWith ElasticQuotaInfo Doesn't Have Max",
            {"cpu": 3900, "memory": 100, GPU: 5},
            None,
            {"cpu": 100, "memory": 100},
            False,
        ),
        (
            "max",
            "ElasticQuotaInfo OverMaxWith Used And Max Don't Have GPU Value",
            {"cpu": 10, "memory": 10},
            {"cpu": 3000, "memory": 100},
            {"cpu": 10, "memory": 10, GPU: 5},
            False,
        ),
        (
            "max",
            "ElasticQuotaInfo OverMaxWith EphemeralStorage",
            {"cpu": 10, "memory": 10, "ephemeral-storage": 10},
            {"cpu": 3000, "memory": 100, "ephemeral-storage": 100},
            {"cpu": 10, "memory": 10, "ephemeral-storage": 100},
            True,
        ),
    ],
)
def test_used_over_bound_with(
    bound: str, name: str, used: Resources, limit: Resources | None, pod_request: Resources, expected: bool
) -> None:
    """TestUsedOverMinWith (bound "min") and TestUsedOverMaxWith (bound "max")."""
    if bound == "min":
        assert _info(used, lo=limit).used_over_min_with(pod_request) is expected
    else:
        assert _info(used, hi=limit).used_over_max_with(pod_request) is expected


@pytest.mark.parametrize(
    ("name", "used", "lo", "expected"),
    [
        (
            "ElasticQuotaInfo OverMin Used Is Bigger Than Min",
            {"cpu": 4000, "memory": 200, GPU: 5},
            {"cpu": 3000, "memory": 300, GPU: 5},
            True,
        ),
        (
            "ElasticQuotaInfo OverMin Used Is Not Bigger Than Min",
            {"cpu": 300, "memory": 100, GPU: 5},
            {"cpu": 4000, "memory": 200, GPU: 5},
            False,
        ),
        (
            "ElasticQuotaInfo OverMin ElasticQuotaInfo Doesn't Have Min",
            {"cpu": 3900, "memory": 100, GPU: 5},
            None,
            True,
        ),
        (
            "ElasticQuotaInfo OverMin Used Has GPU But Min Doesn't Have GPU",
            {"cpu": 300, "memory": 100, GPU: 5},
            {"cpu": 4000, "memory": 200},
            True,
        ),
        (
            "ElasticQuotaInfo OverMin EphemeralStorage",
            {"cpu": 300, "memory": 100, "ephemeral-storage": 100},
            {"cpu": 4000, "memory": 200, "ephemeral-storage": 10},
            True,
        ),
    ],
)
def test_used_over_min(name: str, used: Resources, lo: Resources | None, expected: bool) -> None:
    """TestUsedOverMin."""
    assert _info(used, lo=lo).used_over_min() is expected


def _resource_list(milli_cpu: int, mem: int) -> Resources:
    """Upstream's makeResourceList(cpu millicores, memory bytes)."""
    return {"cpu": milli_cpu, "memory": mem}


@pytest.mark.parametrize(
    ("name", "hi", "lo", "want_max", "want_min"),
    [
        (
            "ElasticQuota",
            _resource_list(100, 1000),
            _resource_list(10, 100),
            {"cpu": 100, "memory": 1000},
            {"cpu": 10, "memory": 100},
        ),
        (
            "ElasticQuota Without Max",
            None,
            _resource_list(10, 100),
            MAX_BOUNDS,
            {"cpu": 10, "memory": 100},
        ),
        (
            "ElasticQuota Without Min",
            _resource_list(100, 1000),
            None,
            {"cpu": 100, "memory": 1000},
            MIN_BOUNDS,
        ),
        ("ElasticQuota Without Max and Min", None, None, MAX_BOUNDS, MIN_BOUNDS),
    ],
)
def test_new_elastic_quota_info(
    name: str, hi: Resources | None, lo: Resources | None, want_max: Resources, want_min: Resources
) -> None:
    """TestNewElasticQuotaInfo: upstream passes used = makeResourceList(0, 0) and expects no pods."""
    q = QuotaInfo.of(ElasticQuota("ns1", "eq", lo, hi))
    q.used = _resource_list(0, 0)
    assert (q.namespace, q.pods) == ("ns1", set())
    assert (q.max, q.min, _nonzero(q.used)) == (want_max, want_min, {})


def test_reserve_resource_requests_match_upstream_compute() -> None:
    """The requests the Reserve cases feed in are computePodResourceRequest's (a zero GPU request
    stays a zero scalar, which adds nothing)."""
    got: Any = _make_pod("t1-p2", "ns2", 100, 2000, 0)
    assert _nonzero(got) == {"cpu": 2000, "memory": 100}
