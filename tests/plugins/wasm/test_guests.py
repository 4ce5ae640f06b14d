"""The example guests of examples/wasm, built from C with the project's build script, decide as their
docs say; the NodeUnschedulable guest decides exactly as the in-tree plugin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.api.node import parse_node
from harmonic.api.pod import parse_pod
from harmonic.conformance import evaluate
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import PluginError
from harmonic.framework.snapshot import Snapshot
from harmonic.plugins.nodeunschedulable import NodeUnschedulable
from harmonic.plugins.registry import default_registry
from harmonic.plugins.tainttoleration import TaintToleration
from harmonic.plugins.wasm.args import WasmPluginArgs
from harmonic.plugins.wasm.plugin import TEMPLATE
from harmonic.testing import node, pod

CONFORMANCE = Path(__file__).parents[2] / "conformance" / "translated" / "NodeUnschedulable.json"


def _plugin(path: Path, name: str = "Guest", **args: Any) -> Any:
    a = WasmPluginArgs.model_validate({"guestURL": str(path), **args})
    return TEMPLATE.make(name, a)(a, None)  # type: ignore[arg-type]


def _snap(nodes: list[dict[str, Any]]) -> Snapshot:
    snap = Snapshot()
    for n in nodes:
        snap.set_node(parse_node(n))
    return snap


# ------------------------------------------------------------------ NodeNumber
NODE_NUMBER = [
    # (name, pod, guestConfig, want scores for nodes n0 n1 n2 n13)
    ("match on last digit", "web-3", "", [0, 0, 0, 10]),
    ("reverse", "web-1", "reverse", [10, 0, 10, 10]),
    ("no match", "web-7", "", [0, 0, 0, 0]),
]


@pytest.mark.parametrize("guest", ["nodenumber", "nodenumber_zig"])
@pytest.mark.parametrize(("name", "pod_name", "config", "want"), NODE_NUMBER, ids=[c[0] for c in NODE_NUMBER])
def test_node_number_scores(
    guests: dict[str, Path], guest: str, name: str, pod_name: str, config: str, want: list[int]
) -> None:
    """The C guest and its Zig twin (the Zig SDK) score alike."""
    pl = _plugin(guests[guest], guestConfig=config)
    snap = _snap([node(n).obj() for n in ("n0", "n1", "n2", "n13")])
    p = parse_pod(pod(pod_name).obj())
    state = CycleState()
    assert pl.pre_score(state, p, snap, snap.order) is None
    assert pl.score(state, p, snap, snap.order).tolist() == want


@pytest.mark.parametrize("guest", ["nodenumber", "nodenumber_zig"])
def test_node_number_skips_pods_without_a_digit_and_needs_its_prescore(
    guests: dict[str, Path], guest: str
) -> None:
    pl = _plugin(guests[guest])
    snap = _snap([node("n1").obj()])
    st = pl.pre_score(CycleState(), parse_pod(pod("web").obj()), snap, snap.order)
    assert st is not None and st.code.wire_name == "Skip"
    # Score in a cycle whose PreScore did not run: the guest's own cycle-state check fails.
    with pytest.raises(PluginError, match=r'wasm guest "Guest": score: reading PreScore state: not found'):
        pl.score(CycleState(), parse_pod(pod("web-1").obj()), snap, snap.order)


@settings(max_examples=30, deadline=None)
@given(
    suffixes=st.lists(st.text("0123456789abc", min_size=1, max_size=3), min_size=1, max_size=40, unique=True),
    pod_digit=st.integers(0, 9),
)
def test_node_number_c_and_zig_agree(guests: dict[str, Path], suffixes: list[str], pod_digit: int) -> None:
    snap = _snap([node(f"n-{s}").obj() for s in suffixes])
    p = parse_pod(pod(f"web-{pod_digit}").obj())
    got = []
    for guest in ("nodenumber", "nodenumber_zig"):
        pl, state = _plugin(guests[guest]), CycleState()
        pl.pre_score(state, p, snap, snap.order)
        got.append(pl.score(state, p, snap, snap.order).tolist())
    assert got[0] == got[1]


# ------------------------------------------------------------------ LabelFilter
LABEL_FILTER = [
    ("one value", "disk=ssd", [("a", {"disk": "ssd"}), ("b", {"disk": "hdd"}), ("c", {})], ["a"]),
    (
        "several values",
        "disk=ssd,nvme",
        [("a", {"disk": "nvme"}), ("b", {"disk": "hdd"}), ("c", {"disk": "ssd"})],
        ["a", "c"],
    ),
    ("empty value is a value", "disk=", [], None),
    ("prefix is no match", "disk=ss", [("a", {"disk": "ssd"})], []),
]


@pytest.mark.parametrize(("name", "config", "nodes", "want"), LABEL_FILTER, ids=[c[0] for c in LABEL_FILTER])
def test_label_filter(
    guests: dict[str, Path],
    name: str,
    config: str,
    nodes: list[tuple[str, dict[str, str]]],
    want: list[str] | None,
) -> None:
    pl = _plugin(guests["labelfilter"], guestConfig=config)
    snap = _snap([node(n).labels(labels).obj() for n, labels in nodes] or [node("x").obj()])
    p = parse_pod(pod("p").obj())
    if want is None:
        with pytest.raises(PluginError, match="guestConfig: want KEY=VALUE"):
            pl.filter(CycleState(), p, snap, snap.order)
        return
    v = pl.filter(CycleState(), p, snap, snap.order)
    passed = [
        snap.node(int(s)).name
        for s, ok in zip(snap.order, v.passed if v is not None else [True] * len(snap.order), strict=True)
        if ok
    ]
    assert passed == want
    if v is not None and not v.passed.all():
        assert v.reasons == [("node(s) didn't match the label filter",)]


# ------------------------------------------------------------------ NodeUnschedulable
def _cases() -> list[Any]:
    data = json.loads(CONFORMANCE.read_text())
    return [pytest.param(c, id=c["name"]) for c in data["cases"]]


@pytest.mark.parametrize("case", _cases())
def test_node_unschedulable_guest_equals_in_tree_on_conformance_cases(
    guests: dict[str, Path], case: dict[str, Any]
) -> None:
    a = WasmPluginArgs.model_validate({"guestURL": str(guests["nodeunschedulable"])})
    registry = default_registry().merged([TEMPLATE.make("WasmNodeUnschedulable", a)])
    got = evaluate(
        {**case, "plugin": "WasmNodeUnschedulable", "args": {"guestURL": str(guests["nodeunschedulable"])}},
        registry,
    )
    assert got == evaluate({**case, "plugin": "NodeUnschedulable"}) == case["expected"]


_TOLERATION = st.fixed_dictionaries(
    {
        "key": st.sampled_from(["", "node.kubernetes.io/unschedulable", "other"]),
        "operator": st.sampled_from(["Exists", "Equal"]),
        "value": st.sampled_from(["", "x"]),
        "effect": st.sampled_from(["", "NoSchedule", "NoExecute", "PreferNoSchedule"]),
    }
)


@settings(max_examples=60, deadline=None)
@given(
    unschedulable=st.lists(st.booleans(), min_size=1, max_size=12),
    tolerations=st.lists(_TOLERATION, max_size=3),
)
def test_node_unschedulable_guest_equals_in_tree_property(
    guests: dict[str, Path], unschedulable: list[bool], tolerations: list[dict[str, str]]
) -> None:
    # Only tolerations the API accepts (Exists has no value; an empty key needs Exists).
    tolerations = [
        t
        for t in tolerations
        if not (t["operator"] == "Exists" and t["value"]) and (t["key"] or t["operator"] == "Exists")
    ]
    snap = _snap([node(f"n{i}").unschedulable(u).obj() for i, u in enumerate(unschedulable)])
    raw = pod("p").obj()
    raw["spec"]["tolerations"] = tolerations
    p = parse_pod(raw)
    guest = _plugin(guests["nodeunschedulable"])
    want = NodeUnschedulable(None, None).filter(CycleState(), p, snap, snap.order)  # type: ignore[arg-type]
    got = guest.filter(CycleState(), p, snap, snap.order)
    assert (got is None) == (want is None)
    if got is not None and want is not None:
        assert np.array_equal(got.code, want.code)
        assert [got.reasons[i] for i in got.reason] == [want.reasons[i] for i in want.reason]


# ------------------------------------------------------------------ TaintToleration (the whole Node)
TAINT_CASES = Path(__file__).parents[2] / "conformance" / "upstream" / "TaintToleration.json"


def _taint_cases() -> list[Any]:
    data = json.loads(TAINT_CASES.read_text())
    return [pytest.param(c, id=c["name"]) for c in data["cases"]]


@pytest.mark.parametrize("case", _taint_cases())
def test_taint_toleration_guest_equals_in_tree_on_conformance_cases(
    guests: dict[str, Path], case: dict[str, Any]
) -> None:
    a = WasmPluginArgs.model_validate({"guestURL": str(guests["tainttoleration"])})
    registry = default_registry().merged([TEMPLATE.make("WasmTaintToleration", a)])
    got = evaluate(
        {**case, "plugin": "WasmTaintToleration", "args": {"guestURL": str(guests["tainttoleration"])}},
        registry,
    )
    assert got == evaluate({**case, "plugin": "TaintToleration"}) == case["expected"]


_TAINT = st.fixed_dictionaries(
    {
        "key": st.sampled_from(["a", "b"]),
        "value": st.sampled_from(["", "x", "y"]),
        "effect": st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]),
    }
)
_ANY_TOLERATION = st.fixed_dictionaries(
    {
        "key": st.sampled_from(["", "a", "b"]),
        "operator": st.sampled_from(["Exists", "Equal"]),
        "value": st.sampled_from(["", "x", "y"]),
        "effect": st.sampled_from(["", "NoSchedule", "NoExecute", "PreferNoSchedule"]),
    }
)


@settings(max_examples=60, deadline=None)
@given(
    taints=st.lists(
        st.lists(_TAINT, max_size=3, unique_by=lambda t: (t["key"], t["effect"])), min_size=1, max_size=8
    ),
    tolerations=st.lists(_ANY_TOLERATION, max_size=3),
)
def test_taint_toleration_guest_equals_in_tree_property(
    guests: dict[str, Path], taints: list[list[dict[str, str]]], tolerations: list[dict[str, str]]
) -> None:
    tolerations = [
        t
        for t in tolerations
        if not (t["operator"] == "Exists" and t["value"]) and (t["key"] or t["operator"] == "Exists")
    ]
    snap = _snap([{**node(f"n{i}").obj(), "spec": {"taints": ts}} for i, ts in enumerate(taints)])
    raw = pod("p").obj()
    raw["spec"]["tolerations"] = tolerations
    p = parse_pod(raw)
    guest, tree = _plugin(guests["tainttoleration"]), TaintToleration(None, None)  # type: ignore[arg-type]
    want = tree.filter(CycleState(), p, snap, snap.order)
    got = guest.filter(CycleState(), p, snap, snap.order)
    assert (got is None) == (want is None)
    if got is not None and want is not None:
        assert np.array_equal(got.code, want.code)
        assert [got.reasons[i] for i in got.reason] == [want.reasons[i] for i in want.reason]
    state = CycleState()
    tree.pre_score(state, p, snap, snap.order)
    want_scores = tree.normalize_score(state, p, snap, snap.order, tree.score(state, p, snap, snap.order))
    got_scores = guest.normalize_score(
        CycleState(), p, snap, snap.order, guest.score(CycleState(), p, snap, snap.order)
    )
    assert got_scores.tolist() == want_scores.tolist()
