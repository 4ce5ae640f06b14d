"""Shared set-up for the Coscheduling and CapacityScheduling tests: a harness with the plugin enabled."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harmonic.plugins.capacityscheduling.quota import LOWER_BOUND_OF_MIN, UPPER_BOUND_OF_MAX
from harmonic.testing import node
from harmonic.testing.harness import Harness

#: Upstream's makeResourceListForBound: the bounds an ElasticQuota without max / min gets.
MAX_BOUNDS = dict.fromkeys(("cpu", "memory", "ephemeral-storage"), UPPER_BOUND_OF_MAX)
MIN_BOUNDS = dict.fromkeys(("cpu", "memory", "ephemeral-storage"), LOWER_BOUND_OF_MIN)


def batch_config(
    plugin: str, args: Mapping[str, Any] | None = None, drop: Iterable[str] = ()
) -> dict[str, Any]:
    profile: dict[str, Any] = {
        "schedulerName": "default-scheduler",
        "plugins": {
            "multiPoint": {
                "enabled": [{"name": plugin}],
                "disabled": [{"name": n} for n in drop],
            }
        },
    }
    if args is not None:
        profile["pluginConfig"] = [{"name": plugin, "args": dict(args)}]
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }


def harness(
    plugin: str,
    args: Mapping[str, Any] | None = None,
    drop: Iterable[str] = (),
    nodes: int = 1,
    cpu: str = "4",
    objects: Iterable[Mapping[str, Any]] = (),
    pods: Iterable[Mapping[str, Any]] = (),
) -> tuple[Harness, Any]:
    """A harness with ``plugin`` in its profile, ``nodes`` nodes, the batch ``objects`` and ``pods``
    known (not scheduled yet); returns it and the plugin instance."""
    h = Harness(batch_config(plugin, args, drop))
    h.add_nodes(
        [
            node(f"node-{i}" if nodes > 1 else "node").cap(cpu=cpu, memory="64Gi", pods=110).obj()
            for i in range(nodes)
        ]
    )
    for o in objects:
        h.cluster.apply_batch(o)
    h.add_pods(pods)
    h.scheduler.drain()
    return h, h.scheduler.frameworks["default-scheduler"].plugins[plugin]
