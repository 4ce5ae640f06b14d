"""Run one upstream kube-scheduler unit-test case through a Harmonic plugin.

The case format is documented in ``shared/conformance/README.md``: a plugin name, its args, a pod,
nodes and existing pods; ``kind`` is ``filter`` or ``score``. A case may also list ``objects``
(Services, ReplicationControllers, ReplicaSets, StatefulSets), offered to the plugin as the
``"workloads"`` handle service. ``evaluate`` returns, per node, the final
score (after NormalizeScore, before weights) or the filter status ``{"code", "reasons"}``. It never
reads the case's ``expected``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from harmonic.api.node import parse_node
from harmonic.api.pod import Pod, parse_pod
from harmonic.api.workloads import SERVICE_NAME, WorkloadIndex
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import FilterPlugin, Plugin, PreFilterPlugin, PreScorePlugin, ScorePlugin
from harmonic.framework.registry import Registry, args_model
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.scheduler.clock import ManualClock


class _NullClient:
    def bind(self, pod: Pod, node_name: str) -> Status | None:
        return None

    def evict(self, pod: Pod, reason: str) -> Status | None:
        return None

    def set_nominated_node(self, pod: Pod, node_name: str) -> Status | None:
        return None


class _Handle:
    def __init__(self, snapshot: Snapshot, services: Mapping[str, Any]) -> None:
        self._snapshot = snapshot
        self._client = _NullClient()
        self._clock = ManualClock()
        self._services = dict(services)

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def client(self) -> _NullClient:
        return self._client

    @property
    def clock(self) -> ManualClock:
        return self._clock

    @property
    def profile_name(self) -> str:
        return "default-scheduler"

    def waiting_pod(self, uid: str) -> Any:
        return None

    def service(self, name: str) -> Any:
        return self._services[name]


def build(
    case: Mapping[str, Any], registry: Registry | None = None
) -> tuple[Plugin, Pod, Snapshot, list[str]]:
    """The plugin (with the case's args), the pod, and a snapshot holding the case's nodes and pods."""
    if registry is None:
        from harmonic.plugins.registry import default_registry

        registry = default_registry()
    name = case["plugin"]
    if name not in registry:
        raise KeyError(f"unknown plugin {name!r}")
    cls = registry[name]
    raw_args = {k: v for k, v in (case.get("args") or {}).items() if k not in ("apiVersion", "kind")}
    args = args_model(cls).model_validate(raw_args)
    snap = Snapshot()
    names = []
    for raw in case.get("nodes") or ():
        node = parse_node(raw)
        snap.set_node(node)
        names.append(node.name)
    for i, raw in enumerate(case.get("existingPods") or ()):
        meta = raw.get("metadata") or {}
        if not meta.get("uid"):
            raw = {
                **raw,
                "metadata": {
                    **meta,
                    "uid": f"existing-{i}-{meta.get('namespace', 'default')}-{meta.get('name')}",
                },
            }
        p = parse_pod(raw)
        if not p.node_name:
            raise ValueError(f"existing pod {p.key} has no spec.nodeName")
        snap.add_pod(p, p.node_name)
    pod = parse_pod(case["pod"])
    services = dict(case.get("services") or {})
    if case.get("objects"):
        # Services, ReplicationControllers, ReplicaSets, StatefulSets of the case, as upstream's informers.
        services[SERVICE_NAME] = WorkloadIndex.from_objects(case["objects"])
    plugin = cls(args, _Handle(snap, services))
    return plugin, pod, snap, names


def _status(code: Code, reasons: tuple[str, ...]) -> dict[str, Any]:
    return {"code": code.wire_name, "reasons": list(reasons)}


def evaluate(case: Mapping[str, Any]) -> dict[str, Any]:
    """Run ``case`` through ``case["plugin"]`` and return the per-node result in the shape of ``expected``."""
    plugin, pod, snap, names = build(case)
    state = CycleState()
    kind = case["kind"]
    if kind == "filter":
        return _filter(plugin, pod, snap, names, state)
    if kind == "score":
        scored = list(case.get("scoredNodes") or names)
        return _score(plugin, pod, snap, scored, state)
    raise ValueError(f"unknown case kind {kind!r}")


def _filter(plugin: Plugin, pod: Pod, snap: Snapshot, names: list[str], state: CycleState) -> dict[str, Any]:
    if not isinstance(plugin, FilterPlugin):
        raise TypeError(f"{plugin.name} is not a Filter plugin")
    if isinstance(plugin, PreFilterPlugin):
        result, st = plugin.pre_filter(state, pod, snap)
        if st is not None and st.code == Code.SKIP:
            return {n: _status(Code.SUCCESS, ()) for n in names}
        if st is not None and not st.is_success:
            return {n: _status(st.code, st.reasons) for n in names}
        if result is not None and result.node_names is not None:
            # Upstream tests that check PreFilter narrowing see excluded nodes as unresolvable.
            pass
    slots = np.asarray([snap.slot(n) for n in names], dtype=np.int64)
    v = plugin.filter(state, pod, snap, slots)
    out: dict[str, Any] = {}
    for i, n in enumerate(names):
        if v is None or v.code[i] == 0:
            out[n] = _status(Code.SUCCESS, ())
        else:
            out[n] = _status(Code(int(v.code[i])), v.reasons[int(v.reason[i])])
    return out


def _score(plugin: Plugin, pod: Pod, snap: Snapshot, names: list[str], state: CycleState) -> dict[str, Any]:
    if not isinstance(plugin, ScorePlugin):
        raise TypeError(f"{plugin.name} is not a Score plugin")
    slots = np.asarray([snap.slot(n) for n in names], dtype=np.int64)
    if isinstance(plugin, PreScorePlugin):
        st = plugin.pre_score(state, pod, snap, slots)
        if st is not None and st.code == Code.SKIP:
            return {n: 0 for n in names}
        if st is not None and not st.is_success:
            raise RuntimeError(f"PreScore failed: {st}")
    scores = np.asarray(plugin.score(state, pod, snap, slots), dtype=np.int64)
    if plugin.has_normalize:
        scores = np.asarray(plugin.normalize_score(state, pod, snap, slots, scores), dtype=np.int64)
    return {n: int(s) for n, s in zip(names, scores.tolist(), strict=True)}
