"""Run one upstream kube-scheduler unit-test case through a Harmonic plugin.

The case format is documented in ``shared/conformance/README.md``: a plugin name, its args, a pod,
nodes and existing pods; ``kind`` is ``filter`` or ``score``. A case may also list ``objects``
(Services, ReplicationControllers, ReplicaSets, StatefulSets), offered to the plugin as the
``"workloads"`` handle service, ``namespaces`` (name -> labels), offered as the ``"namespaces"``
service, and ``volumes``: storage objects by kind (``pvcs``, ``pvs``, ``storageClasses``, ``csiNodes``,
``csiDrivers``, ``csiStorageCapacities``, ``volumeAttachments``; manifests without ``kind``), offered as
the ``"volumes"`` service. ``evaluate`` returns, per node, the final
score (after NormalizeScore, before weights) or the filter status ``{"code", "reasons"}``. It never
reads the case's ``expected``.

Filter cases run the plugin's PreFilter first, as the framework does: Skip means every node passes, a
rejecting status is every node's status, and a node-name subset (PreFilterResult) does not stop
Filter from running on every node — upstream's tests assert Filter's own verdict for such nodes and
the PreFilter result separately. A case with ``"runPreFilter": false`` runs Filter alone (upstream
tests that check the fallback when PreFilter did not run).

Upstream tests also assert PreFilter and PreScore outcomes on their own. Cases that do carry
``expectedPreFilter`` / ``expectedPreScore``, compared with ``evaluate_pre_filter`` (``{"code",
"reasons", "nodeNames"}``, ``nodeNames`` the sorted subset or ``None`` for all nodes) and
``evaluate_pre_score`` (``{"code", "reasons"}``). A score case whose ``scoredNodes`` is empty scores
no node (upstream stopped after PreScore).

``kind: preemption`` runs a PostFilter preemption plugin inside a small profile (PrioritySort, the
case's ``filterPlugins`` for PreFilter/Filter, the plugin, DefaultBinder); its ``check`` says what is
compared (see ``tests/conformance/translated/README.md`` for the fields and result shapes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from harmonic.api.node import parse_node
from harmonic.api.pdb import parse_pdb
from harmonic.api.pod import Pod, parse_pod
from harmonic.api.workloads import SERVICE_NAME, WorkloadIndex
from harmonic.framework.config import load_config
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.diagnosis import Diagnosis, FilterOutcome
from harmonic.framework.interface import (
    FilterPlugin,
    Plugin,
    PluginsRunner,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
)
from harmonic.framework.registry import Registry, args_model
from harmonic.framework.runtime import Framework
from harmonic.framework.services import NAMESPACES, NOMINATOR, PDBS, ServiceAccess
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.volumes import VOLUMES_SERVICE, InMemoryVolumes
from harmonic.scheduler.clock import ManualClock
from harmonic.scheduler.nominator import Nominator


class _NullClient:
    """Accepts every call and remembers evictions (for preemption cases)."""

    def __init__(self) -> None:
        self.evicted: list[Pod] = []

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        return None

    def evict(self, pod: Pod, reason: str) -> Status | None:
        self.evicted.append(pod)
        return None

    def set_nominated_node(self, pod: Pod, node_name: str) -> Status | None:
        return None


class _Handle(ServiceAccess):
    def __init__(self, snapshot: Snapshot, services: Mapping[str, Any]) -> None:
        self._snapshot = snapshot
        self._client = _NullClient()
        self._clock = ManualClock()
        self._services = dict(services)
        self._runner: PluginsRunner | None = None

    @property
    def runner(self) -> PluginsRunner:
        if self._runner is None:
            raise RuntimeError("this case runs a single plugin; no framework to run others")
        return self._runner

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

    def service_map(self) -> Mapping[str, Any]:
        return self._services


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
    if case.get("namespaces") is not None:
        # Namespace name -> labels, as upstream's namespace informer holds them (namespaceSelector).
        services[NAMESPACES.name] = {str(k): dict(v or {}) for k, v in case["namespaces"].items()}
    if case.get("objects"):
        # Services, ReplicationControllers, ReplicaSets, StatefulSets of the case, as upstream's informers.
        services[SERVICE_NAME] = WorkloadIndex.from_objects(case["objects"])
    if case.get("volumes"):
        services[VOLUMES_SERVICE] = case_volumes(case["volumes"])
    plugin = cls(args, _Handle(snap, services))
    return plugin, pod, snap, names


#: The ``volumes`` field of a case: list name -> manifest kind.
VOLUME_LISTS = {
    "pvcs": "PersistentVolumeClaim",
    "pvs": "PersistentVolume",
    "storageClasses": "StorageClass",
    "csiNodes": "CSINode",
    "csiDrivers": "CSIDriver",
    "csiStorageCapacities": "CSIStorageCapacity",
    "volumeAttachments": "VolumeAttachment",
}


def case_volumes(volumes: Mapping[str, Any]) -> InMemoryVolumes:
    """The storage objects of a case as a ``"volumes"`` service."""
    unknown = set(volumes) - set(VOLUME_LISTS)
    if unknown:
        raise ValueError(f"unknown volumes lists {sorted(unknown)} (known: {', '.join(VOLUME_LISTS)})")
    return InMemoryVolumes(
        {**raw, "kind": VOLUME_LISTS[name]} for name, objs in volumes.items() for raw in objs or ()
    )


def _status(code: Code, reasons: tuple[str, ...]) -> dict[str, Any]:
    return {"code": code.wire_name, "reasons": list(reasons)}


def evaluate(case: Mapping[str, Any], registry: Registry | None = None) -> dict[str, Any]:
    """Run ``case`` through ``case["plugin"]`` (looked up in ``registry``, the default one if not given)
    and return the per-node result in the shape of ``expected``."""
    kind = case["kind"]
    if kind == "preemption":
        return _preemption(case)
    plugin, pod, snap, names = build(case, registry)
    state = CycleState()
    if kind == "filter":
        return _filter(plugin, pod, snap, names, state, bool(case.get("runPreFilter", True)))
    if kind == "score":
        scored = case.get("scoredNodes")
        return _score(plugin, pod, snap, names if scored is None else list(scored), state)
    raise ValueError(f"unknown case kind {kind!r}")


def evaluate_pre_filter(case: Mapping[str, Any]) -> dict[str, Any]:
    """The PreFilter outcome of a filter case: ``{"code", "reasons", "nodeNames"}``."""
    plugin, pod, snap, _ = build(case)
    if not isinstance(plugin, PreFilterPlugin):
        raise TypeError(f"{plugin.name} is not a PreFilter plugin")
    result, st = plugin.pre_filter(CycleState(), pod, snap)
    code, reasons = (Code.SUCCESS, ()) if st is None else (st.code, st.reasons)
    names = None if result is None or result.node_names is None else sorted(result.node_names)
    return {**_status(code, reasons), "nodeNames": names}


def evaluate_pre_score(case: Mapping[str, Any]) -> dict[str, Any]:
    """The PreScore status of a score case over all its (or its ``scoredNodes``) nodes."""
    plugin, pod, snap, names = build(case)
    if not isinstance(plugin, PreScorePlugin):
        raise TypeError(f"{plugin.name} is not a PreScore plugin")
    scored = case.get("scoredNodes")
    slots = np.asarray([snap.slot(n) for n in (names if scored is None else scored)], dtype=np.int64)
    st = plugin.pre_score(CycleState(), pod, snap, slots)
    return _status(Code.SUCCESS, ()) if st is None else _status(st.code, st.reasons)


def _filter(
    plugin: Plugin, pod: Pod, snap: Snapshot, names: list[str], state: CycleState, run_pre_filter: bool
) -> dict[str, Any]:
    if not isinstance(plugin, FilterPlugin):
        raise TypeError(f"{plugin.name} is not a Filter plugin")
    if run_pre_filter and isinstance(plugin, PreFilterPlugin):
        _, st = plugin.pre_filter(state, pod, snap)
        if st is not None and st.code == Code.SKIP:
            return {n: _status(Code.SUCCESS, ()) for n in names}
        if st is not None and not st.is_success:
            return {n: _status(st.code, st.reasons) for n in names}
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
    if not names:
        return {}
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


# --------------------------------------------------------------------------- preemption cases
def preemption_setup(
    case: Mapping[str, Any], registry: Registry | None = None
) -> tuple[Framework, Any, Snapshot, _Handle]:
    """A framework for a preemption case: PrioritySort, the case's ``filterPlugins`` (default
    NodeResourcesFit), the case's ``plugin`` with its ``args`` at PostFilter, DefaultBinder. The handle
    offers the case's ``pdbs`` and a nominator holding its ``nominatedPods``."""
    if registry is None:
        from harmonic.plugins.registry import default_registry

        registry = default_registry()
    name = case["plugin"]
    filters = list(case.get("filterPlugins") or ["NodeResourcesFit"])
    enabled = ["PrioritySort", *filters, name, "DefaultBinder"]
    config = {
        "profiles": [
            {
                "plugins": {
                    "multiPoint": {"enabled": [{"name": n} for n in enabled], "disabled": [{"name": "*"}]}
                },
                "pluginConfig": [{"name": name, "args": dict(case.get("args") or {})}],
            }
        ]
    }
    # The case's snapshot, as single-plugin cases build it (the plugin and pod built with it are unused).
    _, _, snap, _ = build(
        {**case, "pod": {"metadata": {"name": "-"}, "spec": {"containers": [{}]}}}, registry
    )
    nominator = Nominator()
    for raw in case.get("nominatedPods") or ():
        nominator.add(parse_pod(raw))
    pdbs = [parse_pdb(raw) for raw in case.get("pdbs") or ()]
    handle = _Handle(snap, {PDBS.name: lambda: pdbs, NOMINATOR.name: nominator})
    profile = load_config(config, registry, source=f"case {case.get('name')!r}").profiles[0]
    fw = Framework(profile, registry, handle)
    handle._runner = fw
    return fw, fw.plugin(name), snap, handle


