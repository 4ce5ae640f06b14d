"""Builders mirroring descheduler's ``test`` package (``test.BuildTestPod``, ``test.BuildTestNode``,
``SetNormalOwnerRef`` ...), so translated tables read like the Go ones."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from harmonic.rescheduler.runner import RunOptions, RunResult
from tests.rescheduler.helpers import NOW, policy, profile, run

Obj = dict[str, Any]
Apply = Callable[[Obj], None] | None


def build_pod(name: str, cpu: int, memory: int, node: str, apply: Apply = None) -> Obj:
    req: Obj = {}
    if cpu >= 0:
        req["cpu"] = f"{cpu}m"
    if memory >= 0:
        req["memory"] = str(memory)
    p: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": req}}],
            "nodeName": node,
        },
        "status": {},
    }
    if apply is not None:
        apply(p)
    return p


def build_node(name: str, millicpu: int, mem: int, pods: int, apply: Apply = None) -> Obj:
    alloc = {"cpu": f"{millicpu}m", "memory": str(mem), "pods": str(pods)}
    n: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {}},
        "spec": {},
        "status": {
            "capacity": dict(alloc),
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    if apply is not None:
        apply(n)
    return n


def normal_owner(p: Obj) -> None:
    p["metadata"]["ownerReferences"] = [{"kind": "Pod", "apiVersion": "v1", "name": "", "uid": ""}]


def rs_owner(p: Obj) -> None:
    p["metadata"]["ownerReferences"] = [
        {"kind": "ReplicaSet", "apiVersion": "v1", "name": "replicaset-1", "uid": ""}
    ]


def ds_owner(p: Obj) -> None:
    p["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "apiVersion": "v1", "name": "", "uid": ""}]


def mirror(p: Obj) -> None:
    p["metadata"]["annotations"] = {
        "kubernetes.io/created-by": '{"kind":"SerializedReference"}',
        "kubernetes.io/config.source": "api",
        "kubernetes.io/config.mirror": "mirror",
    }


def local_storage(p: Obj) -> None:
    p["spec"]["volumes"] = [
        {"name": "sample", "hostPath": {"path": "somePath"}, "emptyDir": {"sizeLimit": "10"}}
    ]


def critical(p: Obj) -> None:
    p["spec"]["priority"] = 2_000_000_000


def taint(key: str, value: str, effect: str = "NoSchedule") -> Callable[[Obj], None]:
    def f(n: Obj) -> None:
        n["spec"].setdefault("taints", []).append({"key": key, "value": value, "effect": effect})

    return f


def unschedulable(n: Obj) -> None:
    n["spec"] = {"unschedulable": True}


def chain(*fs: Apply) -> Callable[[Obj], None]:
    def f(o: Obj) -> None:
        for g in fs:
            if g is not None:
                g(o)

    return f


def evicted_count(
    point: str,
    plugin: str,
    args: Mapping[str, Any],
    objects: Iterable[Obj],
    *,
    evictor: Mapping[str, Any] | None = None,
    top: Mapping[str, Any] | None = None,
    now: float = NOW,
) -> RunResult:
    """Run one plugin as upstream's unit tests do: called directly, so without descheduler's
    fewer-than-two-nodes guard, and evicting as descheduler does, without Harmonic's no-churn
    simulation (``churn_check=False``); dry run, nothing but the decision counts."""
    pol = policy(profile(point, plugin, args, evictor), **dict(top or {}))
    options = RunOptions(min_nodes=0, churn_check=False)
    return run(pol, [copy.deepcopy(o) for o in objects], now=now, options=options)


def pvc(claim: str = "foo") -> Callable[[Obj], None]:
    def f(p: Obj) -> None:
        p["spec"]["volumes"] = [{"name": "pvc", "persistentVolumeClaim": {"claimName": claim}}]

    return f


def labels(**kv: str) -> Callable[[Obj], None]:
    def f(o: Obj) -> None:
        o["metadata"]["labels"] = dict(kv)

    return f


def load_error(
    point: str, plugin: str, args: Mapping[str, Any], evictor: Mapping[str, Any] | None = None
) -> str | None:
    """The policy loader's error for ``args`` (upstream's ``Validate...Args``), or None when valid."""
    from harmonic.rescheduler.policy import PolicyError, load_policy
    from tests.rescheduler.helpers import policy as make_policy

    try:
        load_policy(make_policy(profile(point, plugin, args, evictor)))
    except PolicyError as e:
        return str(e)
    return None


def anti_affinity(key: str, value: str) -> Callable[[Obj], None]:
    """``test.SetPodAntiAffinity``: required anti-affinity to pods labelled ``key in (value)`` per region."""

    def f(p: Obj) -> None:
        term = {
            "labelSelector": {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]},
            "topologyKey": "region",
        }
        p["spec"]["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }

    return f


def priority(value: int) -> Callable[[Obj], None]:
    def f(p: Obj) -> None:
        p["spec"]["priority"] = value

    return f


def deleting(p: Obj) -> None:
    """``pod.DeletionTimestamp = &metav1.Time{}``."""
    p["metadata"]["deletionTimestamp"] = "0001-01-01T00:00:00Z"


#: descheduler's nodeutilization tests: ``extendedResource``, ``lowPriority``, ``highPriority``.
EXTENDED = "example.com/foo"
LOW_PRIORITY, HIGH_PRIORITY = 0, 10000


def node_extended(count: int, resource: str = EXTENDED) -> Callable[[Obj], None]:
    """``test.SetNodeExtendedResource``."""

    def f(n: Obj) -> None:
        n["status"]["capacity"][resource] = str(count)
        n["status"]["allocatable"][resource] = str(count)

    return f


def pod_extended(count: int, resource: str = EXTENDED) -> Callable[[Obj], None]:
    """``test.SetPodExtendedResourceRequest``."""

    def f(p: Obj) -> None:
        p["spec"]["containers"][0]["resources"]["requests"][resource] = str(count)

    return f


def best_effort(p: Obj) -> None:
    """``test.MakeBestEffortPod``: no requests, no limits."""
    p["spec"]["containers"][0]["resources"] = {}


def default_evictor(args: Mapping[str, Any], objects: Iterable[Obj], now: float = NOW) -> Any:
    """A DefaultEvictor as upstream's ``initializePlugin`` builds one: its args through the policy
    loader (so validated), over the objects, ``nodeFit`` answered by the default profile's filters."""
    import numpy as np

    from harmonic.framework.config import load_config
    from harmonic.plugins.registry import default_registry
    from harmonic.rescheduler.evictor import DefaultEvictor
    from harmonic.rescheduler.policy import load_policy
    from harmonic.rescheduler.state import from_manifests
    from harmonic.rescheduler.whatif import WhatIf, replacement
    from tests.rescheduler.helpers import policy as make_policy

    pol = load_policy(make_policy(profile("deschedule", "RemovePodsViolatingNodeTaints", None, args)))
    state = from_manifests([copy.deepcopy(o) for o in objects], now=now)
    registry = default_registry()
    whatif = WhatIf(load_config(None, registry).profiles[0], registry, state.nodes, state.pods, now=now)

    def fits_elsewhere(pod: Any, names: list[str]) -> bool:
        slots = np.asarray([whatif.snapshot.slot_of[n] for n in names], dtype=np.int64)
        ok, _ = whatif.feasible(replacement(pod), slots)
        return len(ok) > 0

    return DefaultEvictor(pol.profiles[0].evictor_args, state, fits_elsewhere)


def phase(value: str) -> Callable[[Obj], None]:
    def f(p: Obj) -> None:
        p["status"]["phase"] = value

    return f


def in_namespace(ns: str) -> Callable[[Obj], None]:
    def f(o: Obj) -> None:
        o["metadata"]["namespace"] = ns

    return f


def kube_system_critical(p: Obj) -> None:
    """A pod in kube-system with ``utils.SystemCriticalPriority``."""
    in_namespace("kube-system")(p)
    critical(p)


def tolerates_key_value(p: Obj) -> None:
    """The nodeutilization taint tables' ``podThatToleratesTaint``: owned, tolerating ``key=value``."""
    rs_owner(p)
    p["spec"]["tolerations"] = [{"key": "key", "value": "value"}]


def key_value_tainted(name: str) -> Obj:
    """The nodeutilization taint tables' ``n3withTaints``."""
    return build_node(name, 1000, 3000, 10, taint("key", "value"))
