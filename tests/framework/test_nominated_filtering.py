"""Framework.run_filters_with_nominated_pods (RunFilterPluginsWithNominatedPods) and the PreFilter
extension runners, through both evaluation paths (all nodes together when the filters are node-local,
one node at a time with cloned cycle states otherwise)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from harmonic.api.node import parse_node
from harmonic.api.pod import Pod, parse_pod
from harmonic.conformance import preemption_setup
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import FilterPlugin, PreFilterPlugin, PreFilterResult
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.testing import node, pod
from tests.plugins.fakes import registry_with_fakes


class NeedsCompany(FilterPlugin):
    """Passes only nodes that already run a pod: adding a nominated pod can make a node pass."""

    NAME: ClassVar[str] = "NeedsCompany"

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        lonely = np.asarray([not snap.pods[int(s)] for s in slots])
        return Verdicts.failing(lonely, Code.UNSCHEDULABLE, "node(s) are lonely")


class Recorder(PreFilterPlugin):
    """A PreFilter plugin with extensions (forcing node-by-node evaluation) that records AddPod calls."""

    NAME: ClassVar[str] = "Recorder"
    added: ClassVar[list[tuple[str, str]]] = []

    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write("recorder", [])
        return None, None

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, slot: int) -> Status | None:
        Recorder.added.append((added.name, self.handle.snapshot.node(slot).name))
        return None


def framework(filters, nominated, pods=()):
    nodes = [node(f"n{i}").only(cpu="2", pods="10").obj() for i in range(1, 4)]
    registry = registry_with_fakes().merged([NeedsCompany, Recorder])
    case = {
        "name": "t",
        "plugin": "DefaultPreemption",
        "filterPlugins": filters,
        "nodes": nodes,
        "existingPods": list(pods),
        "nominatedPods": nominated,
    }
    return preemption_setup(case, registry)


def nom(name, prio, cpu, on):
    return pod(name).priority(prio).req(cpu=cpu).nominated(on).obj()


def run(fw, snap, preemptor):
    state = CycleState()
    assert fw.run_pre_filter(state, preemptor, snap)[1] is None
    slots = np.asarray([snap.slot(f"n{i}") for i in range(1, 4)], dtype=np.int64)
    before = (snap.requested.copy(), [list(d) for d in snap.pods])
    out, st = fw.run_filters_with_nominated_pods(state, preemptor, snap, slots)
    assert st is None
    assert np.array_equal(snap.requested, before[0]) and [list(d) for d in snap.pods] == before[1]
    return {
        f"n{i + 1}": (Code(int(c)).wire_name, out.reasons[int(r)] if c else ())
        for i, (c, r) in enumerate(zip(out.codes, out.reason_ids, strict=True))
    }


@pytest.mark.parametrize("extra", [[], ["Recorder"]], ids=["together", "one-by-one"])
def test_nominated_pods_of_equal_or_higher_priority_take_their_room(extra):
    Recorder.added = []
    fw, _, snap, _ = framework(
        ["NodeResourcesFit", *extra],
        [nom("equal", 10, "2", "n1"), nom("lower", 5, "2", "n2"), nom("higher", 20, "1", "n3")],
    )
    got = run(fw, snap, parse_pod(pod("p").priority(10).req(cpu="1500m").obj()))
    assert got == {
        "n1": ("Unschedulable", ("Insufficient cpu",)),
        "n2": ("Success", ()),
        "n3": ("Unschedulable", ("Insufficient cpu",)),
    }
    if extra:
        assert sorted(Recorder.added) == [("equal", "n1"), ("higher", "n3")]


@pytest.mark.parametrize("extra", [[], ["Recorder"]], ids=["together", "one-by-one"])
def test_a_node_must_pass_with_and_without_its_nominated_pods(extra):
    fw, _, snap, _ = framework(
        ["NeedsCompany", *extra],
        [nom("company", 10, "100m", "n1")],
        pods=[pod("resident").node("n3").obj()],
    )
    got = run(fw, snap, parse_pod(pod("p").priority(1).obj()))
    # n1 passes only while its nominated pod is counted, so the second pass (without it) fails it.
    assert got == {
        "n1": ("Unschedulable", ("node(s) are lonely",)),
        "n2": ("Unschedulable", ("node(s) are lonely",)),
        "n3": ("Success", ()),
    }


def test_the_pod_itself_is_not_counted_on_its_nominated_node():
    fw, _, snap, _ = framework(["NodeResourcesFit"], [nom("p", 10, "2", "n1")])
    got = run(fw, snap, parse_pod(pod("p").priority(10).req(cpu="2").nominated("n1").obj()))
    assert got["n1"] == ("Success", ())


def test_add_pod_extension_errors_abort_with_upstreams_message():
    fw, _, snap, _ = framework(["NodeResourcesFit", "test-plugin"], [nom("q", 10, "1", "n1")])
    snap.set_node(parse_node(node("n1").only(cpu="2", pods="10").label("error", "true").obj()))
    p = parse_pod(pod("p").priority(1).obj())
    state = CycleState()
    fw.run_pre_filter(state, p, snap)
    _, st = fw.run_filters_with_nominated_pods(state, p, snap, np.asarray([snap.slot("n1")]))
    assert st is not None and st.code == Code.ERROR
    assert st.message == 'running AddPod on PreFilter plugin "test-plugin": failed to add pod: p'
    assert not snap.pods[snap.slot("n1")]
