"""Dissonance: expectations worked by hand from the documented formula and default matrix."""

from __future__ import annotations

import numpy as np
import pytest

from harmonic.conformance import build
from harmonic.framework.cycle_state import CycleState
from harmonic.testing import node, pod

NODES = [node(n).cap(cpu="4").obj() for n in ("n1", "n2", "n3")]
BATCH_ON_N1 = pod("job-1").owner("Job", "crunch").req(cpu="2", memory="1Gi").node("n1").obj()
SERVICE_ON_N2 = pod("web-1").owner("ReplicaSet", "web").req(cpu="1").node("n2").obj()
INCOMING_LC = pod("api-1").owner("ReplicaSet", "api").req(cpu="1").obj()
INCOMING_BATCH = pod("job-2").owner("Job", "crunch").req(cpu="1", memory="1Gi").obj()


def _run(incoming, args=None):
    plugin, p, snap, names = build(
        {
            "plugin": "Dissonance",
            # The formula's raw scores: no per-zone shift.
            "args": {"zoneNeutral": False, **(args or {})},
            "pod": incoming,
            "nodes": NODES,
            "existingPods": [BATCH_ON_N1, SERVICE_ON_N2],
        }
    )
    return plugin, p, snap, names, np.asarray([snap.slot(n) for n in names])


@pytest.mark.parametrize(
    ("incoming", "expected"),
    [
        # LC pod, share .25: n1 suffers .5*I_bc(.5)=.25, inflicts .25*.25*M[bc][lc](.05)=.003125;
        # n2 suffers .1*.25=.025, inflicts .25*1*.1=.025; n3 nothing. Later batch: .5 (expected
        # share) * .8 (mean LC<-batch slowdown) = .4 per unit of exposure, exposure = (LC pods
        # after) * free after - (LC pods before) * free before: n1 1*.25 - 0, n2 2*.5 - 1*.75 = .25,
        # n3 1*.75 -> costs .353, .15, .3 -> 100 - cost*100/costScale(1): 65, 85, 70. The LC pod
        # joins its kind rather than an empty node that batch would fill around it.
        (INCOMING_LC, {"n1": 65, "n2": 85, "n3": 70}),
        # batch-cpu pod: n1 suffers .25*(.2*.5)=.025, inflicts .25*.25*.2=.0125; n2 suffers
        # .25*(.05*.25)=.003125, inflicts .25*1*.5=.125. Anticipated LC harm .5*.25*expected, with
        # expected = 1 - LC slowdown/.25: n1 (LC slowdown .25) 0, n2 (.025) .9, n3 1 ->
        # costs .0375, .2406, .125 -> scores 97, 76, 88: the batch pod joins the batch node.
        (INCOMING_BATCH, {"n1": 97, "n2": 76, "n3": 88}),
    ],
)
def test_scores(incoming, expected):
    plugin, p, snap, names, slots = _run(incoming)
    state = CycleState()
    assert plugin.pre_score(state, p, snap, slots) is None
    scores = plugin.score(state, p, snap, slots)
    assert dict(zip(names, scores.tolist(), strict=True)) == expected


@pytest.mark.parametrize(
    ("limit", "incoming", "rejected", "filter_lc"),
    [
        (None, INCOMING_LC, [], True),
        # LC after placement on n1: .5*.5 + .1*.25 = .275
        (0.3, INCOMING_LC, [], True),
        (0.2, INCOMING_LC, ["n1"], True),
        # The incoming latency-critical pod itself is never refused without filterLatencyCritical.
        (0.2, INCOMING_LC, [], False),
        # batch pod onto n2 (LC there): LC slowdown .1*.25 + .5*.25 = .15
        (0.1, INCOMING_BATCH, ["n2"], True),
        (0.1, INCOMING_BATCH, ["n2"], False),
        (0.2, INCOMING_BATCH, [], True),
    ],
)
def test_latency_critical_limit(limit, incoming, rejected, filter_lc):
    args = {} if limit is None else {"latencyCriticalMaxSlowdown": limit, "filterLatencyCritical": filter_lc}
    plugin, p, snap, names, slots = _run(incoming, args)
    v = plugin.filter(CycleState(), p, snap, slots)
    failed = [] if v is None else [n for n, c in zip(names, v.code.tolist(), strict=True) if c]
    assert failed == rejected
    if rejected:
        assert v.reasons[0] == ("node(s) would slow latency-critical pods beyond the dissonance limit",)


