"""PreScore / Score / NormalizeScore of PodTopologySpread for ScheduleAnyway constraints (``scoring.go``).

PreScore looks at the nodes that passed filtering. With the pod's own constraints, or non-system
defaults, a filtered node missing any topology key is *ignored* (scored 0); with the system defaults
such a node still counts, its missing label read as the value "". Each constraint gets a weight
``log(size + 2)`` where size is its number of distinct domains among the kept filtered nodes (for
``kubernetes.io/hostname``: the number of kept nodes). Matching pods are then summed per domain over
all nodes that carry the keys (when required) and pass the constraint's inclusion policies; hostname
constraints count per node instead, at Score.

A node scores ``round(sum over constraints with its key of count(domain) * weight + maxSkew - 1)``;
NormalizeScore maps the raw scores to ``100 * (max + min - s) / max`` over non-ignored nodes (fewer
matching pods, higher score), 100 for all when max is 0, and 0 for ignored nodes.
"""

from __future__ import annotations

import numpy as np

from harmonic.api.pod import Pod
from harmonic.framework.interface import MAX_NODE_SCORE
from harmonic.framework.snapshot import LabelColumn, Snapshot
from harmonic.plugins.podtopologyspread.args import HOSTNAME_KEY
from harmonic.plugins.podtopologyspread.constraints import Constraint, NodeInclusion, per_slot_counts


def go_round(x: np.ndarray) -> np.ndarray:
    """Go's math.Round: to the nearest integer, halves away from zero (exact, unlike floor(x + 0.5))."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _domain_codes(col: LabelColumn) -> tuple[np.ndarray, int]:
    """Label codes per slot with a missing label mapped to the code of the value "" (a domain of its own
    when no node has the label set to ""), and the number of codes."""
    empty = col.vocab.get("")
    n = len(col.vocab)
    if empty is None:
        empty, n = n, n + 1
    return np.where(col.codes >= 0, col.codes, empty), n


class PreScoreState:
    """Per constraint: weight, topology codes and either per-domain or (hostname) per-node counts."""

    __slots__ = ("constraints", "dom_codes", "dom_counts", "host_counts", "ignored", "label_codes", "weights")

    def __init__(self, constraints: tuple[Constraint, ...], capacity: int) -> None:
        self.constraints = constraints
        #: Slots of filtered nodes that miss a required topology key (score 0).
        self.ignored = np.zeros(capacity, dtype=bool)
        self.weights: list[float] = []
        self.label_codes: list[np.ndarray] = []
        self.dom_codes: list[np.ndarray | None] = []
        self.dom_counts: list[np.ndarray | None] = []
        self.host_counts: list[np.ndarray | None] = []


def compute(
    snap: Snapshot, pod: Pod, constraints: tuple[Constraint, ...], filtered: np.ndarray, require_all: bool
) -> PreScoreState:
    """initPreScoreState plus the pod counts of PreScore."""
    state = PreScoreState(constraints, snap.capacity)
    cols = [snap.label(c.topology_key) for c in constraints]
    order = snap.order
    if require_all:
        missing = np.zeros(len(filtered), dtype=bool)
        all_keys = np.ones(len(order), dtype=bool)
        for col in cols:
            missing |= col.codes[filtered] < 0
            all_keys &= col.codes[order] >= 0
        state.ignored[filtered[missing]] = True
        kept = filtered[~missing]
        counted = order[all_keys]
    else:
        kept, counted = filtered, order
    inclusion = NodeInclusion(snap, pod)
    for c, col in zip(constraints, cols, strict=True):
        state.label_codes.append(col.codes)
        if c.topology_key == HOSTNAME_KEY:
            state.weights.append(float(np.log(len(kept) + 2)))
            state.dom_codes.append(None)
            state.dom_counts.append(None)
            state.host_counts.append(per_slot_counts(snap, pod, c))
            continue
        dom, n = _domain_codes(col)
        present = np.zeros(n, dtype=bool)
        present[dom[kept]] = True
        state.weights.append(float(np.log(int(np.count_nonzero(present)) + 2)))
        per_node = per_slot_counts(snap, pod, c)
        if per_node is None:
            totals = np.zeros(n, dtype=np.int64)
        else:
            slots = inclusion.restrict(counted, c)
            totals = np.bincount(dom[slots], weights=per_node[slots], minlength=n).astype(np.int64)
        state.dom_codes.append(dom)
        state.dom_counts.append(totals)
        state.host_counts.append(None)
    return state


def score(state: PreScoreState, slots: np.ndarray) -> np.ndarray:
    total = np.zeros(len(slots), dtype=np.float64)
    for i, c in enumerate(state.constraints):
        has = state.label_codes[i][slots] >= 0
        host = state.host_counts[i]
        dom_counts = state.dom_counts[i]
        if dom_counts is None:
            cnt = host[slots] if host is not None else np.zeros(len(slots), dtype=np.int64)
        else:
            dom = state.dom_codes[i]
            assert dom is not None
            cnt = dom_counts[dom[slots]]
        # float64(cnt)*weight + float64(maxSkew-1), added per constraint in order, as upstream does.
        term = cnt.astype(np.float64) * state.weights[i] + float(c.max_skew - 1)
        total = total + np.where(has, term, 0.0)
    out = go_round(total).astype(np.int64)
    out[state.ignored[slots]] = 0
    return out


def normalize(state: PreScoreState, slots: np.ndarray, scores: np.ndarray) -> np.ndarray:
    ignored = state.ignored[slots]
    valid = scores[~ignored]
    out = np.zeros(len(scores), dtype=np.int64)
    if len(valid) == 0:
        return out
    lo, hi = int(valid.min()), int(valid.max())
    if hi == 0:
        out[~ignored] = MAX_NODE_SCORE
    else:
        out[~ignored] = MAX_NODE_SCORE * (hi + lo - valid) // hi
    return out
