"""``Framework.evaluate``: PreFilter then Filter on given nodes, the entry point the extender and the
rescheduler's what-if share."""

from __future__ import annotations

import numpy as np

from harmonic.api.pod import parse_pod
from harmonic.framework.status import Code
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness


def _setup() -> tuple[Harness, np.ndarray]:
    h = Harness()
    h.add_nodes(
        [
            node("a").cap(cpu="4", memory="4Gi", pods=10).obj(),
            node("b").cap(cpu="1", memory="4Gi", pods=10).obj(),
            node("c").cap(cpu="4", memory="4Gi", pods=10).taint("k", "v").obj(),
            node("d").cap(cpu="4", memory="4Gi", pods=10).obj(),
        ]
    )
    h.schedule()  # applies the node events to the cache
    snap = h.scheduler.cache.snapshot
    return h, np.asarray([snap.slot_of[n] for n in ("a", "b", "c", "d")], dtype=np.int64)


def test_filters_decide_which_given_nodes_pass() -> None:
    h, slots = _setup()
    fw = h.scheduler.frameworks["default-scheduler"]
    ev = fw.evaluate(parse_pod(pod("p").req(cpu="2").obj()), h.scheduler.cache.snapshot, slots)
    assert ev.pre_filter is None and ev.error is None
    assert ev.passed.tolist() == [True, False, False, True]
    assert len(ev.excluded) == 0


def test_a_pre_filter_result_narrows_the_nodes_and_names_its_plugin() -> None:
    h, slots = _setup()
    fw = h.scheduler.frameworks["default-scheduler"]
    p = parse_pod(pod("p").req(cpu="2").required_term(fields=[("metadata.name", "In", ["d"])]).obj())
    ev = fw.evaluate(p, h.scheduler.cache.snapshot, slots)
    assert ev.excluded.tolist() == [0, 1, 2]
    assert set(ev.narrowing) == {"NodeAffinity"}
    assert ev.passed.tolist() == [False, False, False, True]


def test_a_pre_filter_rejection_stops_before_filter() -> None:
    h, slots = _setup()
    fw = h.scheduler.frameworks["default-scheduler"]
    bad = pod("p").obj()
    bad["spec"]["affinity"] = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"k": "-bad"}}, "topologyKey": "zone"}
            ]
        }
    }
    ev = fw.evaluate(parse_pod(bad), h.scheduler.cache.snapshot, slots)
    assert ev.pre_filter is not None and ev.pre_filter.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert ev.outcome is None and not ev.passed.any()
