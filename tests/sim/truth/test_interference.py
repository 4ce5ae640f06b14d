"""Interference truth: the truth's own classification, slowdown = multiplier x sum_r sensitivity x P x
(1 + convexity x P) with P the neighbours' pressure (docs in ``harmonic.sim.truth.config``), the
per-workload multiplier and the perturbed worlds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.sim.truth.config import (
    DEFAULT_PRESSURE,
    DEFAULT_SENSITIVITY,
    RESOURCES,
    TRUTH_CLASSES,
    GroundTruth,
)
from harmonic.sim.truth.interference import (
    MEMORY_BOUND_BYTES_PER_CORE,
    Interference,
    PodTruth,
    perturbations,
    workload_matches,
)

GI = 2**30
CLS = {name: i for i, name in enumerate(TRUTH_CLASSES)}


def truth(**fields) -> GroundTruth:
    return GroundTruth.model_validate(fields)


CLASSIFY = {
    "DaemonSet pod": ("DaemonSet/kube-system/agent", True, 100, 128 * 2**20, "general"),
    "DaemonSet without requests": ("DaemonSet/kube-system/agent", True, 0, 0, "general"),
    "Deployment": ("Deployment/default/web", False, 500, 1 * GI, "latency-critical"),
    "StatefulSet": ("StatefulSet/default/db", False, 1000, 8 * GI, "latency-critical"),
    "ReplicaSet": ("ReplicaSet/default/rs", False, 100, 0, "latency-critical"),
    "Deployment without requests": ("Deployment/default/web", False, 0, 0, "latency-critical"),
    "Job 8Gi per core": ("Job/default/etl", False, 1000, 8 * GI, "batch-memory"),
    "Job 6Gi per core (3Gi / 500m)": ("Job/default/etl", False, 500, 3 * GI, "batch-memory"),
    "Job exactly 4Gi per core": ("Job/default/etl", False, 1000, 4 * GI, "batch-cpu"),
    "Job 4Gi per core (8Gi / 2 cores)": ("Job/default/etl", False, 2000, 8 * GI, "batch-cpu"),
    "Job 1Gi per core": ("Job/default/etl", False, 4000, 4 * GI, "batch-cpu"),
    "Job with memory and no cpu": ("Job/default/etl", False, 0, 1 * GI, "batch-memory"),
    "Job without requests": ("Job/default/etl", False, 0, 0, "batch-cpu"),
    "bare pod without requests": ("Pod/default/p", False, 0, 0, "best-effort"),
    "bare pod with cpu": ("Pod/default/p", False, 100, 0, "general"),
    "bare pod with memory": ("Pod/default/p", False, 0, 64 * 2**20, "general"),
}


@pytest.mark.parametrize(
    ("workload", "daemon", "cpu", "memory", "expected"), CLASSIFY.values(), ids=CLASSIFY.keys()
)
def test_classification_rules(workload, daemon, cpu, memory, expected):
    assert MEMORY_BOUND_BYTES_PER_CORE == 4 * GI
    inter = Interference(truth(), seed=1)
    assert TRUTH_CLASSES[inter.classify(workload, daemon, cpu, memory)] == expected


OVERRIDES = [
    {"workload": "default/web", "class": "batch-io"},
    {"workload": "Job/default/etl-*", "class": "latency-critical"},
    {"workload": "prod/*", "class": "best-effort"},
    {"workload": "StatefulSet/*/cache", "class": "batch-memory", "sensitivity": 2.5},
    {"workload": "default/slow", "sensitivity": 3.0},
    # Shadowed: the first matching entry wins.
    {"workload": "default/*", "class": "general"},
]

OVERRIDDEN = {
    "namespace/name, any kind (Deployment)": ("Deployment/default/web", "batch-io"),
    "namespace/name, any kind (StatefulSet)": ("StatefulSet/default/web", "batch-io"),
    "Kind/ns/name wildcard": ("Job/default/etl-7", "latency-critical"),
    "Kind/ns/name wildcard, other kind": ("Deployment/default/etl-7", "general"),
    "namespace wildcard": ("Deployment/prod/api", "best-effort"),
    "namespace wildcard, Job": ("Job/prod/nightly", "best-effort"),
    "Kind with any namespace": ("StatefulSet/other/cache", "batch-memory"),
    "Kind with any namespace, other kind": ("Deployment/other/cache", "latency-critical"),
    "sensitivity only keeps the rules' class": ("Job/default/slow", "batch-cpu"),
    "later catch-all": ("Deployment/default/api", "general"),
    "no match": ("Deployment/other/api", "latency-critical"),
}


@pytest.mark.parametrize(("workload", "expected"), OVERRIDDEN.values(), ids=OVERRIDDEN.keys())
def test_overrides_by_name_and_kind_with_wildcards(workload, expected):
    inter = Interference(truth(workloads=OVERRIDES), seed=1)
    assert TRUTH_CLASSES[inter.classify(workload, False, 1000, GI)] == expected


def test_override_sensitivity_is_the_multiplier():
    inter = Interference(truth(workloads=OVERRIDES, workloadSensitivitySpread=1.0), seed=1)
    assert inter.multiplier("StatefulSet/x/cache") == 2.5
    assert inter.multiplier("Job/default/slow") == 3.0
    # A matching entry without sensitivity leaves the draw (first match wins, even without one).
    drawn = Interference(truth(workloadSensitivitySpread=1.0), seed=1).multiplier("Deployment/default/web")
    assert inter.multiplier("Deployment/default/web") == drawn
    pod = inter.pod("StatefulSet/x/cache", False, 250, GI)
    assert pod == PodTruth("StatefulSet/x/cache", CLS["batch-memory"], 250, 2.5)


@pytest.mark.parametrize(
    ("pattern", "workload", "matches"),
    [
        ("default/web", "Deployment/default/web", True),
        ("default/web", "Deployment/default/web2", False),
        ("default/w*", "Deployment/default/web2", True),
        ("Deployment/default/web", "Deployment/default/web", True),
        ("Deployment/default/web", "StatefulSet/default/web", False),
        ("*/default/web", "StatefulSet/default/web", True),
        ("Deployment/*/*", "Deployment/a/b", True),
        ("Job/default/web", "Deployment/default/web", False),
    ],
)
def test_workload_matches(pattern, workload, matches):
    assert workload_matches(pattern, workload) is matches


def test_multiplier_is_drawn_from_seed_and_workload_with_mean_one():
    sigma = 0.3
    gt = truth(workloadSensitivitySpread=sigma)
    a, b, c = Interference(gt, seed=7), Interference(gt, seed=7), Interference(gt, seed=8)
    names = [f"Deployment/ns/w{i}" for i in range(4000)]
    ma = np.asarray([a.multiplier(n) for n in names])
    # Deterministic: the same seed gives the same draw whatever the order of questions.
    assert [b.multiplier(n) for n in reversed(names)] == list(reversed(ma.tolist()))
    mc = np.asarray([c.multiplier(n) for n in names])
    assert not np.allclose(ma, mc)
    assert (ma > 0).all()
    # Lognormal with mean 1: sample mean within 4 standard errors (sd ~ 0.31 -> se ~ 0.005).
    assert ma.mean() == pytest.approx(1.0, abs=0.02)
    assert np.log(ma).std() == pytest.approx(sigma, rel=0.05)
    # Spread 0: every workload exactly its class.
    flat = Interference(truth(workloadSensitivitySpread=0), seed=7)
    assert {flat.multiplier(n) for n in names[:50]} == {1.0}


# ------------------------------------------------------------------ slowdown
LC = CLS["latency-critical"]
BCPU = CLS["batch-cpu"]


def _slow(inter: Interference, pods: list[tuple[int, int, float, float]], alloc: list[float], scale=None):
    node = np.asarray([p[0] for p in pods], dtype=np.int64)
    klass = np.asarray([p[1] for p in pods], dtype=np.int64)
    cpu = np.asarray([p[2] for p in pods], dtype=np.float64)
    mult = np.asarray([p[3] for p in pods], dtype=np.float64)
    return inter.slowdown_arrays(node, klass, cpu, mult, np.asarray(alloc, dtype=np.float64), scale)


#: Explicit matrices (the defaults are tuned over time; these numbers are the test's own).
HAND = {
    "pressure": {
        "latency-critical": {"cpu": 0.5, "memoryBandwidth": 0.3, "io": 0.1},
        "batch-cpu": {"cpu": 1.0, "memoryBandwidth": 0.35, "io": 0.05},
    },
    "sensitivity": {
        "latency-critical": {"cpu": 0.35, "memoryBandwidth": 0.9, "io": 0.25},
        "batch-cpu": {"cpu": 0.3, "memoryBandwidth": 0.25, "io": 0.05},
    },
}


def test_slowdown_by_hand():
    """Node of 4 cores: a latency-critical pod (1 core) beside a batch-cpu pod (2 cores).

    The LC pod sees batch-cpu pressure (1.0, 0.35, 0.05) x 2/4 = (0.5, 0.175, 0.025) and has sensitivity
    (0.35, 0.9, 0.25): 0.35*0.5*1.5 + 0.9*0.175*1.175 + 0.25*0.025*1.025 = 0.45396875.
    The batch pod sees LC pressure (0.5, 0.3, 0.1) x 1/4 = (0.125, 0.075, 0.025), sensitivity
    (0.3, 0.25, 0.05): 0.3*0.125*1.125 + 0.25*0.075*1.075 + 0.05*0.025*1.025 = 0.063625.
    """
    inter = Interference(truth(**HAND, convexity=1.0), seed=1)
    got = _slow(inter, [(0, LC, 1000, 1.0), (0, BCPU, 2000, 1.0)], [4000])
    assert got == pytest.approx([0.45396875, 0.063625])
    # Multipliers scale each pod's own slowdown only.
    got = _slow(inter, [(0, LC, 1000, 2.0), (0, BCPU, 2000, 0.5)], [4000])
    assert got == pytest.approx([2 * 0.45396875, 0.5 * 0.063625])
    # The same pair through ``slowdowns`` (PodTruth rows).
    rows = [(0, PodTruth("Deployment/d/a", LC, 1000, 1.0)), (0, PodTruth("Job/d/b", BCPU, 2000, 1.0))]
    slow, klass = inter.slowdowns(rows, np.asarray([4000.0]))
    assert slow == pytest.approx([0.45396875, 0.063625])
    assert klass.tolist() == [LC, BCPU]
    # Node size matters: on an 8-core node the aggressor's share halves to (0.25, 0.0875, 0.0125).
    got = _slow(inter, [(0, LC, 1000, 1.0), (0, BCPU, 2000, 1.0)], [8000])
    assert got[0] == pytest.approx(0.35 * 0.25 * 1.25 + 0.9 * 0.0875 * 1.0875 + 0.25 * 0.0125 * 1.0125)


def test_overrides_replace_only_the_given_rows():
    gt = truth(**HAND)
    assert gt.pressure_of("latency-critical") == (0.5, 0.3, 0.1)
    assert gt.sensitivity_of("batch-cpu") == (0.3, 0.25, 0.05)
    # Fields left out of a given row are 0, not the default's.
    partial = truth(pressure={"batch-io": {"io": 0.7}})
    assert partial.pressure_of("batch-io") == (0.0, 0.0, 0.7)
    for c in TRUTH_CLASSES:
        if c not in HAND["pressure"]:
            assert gt.pressure_of(c) == tuple(DEFAULT_PRESSURE[c][r] for r in RESOURCES)
            assert gt.sensitivity_of(c) == tuple(DEFAULT_SENSITIVITY[c][r] for r in RESOURCES)


def test_slowdown_excludes_the_pod_itself_and_other_nodes():
    inter = Interference(truth(**HAND), seed=1)
    # Alone on a node, however big: no neighbour, no slowdown.
    assert _slow(inter, [(0, LC, 4000, 1.0)], [4000]).tolist() == [0.0]
    # Neighbours on another node do not count.
    assert _slow(inter, [(0, LC, 1000, 1.0), (1, BCPU, 4000, 1.0)], [4000, 4000]).tolist() == [0.0, 0.0]
    # Two pods of one workload on one node disturb each other (a pod is not its own neighbour, its
    # sibling is): LC pressure (0.5, 0.3, 0.1) x 0.25, LC sensitivity, linear.
    inter0 = Interference(truth(**HAND, convexity=0), seed=1)
    expected = 0.25 * (0.35 * 0.5 + 0.9 * 0.3 + 0.25 * 0.1)
    assert _slow(inter0, [(0, LC, 1000, 1.0), (0, LC, 1000, 1.0)], [4000]) == pytest.approx([expected] * 2)
    # No pods at all.
    slow, klass = inter.slowdowns([], np.asarray([4000.0]))
    assert slow.shape == (0,) and klass.shape == (0,)


def test_slowdown_is_linear_in_sensitivity():
    pods = [(0, LC, 1000, 1.0), (0, CLS["batch-memory"], 3000, 1.0)]
    base = truth(sensitivity={"latency-critical": {"cpu": 0.2, "memoryBandwidth": 0.4, "io": 0.1}})
    double = truth(sensitivity={"latency-critical": {"cpu": 0.4, "memoryBandwidth": 0.8, "io": 0.2}})
    zero = truth(sensitivity={"latency-critical": {}})
    s1 = _slow(Interference(base, 1), pods, [4000])
    s2 = _slow(Interference(double, 1), pods, [4000])
    assert s1[0] > 0
    assert s2[0] == pytest.approx(2 * s1[0])
    assert s2[1] == pytest.approx(s1[1])  # the batch pod's own sensitivity did not change
    assert _slow(Interference(zero, 1), pods, [4000])[0] == 0.0
    # Best-effort pods are insensitive by default.
    assert (
        _slow(Interference(truth(), 1), [(0, CLS["best-effort"], 0, 1.0), (0, BCPU, 4000, 1.0)], [4000])[0]
        == 0
    )


def test_pressure_override_and_convexity():
    """One batch-cpu aggressor with pressure (1, 0, 0) and an LC victim with sensitivity (1, 0, 0):
    slowdown = P (1 + c P) with P the aggressor's share of the node."""
    gt = {
        "pressure": {"batch-cpu": {"cpu": 1.0}},
        "sensitivity": {"latency-critical": {"cpu": 1.0}},
    }
    for share in (0.25, 0.5, 1.0):
        pods = [(0, LC, 0, 1.0), (0, BCPU, 4000 * share, 1.0)]
        assert _slow(Interference(truth(**gt, convexity=0), 1), pods, [4000])[0] == pytest.approx(share)
        assert _slow(Interference(truth(**gt, convexity=1), 1), pods, [4000])[0] == pytest.approx(
            share * (1 + share)
        )
        assert _slow(Interference(truth(**gt, convexity=3), 1), pods, [4000])[0] == pytest.approx(
            share * (1 + 3 * share)
        )
    # Convex: a saturated resource hurts more than twice a half-saturated one.
    conv = Interference(truth(**gt, convexity=1), 1)
    half = _slow(conv, [(0, LC, 0, 1.0), (0, BCPU, 2000, 1.0)], [4000])[0]
    full = _slow(conv, [(0, LC, 0, 1.0), (0, BCPU, 4000, 1.0)], [4000])[0]
    assert full > 2 * half


