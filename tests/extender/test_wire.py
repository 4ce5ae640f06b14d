"""Decoding and encoding of the extender v1 types: Go's field names, nulls and key matching."""

from __future__ import annotations

import json

import pytest

from harmonic.extender import wire
from harmonic.extender.wire import WireError
from tests.extender.conftest import compact, fixture


def test_decode_args_full_nodes_keeps_raw_items_and_identity():
    body = compact(fixture("filter-nodes.json"))
    args = wire.decode_args(body)
    assert args.node_names is None and args.nodes is not None
    first = args.nodes[0]
    assert first.name == "ip-10-0-1-17.ec2.internal"
    assert first.key == (fixture("nodes.json")[0]["metadata"]["uid"], "47001")
    assert first.manifest() == fixture("nodes.json")[0]
    assert args.names == [n["metadata"]["name"] for n in fixture("nodes.json")]


def test_decode_args_names():
    args = wire.decode_args(compact(fixture("filter-nodenames.json")))
    assert args.nodes is None and args.names == args.node_names
    assert args.pod["metadata"]["name"] == "web-7d4b9c6f5-x2x9q"


def test_both_or_neither_node_sets_is_an_error():
    pod = fixture("filter-nodes.json")["Pod"]
    with pytest.raises(WireError, match="both"):
        wire.decode_args(compact({"Pod": pod, "Nodes": {"items": []}, "NodeNames": []}))
    with pytest.raises(WireError, match="neither"):
        wire.decode_args(compact({"Pod": pod, "Nodes": None, "NodeNames": None}))


def test_empty_candidate_list_is_valid():
    pod = fixture("filter-nodes.json")["Pod"]
    assert wire.decode_args(compact({"Pod": pod, "NodeNames": []})).names == []
    assert wire.decode_args(compact({"Pod": pod, "Nodes": {"metadata": {}, "items": None}})).names == []


def test_unknown_top_level_keys_are_ignored_like_go():
    pod = fixture("filter-nodes.json")["Pod"]
    assert wire.decode_args(compact({"Pod": pod, "NodeNames": ["a"], "Extra": 1})).names == ["a"]


def test_preemption_args_both_shapes():
    meta = wire.decode_preemption_args(compact(fixture("preempt-metavictims.json")))
    full = wire.decode_preemption_args(compact(fixture("preempt-victims.json")))
    uid = fixture("victim-pod.json")["metadata"]["uid"]
    node = "ip-10-0-3-41.ec2.internal"
    assert meta.victims == {node: wire.Victims((uid,), 1)}
    assert full.victims == {node: wire.Victims((uid,), 0)}


def test_binding_args():
    args = wire.decode_binding_args(compact(fixture("bind.json")))
    assert args == wire.BindingArgs(
        "web-7d4b9c6f5-x2x9q", "shop", "3f0c2b1e-6a0d-4d57-9c1b-2e8f7a6b5c4d", "ip-10-0-1-17.ec2.internal"
    )


def test_results_use_go_field_names():
    out = json.loads(wire.encode_filter_result(passed=["a"], failed={"b": "x"}, unresolvable={"c": "y"}))
    assert out == {
        "Nodes": None,
        "NodeNames": ["a"],
        "FailedNodes": {"b": "x"},
        "FailedAndUnresolvableNodes": {"c": "y"},
        "Error": "",
    }
    assert json.loads(wire.encode_host_priorities(["a"], [7])) == [{"Host": "a", "Score": 7}]
    assert json.loads(wire.encode_preemption_result({"n": wire.Victims(("u",), 2)})) == {
        "NodeNameToMetaVictims": {"n": {"Pods": [{"UID": "u"}], "NumPDBViolations": 2}}
    }
    assert json.loads(wire.encode_binding_result("boom")) == {"Error": "boom"}


def test_echoed_nodes_are_byte_identical_items():
    body = compact(fixture("filter-nodes.json"))
    args = wire.decode_args(body)
    assert args.nodes is not None
    out = wire.encode_filter_result(passed_nodes=[n.raw for n in args.nodes[:1]])
    assert compact(fixture("nodes.json")[0]) in out
