"""Guests built for kube-scheduler-wasm-extension run unchanged, with the results upstream's own tests
expect. The guests are upstream's prebuilt ones (``upstream/NOTICE.md``); each table below is ported
from the upstream test named beside it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from harmonic.api.node import parse_node
from harmonic.api.pod import Pod, parse_pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.diagnosis import Diagnosis, FilterOutcome
from harmonic.framework.events import Action, Resource
from harmonic.framework.interface import PluginError
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code
from harmonic.plugins.registry import default_registry
from harmonic.plugins.wasm import abi, proto
from harmonic.plugins.wasm.args import WasmPluginArgs
from harmonic.plugins.wasm.plugin import TEMPLATE
from harmonic.plugins.wasm.upstream_plugin import _Pool
from harmonic.sim.engine import Simulation
from harmonic.sim.placements import Placement, watch_binds
from harmonic.sim.run import prepare

UPSTREAM = Path(__file__).resolve().parents[3] / "examples" / "wasm" / "upstream"
NODE_NUMBER = UPSTREAM / "nodenumber.wasm"
FILTER = UPSTREAM / "filter.wasm"
SCORE = UPSTREAM / "score.wasm"


class _Handle:
    """What upstream's host reads from framework.Handle: the snapshot."""

    def __init__(self, snap: Snapshot) -> None:
        self.snapshot = snap

    def waiting_pod(self, uid: str) -> Any:
        return None


def _plugin(path: Path, handle: Any = None, **args: Any) -> Any:
    a = WasmPluginArgs.model_validate({"guestURL": str(path), **args})
    return TEMPLATE.make("wasm", a)(a, handle)


def _snap(*names: str) -> Snapshot:
    snap = Snapshot()
    for n in names:
        snap.set_node(parse_node({"metadata": {"name": n}}))
    return snap


def _pod(name: str, node_name: str = "", uid: str = "384900cd-dc7b-41ec-837e-9c4c1762363e") -> Pod:
    """upstream's test.PodSmall (a container added: Harmonic's API requires one)."""
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if node_name:
        spec["nodeName"] = node_name
    return parse_pod({"metadata": {"name": name, "namespace": "test", "uid": uid}, "spec": spec})


POD_SMALL = _pod("good-pod", "good-node")


def test_upstream_guests_are_detected_by_their_imports() -> None:
    for path in (NODE_NUMBER, FILTER, SCORE):
        assert _plugin(path).GUEST.kind == abi.UPSTREAM


# ------------------------------------------------------------------ NodeNumber
# examples/nodenumber/main_test.go Test_NodeNumber: (pod name, node name, match). Its rows with an
# empty pod or node name have no counterpart: Harmonic's API refuses objects without a name.
NODE_NUMBER_CASES = [
    ("letter,letter", "a", "a", True),
    ("letter,digit", "a", "1", True),
    ("digit,letter", "1", "a", False),
    ("digit,digit", "1", "1", True),
    ("digit,different digit", "1", "2", False),
]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize(
    ("name", "pod_name", "node_name", "match"), NODE_NUMBER_CASES, ids=[c[0] for c in NODE_NUMBER_CASES]
)
def test_node_number_example(reverse: bool, name: str, pod_name: str, node_name: str, match: bool) -> None:
    pl = _plugin(NODE_NUMBER, guestConfig=f'{{"reverse": {str(reverse).lower()}}}')
    snap = _snap(node_name)
    p, state = _pod(pod_name), CycleState()
    assert pl.pre_filter(state, p, snap) == (None, None)
    assert pl.pre_score(state, p, snap, snap.order) is None
    want = 10 if match != reverse else 0
    assert pl.score(state, p, snap, snap.order).tolist() == [want]


def test_node_number_scores_each_node_in_one_cycle() -> None:
    pl = _plugin(NODE_NUMBER)
    snap = _snap("glad8", "glad9", "node-18")
    p, state = _pod("happy8"), CycleState()
    pl.pre_filter(state, p, snap)
    pl.pre_score(state, p, snap, snap.order)
    assert pl.score(state, p, snap, snap.order).tolist() == [10, 0, 10]


