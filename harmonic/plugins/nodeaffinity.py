"""NodeAffinity — PreFilter, Filter, PreScore, Score (+NormalizeScore).

Filter: the node must match the pod's ``spec.nodeSelector`` and its required node affinity terms
(reason "node(s) didn't match Pod's node affinity/selector"), and the profile's
``addedAffinity.requiredDuringSchedulingIgnoredDuringExecution``, checked first and for every pod
("node(s) didn't match scheduler-enforced node affinity"); both UnschedulableAndUnresolvable.
PreFilter returns Skip when there is nothing to check, and narrows the candidates to node names when
every required term names nodes with ``matchFields`` ``metadata.name In`` (terms naming no node at all
are a conflict, UnschedulableAndUnresolvable "pod affinity terms conflict").

Score: the sum of the weights of the preferred terms (the pod's and ``addedAffinity``'s) the node
matches, normalised to 0..100 by the highest score. PreScore returns Skip when there are no terms.

Args (NodeAffinityArgs): ``addedAffinity`` (a v1 NodeAffinity).

Requirements are evaluated over every node at once from the snapshot's label columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from pydantic import field_validator

from harmonic.api.errors import ObjectError
from harmonic.api.node import Node
from harmonic.api.pod import Pod, PreferredTerm
from harmonic.api.selectors import NodeSelector, node_selector, node_selector_term
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Hint, Resource
from harmonic.framework.interface import (
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from harmonic.framework.snapshot import Snapshot, extra_key
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.plugins.helpers import default_normalize_score
from harmonic.plugins.nodeselector import MaskCache, labels_mask, selector_mask, term_mask

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
_PREFILTER_KEY = "PreFilter" + NAME
_PRESCORE_KEY = "PreScore" + NAME
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_ARGS = "NodeAffinityArgs"


@dataclass(frozen=True, slots=True)
class AddedAffinity:
    """``addedAffinity`` compiled: the required selector (``None`` if unset) and the preferred terms."""

    required: NodeSelector | None
    preferred: tuple[PreferredTerm, ...]


def compile_added_affinity(raw: Mapping[str, Any]) -> AddedAffinity:
    """Compile a v1 NodeAffinity given as ``addedAffinity``; errors name ``addedAffinity.<field>``."""
    base = "addedAffinity"
    unknown = set(raw) - {_REQUIRED, _PREFERRED}
    if unknown:
        raise ObjectError(_ARGS, f"{base}.{sorted(unknown)[0]}", "unknown field")
    req = raw.get(_REQUIRED)
    required = node_selector(_ARGS, f"{base}.{_REQUIRED}", req) if req is not None else None
    prefs: list[PreferredTerm] = []
    terms = raw.get(_PREFERRED) or []
    if not isinstance(terms, list):
        raise ObjectError(_ARGS, f"{base}.{_PREFERRED}", "must be a list of preferred scheduling terms")
    for i, t in enumerate(terms):
        field = f"{base}.{_PREFERRED}[{i}]"
        if not isinstance(t, Mapping):
            raise ObjectError(_ARGS, field, "must be a preferred scheduling term")
        w = t.get("weight", 0)
        if not isinstance(w, int) or isinstance(w, bool):
            raise ObjectError(_ARGS, f"{field}.weight", f"{w!r} is not an integer")
        term = node_selector_term(_ARGS, f"{field}.preference", t.get("preference") or {})
        # Upstream (NewPreferredSchedulingTerms) drops zero-weight and empty terms.
        if w != 0 and term is not None:
            prefs.append(PreferredTerm(w, term))
    return AddedAffinity(required, tuple(prefs))


class NodeAffinityArgs(PluginArgs):
    added_affinity: dict[str, Any] | None = None

    @field_validator("added_affinity")
    @classmethod
    def _compiles(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is not None:
            try:
                compile_added_affinity(v)
            except ObjectError as e:
                raise ValueError(f"{e.field}: {e.message}") from None
        return v


@dataclass(frozen=True, slots=True)
class _PodAffinity:
    """What a pod asks of NodeAffinity, compiled once per pod."""

    #: Nothing for Filter to check (no nodeSelector, no required affinity).
    no_required: bool
    node_selector: tuple[tuple[str, str], ...]
    required: NodeSelector | None
    #: PreFilter outcome: None = all nodes, a set = only those names, empty set = conflict.
    node_names: frozenset[str] | None
    has_preferred: bool


def _pod_affinity(pod: Pod) -> _PodAffinity:
    key = extra_key(NAME, "affinity")
    cached: _PodAffinity | None = pod.extra.get(key)
    if cached is not None:
        return cached
    node_aff = (pod.spec.get("affinity") or {}).get("nodeAffinity") or {}
    required_raw = node_aff.get(_REQUIRED)
    info = _PodAffinity(
        no_required=required_raw is None and pod.spec.get("nodeSelector") is None,
        node_selector=tuple(sorted(pod.node_selector.items())),
        required=pod.required_affinity,
        node_names=_names_from_terms(required_raw.get("nodeSelectorTerms") or ()) if required_raw else None,
        has_preferred=node_aff.get(_PREFERRED) is not None,
    )
    pod.extra[key] = info
    return info


def _names_from_terms(terms: Sequence[Mapping[str, Any]]) -> frozenset[str] | None:
    """getPreFilterResult: the union over terms of the names each term's ``metadata.name In`` fields
    allow; None when some term does not restrict names (terms are ORed)."""
    if not terms:
        return None
    names: set[str] = set()
    for t in terms:
        term_names: set[str] | None = None
        for r in t.get("matchFields") or ():
            if r.get("key") == "metadata.name" and r.get("operator") == "In":
                s = {str(v) for v in r.get("values") or ()}
                term_names = s if term_names is None else term_names & s
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names)


def _node_matches_pod(info: _PodAffinity, node: Node) -> bool:
    """RequiredNodeAffinity.Match for one node (used by queueing hints)."""
    if any(node.labels.get(k) != v for k, v in info.node_selector):
        return False
    return info.required is None or info.required.matches(node.labels, node.name)


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    NAME: ClassVar[str] = NAME
    NODE_LOCAL: ClassVar[bool] = True
    Args: ClassVar[type[PluginArgs]] = NodeAffinityArgs

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        added = compile_added_affinity(args.added_affinity or {})
        self.added_required = added.required
        self.added_preferred = added.preferred
        self._masks = MaskCache()

    # ------------------------------------------------------------------ filter
    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        info = _pod_affinity(pod)
        if info.no_required and self.added_required is None:
            return None, Status(Code.SKIP)
        state.write(_PREFILTER_KEY, info)
        if info.node_names is None:
            return None, None
        if not info.node_names:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)
        return PreFilterResult(info.node_names), None

    def _pod_mask(self, snap: Snapshot, info: _PodAffinity) -> np.ndarray:
        mask = labels_mask(snap, dict(info.node_selector), self._masks)
        if info.required is not None:
            mask = mask & selector_mask(snap, info.required, self._masks)
        return mask

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        info: _PodAffinity | None = state.get(_PREFILTER_KEY)
        if info is None:
            # PreFilter disabled (or Skip): evaluate from the pod itself, as upstream falls back.
            info = _pod_affinity(pod)
        enforced_fail = None
        if self.added_required is not None:
            enforced_fail = ~selector_mask(snap, self.added_required, self._masks)[slots]
        pod_fail = ~self._pod_mask(snap, info)[slots]
        if enforced_fail is not None:
            pod_fail &= ~enforced_fail
        else:
            enforced_fail = np.zeros(len(slots), dtype=bool)
        fail = enforced_fail | pod_fail
        if not fail.any():
            return None
        codes = np.where(fail, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), np.int8(0)).astype(np.int8)
        reason = np.where(enforced_fail, 0, 1).astype(np.int32)
        return Verdicts(codes, reason, [(ERR_REASON_ENFORCED,), (ERR_REASON_POD,)])

    # ------------------------------------------------------------------ score
    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        if not _pod_affinity(pod).has_preferred and not self.added_preferred:
            return Status(Code.SKIP)
        state.write(_PRESCORE_KEY, tuple(t for t in pod.preferred_affinity if t.term is not None))
        return None

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        terms: tuple[PreferredTerm, ...] | None = state.get(_PRESCORE_KEY)
        if terms is None:
            terms = tuple(t for t in pod.preferred_affinity if t.term is not None)
        out = np.zeros(len(slots), dtype=np.int64)
        for t in (*self.added_preferred, *terms):
            assert t.term is not None
            out += np.where(term_mask(snap, t.term, self._masks)[slots], t.weight, 0)
        return out

    def normalize_score(
        self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        return default_normalize_score(scores, reverse=False)

    # ------------------------------------------------------------------ requeueing
    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            EventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL), self.hint_node_change
            ),
        )

    def hint_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> Hint:
        """isSchedulableAfterNodeChange: queue when the node now matches and did not before."""
        if new is None:
            return Hint.SKIP
        if self.added_required is not None and not self.added_required.matches(new.labels, new.name):
            return Hint.SKIP
        info = _pod_affinity(pod)
        if not _node_matches_pod(info, new):
            return Hint.SKIP
        if old is None:
            return Hint.QUEUE
        return Hint.SKIP if _node_matches_pod(info, old) else Hint.QUEUE
