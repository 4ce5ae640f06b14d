"""Running a policy over manifests, for the rescheduler's tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry
from harmonic.rescheduler.policy import load_policy
from harmonic.rescheduler.runner import RunOptions, RunResult, run_once
from harmonic.rescheduler.state import from_manifests

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z
_REGISTRY = default_registry()


def policy(*profiles: Mapping[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "profiles": list(profiles),
        **top,
    }


def profile(
    point: str,
    plugin: str,
    args: Mapping[str, Any] | None = None,
    evictor: Mapping[str, Any] | None = None,
    name: str = "p",
) -> dict[str, Any]:
    configs = []
    if args is not None:
        configs.append({"name": plugin, "args": dict(args)})
    if evictor is not None:
        configs.append({"name": "DefaultEvictor", "args": dict(evictor)})
    return {"name": name, "pluginConfig": configs, "plugins": {point: {"enabled": [plugin]}}}


def run(
    pol: Mapping[str, Any],
    objects: Iterable[Mapping[str, Any]],
    now: float = NOW,
    scheduler: Mapping[str, Any] | None = None,
    options: RunOptions | None = None,
    recent: dict[str, float] | None = None,
    services: Mapping[str, Any] | None = None,
) -> RunResult:
    state = from_manifests(objects, now=now)
    cfg = load_config(scheduler, _REGISTRY, source="<test>")
    return run_once(
        load_policy(pol),
        state,
        cfg.profiles[0],
        _REGISTRY,
        options=options or RunOptions(),
        recent=recent,
        services=services,
    )


def evicted(result: RunResult) -> list[str]:
    return [e.pod.name for e in result.log.evictions]


def pdb(name: str, app: str, **spec: Any) -> dict[str, Any]:
    """A PodDisruptionBudget over the pods labelled ``app``, without a status (computed from spec)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {**spec, "selector": {"matchLabels": {"app": app}}},
    }


#: A KubeSchedulerConfiguration whose default profile packs (NodeResourcesFit MostAllocated).
PACKING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [
                {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
            ],
        }
    ],
}


def ts(seconds_ago: float) -> str:
    import datetime as dt

    t = dt.datetime.fromtimestamp(NOW - seconds_ago, tz=dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")
