"""Arithmetic shared by scoring plugins, with Go's integer semantics."""

from __future__ import annotations

import numpy as np

from harmonic.framework.interface import MAX_NODE_SCORE


def go_div(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Integer division truncating toward zero, as Go's ``/`` on int64 (numpy's ``//`` floors)."""
    q = np.abs(a) // np.abs(b)
    return np.where((np.sign(a) * np.sign(b)) < 0, -q, q)


#: Above this a capacity times 100 leaves int64 (kube-apiserver stores capacities up to 2^63 - 1).
_EXACT_LIMIT = (2**63 - 1) // MAX_NODE_SCORE


def share(amount: np.ndarray, capacity: np.ndarray, scale: int = MAX_NODE_SCORE) -> np.ndarray:
    """``amount * scale // capacity`` for ``0 <= amount <= capacity`` (capacity >= 1), without leaving
    int64. Exact (integer) for every capacity below 2^63 / 100, which is every real node; above it
    the product would wrap (to a negative score that fails every pod, as it would in Go), so those
    entries are computed in floating point, which is as exact as the capacity's own precision."""
    if capacity.max(initial=0) <= _EXACT_LIMIT:
        out: np.ndarray = amount * scale // capacity
        return out
    big = capacity > _EXACT_LIMIT
    exact = np.where(big, 0, amount) * scale // capacity
    approx = np.floor(amount.astype(np.float64) * scale / capacity.astype(np.float64))
    return np.where(big, np.clip(approx, 0, scale).astype(np.int64), exact)


def default_normalize_score(
    scores: np.ndarray, reverse: bool, max_priority: int = MAX_NODE_SCORE
) -> np.ndarray:
    """pluginhelper.DefaultNormalizeScore: scale to 0..max by the highest score; optionally reversed."""
    if len(scores) == 0:
        return scores
    top = int(scores.max())
    if top == 0:
        return np.full_like(scores, max_priority) if reverse else scores
    out = max_priority * scores // top
    return max_priority - out if reverse else out
