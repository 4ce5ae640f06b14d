"""LoadAware: expectations worked by hand from the documented formula."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.api.pod import parse_pod
from harmonic.conformance import build
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.status import Code
from harmonic.signals.forecast import Forecast
from harmonic.signals.identity import WorkloadKey
from harmonic.signals.usage import USAGE_FALLBACKS, NodeStats, UsageView, WorkloadForecast
from harmonic.testing import node, pod
from tests.plugins.conftest import config_error

NODES = [node(n).cap(cpu="2", memory="4Gi").obj() for n in ("n1", "n2")]


def _replica(workload: str, i: int, node_name: str, cpu: str = "1") -> dict:
    return pod(f"{workload}-{i}").owner("ReplicaSet", workload).req(cpu=cpu).node(node_name).obj()


# Two replicas of "peaky" on n1 (100m now, 600m next step each), two of "steady" on n2 (300m each).
EXISTING = [_replica("peaky", 0, "n1"), _replica("peaky", 1, "n1"), _replica("steady", 0, "n2"), _replica("steady", 1, "n2")]  # fmt: skip


def _fc(cpu: list[float], std: float = 0.0) -> WorkloadForecast:
    return WorkloadForecast(Forecast(np.asarray(cpu, float), std), Forecast(np.zeros(len(cpu)), 0.0))


@dataclass
class _Service:
    view: UsageView


def _view(peaky_std: float = 0.0, at: float = 0.0, fresh: bool = True) -> UsageView:
    workloads = {
        WorkloadKey("default", "peaky"): _fc([100, 600], peaky_std),
        WorkloadKey("default", "steady"): _fc([300, 300]),
    }
    nodes = {n: NodeStats(0, 0, 0, 0) for n in ("n1", "n2")}
    return UsageView(1, at, fresh, nodes, workloads, 60.0)


def _run(incoming, args=None, view=None, now=0.0, filter_too=False):
    services = {"node_usage": _Service(view)} if view is not None else {}
    plugin, p, snap, names = build(
        {"plugin": "LoadAware", "args": args or {}, "pod": incoming, "nodes": NODES, "existingPods": EXISTING, "services": services}
    )  # fmt: skip
    plugin.handle.clock.set(now)
    slots = np.asarray([snap.slot(n) for n in names])
    state = CycleState()
    if filter_too:
        verdicts = plugin.filter(state, p, snap, slots)
        return None if verdicts is None else dict(zip(names, verdicts.code.tolist(), strict=True))
    assert plugin.pre_score(state, p, snap, slots) is None
    return dict(zip(names, plugin.score(state, p, snap, slots).tolist(), strict=True))


NEWCOMER = pod("x").req(cpu="500m").obj()


@pytest.mark.parametrize(
    ("name", "incoming", "args", "view", "expected"),
    [
        # n1: max(200, 1200) + 500 = 1700 of 2000 -> 15; n2: 600 + 500 = 1100 -> 45
        ("forecast peak over the horizon", NEWCOMER, None, _view(), {"n1": 15, "n2": 45}),
        # horizon one step (60s): n1 200 + 500 = 700 -> 65; n2 1100 -> 45
        ("short-lived pod sees only the next step", pod("x").req(cpu="500m").annotation("harmonic.dev/expected-duration", "1m").obj(), None, _view(), {"n1": 65, "n2": 45}),
        # k=2, two peaky pods of std 100: + 2 * sqrt(2 * 100^2) = 282.8 -> 1982.8 -> 1
        ("mean plus k standard deviations", NEWCOMER, None, _view(peaky_std=100), {"n1": 1, "n2": 45}),
        ("k = 0 ignores the spread", NEWCOMER, {"peakStddevs": 0}, _view(peaky_std=100), {"n1": 15, "n2": 45}),
        # a peaky pod itself: n1 1200 + 600 -> 10; n2 600 + 600 -> 40
        ("the pod's own forecast", pod("peaky-9").owner("ReplicaSet", "peaky").req(cpu="1").obj(), None, _view(), {"n1": 10, "n2": 40}),
        # requests instead: n1 2000 + 500 of 2000 -> share 1.25 -> 0; n2 the same
        ("no usage service: requests", NEWCOMER, None, None, {"n1": 0, "n2": 0}),
        ("stale reading: requests", NEWCOMER, {"staleSeconds": 60}, _view(at=0.0), {"n1": 0, "n2": 0}),
        # unknown workloads count at requestFraction x requests: 0.4 x 500 = 200 for the newcomer
        ("request fraction for unknown workloads", NEWCOMER, {"requestFraction": 0.4}, _view(), {"n1": 30, "n2": 60}),
    ],
)  # fmt: skip
def test_scores(name, incoming, args, view, expected):
    now = 120.0 if name.startswith("stale") else 0.0
    assert _run(incoming, args, view, now) == expected, name


def test_filter_rejects_nodes_forecast_past_the_threshold():
    assert _run(NEWCOMER, {"filterThreshold": 0.8}, _view(), filter_too=True) == {
        "n1": int(Code.UNSCHEDULABLE),
        "n2": 0,
    }
    assert _run(NEWCOMER, {"filterThreshold": 0.9}, _view(), filter_too=True) is None


def test_filter_never_rejects_on_fallback():
    assert _run(NEWCOMER, {"filterThreshold": 0.1}, None, filter_too=True) is None


def test_fallback_is_counted():
    before = USAGE_FALLBACKS.labels("LoadAware", "no reading yet")._value.get()
    _run(NEWCOMER, None, UsageView(0, None, False, {}, {}, 60.0, "no reading yet"))
    assert USAGE_FALLBACKS.labels("LoadAware", "no reading yet")._value.get() == before + 1


def test_args():
    assert "filterThreshold" in config_error("LoadAware", {"filterThreshold": 1.5})
    assert "peakStddevs" in config_error("LoadAware", {"peakStddevs": -1})


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 3), st.integers(0, 3), st.integers(100, 1500))
def test_more_pods_never_raise_a_nodes_score(extra_n1, extra_n2, cpu):
    """Property: a node's score does not rise when it holds more pods (forecast or requests)."""
    incoming = pod("x").req(cpu=f"{cpu}m").obj()
    base = _run(incoming, None, _view())
    more = [_replica("steady", 10 + i, "n1") for i in range(extra_n1)] + [
        _replica("steady", 20 + i, "n2") for i in range(extra_n2)
    ]
    plugin, p, snap, names = build(
        {"plugin": "LoadAware", "args": {}, "pod": incoming, "nodes": NODES, "existingPods": EXISTING + more, "services": {"node_usage": _Service(_view())}}
    )  # fmt: skip
    slots = np.asarray([snap.slot(n) for n in names])
    state = CycleState()
    plugin.pre_score(state, p, snap, slots)
    after = dict(zip(names, plugin.score(state, p, snap, slots).tolist(), strict=True))
    assert all(0 <= v <= 100 for v in after.values())
    assert all(after[n] <= base[n] for n in names)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["peaky", "steady", "unknown"]), st.sampled_from(["n1", "n2"]), st.booleans()), max_size=8),
    st.booleans(),
    st.booleans(),
)  # fmt: skip
def test_kept_forecasts_follow_pods_bound_and_removed(changes, known, one_step):
    """Property: one plugin instance scoring as pods come and go (its per-slot forecasts, running maxima
    and per-workload peaks kept by snapshot events; pods of unknown workloads shift them in place)
    scores exactly as a plugin built afresh on the final pods, for a pod of a known workload and not, over
    the whole horizon and one step."""
    incoming = pod("peaky-x").owner("ReplicaSet", "peaky") if known else pod("x")
    if one_step:  # a horizon shorter than the forecast's takes the per-step paths
        incoming = incoming.annotation("harmonic.dev/expected-duration", "1m")
    incoming = incoming.req(cpu="500m").obj()
    case = {"plugin": "LoadAware", "args": {}, "pod": incoming, "nodes": NODES, "existingPods": EXISTING, "services": {"node_usage": _Service(_view(peaky_std=50))}}  # fmt: skip

    def scores(built) -> list[int]:
        plugin, p, snap, names = built
        slots = np.asarray([snap.slot(n) for n in names])
        state = CycleState()
        plugin.pre_score(state, p, snap, slots)
        return plugin.score(state, p, snap, slots).tolist()

    kept = build(case)
    snap = kept[2]
    scores(kept)
    added: list[tuple[dict, str]] = []
    for i, (workload, where, remove) in enumerate(changes):
        if remove and added:
            raw, on = added.pop()
            snap.remove_pod(parse_pod(raw), on)
        else:
            raw = _replica(workload, 100 + i, where, cpu="50m")  # small: scores stay off their 0 floor
            snap.add_pod(parse_pod(raw), where)
            added.append((raw, where))
        scores(kept)
    fresh = build({**case, "existingPods": EXISTING + [raw for raw, _ in added]})
    assert scores(kept) == scores(fresh)


