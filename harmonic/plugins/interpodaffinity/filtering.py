"""PreFilter / Filter / AddPod / RemovePod of InterPodAffinity (upstream ``filtering.go``).

PreFilter counts, per topology key and domain (node label value), three things upstream keeps as
``(key, value) -> count`` maps:

- ``existing``: required anti-affinity terms of existing pods that match the incoming pod;
- ``affinity``: existing pods that match *all* the incoming pod's required affinity terms, once per term;
- ``anti``: existing pods matching each of the incoming pod's required anti-affinity terms.

The first comes from the ``ExistingTerms`` index, the other two from ``PodCounts`` (per-slot counts of
pods matching a selector, kept current by the snapshot); per-domain sums are one ``np.bincount`` over the
key's label codes. Nothing walks the pods of the cluster.

Filter, node by node in upstream's order: the node must carry every affinity topology key and sit in a
domain with a matching pod — unless no pod anywhere matches and the pod matches its own terms (the first
pod of a group with self-affinity) — else UnschedulableAndUnresolvable ``node(s) didn't match pod
affinity rules``; no domain of the node may hold a pod matching an anti-affinity term
(Unschedulable, ``node(s) didn't match pod anti-affinity rules``); and no existing pod's anti-affinity
term may cover the node (Unschedulable, ``node(s) didn't satisfy existing pods anti-affinity rules``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harmonic.api.pod import Pod
from harmonic.api.selectors import MATCH_NOTHING, LabelSelector, Requirement
from harmonic.framework.podcounts import PodCounts, PodMatch
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code
from harmonic.framework.verdicts import Verdicts
from harmonic.plugins.interpodaffinity.domains import DomainMapper, gather
from harmonic.plugins.interpodaffinity.index import ANTI, ExistingTerms
from harmonic.plugins.interpodaffinity.terms import NO_LABELS, AffinityTerm, matches_all, pod_terms

ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
_REASONS = [
    (),
    (ERR_REASON_AFFINITY_RULES_NOT_MATCH,),
    (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,),
    (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,),
]
I64 = np.int64


def term_match(term: AffinityTerm) -> PodMatch:
    """The pods a merged incoming term selects (terminating pods included, as upstream counts them)."""
    return PodMatch(None if term.any_namespace else term.namespaces, term.selector, skip_terminating=False)


def all_terms_match(terms: tuple[AffinityTerm, ...]) -> PodMatch:
    """The pods matching every term at once: namespaces intersected, selectors ANDed."""
    namespaces: frozenset[str] | None = None
    requirements: list[Requirement] = []
    nothing = False
    for t in terms:
        if not t.any_namespace:
            namespaces = t.namespaces if namespaces is None else namespaces & t.namespaces
        nothing |= t.selector.nothing
        requirements.extend(t.selector.requirements)
    selector = MATCH_NOTHING if nothing else LabelSelector(tuple(requirements))
    return PodMatch(namespaces, selector, skip_terminating=False)


class PreFilterState:
    """Domain counts per topology key, as upstream's three topology-pair maps; cloned for what-ifs."""

    __slots__ = (
        "affinity",
        "affinity_keys",
        "affinity_terms",
        "anti",
        "anti_terms",
        "existing",
        "ns_labels",
        "self_match",
    )

    def __init__(
        self,
        pod: Pod,
        affinity_terms: tuple[AffinityTerm, ...],
        anti_terms: tuple[AffinityTerm, ...],
        ns_labels: Mapping[str, str],
    ) -> None:
        #: The incoming pod's required terms, namespace selectors merged.
        self.affinity_terms = affinity_terms
        self.anti_terms = anti_terms
        #: Labels of the incoming pod's namespace (for existing pods' namespace selectors).
        self.ns_labels = ns_labels
        self.affinity_keys = tuple(dict.fromkeys(t.topology_key for t in affinity_terms))
        #: The pod matches all its own affinity terms (the first-pod-of-a-group rule).
        self.self_match = matches_all(affinity_terms, pod)
        self.affinity: dict[str, np.ndarray] = {}
        self.anti: dict[str, np.ndarray] = {}
        self.existing: dict[str, np.ndarray] = {}

    def clone(self) -> PreFilterState:
        c = PreFilterState.__new__(PreFilterState)
        c.affinity_terms, c.anti_terms, c.ns_labels = self.affinity_terms, self.anti_terms, self.ns_labels
        c.affinity_keys, c.self_match = self.affinity_keys, self.self_match
        c.affinity = {k: v.copy() for k, v in self.affinity.items()}
        c.anti = {k: v.copy() for k, v in self.anti.items()}
        c.existing = {k: v.copy() for k, v in self.existing.items()}
        return c

    @property
    def skip(self) -> bool:
        """PreFilter's Skip: no existing pod's anti-affinity covers any domain and the pod has no
        required terms of its own."""
        return (
            not self.affinity_terms
            and not self.anti_terms
            and not any(np.any(d != 0) for d in self.existing.values())
        )


