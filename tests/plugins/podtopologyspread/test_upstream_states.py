"""Upstream's PreFilter / AddPod / RemovePod / PreScore state tables, checked against our state.

``upstream_states.json`` transcribes filtering_test.go (TestPreFilterState, TestPreFilterStateAddPod,
TestPreFilterStateRemovePod) and scoring_test.go (TestPreScoreStateEmptyNodes, TestPreScoreSkip): the
compiled constraints, matching pods per topology value, the global minimum (upstream's first critical
path) and, for PreScore, the ignored nodes and the number of domains behind each topology weight.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harmonic.api.pod import parse_pod
from harmonic.api.selectors import MATCH_NOTHING, LabelSelector, label_selector
from harmonic.conformance import build
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code
from harmonic.plugins.podtopologyspread import PodTopologySpread
from harmonic.plugins.podtopologyspread.constraints import Constraint
from harmonic.plugins.podtopologyspread.filtering import PreFilterState
from harmonic.plugins.podtopologyspread.plugin import PRE_FILTER_KEY, PRE_SCORE_KEY
from harmonic.plugins.podtopologyspread.scoring import PreScoreState

DATA = json.loads((Path(__file__).parent / "upstream_states.json").read_text())


def _selector_key(sel: LabelSelector) -> tuple[bool, frozenset[Any]]:
    return sel.nothing, frozenset(sel.requirements)


def _check_constraints(got: tuple[Constraint, ...], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want)
    for c, w in zip(got, want, strict=True):
        assert (c.max_skew, c.topology_key, c.min_domains) == (
            w["maxSkew"],
            w["topologyKey"],
            w["minDomains"],
        )
        assert (c.node_affinity_policy, c.node_taints_policy) == (
            w["nodeAffinityPolicy"],
            w["nodeTaintsPolicy"],
        )
        expected = (
            MATCH_NOTHING if w["selector"] is None else label_selector("want", "selector", w["selector"])
        )
        assert _selector_key(c.selector) == _selector_key(expected)


def _values(snap: Snapshot, key: str) -> dict[int, str]:
    return {code: value for value, code in snap.label(key).vocab.items()}


def _setup(case: dict[str, Any]) -> tuple[PodTopologySpread, Any, Snapshot]:
    plugin, pod, snap, _ = build({**case, "plugin": "PodTopologySpread"})
    assert isinstance(plugin, PodTopologySpread)
    return plugin, pod, snap


def _cases(*kinds: str) -> list[Any]:
    return [pytest.param(c, id=c["name"]) for c in DATA["cases"] if c["kind"] in kinds]


@pytest.mark.parametrize("case", _cases("preFilter", "addPod", "removePod"))
def test_pre_filter_state(case: dict[str, Any]) -> None:
    plugin, pod, snap = _setup(case)
    state = CycleState()
    _, st = plugin.pre_filter(state, pod, snap)
    want = case["want"]
    if want.get("skip"):
        assert st is not None and st.code == Code.SKIP
        return
    assert st is None
    if case["kind"] != "preFilter":
        changed = parse_pod(case["changedPod"])
        slot = snap.slot(case["node"])
        if case["kind"] == "addPod":
            assert plugin.add_pod(state, pod, changed, slot) is None
        else:
            assert plugin.remove_pod(state, pod, changed, slot) is None
    s = state.read(PRE_FILTER_KEY)
    assert isinstance(s, PreFilterState)
    _check_constraints(s.constraints, want["constraints"])
    for i, c in enumerate(s.constraints):
        names = _values(snap, c.topology_key)
        d = s.domains[i]
        got = {names[int(code)]: int(d.counts[code]) for code in np.flatnonzero(d.present)}
        assert got == want["tpValueToMatchNum"][i], c.topology_key
        assert d.min_match == want["minMatchNum"][i]


@pytest.mark.parametrize("case", _cases("preScore"))
def test_pre_score_state(case: dict[str, Any]) -> None:
    plugin, pod, snap = _setup(case)
    state = CycleState()
    filtered = np.asarray([snap.slot(n["metadata"]["name"]) for n in case["nodes"]], dtype=np.int64)
    st = plugin.pre_score(state, pod, snap, filtered)
    want = case["want"]
    if want.get("skip"):
        assert st is not None and st.code == Code.SKIP
        return
    assert st is None
    s = state.read(PRE_SCORE_KEY)
    assert isinstance(s, PreScoreState)
    _check_constraints(s.constraints, want["constraints"])
    ignored = filtered[s.ignored[filtered]]
    assert sorted(snap.node_names(ignored)) == sorted(want["ignoredNodes"])
    kept = filtered[~s.ignored[filtered]]
    for i, c in enumerate(s.constraints):
        assert s.weights[i] == math.log(want["topologySizes"][i] + 2)
        dom_codes, dom_counts = s.dom_codes[i], s.dom_counts[i]
        if dom_codes is None or dom_counts is None:
            assert want["topologyValueToPodCounts"][i] == {}
            continue
        names = _values(snap, c.topology_key)
        got = {names.get(int(code), ""): int(dom_counts[code]) for code in set(dom_codes[kept].tolist())}
        assert got == want["topologyValueToPodCounts"][i]
