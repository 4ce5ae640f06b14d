"""Every request body answers 200 or a 400 naming the field, never a 5xx: kube-scheduler's request
fixtures mutated by hypothesis (wrong types, int64 edges, keys in other cases), over real HTTP; and
keys in any case at any depth, as Go's encoding/json reads them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harmonic.extender.server import ExtenderServer
from tests.extender.conftest import Client, compact, fixture, running
from tests.extender.test_server import CONFIG, N3, synced_cache
from tests.fuzzing import fuzz_settings, mutated

REQUESTS = [
    ("filter", "filter-nodes.json"),
    ("filter", "filter-nodenames.json"),
    ("prioritize", "filter-nodes.json"),
    ("prioritize", "filter-nodenames.json"),
    ("preempt", "preempt-metavictims.json"),
    ("preempt", "preempt-victims.json"),
    ("bind", "bind.json"),
]


@pytest.fixture(scope="module")
def server() -> Iterator[ExtenderServer]:
    cache, _ = synced_cache()
    with running(config=CONFIG, cache=cache) as s:
        yield s


@pytest.fixture(scope="module")
def client(server: ExtenderServer) -> Iterator[Client]:
    c = Client(server)
    yield c
    c.close()


def _body(doc: Any) -> bytes | None:
    try:
        return json.dumps(doc, allow_nan=False).encode()
    except (ValueError, TypeError):
        return None  # NaN and infinities are not JSON: a Go client cannot send them


@fuzz_settings(150)
@given(st.sampled_from(REQUESTS).flatmap(lambda r: st.tuples(st.just(r[0]), mutated(fixture(r[1])))))
def test_fuzz_mutated_requests_get_200_or_a_400_naming_the_field(client, request_):
    verb, doc = request_
    body = _body(doc)
    if body is None:
        return
    status, result = client.post(verb, body)
    assert status in (200, 400), (status, result, doc)
    if status == 400:
        assert result["Error"].startswith(f"{verb}: ") and len(result["Error"]) > len(verb) + 2


@pytest.mark.parametrize(
    ("verb", "body", "needle"),
    [
        (
            "preempt",
            {"Pod": {}, "NodeNameToMetaVictims": {"n": {"NumPDBViolations": 2**63}}},
            "NumPDBViolations",
        ),
        ("preempt", {"Pod": {}, "NodeNameToMetaVictims": {"n": {"Pods": "x"}}}, "['n'].Pods"),
        ("preempt", {"Pod": {}, "NodeNameToVictims": {"n": {"Pods": [{"metadata": {}}]}}}, "metadata.uid"),
        ("filter", {"Pod": {"spec": {"priority": 2**63}}, "NodeNames": ["a"]}, "spec.priority"),
        ("filter", {"Pod": {"spec": {"containers": [{"resources": "abc"}]}}, "NodeNames": []}, "resources"),
        (
            "filter",
            {
                "Pod": {"spec": {"containers": [{"resources": {"requests": {"cpu": "1e30"}}}]}},
                "NodeNames": [],
            },
            "64-bit",
        ),
        ("filter", {"Pod": {}, "Nodes": {"items": "x"}}, "Nodes.items"),
        ("filter", {"Pod": {}, "Nodes": []}, "Nodes"),
    ],
)
def test_wrong_types_and_overflow_are_400_naming_the_field(client, verb, body, needle):
    pod = fixture("filter-nodes.json")["Pod"]
    body = {**body, "Pod": {**pod, **{k: {**pod[k], **v} for k, v in body["Pod"].items()}}}
    status, result = client.post(verb, compact(body))
    assert status == 400, result
    assert needle in result["Error"], result["Error"]


def _recase(doc: Any, depth: int = 0) -> Any:
    """Every key in another case: upper at even depths, capitalised at odd ones (maps of labels and
    resources excepted, as their keys are data)."""
    if isinstance(doc, list):
        return [_recase(v, depth) for v in doc]
    if not isinstance(doc, dict):
        return doc
    out = {}
    for k, v in doc.items():
        data = k in ("labels", "annotations", "allocatable", "capacity", "requests", "limits", "matchLabels")
        out[k.upper() if depth % 2 == 0 else k.capitalize()] = v if data else _recase(v, depth + 1)
    return out


@pytest.mark.parametrize(("verb", "name"), REQUESTS)
def test_keys_in_any_case_at_any_depth_give_the_same_answer(client, verb, name):
    doc = fixture(name)
    if verb == "bind":
        # Binding twice would be refused by the cache: compare two decodings instead.
        from harmonic.extender.wire import decode_binding_args

        assert decode_binding_args(compact(_recase(doc))) == decode_binding_args(compact(doc))
        return
    exact = client.post(verb, doc)
    folded = client.post(verb, _recase(doc))
    assert folded[0] == exact[0] == 200
    if verb == "filter" and doc.get("Nodes"):
        # Passing nodes are echoed byte for byte, so in the client's spelling.
        names = [n["metadata"]["name"] for n in exact[1].pop("Nodes")["items"]]
        assert [n["METADATA"]["Name"] for n in folded[1].pop("Nodes")["items"]] == names
    assert folded[1] == exact[1]


def test_items_and_metadata_in_capitals_are_read_not_dropped(client):
    doc = fixture("filter-nodes.json")
    doc["Nodes"] = {"Items": [{**n, "Metadata": n.pop("metadata")} for n in doc["Nodes"]["items"]]}
    status, result = client.post("filter", doc)
    assert status == 200
    assert result["FailedAndUnresolvableNodes"][N3] == "Insufficient cpu"
    assert [n["Metadata"]["name"] for n in result["Nodes"]["items"]]  # echoed as sent
