"""CapacityScheduling: scheduler-plugins' tables (pkg/capacityscheduling/capacity_scheduling_test.go)
translated, then properties of the quota accounting.

Translated: TestPreFilter, TestDryRunPreemption (victims chosen on the node), TestReserve/TestUnreserve
(usage), TestAddElasticQuota (every case, through the informer handler). Skipped: TestPostFilter's exact
status objects and TestPodEligibleToPreemptOthers (they build Go framework objects the shared
evaluator fills differently; the behaviour is covered by the dry-run and end-to-end cases here).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.api.pod import parse_pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.status import Code
from harmonic.plugins.capacityscheduling.plugin import (
    PRE_FILTER_KEY,
    SNAPSHOT_KEY,
    _PreFilterState,
    _QuotaSnapshot,
)
from harmonic.plugins.capacityscheduling.quota import (
    QuotaInfo,
    QuotaInfos,
)
from harmonic.testing import elastic_quota, node, pod
from harmonic.testing.harness import Harness
from tests.plugins.batch_helpers import MAX_BOUNDS, MIN_BOUNDS, harness

MID, HIGH = 100, 1000


def _q(ns: str, lo: int, hi: int, used: int) -> QuotaInfo:
    q = QuotaInfo(ns, {"memory": lo}, {"memory": hi})
    q.used = {"memory": used}
    return q


def _p(name: str, ns: str, mem: int, priority: int = 0, node_name: str = "") -> dict[str, Any]:
    b = pod(name).ns(ns).uid(name).req(memory=str(mem)).priority(priority)
    return (b.node(node_name) if node_name else b).obj()


@pytest.mark.parametrize(
    ("name", "pods", "quotas", "expected"),
    [
        (
            "pod subjects to ElasticQuota",
            [("ns1-p1", "ns1", 500), ("ns1-p2", "ns1", 1800)],
            [_q("ns1", 1000, 2000, 300)],
            [None, Code.UNSCHEDULABLE],
        ),
        (
            "the sum of used is bigger than the sum of min",
            [("ns2-p1", "ns2", 500)],
            [_q("ns1", 1000, 2000, 1800), _q("ns2", 1000, 2000, 200)],
            [Code.UNSCHEDULABLE],
        ),
        ("without elasticQuotaInfo", [("ns2-p1", "ns2", 500)], [], [None]),
    ],
)
def test_pre_filter(name: str, pods: Any, quotas: list[QuotaInfo], expected: list[Code | None]) -> None:
    h, pl = harness("CapacityScheduling")
    pl.infos = QuotaInfos({q.namespace: q for q in quotas})
    for (pname, ns, mem), want in zip(pods, expected, strict=True):
        _, got = pl.pre_filter(CycleState(), parse_pod(_p(pname, ns, mem)), h.scheduler.cache.snapshot)
        assert (got.code if got is not None else None) == want


@pytest.mark.parametrize(
    ("name", "pods", "quotas", "victims"),
    [
        (
            "in-namespace preemption",
            [("t1-p1", "ns1", MID), ("t1-p2", "ns2", MID), ("t1-p3", "ns2", MID)],
            [_q("ns1", 50, 200, 50), _q("ns2", 200, 200, 100)],
            ["t1-p1"],
        ),
        (
            "cross-namespace preemption",
            [("t1-p1", "ns1", MID), ("t1-p2", "ns2", HIGH), ("t1-p3", "ns2", MID)],
            [_q("ns1", 150, 200, 50), _q("ns2", 50, 200, 100)],
            ["t1-p3"],
        ),
    ],
)
def test_dry_run_preemption(name: str, pods: Any, quotas: list[QuotaInfo], victims: list[str]) -> None:
    """TestDryRunPreemption: node-a holds 150 bytes of memory, full with three pods of 50. As upstream's
    test framework, only NodeResourcesFit runs at PreFilter and Filter (CapacityScheduling is the
    preemptor, not a PreFilter plugin, so the quotas stay as given)."""
    only = {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit"}]}
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "preFilter": only,
                    "filter": only,
                    "postFilter": {"disabled": [{"name": "*"}], "enabled": [{"name": "CapacityScheduling"}]},
                },
            }
        ],
    }
    h = Harness(cfg)
    h.add_nodes([node("node").cap(cpu="4", memory="64Gi", pods=110).obj()])
    h.add_pods([_p(n, ns, 50, prio, "node") for n, ns, prio in pods])
    h.scheduler.drain()
    pl = h.scheduler.frameworks["default-scheduler"].plugins["CapacityScheduling"]
    snap = h.scheduler.cache.snapshot
    snap.allocatable[snap.slot("node"), snap.column("memory")] = 150
    preemptor = parse_pod(_p("t1-p", "ns1", 50, HIGH))
    req = dict(preemptor.requests)
    state = CycleState()
    # Some plugins rely on PreFilter to compute their CycleState, as upstream's test says.
    h.scheduler.frameworks["default-scheduler"].run_pre_filter(state, preemptor, snap)
    state.write(SNAPSHOT_KEY, _QuotaSnapshot(QuotaInfos({q.namespace: q for q in quotas})))
    state.write(PRE_FILTER_KEY, _PreFilterState(req, req, req))
    [sel] = list(pl.select_victims_on_nodes(state, preemptor, np.asarray([snap.slot("node")]), []))
    assert sel.status is None
    assert [v.name for v in sel.victims] == victims


def test_reserve_and_unreserve() -> None:
    """TestReserve / TestUnreserve: usage follows Reserve and Unreserve, once per pod."""
    _, pl = harness("CapacityScheduling")
    pl.infos = QuotaInfos({"ns1": _q("ns1", 1000, 2000, 0)})
    p1, p2 = parse_pod(_p("p1", "ns1", 10)), parse_pod(_p("p2", "ns1", 20))
    for p in (p1, p2, p1):
        pl.reserve(CycleState(), p, "node")
    assert pl.infos["ns1"].used == {"memory": 30}
    pl.unreserve(CycleState(), p1, "node")
    pl.unreserve(CycleState(), p1, "node")
    assert pl.infos["ns1"].used == {"memory": 20}


_EQ_MAX = {"cpu": "100m", "memory": "1000"}  # upstream's makeResourceList(100, 1000)
_EQ_MIN = {"cpu": "10m", "memory": "100"}  # makeResourceList(10, 100)


@pytest.mark.parametrize(
    ("name", "lo", "hi", "want_min", "want_max"),
    [
        ("Add ElasticQuota", _EQ_MIN, _EQ_MAX, {"cpu": 10, "memory": 100}, {"cpu": 100, "memory": 1000}),
        ("Add ElasticQuota without Max", _EQ_MIN, None, {"cpu": 10, "memory": 100}, MAX_BOUNDS),
        ("Add ElasticQuota without Min", None, _EQ_MAX, MIN_BOUNDS, {"cpu": 100, "memory": 1000}),
        ("Add ElasticQuota without Max and Min", None, None, MIN_BOUNDS, MAX_BOUNDS),
    ],
)
def test_add_elastic_quota(name: str, lo: Any, hi: Any, want_min: Any, want_max: Any) -> None:
    """TestAddElasticQuota: the quota arrives through the plugin's informer handler (addElasticQuota)."""
    eq = elastic_quota("ns1", "t1-eq1")
    eq = eq.min(**lo) if lo is not None else eq
    eq = eq.max(**hi) if hi is not None else eq
    _, pl = harness("CapacityScheduling", objects=[eq.obj()])
    q = pl.infos["ns1"]
    assert (q.namespace, q.min, q.max, q.used, q.pods) == ("ns1", want_min, want_max, {}, set())