def _add_per_slot(acc: dict[str, np.ndarray], key: str, arr: np.ndarray, times: int = 1) -> None:
    prev = acc.get(key)
    contribution = arr if times == 1 else arr * times
    acc[key] = contribution.astype(I64, copy=True) if prev is None else prev + contribution


def compute(
    snap: Snapshot,
    domains: DomainMapper,
    pod: Pod,
    affinity_terms: tuple[AffinityTerm, ...],
    anti_terms: tuple[AffinityTerm, ...],
    ns_labels: Mapping[str, str],
) -> PreFilterState:
    """The three domain-count maps over all nodes of the snapshot."""
    state = PreFilterState(pod, affinity_terms, anti_terms, ns_labels)
    index = ExistingTerms.of(snap)
    if index.has(ANTI):
        per_slot: dict[str, np.ndarray] = {}
        for term, arr in index.matching(ANTI, pod, ns_labels):
            _add_per_slot(per_slot, term.topology_key, arr)
        state.existing = {k: domains.sums(k, v) for k, v in per_slot.items()}
    if not affinity_terms and not anti_terms:
        return state
    counts = PodCounts.of(snap)
    if affinity_terms:
        matching_all = counts.counts(all_terms_match(affinity_terms))
        per_slot = {}
        for t in affinity_terms:
            _add_per_slot(per_slot, t.topology_key, matching_all)
        state.affinity = {k: domains.sums(k, v) for k, v in per_slot.items()}
    if anti_terms:
        per_slot = {}
        for t in anti_terms:
            _add_per_slot(per_slot, t.topology_key, counts.counts(term_match(t)))
        state.anti = {k: domains.sums(k, v) for k, v in per_slot.items()}
    return state


def filter_nodes(state: PreFilterState, domains: DomainMapper, slots: np.ndarray) -> Verdicts | None:
    """Filter for a batch of slots; the first failing check (affinity, anti-affinity, existing pods'
    anti-affinity) decides a node's status."""
    n = len(slots)
    reason = np.zeros(n, dtype=np.int32)
    if state.affinity_terms:
        missing = np.zeros(n, dtype=bool)
        found = np.ones(n, dtype=bool)
        for key in state.affinity_keys:
            col, _, _ = domains.column(key)
            codes = col.codes[slots]
            missing |= codes < 0
            found &= gather(state.affinity[key], codes) > 0
        if not (state.self_match and not any(np.any(d != 0) for d in state.affinity.values())):
            missing |= ~found
        reason[missing] = 1
    for checks, r in ((state.anti, 2), (state.existing, 3)):
        for key, dom in checks.items():
            if not np.any(dom > 0):
                continue
            col, _, _ = domains.column(key)
            hit = (gather(dom, col.codes[slots]) > 0) & (reason == 0)
            reason[hit] = r
    if not reason.any():
        return None
    code = np.where(
        reason == 1,
        np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        np.where(reason > 0, np.int8(Code.UNSCHEDULABLE), np.int8(0)),
    ).astype(np.int8)
    return Verdicts(code, reason, _REASONS)


def _bump(table: dict[str, np.ndarray], key: str, code: int, delta: int) -> None:
    dom = table.get(key)
    if dom is None or code >= len(dom):
        grown = np.zeros(code + 1 if dom is None else max(code + 1, len(dom)), dtype=I64)
        if dom is not None:
            grown[: len(dom)] = dom
        dom = table[key] = grown
    dom[code] += delta


def update_with_pod(
    state: PreFilterState, snap: Snapshot, incoming: Pod, other: Pod, slot: int, delta: int
) -> None:
    """AddPod / RemovePod: account ``other`` as added to (``delta`` 1) or removed from (-1) ``slot``."""
    node = snap.nodes[slot] if slot < len(snap.nodes) else None
    if node is None:
        return
    labels = node.labels
    for t in pod_terms(other).required_anti:
        value = labels.get(t.topology_key)
        if value is not None and t.matches(incoming, state.ns_labels):
            _bump(state.existing, t.topology_key, snap.label(t.topology_key).vocab[value], delta)
    if matches_all(state.affinity_terms, other):
        for t in state.affinity_terms:
            value = labels.get(t.topology_key)
            if value is not None:
                _bump(state.affinity, t.topology_key, snap.label(t.topology_key).vocab[value], delta)
    for t in state.anti_terms:
        value = labels.get(t.topology_key)
        if value is not None and t.matches(other, NO_LABELS):
            _bump(state.anti, t.topology_key, snap.label(t.topology_key).vocab[value], delta)
