"""PreScore / Score / NormalizeScore of InterPodAffinity (upstream ``scoring.go``).

PreScore builds upstream's topology score — per topology key and domain, the sum of:

- for each preferred affinity (anti-affinity) term of the incoming pod, +weight (-weight) per existing
  pod matching it;
- for each existing pod's required affinity term matching the incoming pod, +``hardPodAffinityWeight``
  (when positive);
- for each existing pod's preferred affinity (anti-affinity) term matching the incoming pod, +weight
  (-weight);

each counted in the domain of the node the existing pod runs on, when that node has the term's key. The
incoming pod's terms count pods through ``PodCounts``, existing pods' terms come from the
``ExistingTerms`` index; nothing walks the pods. With no term matched anywhere the map is empty and
PreScore returns Skip. So does it, before looking at anything, when ``ignorePreferredTermsOfExistingPods``
is set and the pod has no preferred terms of its own.

A node's score is the sum over keys of its domain's value; NormalizeScore maps the scores linearly to
0..100 between their minimum and maximum (all 0 when they are equal), truncating as Go's int64() does.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harmonic.api.pod import Pod
from harmonic.framework.interface import MAX_NODE_SCORE
from harmonic.framework.podcounts import PodCounts
from harmonic.framework.snapshot import Snapshot
from harmonic.plugins.interpodaffinity.domains import DomainMapper, gather
from harmonic.plugins.interpodaffinity.filtering import term_match
from harmonic.plugins.interpodaffinity.index import HARD, PREFERRED, PREFERRED_TERMS, ExistingTerms
from harmonic.plugins.interpodaffinity.terms import WeightedTerm

I64 = np.int64


class PreScoreState:
    """Per topology key: the label codes per slot and the score of each domain."""

    __slots__ = ("codes", "scores")

    def __init__(self) -> None:
        self.codes: list[np.ndarray] = []
        self.scores: list[np.ndarray] = []


class _Accumulator:
    """Per-slot weights per key, and whether any term counted on a node that has the key."""

    def __init__(self, domains: DomainMapper) -> None:
        self.domains = domains
        self.weights: dict[str, np.ndarray] = {}
        self.matched = False

    def add(self, key: str, weights: np.ndarray, occurrences: np.ndarray) -> None:
        if not self.matched and self.domains.any_on_keyed_nodes(key, occurrences):
            self.matched = True
        prev = self.weights.get(key)
        self.weights[key] = weights.astype(I64, copy=True) if prev is None else prev + weights


def compute(
    snap: Snapshot,
    domains: DomainMapper,
    pod: Pod,
    preferred_affinity: tuple[WeightedTerm, ...],
    preferred_anti: tuple[WeightedTerm, ...],
    ns_labels: Mapping[str, str],
    hard_weight: int,
) -> PreScoreState | None:
    """The topology score over all nodes; ``None`` when no term matched (PreScore's Skip)."""
    acc = _Accumulator(domains)
    if preferred_affinity or preferred_anti:
        counts = PodCounts.of(snap)
        for sign, terms in ((1, preferred_affinity), (-1, preferred_anti)):
            for w in terms:
                matching = counts.counts(term_match(w.term))
                acc.add(w.term.topology_key, matching * (sign * w.weight), matching)
    index = ExistingTerms.of(snap)
    if hard_weight > 0 and index.has(HARD):
        for term, arr in index.matching(HARD, pod, ns_labels):
            acc.add(term.topology_key, arr * hard_weight, arr)
    if index.has(PREFERRED):
        for term, arr in index.matching(PREFERRED, pod, ns_labels):
            acc.add(term.topology_key, arr, index.array(PREFERRED_TERMS, term))
    if not acc.matched:
        return None
    state = PreScoreState()
    for key, weights in acc.weights.items():
        col, _, _ = domains.column(key)
        state.codes.append(col.codes)
        state.scores.append(domains.sums(key, weights))
    return state


def score(state: PreScoreState, slots: np.ndarray) -> np.ndarray:
    total = np.zeros(len(slots), dtype=I64)
    for codes, domain in zip(state.codes, state.scores, strict=True):
        total += gather(domain, codes[slots])
    return total


def normalize(scores: np.ndarray) -> np.ndarray:
    """Min-max to 0..100: float64(MaxNodeScore) * (float64(s-min) / float64(max-min)), truncated."""
    if len(scores) == 0:
        return scores
    lo, hi = int(scores.min()), int(scores.max())
    if hi - lo <= 0:
        return np.zeros(len(scores), dtype=I64)
    frac = (scores - lo).astype(np.float64) / float(hi - lo)
    return (float(MAX_NODE_SCORE) * frac).astype(I64)
