"""Arithmetic shared by scoring plugins, with Go's integer semantics."""

from __future__ import annotations

import numpy as np

from harmonic.framework.interface import MAX_NODE_SCORE


def go_div(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Integer division truncating toward zero, as Go's ``/`` on int64 (numpy's ``//`` floors)."""
    q = np.abs(a) // np.abs(b)
    return np.where((np.sign(a) * np.sign(b)) < 0, -q, q)


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