def test_node_number_registers_its_events() -> None:
    # NodeNumber's EventsToRegister: Node Add.
    events = _plugin(NODE_NUMBER).events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [(Resource.NODE, Action.ADD)]


def test_node_number_bad_config_is_a_load_error_with_the_guest_panic() -> None:
    a = WasmPluginArgs.model_validate({"guestURL": str(NODE_NUMBER), "guestConfig": "not json"})
    with pytest.raises(ValueError, match=r"(?s)instantiating: .*decode arg into NodeNumberArgs"):
        TEMPLATE.make("wasm", a)


@pytest.mark.parametrize(("severity", "logged"), [(0, True), (2, False)])
def test_log_severity_drops_lines_below_it(
    caplog: pytest.LogCaptureFixture, severity: int, logged: bool
) -> None:
    pl = _plugin(NODE_NUMBER, logSeverity=severity)
    snap = _snap("n1")
    with caplog.at_level(logging.INFO, logger="harmonic.plugins.wasm.upstream_host"):
        state = CycleState()
        pl.pre_filter(state, _pod("p1"), snap)
        pl.pre_score(state, _pod("p1"), snap, snap.order)
    got = any("execute PreScore on NodeNumber plugin" in r.getMessage() for r in caplog.records)
    assert got == logged


# ------------------------------------------------------------------ filter test guest
# scheduler/plugin/plugin_test.go TestPreFilter
@pytest.mark.parametrize(
    ("pod", "want"),
    [(POD_SMALL, frozenset({"good-node"})), (_pod("good-pod"), None)],
    ids=["pod has spec.NodeName", "pod has no spec.NodeName"],
)
def test_pre_filter(pod: Pod, want: frozenset[str] | None) -> None:
    pl = _plugin(FILTER, args=["test", "preFilter"])
    result, status = pl.pre_filter(CycleState(), pod, _snap("good-node"))
    assert status is None
    assert (result.node_names if result is not None else None) == want


# TestFilter: one call per node, each rejection with its own reason.
def test_filter_per_node_with_its_own_reason() -> None:
    pl = _plugin(FILTER, args=["test", "filter"])
    snap = _snap("good-node", "bad-node", "other-node")
    state = CycleState()
    pl.pre_filter(state, POD_SMALL, snap)
    v = pl.filter(state, POD_SMALL, snap, snap.order)
    assert v.code.tolist() == [0, int(Code.UNSCHEDULABLE), int(Code.UNSCHEDULABLE)]
    assert [v.reasons[i] for i in v.reason[1:]] == [("good-node != bad-node",), ("good-node != other-node",)]


def test_filter_noop_decodes_a_realistic_pod_and_node() -> None:
    # The noop behaviour decodes the pod's and node's specs: upstream's guest panics on bad protobuf.
    node = parse_node(yaml.safe_load((UPSTREAM / "node.yaml").read_text()))
    pod = parse_pod(yaml.safe_load((UPSTREAM / "pod.yaml").read_text()))
    snap = Snapshot()
    snap.set_node(node)
    pl = _plugin(FILTER, handle=_Handle(snap))
    state = CycleState()
    assert pl.pre_filter(state, pod, snap) == (None, None)
    assert pl.filter(state, pod, snap, snap.order) is None


# TestPostFilter "unschedulable": the pod's node was rejected, so no nomination and
# UnschedulableAndUnresolvable. (Its "success" row puts a Success status in the map, which the
# scheduler never records: only rejected nodes are in a Diagnosis.)
def test_post_filter_unschedulable() -> None:
    snap = _snap("good-node")
    pl = _plugin(FILTER, handle=_Handle(snap), args=["test", "postFilter"])
    outcome = FilterOutcome(
        slots=snap.order.copy(),
        codes=np.array([int(Code.UNSCHEDULABLE)], dtype=np.int8),
        plugin_ids=np.zeros(1, dtype=np.int32),
        reason_ids=np.zeros(1, dtype=np.int32),
        reasons=[("no",)],
        plugin_names=["Other"],
    )
    diagnosis = Diagnosis(num_all_nodes=1, outcomes=[outcome])
    state = CycleState()
    pl.pre_filter(state, POD_SMALL, snap)
    result, status = pl.post_filter(state, POD_SMALL, diagnosis)
    assert result is None
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("good-node is unschedulable",)