def _diagnosis(snap: Snapshot, statuses: Mapping[str, str]) -> Diagnosis:
    """A Diagnosis with the given per-node filter codes; other nodes are absent (UnschedulableAndUnresolvable)."""
    diagnosis = Diagnosis(num_all_nodes=snap.num_nodes)
    if statuses:
        slots = np.asarray([snap.slot(n) for n in statuses], dtype=np.int64)
        codes = np.asarray([int(Code.from_wire(c)) for c in statuses.values()], dtype=np.int8)
        n = len(slots)
        diagnosis.add(
            FilterOutcome(
                slots, codes, np.zeros(n, dtype=np.int16), np.zeros(n, dtype=np.int32), [()], ["Filter"]
            )
        )
    return diagnosis


def _preemption(case: Mapping[str, Any]) -> dict[str, Any]:
    fw, plugin, snap, handle = preemption_setup(case)
    check = case["check"]
    pods = [parse_pod(raw) for raw in (case.get("pods") or [case["pod"]])]
    offsets = list(case.get("offsets") or [0] * len(pods))
    if check == "eligible":
        code = case.get("nominatedNodeStatus")
        ok, _ = plugin.pod_eligible_to_preempt_others(pods[0], Code.from_wire(code) if code else Code.SUCCESS)
        return {"eligible": ok}
    if check == "postFilter":
        state = CycleState()
        fw.run_pre_filter(state, pods[0], snap)
        result, st = plugin.post_filter(state, pods[0], _diagnosis(snap, case.get("nodeStatuses") or {}))
        return {
            "nominatedNodeName": result.nominated_node_name if result is not None else None,
            "code": (st.code if st is not None else Code.SUCCESS).wire_name,
            "message": st.message if st is not None else "",
        }
    if check == "preempt":
        state = CycleState()
        fw.run_pre_filter(state, pods[0], snap)
        every = {n.name: "Unschedulable" for _, n in snap.iter_nodes()}
        result, _ = plugin.evaluator.preempt(state, pods[0], _diagnosis(snap, every))
        return {
            "nominatedNodeName": result.nominated_node_name if result is not None else None,
            "evicted": sorted(p.name for p in handle.client.evicted),
        }
    by_name = np.asarray(sorted((n.name, s) for s, n in snap.iter_nodes()), dtype=object)
    potential = np.asarray([s for _, s in by_name], dtype=np.int64)
    pdbs = handle.service(PDBS)()
    cycles = []
    chosen = None
    for pod, offset in zip(pods, offsets, strict=True):
        state = CycleState()
        fw.run_pre_filter(state, pod, snap)
        plugin.offset_rand = lambda n, o=offset: o
        start, num = plugin.get_offset_and_num_candidates(len(potential))
        candidates, _, _ = plugin.evaluator.dry_run_preemption(state, pod, potential, pdbs, start, num)
        if check == "selectCandidate":
            chosen = plugin.evaluator.select_candidate(candidates).node if candidates else None
        cycles.append(
            [
                {
                    "node": c.node,
                    "victims": sorted(p.name for p in c.victims),
                    "numPDBViolations": c.num_pdb_violations,
                }
                for c in sorted(candidates, key=lambda c: c.node)
            ]
        )
    if check == "selectCandidate":
        return {"node": chosen}
    if check == "dryRun":
        return {"candidates": cycles}
    raise ValueError(f"unknown preemption check {check!r}")
