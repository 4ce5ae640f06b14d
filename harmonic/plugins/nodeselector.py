"""Node selectors evaluated over every node slot at once.

Requirements are answered from the snapshot's label columns (``Snapshot.label``) and node names
(``Snapshot.names``), so a selector costs a handful of numpy operations whatever the number of nodes.
Masks depend only on node labels and names, so they are cached per snapshot until a node changes
(``Snapshot.node_generation``): pods sharing a selector (replicas of one workload) share the mask.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from harmonic.api.selectors import (
    DOES_NOT_EXIST,
    EXISTS,
    GT,
    IN,
    LT,
    NOT_IN,
    NodeSelector,
    NodeSelectorTerm,
    Requirement,
)
from harmonic.framework.snapshot import Snapshot

_CACHE_LIMIT = 512


_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]"
_LABEL_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_NAME}$")
_LABEL_VALUE = re.compile(rf"^({_NAME})?$")


@lru_cache(maxsize=4096)
def _parses(r: Requirement) -> bool:
    """Whether labels.NewRequirement accepts ``r``: a qualified key and valid label values. Upstream
    keeps a term that does not parse and lets it match no node (kept for pods created before the
    API validated this)."""
    if not _LABEL_KEY.match(r.key) or len(r.key.rpartition("/")[0]) > 253:
        return False
    return r.op not in (IN, NOT_IN) or all(_LABEL_VALUE.match(v) for v in r.values)


def _label_mask(snap: Snapshot, r: Requirement) -> np.ndarray:
    if not _parses(r):
        return np.zeros(snap.capacity, dtype=bool)
    col = snap.label(r.key)
    op = r.op
    if op == IN:
        return col.in_mask(r.values)
    if op == NOT_IN:
        out: np.ndarray = ~col.in_mask(r.values)
        return out
    if op == EXISTS:
        return col.codes >= 0
    if op == DOES_NOT_EXIST:
        return col.codes < 0
    values, ok = col.integer_values()
    if op == GT:
        return ok & (values > r.bound)
    if op == LT:
        return ok & (values < r.bound)
    raise ValueError(f"unsupported node selector operator {op!r}")


def _field_mask(snap: Snapshot, r: Requirement) -> np.ndarray:
    # Only metadata.name with In/NotIn and one value survives parsing (API validation rules).
    value = next(iter(r.values))
    names = snap.names()
    hit = np.asarray(names == value, dtype=bool)
    if r.op == NOT_IN:
        # Empty slots have the name "" and no node: they never match anything.
        return ~hit & (names != "")
    return hit


class MaskCache:
    """Masks over all slots keyed by a hashable selector, valid for one node generation."""

    __slots__ = ("_generation", "_masks")

    def __init__(self) -> None:
        self._masks: dict[Any, np.ndarray] = {}
        self._generation = -1

    def get(self, snap: Snapshot, key: Any) -> np.ndarray | None:
        if self._generation != snap.node_generation or len(self._masks) > _CACHE_LIMIT:
            self._masks.clear()
            self._generation = snap.node_generation
        return self._masks.get(key)

    def put(self, key: Any, mask: np.ndarray) -> np.ndarray:
        self._masks[key] = mask
        return mask


def term_mask(snap: Snapshot, term: NodeSelectorTerm, cache: MaskCache | None = None) -> np.ndarray:
    """Slots whose node matches every requirement of ``term``."""
    if cache is not None:
        hit = cache.get(snap, term)
        if hit is not None:
            return hit
    mask = np.ones(snap.capacity, dtype=bool)
    for r in term.expressions:
        mask &= _label_mask(snap, r)
    for r in term.fields:
        mask &= _field_mask(snap, r)
    mask &= snap.live
    return cache.put(term, mask) if cache is not None else mask


def selector_mask(snap: Snapshot, selector: NodeSelector, cache: MaskCache | None = None) -> np.ndarray:
    """Slots whose node matches any term of ``selector`` (none when it has no terms)."""
    if cache is not None:
        hit = cache.get(snap, selector)
        if hit is not None:
            return hit
    mask = np.zeros(snap.capacity, dtype=bool)
    for term in selector.terms:
        mask |= term_mask(snap, term)
    return cache.put(selector, mask) if cache is not None else mask


def labels_mask(snap: Snapshot, labels: Mapping[str, str], cache: MaskCache | None = None) -> np.ndarray:
    """Slots whose node has every ``key=value`` of ``labels`` (a pod's ``spec.nodeSelector``)."""
    key = ("labels", tuple(sorted(labels.items())))
    if cache is not None:
        hit = cache.get(snap, key)
        if hit is not None:
            return hit
    mask = snap.live.copy()
    for k, v in labels.items():
        mask &= snap.label(k).codes == snap.label(k).vocab.get(v, -2)
    return cache.put(key, mask) if cache is not None else mask