def test_per_workload_peaks_stay_exact_when_a_column_falls_far_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Columns are refreshed only for the slots changed since each was last read, and the change log is
    trimmed: a column read again after more changes than the log keeps is recomputed whole. Either way
    each column's peaks equal max over steps of (node mean + the workload's mean) plus k standard
    deviations of (node variance + the workload's)."""
    import harmonic.plugins.loadaware as la

    monkeypatch.setattr(la, "_CHANGES_KEPT", 4)
    plugin, p, snap, names = build(
        {"plugin": "LoadAware", "args": {}, "pod": pod("x").obj(), "nodes": NODES, "existingPods": EXISTING, "services": {"node_usage": _Service(_view(peaky_std=50))}}
    )  # fmt: skip
    slots = np.asarray([snap.slot(n) for n in names])
    state = CycleState()
    plugin.pre_score(state, p, snap, slots)  # builds the kept forecasts
    nodes = plugin._nodes
    assert nodes is not None
    peaky, steady = (
        nodes.columns[WorkloadKey("default", "peaky")],
        nodes.columns[WorkloadKey("default", "steady")],
    )

    def exact(col: int) -> np.ndarray:
        spread = nodes.k * np.sqrt(nodes.var + nodes.pod_var[col])
        return ((nodes.mean + nodes.pod_mean[col]).max(axis=2) + spread)[slots]

    nodes.pair_peaks(peaky, slots)
    nodes.pair_peaks(steady, slots)
    for i in range(12):  # steady is read every time, peaky only at the end: it falls behind the log
        snap.add_pod(
            parse_pod(_replica("peaky" if i % 2 else "steady", 200 + i, names[i % 2], cpu="50m")),
            names[i % 2],
        )
        np.testing.assert_allclose(nodes.pair_peaks(steady, slots), exact(steady))
    assert len(nodes.changes) <= la._CHANGES_KEPT + 1
    np.testing.assert_allclose(nodes.pair_peaks(peaky, slots), exact(peaky))
    np.testing.assert_allclose(nodes.pair_peaks(steady, slots), exact(steady))
