"""Invariants over random clusters, PDBs and policies: no eviction past a budget, every moved pod fits
where it is sent, a dry run changes nothing."""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmonic.api.pod import parse_pod
from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.rescheduler.budget import disruptions_allowed
from harmonic.rescheduler.state import from_manifests
from harmonic.rescheduler.whatif import WhatIf, replacement
from tests.rescheduler.helpers import NOW, policy, run
from tests.rescheduler.test_makeroom import pending
from tests.rescheduler.test_plugins import N, P


@st.composite
def clusters(draw):
    n = draw(st.integers(2, 5))
    caps = [draw(st.integers(2, 6)) for _ in range(n)]
    objs = [
        N(f"n{i}", cpu=str(c), **({"taint": ("t", "x")} if draw(st.booleans()) and i else {}))
        for i, c in enumerate(caps)
    ]
    free = list(caps)
    k = 0
    for i in range(n):
        while free[i] > 0 and draw(st.booleans()):
            cpu = draw(st.integers(1, free[i]))
            o = P(f"p{k}", f"n{i}", cpu=str(cpu), owner=f"rs{k % 3}")
            o["metadata"]["labels"] = {"app": f"a{k % 2}"}
            objs.append(o)
            free[i] -= cpu
            k += 1
    for j in range(draw(st.integers(0, 2))):
        objs.append(pending(f"q{j}", str(draw(st.integers(1, 4)))))
    for app in ("a0", "a1"):
        if draw(st.booleans()):
            objs.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": app, "namespace": "default"},
                    "spec": {
                        "minAvailable": draw(st.sampled_from([0, 1, 2, "50%"])),
                        "selector": {"matchLabels": {"app": app}},
                    },
                }
            )
    plugins = draw(
        st.lists(
            st.sampled_from(
                [
                    "MakeRoomForPending",
                    "LowNodeUtilization",
                    "RemoveDuplicates",
                    "RemovePodsViolatingNodeTaints",
                    "Consolidate",
                    "RemovePodsViolatingTopologySpreadConstraint",
                ]
            ),
            min_size=1,
            unique=True,
        )
    )
    return objs, plugins, draw(st.one_of(st.none(), st.integers(0, 3)))


def _policy(plugins, per_node):
    configs = [
        {"name": "LowNodeUtilization", "args": {"thresholds": {"cpu": 30}, "targetThresholds": {"cpu": 60}}}
    ]
    deschedule = [p for p in plugins if p in ("RemovePodsViolatingNodeTaints",)]
    balance = [p for p in plugins if p not in deschedule]
    top = {} if per_node is None else {"maxNoOfPodsToEvictPerNode": per_node}
    return policy(
        {
            "name": "p",
            "pluginConfig": configs,
            "plugins": {"deschedule": {"enabled": deschedule}, "balance": {"enabled": balance}},
        },
        **top,
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_budgets_fit_and_dry_run(case):
    objs, plugins, per_node = case
    before = copy.deepcopy(objs)
    r = run(_policy(plugins, per_node), objs)
    assert objs == before  # a dry run changes nothing
    assert r.budget_violations == 0
    state = from_manifests(before, now=NOW)
    for pdb in state.pdbs:
        spent = sum(1 for e in r.log.evictions if pdb.covers(e.pod))
        assert spent <= disruptions_allowed(pdb, state.pods)
    if per_node is not None:
        for node in {e.node for e in r.log.evictions}:
            assert sum(e.node == node for e in r.log.evictions) <= per_node
    # Every moved pod and nominated pod passes the filters where it is sent, all moves applied.
    profile = load_config(None, default_registry()).profiles[0]
    w = WhatIf(profile, default_registry(), state.nodes, state.pods)
    for e in r.log.evictions:
        w.remove(e.pod)
    placed = [(replacement(e.pod), e.to) for e in r.log.evictions if e.to]
    placed += [(parse_pod(n.pod.raw), n.node) for n in r.log.nominations]
    for p, dst in placed:
        w.add(p, dst)
    snap = w.snapshot
    live = snap.order
    assert (snap.requested[live] <= snap.allocatable[live]).all()
    for p, dst in placed:
        mark = w.checkpoint()
        w.remove(p)
        assert w.fits(p, dst), (p, dst)
        w.undo(mark)
    assert np.all(snap.requested[live] >= 0)