def test_pressure_scale_multiplies_the_pressure_matrix():
    inter = Interference(truth(**HAND, convexity=0), 1)
    pods = [(0, LC, 1000, 1.0), (0, BCPU, 2000, 1.0)]
    base = _slow(inter, pods, [4000])
    worlds = perturbations(seed=3)
    assert _slow(inter, pods, [4000], worlds["x0.5"]) == pytest.approx(0.5 * base)
    assert _slow(inter, pods, [4000], worlds["x2"]) == pytest.approx(2 * base)
    # Scaling only the batch-cpu row changes only what the LC pod suffers.
    scale = np.ones((len(TRUTH_CLASSES), 3))
    scale[BCPU] = 2.0
    got = _slow(inter, pods, [4000], scale)
    assert got == pytest.approx([2 * base[0], base[1]])


def test_perturbations_shapes():
    worlds = perturbations(seed=5)
    assert set(worlds) == {"x0.5", "x2", "mixed"}
    for m in worlds.values():
        assert m.shape == (len(TRUTH_CLASSES), 3)
    assert (worlds["x0.5"] == 0.5).all() and (worlds["x2"] == 2.0).all()
    mixed = worlds["mixed"]
    assert set(np.unique(mixed)) <= {0.5, 2.0}
    np.testing.assert_array_equal(mixed, perturbations(seed=5)["mixed"])
    others = [perturbations(seed=s)["mixed"] for s in range(6, 16)]
    assert any(not np.array_equal(mixed, o) for o in others)
    # Over many seeds both factors appear: independent entries, not one factor per matrix.
    assert any(len(np.unique(o)) == 2 for o in others)


@settings(max_examples=100, deadline=None)
@given(
    pods=st.lists(
        st.tuples(
            st.integers(0, 2),
            st.integers(0, len(TRUTH_CLASSES) - 1),
            st.floats(0, 4000),
            st.floats(0, 3),
        ),
        min_size=1,
        max_size=8,
    ),
    extra=st.floats(1, 2000),
    convexity=st.floats(0, 3),
)
def test_slowdown_properties(pods, extra, convexity):
    """Non-negative; adding a neighbour never makes anyone on its node faster; a pod's own size does
    not change its own slowdown."""
    inter = Interference(truth(convexity=convexity), 1)
    alloc = [4000, 8000, 2000]
    base = _slow(inter, pods, alloc)
    assert (base >= -1e-12).all()
    more = _slow(inter, [*pods, (pods[0][0], BCPU, extra, 1.0)], alloc)
    assert (more[: len(pods)] >= base - 1e-9).all()
    resized = [(pods[0][0], pods[0][1], pods[0][2] * 0.5, pods[0][3]), *pods[1:]]
    assert _slow(inter, resized, alloc)[0] == pytest.approx(base[0], abs=1e-9)
