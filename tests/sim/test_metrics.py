"""Stranded CPU while pods wait: capacity packing wasted, not capacity nobody asked for."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.sim.report import metrics_document

from .helpers import deployment, objects, plan_of, run, scenario


def _tainted_pool(count: int, cpu: str) -> dict[str, Any]:
    return {
        "name": "gpu",
        "count": count,
        "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
        "zones": ["a"],
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    }


def _metrics(sc: dict[str, Any]) -> dict[str, Any]:
    world = run(sc)
    doc = metrics_document(plan_of(sc), {"default-scheduler": world})
    m: dict[str, Any] = doc["profiles"]["default-scheduler"]
    return m


@pytest.mark.parametrize(
    ("case", "workloads", "extra_pools", "stranded", "samples"),
    [
        # Three 4-CPU nodes with 3 CPU used each and a 2-CPU pod waiting: all 3 free CPU are stranded.
        ("fragments", [deployment("fill", 3, cpu="3"), deployment("big", 1, cpu="2")], [], 3.0, True),
        # A 5-CPU pod fits no 4-CPU node even when empty: nothing packing did, yet the 1 CPU left on
        # each node is still free CPU no waiting pod can use.
        (
            "too big for any node",
            [deployment("fill", 3, cpu="3"), deployment("huge", 1, cpu="5")],
            [],
            3.0,
            True,
        ),
        # Nothing waits: no sample, no figure.
        ("nothing waits", [deployment("fill", 3, cpu="3")], [], None, False),
        # A tainted node the waiting pod does not tolerate is not capacity it could have had.
        (
            "untolerated taint",
            [deployment("fill", 3, cpu="3"), deployment("big", 1, cpu="2")],
            [_tainted_pool(1, "8")],
            3.0,
            True,
        ),
        # Memory counts too: 1 CPU free on each node but the waiting pod needs more memory than any has.
        (
            "memory-bound",
            [deployment("fill", 3, cpu="1", memory="15Gi"), deployment("wide", 1, cpu="1", memory="4Gi")],
            [],
            9.0,
            True,
        ),
    ],
)
def test_stranded_cpu_while_pending(
    case: str,
    workloads: list[dict[str, Any]],
    extra_pools: list[dict[str, Any]],
    stranded: float | None,
    samples: bool,
) -> None:
    sc = scenario([objects(*workloads)], duration="5m", sampleInterval="1m")
    sc["cluster"]["nodePools"] += extra_pools
    m = _metrics(sc)
    assert m["stranded_cpu_cores_while_pending"] == stranded, case
    assert (m["samples_with_pending"] > 0) == samples, case


def test_a_node_the_waiting_pod_could_use_is_not_stranded() -> None:
    # One node keeps 2 CPU free: the 2-CPU pod fits there (it runs), so nothing waits.
    sc = scenario([objects(deployment("fill", 2, cpu="3"), deployment("big", 1, cpu="2"))], duration="5m")
    m = _metrics(sc)
    assert m["samples_with_pending"] == 0
    assert m["stranded_cpu_cores_while_pending"] is None