def test_quota_without_memory_in_max_admits_no_memory_request() -> None:
    """Upstream compares cpu, memory, ephemeral-storage and pods always: absent means 0."""
    q = QuotaInfo("ns", {"cpu": 0}, {"cpu": 1000})
    assert q.used_over_max_with({"memory": 1})
    assert not q.used_over_max_with({"cpu": 1000})
    assert not q.used_over_max_with({"nvidia.com/gpu": 5})  # a scalar the quota does not name: unlimited


# ---------------------------------------------------------------------- properties
def _quota_harness(max_a: int, min_a: int, min_b: int) -> Any:
    objects = [
        elastic_quota("a").min(cpu=min_a, memory="64Gi").max(cpu=max_a, memory="64Gi").obj(),
        elastic_quota("b").min(cpu=min_b, memory="64Gi").max(cpu=64, memory="64Gi").obj(),
    ]
    h, pl = harness("CapacityScheduling", nodes=4, cpu="4", objects=objects)
    return h, pl


@settings(max_examples=25, deadline=None)
@given(
    max_a=st.integers(1, 16),
    sizes=st.lists(st.integers(1, 3), min_size=1, max_size=12),
)
def test_usage_never_exceeds_max(max_a: int, sizes: list[int]) -> None:
    h, pl = _quota_harness(max_a, min_a=min(max_a, 8), min_b=8)
    h.add_pods([pod(f"p{i}").ns("a").req(cpu=c).obj() for i, c in enumerate(sizes)])
    h.settle(20)
    used = sum(int(parse_pod(h.cluster.pods[k]).requests.get("cpu", 0)) for k in h.placement())
    assert used <= max_a * 1000
    assert pl.infos["a"].used.get("cpu", 0) == used


