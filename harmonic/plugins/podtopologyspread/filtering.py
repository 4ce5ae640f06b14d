"""PreFilter / Filter of PodTopologySpread for DoNotSchedule constraints (upstream ``filtering.go``).

PreFilter counts, per constraint, the pods matching its selector in every topology domain of the
eligible nodes — nodes carrying all the constraints' topology keys and, per the constraint's inclusion
policies, matching the pod's required node affinity (Honor by default) and tolerating its NoSchedule /
NoExecute taints (Ignore by default). The per-node counts come from ``PodCounts`` (maintained
incrementally), the per-domain sums from one ``np.bincount`` over the topology label's codes.

Filter then rejects, constraint by constraint in order, a node that lacks the topology key
(UnschedulableAndUnresolvable) or where ``count(domain) + selfMatch - globalMin > maxSkew``
(Unschedulable). ``globalMin`` is the least count over eligible domains, or 0 when there are fewer
than ``minDomains`` of them. A domain no eligible node belongs to counts 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harmonic.api.pod import Pod
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code
from harmonic.framework.verdicts import Verdicts
from harmonic.plugins.podtopologyspread.constraints import (
    Constraint,
    NodeInclusion,
    node_included,
    node_labels_have_keys,
    per_slot_counts,
)

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
#: The global minimum when no domain is eligible (upstream initialises it to math.MaxInt32).
NO_DOMAIN_MIN = 2**31 - 1
_REASONS = [(), (ERR_REASON_NODE_LABEL_NOT_MATCH,), (ERR_REASON_CONSTRAINTS_NOT_MATCH,)]


@dataclass(slots=True)
class DomainCounts:
    """Matching pods per domain of one constraint, indexed by the topology label's value code."""

    counts: np.ndarray
    #: Domains with at least one eligible node (the keys of upstream's TpValueToMatchNum).
    present: np.ndarray
    min_match: int

    def clone(self) -> DomainCounts:
        return DomainCounts(self.counts.copy(), self.present.copy(), self.min_match)

    @property
    def num_domains(self) -> int:
        return int(np.count_nonzero(self.present))

    def add(self, code: int, delta: int) -> None:
        if code >= len(self.counts):
            grow = code + 1 - len(self.counts)
            self.counts = np.concatenate((self.counts, np.zeros(grow, dtype=np.int64)))
            self.present = np.concatenate((self.present, np.zeros(grow, dtype=bool)))
        self.counts[code] += delta
        self.present[code] = True
        self.min_match = int(self.counts[self.present].min())


def domain_counts(codes: np.ndarray, weights: np.ndarray | None, num_values: int) -> DomainCounts:
    """Sum ``weights`` (matching pods per node) by domain code; ``codes`` are the eligible nodes' codes."""
    present = np.zeros(num_values, dtype=bool)
    present[codes] = True
    if weights is None or len(codes) == 0:
        counts = np.zeros(num_values, dtype=np.int64)
    else:
        counts = np.bincount(codes, weights=weights, minlength=num_values).astype(np.int64)
    min_match = int(counts[present].min()) if present.any() else NO_DOMAIN_MIN
    return DomainCounts(counts, present, min_match)


class PreFilterState:
    """What PreFilter computed for one pod: per constraint, the topology codes per slot and domain counts."""

    __slots__ = ("codes", "constraints", "domains")

    def __init__(
        self, constraints: tuple[Constraint, ...], codes: list[np.ndarray], domains: list[DomainCounts]
    ) -> None:
        self.constraints = constraints
        #: Label value code of each slot for each constraint's topology key (-1: key absent).
        self.codes = codes
        self.domains = domains

    def clone(self) -> PreFilterState:
        return PreFilterState(self.constraints, self.codes, [d.clone() for d in self.domains])

    def min_match(self, i: int) -> int:
        d = self.domains[i]
        if d.num_domains < self.constraints[i].min_domains:
            return 0
        return d.min_match


def compute(snap: Snapshot, pod: Pod, constraints: tuple[Constraint, ...]) -> PreFilterState:
    """calPreFilterState over all nodes of the snapshot."""
    order = snap.order
    cols = [snap.label(c.topology_key) for c in constraints]
    has_keys = np.ones(len(order), dtype=bool)
    for col in cols:
        has_keys &= col.codes[order] >= 0
    candidates = order[has_keys]
    inclusion = NodeInclusion(snap, pod)
    domains = []
    for c, col in zip(constraints, cols, strict=True):
        slots = inclusion.restrict(candidates, c)
        counts = per_slot_counts(snap, pod, c)
        domains.append(
            domain_counts(col.codes[slots], None if counts is None else counts[slots], len(col.vocab))
        )
    return PreFilterState(constraints, [col.codes for col in cols], domains)


def filter_nodes(state: PreFilterState, pod: Pod, slots: np.ndarray) -> Verdicts | None:
    """Filter for a batch of slots: the first failing constraint (in order) decides a node's status."""
    n = len(slots)
    code = np.zeros(n, dtype=np.int8)
    reason = np.zeros(n, dtype=np.int32)
    decided = np.zeros(n, dtype=bool)
    for i, c in enumerate(state.constraints):
        tp = state.codes[i][slots]
        missing = (tp < 0) & ~decided
        code[missing] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        reason[missing] = 1
        decided |= missing
        counts = state.domains[i].counts
        # Unknown codes (key absent, or a domain no eligible node has) read the trailing 0.
        padded = np.append(counts, 0)
        match_num = padded[np.where((tp >= 0) & (tp < len(counts)), tp, len(counts))]
        self_match = 1 if c.selector.matches(pod.labels) else 0
        skewed = (match_num + self_match - state.min_match(i) > c.max_skew) & ~decided
        code[skewed] = Code.UNSCHEDULABLE
        reason[skewed] = 2
        decided |= skewed
    if not decided.any():
        return None
    return Verdicts(code, reason, _REASONS)


def update_with_pod(
    state: PreFilterState, snap: Snapshot, preemptor: Pod, pod: Pod, slot: int, delta: int
) -> None:
    """AddPod / RemovePod: account ``pod`` as added to (``delta`` 1) or removed from (-1) ``slot``."""
    node = snap.nodes[slot] if slot < len(snap.nodes) else None
    if pod.namespace != preemptor.namespace or node is None:
        return
    if not node_labels_have_keys(node.labels, state.constraints):
        return
    for i, c in enumerate(state.constraints):
        if not c.selector.matches(pod.labels) or not node_included(preemptor, node, c):
            continue
        state.domains[i].add(int(state.codes[i][slot]), delta)