# ------------------------------------------------------------------ score test guest
# TestScore: 100 where the node is the pod's spec.nodeName.
def test_score_per_node() -> None:
    pl = _plugin(SCORE, args=["test", "score"])
    snap = _snap("good-node", "bad-node")
    state = CycleState()
    pl.pre_filter(state, POD_SMALL, snap)
    assert pl.score(state, POD_SMALL, snap, snap.order).tolist() == [100, 0]


# TestNormalizeScore: multiplies each score by 100.
def test_normalize_score() -> None:
    pl = _plugin(SCORE, args=["test", "scoreExtensions"])
    snap = _snap("good-node", "bad-node")
    state = CycleState()
    pl.pre_filter(state, POD_SMALL, snap)
    got = pl.normalize_score(state, POD_SMALL, snap, snap.order, np.array([100, 7]))
    assert got.tolist() == [10000, 700]


# TestPreScore: the guest returns the number of nodes it was given as its status code. 0 is Success;
# 1 is Error; 2 (Unschedulable) is no PreScore outcome, so Harmonic refuses it as an error too.
@pytest.mark.parametrize(
    ("nodes", "error"),
    [((), None), (("good-node",), "prescore: error"), (("good-node", "n2"), "returned status code 2")],
    ids=["no nodes", "one node", "two nodes"],
)
def test_pre_score_sees_the_filtered_nodes(nodes: tuple[str, ...], error: str | None) -> None:
    pl = _plugin(SCORE, args=["test", "preScore"])
    snap = _snap("good-node", "n2", "n3")
    slots = np.array([snap.slot(n) for n in nodes], dtype=np.int64)
    state = CycleState()
    pl.pre_filter(state, POD_SMALL, snap)
    if error is None:
        assert pl.pre_score(state, POD_SMALL, snap, slots) is None
    else:
        with pytest.raises(PluginError, match=error):
            pl.pre_score(state, POD_SMALL, snap, slots)


# ------------------------------------------------------------------ failures carry the guest's output
# TestFilter/TestScore/TestPreFilter "panic" rows: upstream's message is the guest's output, then the trap.
# These hand-written guests import nothing upstream-only, so the ABI is named explicitly.
@pytest.mark.parametrize(
    ("wat", "point", "config", "want"),
    [
        ("panic_on_filter", "filter", "", r"(?s)filter: trapped: .*\npanic!"),
        ("panic_on_score", "score", "", r"(?s)score: trapped: .*\npanic!"),
        ("panic_on_get_config", "prefilter", "hello", r"(?s)prefilter: trapped: .*\nhello"),
    ],
)
def test_a_trap_carries_the_guest_output(wat: str, point: str, config: str, want: str) -> None:
    pl = _plugin(UPSTREAM / f"{wat}.wat", abi="upstream", guestConfig=config)
    snap = _snap("good-node")
    state = CycleState()
    with pytest.raises(PluginError, match=want):
        if point == "filter":
            pl.filter(state, POD_SMALL, snap, snap.order)
        elif point == "score":
            pl.score(state, POD_SMALL, snap, snap.order)
        else:
            pl.pre_filter(state, POD_SMALL, snap)


def test_start_is_run_and_its_panic_is_a_load_error() -> None:
    a = WasmPluginArgs.model_validate({"guestURL": str(UPSTREAM / "panic_on_start.wat"), "abi": "upstream"})
    with pytest.raises(ValueError, match=r"(?s)instantiating: trapped: .*\npanic!"):
        TEMPLATE.make("wasm", a)


