"""DefaultPreemption: upstream's default_preemption_test.go cases that need Go test doubles (fake filter
plugins, a PreFilter plugin whose extensions fail, custom eligibility and ordering functions), args
validation, and the equivalence of the node-by-node and chunked victim selection.

Cases expressible as data are in tests/conformance/translated/DefaultPreemption.json.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmonic.api.pod import Pod, parse_pod
from harmonic.conformance import _diagnosis, preemption_setup
from harmonic.framework.config import ConfigError, load_config
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.preemption import pod_start_time
from harmonic.framework.status import Code
from harmonic.plugins.registry import default_registry
from harmonic.testing import node, pod
from tests.plugins.fakes import FakeFilter, registry_with_fakes

LOW, MID, HIGH, VHIGH = 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VLARGE = {"cpu": "500m", "memory": "500"}
TRANSLATED = Path(__file__).parents[1] / "conformance" / "translated" / "DefaultPreemption.json"


def P(
    name: str, prio: int = 0, req: dict[str, str] | None = None, on: str = "", **labels: str
) -> dict[str, Any]:
    b = pod(name).uid(name).priority(prio).labels(labels)
    if req:
        b = b.req(**req)
    if on:
        b = b.node(on)
    return b.obj()


def started(obj: dict[str, Any], ns: int) -> dict[str, Any]:
    obj.setdefault("status", {})["startTime"] = f"1970-01-01T00:00:00.{ns:09d}Z"
    return obj


def N(name: str, cap: dict[str, str], **labels: str) -> dict[str, Any]:
    return node(name).only(pods="32", **cap).labels(labels).obj()


def setup(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    filters: list[str],
    args: dict[str, Any] | None = None,
    pdbs: list[dict[str, Any]] | None = None,
    nominated: list[dict[str, Any]] | None = None,
) -> tuple[Any, Any, Any, Any]:
    case = {
        "name": "t",
        "plugin": "DefaultPreemption",
        "args": args or {},
        "filterPlugins": filters,
        "nodes": nodes,
        "existingPods": pods,
        "pdbs": pdbs or [],
        "nominatedPods": nominated or [],
    }
    return preemption_setup(case, registry_with_fakes())


def dry_run(fw: Any, plugin: Any, snap: Any, preemptor: Pod, offset: int = 0, pdbs: Any = ()) -> list[Any]:
    state = CycleState()
    fw.run_pre_filter(state, preemptor, snap)
    slots = np.asarray([s for _, s in sorted((n.name, s) for s, n in snap.iter_nodes())], dtype=np.int64)
    plugin.offset_rand = lambda n: offset
    start, num = plugin.get_offset_and_num_candidates(len(slots))
    candidates, _, _ = plugin.evaluator.dry_run_preemption(state, preemptor, slots, list(pdbs), start, num)
    return candidates


def summary(candidates: list[Any]) -> list[tuple[str, list[str], int]]:
    return sorted((c.node, sorted(p.name for p in c.victims), c.num_pdb_violations) for c in candidates)


# --------------------------------------------------------------------------- TestPostFilter (TestPlugin cases)
def test_post_filter_error_from_remove_pod_extension_on_the_only_node():
    fw, plugin, snap, _ = setup(
        [node("node1").only(pods="32", **LARGE).label("error", "true").obj()],
        [P("p1", on="node1")],
        ["NodeResourcesFit", "test-plugin"],
    )
    preemptor = parse_pod(P("p", HIGH, LARGE))
    state = CycleState()
    fw.run_pre_filter(state, preemptor, snap)
    result, status = plugin.post_filter(state, preemptor, _diagnosis(snap, {"node1": "Unschedulable"}))
    assert result is None
    assert status.code == Code.ERROR
    assert status.reasons == (
        'preemption: running RemovePod on PreFilter plugin "test-plugin": failed to remove pod: p',
    )


def test_post_filter_one_node_errors_the_other_is_nominated():
    fw, plugin, snap, handle = setup(
        [
            node("node1").only(pods="32", **LARGE).label("error", "true").obj(),
            node("node2").only(pods="32", **LARGE).obj(),
        ],
        [P("p1", on="node1"), P("p2", req=MEDIUM, on="node2")],
        ["NodeResourcesFit", "test-plugin"],
    )
    preemptor = parse_pod(P("p", HIGH, LARGE))
    state = CycleState()
    fw.run_pre_filter(state, preemptor, snap)
    statuses = {"node1": "Unschedulable", "node2": "Unschedulable"}
    result, status = plugin.post_filter(state, preemptor, _diagnosis(snap, statuses))
    assert status is None
    assert result.nominated_node_name == "node2"
    assert [p.name for p in handle.client.evicted] == ["p2"]


# --------------------------------------------------------------------------- TestDryRunPreemption
@pytest.fixture
def fake_filter():
    FakeFilter.codes = {}
    FakeFilter.calls = 0
    yield FakeFilter
    FakeFilter.codes = {}


def _two_mid_pods() -> list[dict[str, Any]]:
    return [P("p1", MID, on="node1"), P("p2", MID, on="node2")]


@pytest.mark.parametrize(
    ("name", "filters", "preemptor", "fail_all", "calls"),
    [
        ("a pod that does not fit on any node", ["FalseFilter"], P("p", HIGH), False, 2),
        ("a pod that fits with no preemption", ["TrueFilter"], P("p", HIGH), True, 2),
        ("a pod that fits on one node with no preemption", ["MatchFilter"], P("node1", HIGH), True, 2),
    ],
)
def test_dry_run_with_fake_filters_finds_no_candidates(
    fake_filter, name, filters, preemptor, fail_all, calls
):
    fw, plugin, snap, _ = setup(
        [N("node1", VLARGE), N("node2", VLARGE)], _two_mid_pods(), ["FakeFilter", *filters]
    )
    plugin.batch_dry_run = False
    if fail_all:
        fake_filter.codes = {"node1": Code.UNSCHEDULABLE, "node2": Code.UNSCHEDULABLE}
    assert dry_run(fw, plugin, snap, parse_pod(preemptor)) == []
    assert fake_filter.calls == calls


def test_dry_run_unschedulable_in_the_preemption_phase(fake_filter):
    fw, plugin, snap, _ = setup(
        [N("node1", VLARGE), N("node2", VLARGE)],
        [P("p1", MID, LARGE, on="node1"), P("p2", MID, LARGE, on="node2")],
        ["FakeFilter", "NodeResourcesFit"],
    )
    plugin.batch_dry_run = False
    fake_filter.codes = {"node1": Code.UNSCHEDULABLE, "node2": Code.UNSCHEDULABLE}
    assert dry_run(fw, plugin, snap, parse_pod(P("p", HIGH, LARGE))) == []
    assert fake_filter.calls == 2


#: expectedNumFilterCalled of the TestDryRunPreemption cases in the translated file, per cycle.
UPSTREAM_FILTER_CALLS = {
    "a pod that fits on both nodes when lower priority pods are preempted": [4],
    "a pod that would fit on the nodes, but other pods running are higher priority, no preemption would happen": [
        0
    ],
    "medium priority pod is preempted, but lower priority one stays as it is small": [5],
    "mixed priority pods are preempted": [4],
    "mixed priority pods are preempted, pick later StartTime one when priorities are equal": [4],
    "pod with anti-affinity is preempted": [3],
    "preemption to resolve pod topology spread filter failure": [5],
    "preemption with violation of same pdb": [3],
    "preemption with violation of the pdb with pod whose eviction was processed, the victim doesn't belong to DisruptedPods": [
        3
    ],
    "preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to DisruptedPods": [
        3
    ],
    "preemption with violation of the pdb with pod whose eviction was processed, the victim which belongs to DisruptedPods is treated as 'nonViolating'": [
        4
    ],
    "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2": [4],
    "some nodes are not possible candidates, DefaultPreemptionArgs limits to 2": [4],
    "preemption offset across multiple scheduling cycles and wrap around": [4, 4, 4],
    "preemption looks past numCandidates until a non-PDB violating node is found": [8],
}


def _dry_run_cases() -> list[Any]:
    data = json.loads(TRANSLATED.read_text())
    out = []
    for case in data["cases"]:
        if case["check"] == "dryRun":
            short = case["name"].removeprefix("TestDryRunPreemption/")
            out.append(pytest.param(case, UPSTREAM_FILTER_CALLS[short], id=short))
    return out


@pytest.mark.parametrize(("case", "calls"), _dry_run_cases())
def test_dry_run_filter_calls_match_upstream(fake_filter, case, calls):
    """Node by node, the dry run filters exactly as often as upstream's (FakeFilter's NumFilterCalled)."""
    registry = registry_with_fakes()
    missing = [p for p in case["filterPlugins"] if p not in registry]
    if missing:
        pytest.skip(f"plugins not implemented yet: {', '.join(missing)}")
    fw, plugin, snap, handle = preemption_setup(
        {**case, "plugin": "DefaultPreemption", "filterPlugins": ["FakeFilter", *case["filterPlugins"]]},
        registry,
    )
    plugin.batch_dry_run = False
    for raw, offset, want_calls, want in zip(
        case["pods"], case["offsets"], calls, case["expected"]["candidates"], strict=True
    ):
        before = FakeFilter.calls
        got = dry_run(fw, plugin, snap, parse_pod(raw), offset, handle.service("pdbs")())
        assert FakeFilter.calls - before == want_calls
        assert summary(got) == [(c["node"], c["victims"], c["numPDBViolations"]) for c in want]


# --------------------------------------------------------------------------- TestCustomSelection
def _label_is(key: str, val: str):
    return lambda n, victim, preemptor: victim.labels.get(key) == val


def _node_is(name: str):
    return lambda n, victim, preemptor: n.name == name


def _preemptor_at_least(p: int):
    return lambda n, victim, preemptor: preemptor.priority >= p


def _victim_at_most(p: int):
    return lambda n, victim, preemptor: victim.priority <= p


_LABELLED = [
    P("v1", MID, LARGE, on="node1", preemptible="no"),
    P("v2", MID, LARGE, on="node2", preemptible="yes"),
    P("v3", LOW, LARGE, on="node3", preemptible="yes"),
    P("v4", LOW, LARGE, on="node4"),
]
_ON_NODE1 = [
    P("v1", HIGH, MEDIUM, on="node1"),
    P("v2", MID, SMALL, on="node1"),
    P("v3", LOW, SMALL, on="node1"),
    P("v4", MID, LARGE, on="node2"),
    P("v5", LOW, LARGE, on="node3"),
]
_ON_NODE1_SMALL = [P("v1", HIGH, SMALL, on="node1"), *_ON_NODE1[1:]]
_ONE_EACH = [
    P("v1", HIGH, LARGE, on="node1"),
    P("v2", MID, LARGE, on="node2"),
    P("v3", LOW, LARGE, on="node3"),
]


@pytest.mark.parametrize(
    ("eligible", "nodes", "preemptor", "pods", "expected"),
    [
        pytest.param(
            _label_is("preemptible", "yes"),
            4,
            P("p1", HIGH, LARGE),
            _LABELLED,
            {"node2": ["v2"], "node3": ["v3"]},
            id="filter for matching pod label: high priority",
        ),
        pytest.param(
            _label_is("preemptible", "yes"),
            4,
            P("p2", MID, LARGE),
            _LABELLED,
            {"node3": ["v3"]},
            id="filter for matching pod label: mid priority",
        ),
        pytest.param(
            _label_is("preemptible", "yes"),
            4,
            P("p3", LOW, LARGE),
            _LABELLED,
            {},
            id="filter for matching pod label: low priority",
        ),
        pytest.param(
            _node_is("node1"),
            3,
            P("p3", HIGH, LARGE),
            _ON_NODE1,
            {"node1": ["v2", "v3"]},
            id="filter for matching victim node: high priority",
        ),
        pytest.param(
            _node_is("node1"),
            3,
            P("p3", MID, LARGE),
            _ON_NODE1_SMALL,
            {"node1": ["v3"]},
            id="filter for matching victim node: mid priority",
        ),
        pytest.param(
            _node_is("node1"),
            3,
            P("p3", LOW, LARGE),
            _ON_NODE1_SMALL,
            {},
            id="filter for matching victim node: low priority",
        ),
        pytest.param(
            _preemptor_at_least(HIGH),
            3,
            P("p1", HIGH, LARGE),
            _ONE_EACH,
            {"node2": ["v2"], "node3": ["v3"]},
            id="only pods at or above specified priority can preempted: high priority",
        ),
        pytest.param(
            _preemptor_at_least(HIGH),
            3,
            P("p2", MID, LARGE),
            _ONE_EACH,
            {},
            id="only pods at or above specified priority can preempted: mid priority",
        ),
        pytest.param(
            _victim_at_most(MID),
            3,
            P("p1", HIGH, LARGE),
            _ONE_EACH,
            {"node2": ["v2"], "node3": ["v3"]},
            id="only pods at or below specified priority can be preempted: high priority",
        ),
    ],
)
@pytest.mark.parametrize("batch", [True, False])
def test_custom_selection(eligible, nodes, preemptor, pods, expected, batch):
    """TestCustomSelection: IsEligiblePod narrows the victims; candidates come out in SelectCandidate order."""
    for p in pods:
        p["status"] = {"startTime": "1970-01-01T00:00:00Z"}
    fw, plugin, snap, _ = setup(
        [N(f"node{i}", VLARGE) for i in range(1, nodes + 1)], pods, ["NodeResourcesFit"]
    )
    plugin.is_eligible_pod = eligible
    plugin.batch_dry_run = batch
    candidates = dry_run(fw, plugin, snap, parse_pod(preemptor))
    assert len(candidates) == len(expected)
    while candidates:
        chosen = plugin.evaluator.select_candidate(candidates)
        assert [p.name for p in chosen.victims] == expected[chosen.node]
        candidates = [c for c in candidates if c.node != chosen.node]


# --------------------------------------------------------------------------- TestCustomOrdering
@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize(
    ("order", "pods", "expected"),
    [
        pytest.param(
            lambda a, b: pod_start_time(a) < pod_start_time(b),
            [
                started(P("v1", LOW, MEDIUM, on="node1"), 2),
                started(P("v2", LOW, MEDIUM, on="node1"), 0),
                started(P("v3", MID, MEDIUM, on="node1"), 1),
            ],
            ["v3", "v1"],
            id="select newest pods",
        ),
        pytest.param(
            lambda a, b: a.name < b.name,
            [
                P("foo", LOW, MEDIUM, on="node1"),
                P("bar", LOW, MEDIUM, on="node1"),
                P("baz", MID, MEDIUM, on="node1"),
            ],
            ["baz", "foo"],
            id="select alphabetically-last pods",
        ),
    ],
)
def test_custom_ordering(order, pods, expected, batch):
    """TestCustomOrdering: MoreImportantPod decides which pods are reprieved first."""
    fw, plugin, snap, _ = setup([N("node1", VLARGE)], pods, ["NodeResourcesFit"])
    plugin.more_important_pod = order
    plugin.batch_dry_run = batch
    candidates = dry_run(fw, plugin, snap, parse_pod(P("p2", HIGH, LARGE)))
    assert len(candidates) == 1
    assert [p.name for p in candidates[0].victims] == expected


# --------------------------------------------------------------------------- args
@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            {"minCandidateNodesPercentage": -1},
            "minCandidateNodesPercentage: Value error, Invalid value: -1: ",
        ),
        ({"minCandidateNodesPercentage": 101}, "not in valid range [0, 100]"),
        (
            {"minCandidateNodesAbsolute": -1},
            "minCandidateNodesAbsolute: Value error, Invalid value: -1: not in valid range [0, inf)",
        ),
        ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}, "cannot both be zero"),
        ({"minCandidateNodes": 3}, "args.minCandidateNodes: unknown field"),
    ],
)
def test_args_are_validated_as_upstream(args, error):
    config = {"profiles": [{"pluginConfig": [{"name": "DefaultPreemption", "args": args}]}]}
    with pytest.raises(ConfigError) as e:
        load_config(config, default_registry(), source="sched.yaml")
    assert "sched.yaml: profiles[0].pluginConfig[0].args" in str(e.value)
    assert error in str(e.value)


def test_args_defaults_and_candidate_count():
    config = load_config(None, default_registry())
    args = config.profiles[0].args["DefaultPreemption"]
    assert (args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute) == (10, 100)
    _, plugin, _, _ = setup([N("node1", VLARGE)], [], ["NodeResourcesFit"])
    # calculateNumCandidates: max(n * 10 / 100, 100), at most n.
    assert [plugin.calculate_num_candidates(n) for n in (5, 100, 999, 1000, 5000)] == [5, 100, 100, 100, 500]
    _, plugin, _, _ = setup(
        [N("node1", VLARGE)],
        [],
        ["NodeResourcesFit"],
        {"minCandidateNodesPercentage": 1, "minCandidateNodesAbsolute": 0},
    )
    assert plugin.calculate_num_candidates(50) == 0


# --------------------------------------------------------------------------- both engines agree
_RES = {"s": SMALL, "m": MEDIUM, "l": LARGE}


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    n_nodes = draw(st.integers(1, 6))
    nodes = [N(f"n{i}", VLARGE) for i in range(n_nodes)]
    pods = []
    for i in range(draw(st.integers(0, 14))):
        pods.append(
            started(
                P(
                    f"e{i}",
                    draw(st.sampled_from([LOW, MID, HIGH])),
                    _RES[draw(st.sampled_from("sml"))],
                    on=f"n{draw(st.integers(0, n_nodes - 1))}",
                    app=draw(st.sampled_from(["a", "b"])),
                ),
                draw(st.integers(0, 3)),
            )
        )
    nominated = [
        {
            **P(f"nom{i}", draw(st.sampled_from([LOW, MID, HIGH])), SMALL),
            "status": {"nominatedNodeName": f"n{j}"},
        }
        for i, j in enumerate(draw(st.lists(st.integers(0, n_nodes - 1), max_size=3)))
    ]
    pdbs = [
        {
            "metadata": {"name": f"pdb-{app}"},
            "spec": {"selector": {"matchLabels": {"app": app}}},
            "status": {"disruptionsAllowed": draw(st.integers(0, 2))},
        }
        for app in draw(st.sets(st.sampled_from(["a", "b"])))
    ]
    args = {
        "minCandidateNodesPercentage": draw(st.integers(0, 100)),
        "minCandidateNodesAbsolute": draw(st.integers(1, 4)),
    }
    return {
        "nodes": nodes,
        "pods": pods,
        "nominated": nominated,
        "pdbs": pdbs,
        "args": args,
        "preemptor": P("p", draw(st.sampled_from([MID, HIGH, VHIGH])), _RES[draw(st.sampled_from("sml"))]),
        "offset": draw(st.integers(0, n_nodes - 1)),
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_chunked_victim_selection_equals_node_by_node(sc):
    results = []
    for batch in (True, False):
        fw, plugin, snap, handle = setup(
            sc["nodes"], sc["pods"], ["NodeResourcesFit"], sc["args"], sc["pdbs"], sc["nominated"]
        )
        plugin.batch_dry_run = batch
        before = (snap.requested.copy(), [list(d) for d in snap.pods])
        got = dry_run(fw, plugin, snap, parse_pod(sc["preemptor"]), sc["offset"], handle.service("pdbs")())
        # The what-if evaluation leaves the snapshot exactly as it was, pod order included.
        assert np.array_equal(snap.requested, before[0])
        assert [list(d) for d in snap.pods] == before[1]
        results.append([(c.node, [p.name for p in c.victims], c.num_pdb_violations) for c in got])
    assert results[0] == results[1]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_preemption_evicts_only_lower_priority_pods_that_make_room_and_spares_budgets(sc):
    """Whatever the cluster: victims have lower priority than the preemptor and all sit on the chosen
    node; once they are gone the preemptor passes the filters there (nominated pods included); nothing is
    evicted when no node can be made to fit; and the chosen node violates no more budgets than any other
    candidate."""
    fw, plugin, snap, handle = setup(
        sc["nodes"], sc["pods"], ["NodeResourcesFit"], sc["args"], sc["pdbs"], sc["nominated"]
    )
    preemptor = parse_pod(sc["preemptor"])
    state = CycleState()
    fw.run_pre_filter(state, preemptor, snap)
    offset, num = sc["offset"], plugin.calculate_num_candidates(snap.num_nodes)
    candidates, _, _ = plugin.evaluator.dry_run_preemption(
        state, preemptor, snap.order, handle.service("pdbs")(), offset, num
    )
    plugin.offset_rand = lambda n: offset
    every = {n.name: "Unschedulable" for _, n in snap.iter_nodes()}
    result, _ = plugin.post_filter(state, preemptor, _diagnosis(snap, every))
    evicted = handle.client.evicted
    if result is None or not result.nominated_node_name:
        assert evicted == [] and candidates == []
        return
    target = result.nominated_node_name
    assert evicted and all(v.priority < preemptor.priority and v.node_name == target for v in evicted)
    chosen = next(c for c in candidates if c.node == target)
    assert chosen.num_pdb_violations == min(c.num_pdb_violations for c in candidates)
    for v in evicted:
        snap.remove_pod(v, target)
    out, st = fw.run_filters_with_nominated_pods(state, preemptor, snap, np.asarray([snap.slot(target)]))
    assert st is None and out.codes[0] == 0


@pytest.mark.parametrize(
    ("deleting", "reason", "waits"),
    [
        (True, "PreemptionByScheduler", True),  # kube-scheduler's victim (patched, then deleted)
        (True, "EvictionByEvictionAPI", True),  # Harmonic's victim: evicted, the server sets this reason
        (True, "DeletionByTaintManager", False),
        (False, "EvictionByEvictionAPI", False),  # marked, not yet terminating
        (True, None, False),
    ],
)
def test_a_victim_terminating_on_the_nominated_node_is_recognised(
    deleting: bool, reason: str | None, waits: bool
):
    """PodEligibleToPreemptOthers waits for such victims; Harmonic preempts through the Eviction API, so
    the real server marks its victims EvictionByEvictionAPI (tests/e2e/test_run_scheduling: without
    this, a retried preemptor evicted a second pod elsewhere while its first victim terminated)."""
    from harmonic.plugins.defaultpreemption import _terminating_by_preemption

    raw = pod("victim").obj()
    if deleting:
        raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if reason:
        raw.setdefault("status", {})["conditions"] = [
            {"type": "DisruptionTarget", "status": "True", "reason": reason}
        ]
    assert _terminating_by_preemption(parse_pod(raw)) is waits