@pytest.mark.parametrize(
    ("incoming", "evidenced", "rejected"),
    [
        # No entry learnt: the prior alone refuses nothing (with the whole model n2 is refused, above).
        (INCOMING_BATCH, [], []),
        # LC <- latency-critical learnt only: n2 would see .1*.25 = .025 from web-1 itself, under .1.
        (INCOMING_BATCH, ["latency-critical"], []),
        # LC <- batch-cpu learnt: .025 + .5*.25 = .15 on n2, over .1.
        (INCOMING_BATCH, ["latency-critical", "batch-cpu"], ["n2"]),
        (INCOMING_BATCH, ["batch-cpu"], ["n2"]),
        # The LC pod on n1 (batch-cpu at .5 of its CPU): .5*.5 = .25 once batch-cpu is learnt, over .2;
        # its own .1*.25 alone is not.
        (INCOMING_LC, ["latency-critical"], []),
        (INCOMING_LC, ["batch-cpu"], ["n1"]),
    ],
)
def test_a_filter_on_evidence_refuses_by_the_learnt_entries_only(incoming, evidenced, rejected):
    from harmonic.signals.classes import CLASS_INDEX, WorkloadClass
    from harmonic.signals.dissonance import DissonanceModel

    limit = 0.1 if incoming is INCOMING_BATCH else 0.2
    plugin, p, snap, names, slots = _run(
        incoming, {"latencyCriticalMaxSlowdown": limit, "filterBasis": "evidence"}
    )
    model = DissonanceModel()
    lc = CLASS_INDEX[WorkloadClass.LATENCY_CRITICAL]
    for aggressor in evidenced:
        model.evidence[lc, CLASS_INDEX[WorkloadClass(aggressor)]] = True
    plugin._model = model
    v = plugin.filter(CycleState(), p, snap, slots)
    failed = [] if v is None else [n for n, c in zip(names, v.code.tolist(), strict=True) if c]
    assert failed == rejected
    # Before any evidence the filter reads nothing, so failed cycles may be replayed node by node.
    assert plugin.node_local == (not evidenced)


def test_filling_a_node_with_latency_critical_pods_shelters_them():
    # n1 (4 CPU) holds three 1-CPU LC pods; one more fills it: exposure 4*0 - 3*.25 = -.75 (-.3),
    # suffers .1*.75 and inflicts 3*.1*.25 (+.15) -> cost -.15, as good as none: 100. The empty n2
    # leaves .75 of its CPU to later batch: .3 -> 70.
    residents = [pod(f"web-{i}").owner("ReplicaSet", "web").req(cpu="1").node("n1").obj() for i in range(3)]
    plugin, p, snap, names = build(
        {
            "plugin": "Dissonance",
            "args": {},
            "pod": INCOMING_LC,
            "nodes": NODES[:2],
            "existingPods": residents,
        }
    )
    slots = np.asarray([snap.slot(n) for n in names])
    state = CycleState()
    plugin.pre_score(state, p, snap, slots)
    scores = plugin.score(state, p, snap, slots)
    assert dict(zip(names, scores.tolist(), strict=True)) == {"n1": 100, "n2": 70}


def test_matrix_override_changes_the_model():
    # make LC indifferent to batch-cpu (and expect no later batch): n1 then costs only what the LC
    # pod inflicts (.003125: under one point) and ties the empty n3; n2 keeps its .05 (5 points)
    plugin, p, snap, _, slots = _run(
        INCOMING_LC, {"matrix": {"latency-critical": {"batch-cpu": 0.0}}, "expectedBatchShare": 0}
    )
    state = CycleState()
    plugin.pre_score(state, p, snap, slots)
    assert plugin.score(state, p, snap, slots).tolist() == [100, 95, 100]


@pytest.mark.parametrize(
    "args",
    [
        {"matrix": {"latency-critical": {"gpu-hog": 1.0}}},
        {"matrix": {"latency-critical": {"batch-cpu": -1}}},
        {"importance": {"batch-cpu": -2}},
        {"filterBasis": "prior"},
    ],
)
def test_bad_args_are_rejected(args):
    from pydantic import ValidationError

    from harmonic.plugins.dissonance import DissonanceArgs

    with pytest.raises(ValidationError):
        DissonanceArgs.model_validate(args)


def test_zone_neutral_scores_choose_nodes_within_zones():
    # Two zones: n1, n2 in zone a (n1 holds batch), n3 in zone b (an LC pod). The incoming LC pod's
    # scores are shifted per zone so each zone's best candidate gets 100; differences inside a zone
    # stay as they were.
    nodes = [node("n1").cap(cpu="4").zone("a").obj(), node("n2").cap(cpu="4").zone("a").obj()]
    nodes.append(node("n3").cap(cpu="4").zone("b").obj())
    existing = [BATCH_ON_N1, pod("web-1").owner("ReplicaSet", "web").req(cpu="1").node("n3").obj()]
    out = {}
    for neutral in (True, False):
        plugin, p, snap, names = build(
            {
                "plugin": "Dissonance",
                "args": {"zoneNeutral": neutral},
                "pod": INCOMING_LC,
                "nodes": nodes,
                "existingPods": existing,
            }
        )
        slots = np.asarray([snap.slot(n) for n in names])
        state = CycleState()
        plugin.pre_score(state, p, snap, slots)
        out[neutral] = dict(zip(names, plugin.score(state, p, snap, slots).tolist(), strict=True))
    assert out[True]["n2"] == out[True]["n3"] == 100
    assert out[True]["n2"] - out[True]["n1"] == out[False]["n2"] - out[False]["n1"] > 0
    # Batch pods are not shifted: where they go is not a question of availability.
    plugin, p, snap, names = build(
        {"plugin": "Dissonance", "pod": INCOMING_BATCH, "nodes": nodes, "existingPods": existing}
    )
    slots = np.asarray([snap.slot(n) for n in names])
    state = CycleState()
    plugin.pre_score(state, p, snap, slots)
    assert max(plugin.score(state, p, snap, slots).tolist()) < 100


