"""Node-side predicates evaluated over all snapshot slots at once (boolean masks of length ``capacity``).

- ``required_affinity_mask``: nodes matching a pod's ``spec.nodeSelector`` and required node affinity
  (component-helpers ``nodeaffinity.GetRequiredNodeAffinity(pod).Match``);
- ``untolerated_mask``: nodes with a taint of the given effects the tolerations do not tolerate
  (``v1helper.FindMatchingUntoleratedTaint``), evaluated once per distinct taint list.

Label requirements are answered from the snapshot's label columns, so the cost is a few vector
operations per requirement, independent of how many pods exist.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from harmonic.api.pod import Pod
from harmonic.api.selectors import DOES_NOT_EXIST, EXISTS, GT, IN, LT, NOT_IN, NodeSelector, Requirement
from harmonic.api.taints import Toleration, tolerated
from harmonic.framework.snapshot import Snapshot


def requirement_mask(snap: Snapshot, req: Requirement) -> np.ndarray:
    """Slots whose node labels satisfy ``req`` (Requirement.matches, vectorised)."""
    col = snap.label(req.key)
    if req.op == IN:
        return col.in_mask(req.values)
    if req.op == NOT_IN:
        return ~col.in_mask(req.values)
    if req.op == EXISTS:
        return col.codes >= 0
    if req.op == DOES_NOT_EXIST:
        return col.codes < 0
    values, ok = col.integer_values()
    if req.op == GT:
        return ok & (values > req.bound)
    if req.op == LT:
        return ok & (values < req.bound)
    raise ValueError(f"unknown operator {req.op!r}")


def _field_mask(snap: Snapshot, req: Requirement) -> np.ndarray:
    """``metadata.name`` requirements (matchFields): In / NotIn on the node name."""
    hit = np.isin(snap.names(), list(req.values))
    return hit if req.op == IN else ~hit


def node_selector_mask(snap: Snapshot, selector: NodeSelector) -> np.ndarray:
    """Slots matching any term of ``selector`` (all of a term's expressions and fields)."""
    out = np.zeros(snap.capacity, dtype=bool)
    for term in selector.terms:
        m = np.ones(snap.capacity, dtype=bool)
        for r in term.expressions:
            m &= requirement_mask(snap, r)
        for r in term.fields:
            m &= _field_mask(snap, r)
        out |= m
    return out


def required_affinity_mask(snap: Snapshot, pod: Pod) -> np.ndarray:
    """Slots matching the pod's node selector map and its required node affinity (both, when set)."""
    m = np.ones(snap.capacity, dtype=bool)
    for key, value in pod.node_selector.items():
        m &= snap.label(key).in_mask((value,))
    if pod.required_affinity is not None:
        m &= node_selector_mask(snap, pod.required_affinity)
    return m


def untolerated_mask(
    snap: Snapshot, tolerations: Iterable[Toleration], effects: tuple[str, ...]
) -> np.ndarray:
    """Slots whose node has a taint with one of ``effects`` that ``tolerations`` do not tolerate."""
    tols = tuple(tolerations)
    bad = np.fromiter(
        (any(t.effect in effects and not tolerated(tols, t) for t in taints) for taints in snap.taint_sets),
        dtype=bool,
        count=len(snap.taint_sets),
    )
    if not bad.any():
        return np.zeros(snap.capacity, dtype=bool)
    return bad[snap.taint_set]