@settings(max_examples=15, deadline=None)
@given(borrowed=st.integers(9, 16), wanted=st.integers(1, 8))
def test_namespace_below_min_gets_min_back(borrowed: int, wanted: int) -> None:
    """Team a borrows beyond its min (the whole 16-cpu cluster at most); team b, below its min of 8,
    asks for ``wanted`` cpus: after one scheduling round at the same instant (preemption, the victims'
    deletion, the nominated retry) b has them all."""
    h, pl = _quota_harness(16, min_a=8, min_b=8)
    h.add_pods([pod(f"a{i}").ns("a").req(cpu=1).obj() for i in range(borrowed)])
    h.schedule()
    assert len(h.placement()) == borrowed
    h.add_pods([pod(f"b{i}").ns("b").req(cpu=1).obj() for i in range(wanted)])
    h.schedule()
    placed_b = [k for k in h.placement() if k.startswith("b/")]
    assert len(placed_b) == wanted
    assert pl.infos["b"].used.get("cpu", 0) == wanted * 1000


# ---------------------------------------------------------------------- informer handlers
def test_add_update_delete_pod_and_quota() -> None:
    """TestAddPod, TestUpdatePod, TestDeletePod, TestUpdateElasticQuota, TestDeleteElasticQuota: usage
    follows bound pods; a pod turning Succeeded or Failed leaves it; a quota update keeps the usage."""
    h, pl = harness("CapacityScheduling", objects=[elastic_quota("ns1").min(cpu=1).max(cpu=8).obj()])
    h.add_pods([pod(f"p{i}").ns("ns1").req(cpu=1).node("node").obj() for i in range(3)])
    h.scheduler.drain()
    assert pl.infos["ns1"].used == {"cpu": 3000}
    done = h.cluster.pods["ns1/p0"]
    h.cluster.update_pod({**done, "status": {**(done.get("status") or {}), "phase": "Succeeded"}})
    h.cluster.delete_pod("ns1", "p1")
    h.scheduler.drain()
    assert pl.infos["ns1"].used == {"cpu": 1000}
    h.cluster.apply_batch(elastic_quota("ns1").min(cpu=2).max(cpu=4).obj())
    assert (pl.infos["ns1"].min, pl.infos["ns1"].used) == ({"cpu": 2000}, {"cpu": 1000})
    h.cluster.delete_batch("ElasticQuota", "ns1", "quota")
    assert "ns1" not in pl.infos


@pytest.mark.skip(
    reason="TestPostFilter compares Go framework status objects; covered by the dry-run and reclaim cases"
)
def test_post_filter_upstream_status_objects() -> None:
    raise AssertionError


@pytest.mark.skip(
    reason="TestPodEligibleToPreemptOthers builds Go NodeInfo fixtures with terminating pods; not translated"
)
def test_pod_eligible_to_preempt_others() -> None:
    raise AssertionError


def test_a_cloned_quota_snapshot_copies_a_quota_only_when_it_changes_and_each_side_keeps_its_own() -> None:
    """Preemption clones the cycle state per node; cloning every quota each time made an attempt cost
    nodes x quotas (the live fuzzer's 574 ElasticQuotas: seconds per pod, scheduling all but stopped)."""
    original = _QuotaSnapshot(QuotaInfos({f"ns{i}": _q(f"ns{i}", 10, 20, 5) for i in range(3)}))
    copy = original.clone()
    assert all(copy.infos[ns] is original.infos[ns] for ns in original.infos)  # shared, not copied
    written = copy.writable("ns1")
    assert written is not None
    written.add_pod("p", {"memory": 1})
    assert (copy.infos["ns1"].used, original.infos["ns1"].used) == ({"memory": 6}, {"memory": 5})
    assert copy.infos["ns0"] is original.infos["ns0"]
    mine = original.writable("ns0")
    assert mine is not None
    mine.remove_pod("absent", {"memory": 1})
    mine.used["memory"] = 1
    assert copy.infos["ns0"].used == {"memory": 5}
    assert copy.writable("nope") is None


def test_pre_filter_copies_no_quota_and_later_changes_stay_out_of_the_cycles_copy() -> None:
    """PreFilter copied every namespace's quota per attempt; now it shares them, and a change to the
    live quotas (Reserve of the next pod) copies the one it changes."""
    _, pl = harness("CapacityScheduling")
    pl.infos = QuotaInfos({f"ns{i}": _q(f"ns{i}", 1000, 2000, 0) for i in range(200)})
    state = CycleState()
    pod1 = parse_pod(_p("p1", "ns1", 10))
    pl.pre_filter(state, pod1, pl.handle.snapshot)
    cycle = state.get(SNAPSHOT_KEY)
    assert isinstance(cycle, _QuotaSnapshot)
    assert all(cycle.infos[ns] is pl.infos[ns] for ns in pl.infos)
    pl.reserve(CycleState(), pod1, "node")
    assert (pl.infos["ns1"].used, cycle.infos["ns1"].used) == ({"memory": 10}, {"memory": 0})
    assert cycle.infos["ns2"] is pl.infos["ns2"]