def test_a_dissonance_rejection_never_makes_preemption_evict():
    # The node has room for both by resources; only Dissonance's limit rejects the high-priority batch
    # pod. Evicting the latency-critical pod would make the limit pass — preemption must not do that.
    from harmonic.testing.harness import Harness

    cfg = {
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"multiPoint": {"enabled": [{"name": "Dissonance"}]}},
                "pluginConfig": [{"name": "Dissonance", "args": {"latencyCriticalMaxSlowdown": 0.2}}],
            }
        ]
    }
    h = Harness(cfg)
    h.add_nodes([node("n1").cap(cpu="4").obj()])
    h.add_pods([pod("web-1").owner("ReplicaSet", "web").req(cpu="1").obj()])
    h.schedule()
    h.add_pods([pod("job-9").owner("Job", "crunch").req(cpu="2", memory="1Gi").priority(1000).obj()])
    h.settle(30)
    assert h.placement() == {"default/web-1": "n1"}
    assert "dissonance limit" in (h.failure("job-9") or "")


def test_a_workload_with_its_own_learnt_row_suffers_by_it():
    # the feedback loop learnt that workload `api` is indifferent to batch-cpu (its class is not):
    # n1 then costs only what it inflicts, as with the class matrix overridden; others keep the class's
    from harmonic.signals.classes import CLASS_INDEX, WorkloadClass
    from harmonic.signals.dissonance import DissonanceModel
    from harmonic.signals.identity import workload_of

    plugin, p, snap, _, slots = _run(INCOMING_LC, {"expectedBatchShare": 0})
    model = DissonanceModel()
    plugin._model = model
    state = CycleState()
    plugin.pre_score(state, p, snap, slots)
    assert plugin.score(state, p, snap, slots).tolist() == [75, 95, 100]
    row = model.matrix[CLASS_INDEX[WorkloadClass.LATENCY_CRITICAL]].copy()
    row[CLASS_INDEX[WorkloadClass.BATCH_CPU]] = 0.0
    model.workload_rows = {workload_of(p): row}
    model.version += 1
    plugin.pre_score(state, p, snap, slots)
    assert plugin.score(state, p, snap, slots).tolist() == [100, 95, 100]
    other = build(
        {
            "plugin": "Dissonance",
            "pod": pod("db-1").owner("ReplicaSet", "db").req(cpu="1").obj(),
            "nodes": NODES,
        }
    )[1]
    plugin.pre_score(state, other, snap, slots)
    assert plugin.score(state, other, snap, slots).tolist() == [75, 95, 100]


def test_what_a_pod_inflicts_counts_by_the_victims_own_rows():
    # web-1 (LC, on n2) was learnt to suffer batch-cpu at 1.5 where its class says 0.5: an incoming
    # batch-cpu pod (share .25) inflicts .25 * 1 * (1.5 - .5) = .25 more on n2 -> 25 points off its 76
    from harmonic.api.pod import parse_pod
    from harmonic.signals.classes import CLASS_INDEX, WorkloadClass
    from harmonic.signals.dissonance import DissonanceModel
    from harmonic.signals.identity import workload_of

    plugin, p, snap, _, slots = _run(INCOMING_BATCH)
    model = DissonanceModel()
    plugin._model = model
    lc, bc = CLASS_INDEX[WorkloadClass.LATENCY_CRITICAL], CLASS_INDEX[WorkloadClass.BATCH_CPU]
    row = model.matrix[lc].copy()
    row[bc] = 1.5
    model.workload_rows = {workload_of(parse_pod(SERVICE_ON_N2)): row}
    model.version += 1
    state = CycleState()
    plugin.pre_score(state, p, snap, slots)
    assert plugin.score(state, p, snap, slots).tolist() == [97, 51, 88]
    # the row gone, the class matrix again
    model.workload_rows = {}
    model.version += 1
    plugin.pre_score(state, p, snap, slots)
    assert plugin.score(state, p, snap, slots).tolist() == [97, 76, 88]
