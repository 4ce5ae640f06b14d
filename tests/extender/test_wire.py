"""Decoding and encoding of the extender v1 types: Go's field names, nulls and key matching."""

from __future__ import annotations

import json

import numpy as np
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


@pytest.mark.parametrize(
    ("hosts", "scores"),
    [
        ([], []),
        (["a"], [0]),
        (["a", "b", "c"], [10, 3, 0]),
        (['q"uote', "back\\slash", "ünï\u2028"], [9, 10, 1]),
    ],
)
def test_host_priorities_decode_to_the_scores_given(hosts, scores):
    expected = [{"Host": h, "Score": s} for h, s in zip(hosts, scores, strict=True)]
    assert json.loads(wire.encode_host_priorities(hosts, scores)) == expected
    assert json.loads(wire.encode_host_priorities(hosts, np.asarray(scores, dtype=np.int64))) == expected


def test_host_priorities_of_a_reused_list_follow_each_call_scores_and_a_new_list():
    hosts = [f"node-{i}" for i in range(50)]
    for scores in ([i % 11 for i in range(50)], [10] * 50, [0] * 50):
        got = json.loads(wire.encode_host_priorities(hosts, scores))
        assert got == [{"Host": h, "Score": s} for h, s in zip(hosts, scores, strict=True)]
    other = [f"other-{i}" for i in range(3)]
    assert json.loads(wire.encode_host_priorities(other, [1, 2, 3])) == [
        {"Host": "other-0", "Score": 1},
        {"Host": "other-1", "Score": 2},
        {"Host": "other-2", "Score": 3},
    ]
    # A list grown in place since the last answer is not answered from the old template.
    other.append("other-3")
    assert [e["Host"] for e in json.loads(wire.encode_host_priorities(other, [0, 0, 0, 4]))] == other


def test_host_priorities_outside_the_extender_range_are_still_encoded():
    assert json.loads(wire.encode_host_priorities(["a", "b"], [11, -1])) == [
        {"Host": "a", "Score": 11},
        {"Host": "b", "Score": -1},
    ]


def test_filter_result_names_of_a_reused_list_and_of_a_new_one():
    names = ["a", "b"]
    for _ in range(2):
        assert json.loads(wire.encode_filter_result(passed=names))["NodeNames"] == ["a", "b"]
    assert json.loads(wire.encode_filter_result(passed=["c"]))["NodeNames"] == ["c"]
    assert json.loads(wire.encode_filter_result(passed=[]))["NodeNames"] == []


def test_same_pod_bytes_decode_to_one_manifest_and_other_bytes_to_another():
    pod = fixture("filter-nodes.json")["Pod"]
    first = wire.decode_args(compact({"Pod": pod, "NodeNames": ["a"]}))
    again = wire.decode_args(compact({"Pod": pod, "NodeNames": ["a", "b"]}))
    assert again.pod is first.pod
    changed = {**pod, "metadata": {**pod["metadata"], "name": "other"}}
    other = wire.decode_args(compact({"Pod": changed, "NodeNames": ["a"]}))
    assert other.pod is not first.pod and other.pod["metadata"]["name"] == "other"