# ------------------------------------------------------------------ the protobuf encoding
def _fields(data: bytes) -> dict[int, list[Any]]:
    """A minimal protobuf wire decoder: field number -> values (varints, or bytes)."""
    out: dict[int, list[Any]] = {}
    i = 0

    def varint() -> int:
        nonlocal i
        n = shift = 0
        while True:
            b = data[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return n

    while i < len(data):
        key = varint()
        num, wire = key >> 3, key & 7
        if wire == 0:
            out.setdefault(num, []).append(varint())
        elif wire == 2:
            n = varint()
            out.setdefault(num, []).append(data[i : i + n])
            i += n
        else:
            raise AssertionError(f"wire type {wire}")
    return out


def test_pod_and_node_encode_with_kubernetes_field_numbers() -> None:
    # Field numbers from k8s.io/api/core/v1/generated.proto and apimachinery's meta/v1.
    pod = _fields(
        proto.encode(
            proto.POD,
            {
                "metadata": {"name": "p", "labels": {"a": "b"}, "creationTimestamp": "2023-05-20T00:46:28Z"},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "img"}], "priority": -5},
            },
        )
    )
    meta, spec = _fields(pod[1][0]), _fields(pod[2][0])
    assert meta[1] == [b"p"]  # ObjectMeta.name
    assert _fields(meta[11][0]) == {1: [b"a"], 2: [b"b"]}  # ObjectMeta.labels entry
    assert _fields(meta[8][0]) == {1: [1684543588]}  # creationTimestamp.seconds
    assert spec[10] == [b"n1"]  # PodSpec.nodeName
    assert _fields(spec[2][0]) == {1: [b"c"], 2: [b"img"]}  # Container.name, image
    assert spec[25] == [(1 << 64) - 5]  # PodSpec.priority, negative as two's complement
    node = _fields(
        proto.encode(
            proto.NODE,
            {
                "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
                "status": {"allocatable": {"cpu": "4"}},
            },
        )
    )
    assert _fields(_fields(node[2][0])[5][0]) == {1: [b"k"], 3: [b"NoSchedule"]}  # NodeSpec.taints
    alloc = _fields(_fields(node[3][0])[2][0])  # NodeStatus.allocatable entry
    assert alloc[1] == [b"cpu"] and _fields(alloc[2][0]) == {1: [b"4"]}  # Quantity.string


def test_a_value_that_does_not_fit_its_type_is_left_out() -> None:
    # The simulator stamps objects with virtual times ("t=1.5"), which are no RFC 3339 time.
    meta = _fields(
        _fields(proto.encode(proto.POD, {"metadata": {"name": "p", "creationTimestamp": "t=1.5"}}))[1][0]
    )
    assert meta == {1: [b"p"]}


# ------------------------------------------------------------------ in the simulator
def test_node_number_example_schedules_pods_in_the_simulator(monkeypatch: pytest.MonkeyPatch) -> None:
    """examples/wasm/upstream/nodenumber-*.yaml: web-k lands on node-(k mod 10), NodeNumber's decision."""
    root = UPSTREAM.parents[2]
    monkeypatch.chdir(root)  # the config's guestURL is relative to the working directory
    registry = default_registry()
    plan, runs = prepare(
        UPSTREAM / "nodenumber-scenario.yaml", [UPSTREAM / "nodenumber-config.yaml"], registry
    )
    binds: dict[str, list[Placement]] = {}
    Simulation(plan, runs, registry, lambda w: watch_binds(w, binds.setdefault(w.profile, []))).run()
    placed = {key: node for _, key, node in binds["wasm-nodenumber"]}
    assert len(placed) == 30
    assert all(node == f"node-{int(key.rsplit('-', 1)[1]) % 10}" for key, node in placed.items())


# ------------------------------------------------------------------ the instance pool
def test_pool_keeps_a_pods_instance_through_binding() -> None:
    # As upstream's guestPool: scheduling cycles share one instance until a pod enters binding, which
    # keeps it; the next cycle gets a spare, and a pod's release makes its instance the next spare.
    made: list[object] = []

    def make() -> Any:
        made.append(object())
        return made[-1]

    first = object()
    pool = _Pool(first, make)  # type: ignore[arg-type]
    assert pool.for_scheduling() is pool.for_scheduling() is first
    assert pool.for_binding("a") is first
    assert pool.for_binding("a") is first
    second = pool.for_scheduling()
    assert second is made[0] and second is not first
    pool.release("a")
    assert pool.for_binding("b") is second
    assert pool.for_scheduling() is first
    assert len(made) == 1
