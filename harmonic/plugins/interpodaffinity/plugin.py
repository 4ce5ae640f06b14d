"""The InterPodAffinity plugin class: wires terms, filtering and scoring to extension points, and its
queueing hints (upstream ``plugin.go``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.events import Action, ClusterEvent, EventWithHint, Hint, Resource
from harmonic.framework.interface import (
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from harmonic.framework.services import NAMESPACES, Need
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.plugins.interpodaffinity import filtering, scoring
from harmonic.plugins.interpodaffinity.args import InterPodAffinityArgs
from harmonic.plugins.interpodaffinity.domains import DomainMapper
from harmonic.plugins.interpodaffinity.index import ANTI, HARD, PREFERRED, ExistingTerms
from harmonic.plugins.interpodaffinity.terms import (
    NAME,
    NO_LABELS,
    WeightedTerm,
    matches_all,
    merge_all,
    merge_namespaces,
    pod_terms,
)

PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME


class InterPodAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    NAME: ClassVar[str] = NAME
    Args: ClassVar[type[InterPodAffinityArgs]] = InterPodAffinityArgs
    NEEDS: ClassVar[tuple[Need, ...]] = (
        Need(NAMESPACES, "every namespace counts as unlabelled: only an empty namespaceSelector selects it"),
    )

    def __init__(self, args: InterPodAffinityArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self._domains: DomainMapper | None = None

    # ------------------------------------------------------------------ shared helpers
    def _mapper(self, snap: Snapshot) -> DomainMapper:
        if self._domains is None or self._domains.snapshot is not snap:
            self._domains = DomainMapper(snap)
        return self._domains

    def _namespaces(self) -> Mapping[str, Mapping[str, str]] | None:
        return self.handle.optional_service(NAMESPACES)

    def _namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """GetNamespaceLabelsSnapshot: the namespace's labels, none when it is unknown."""
        service = self._namespaces()
        if service is None:
            return NO_LABELS
        return service.get(namespace) or NO_LABELS

    # ------------------------------------------------------------------ PreFilter / Filter
    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        terms = pod_terms(pod)
        if terms.error:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"parsing pod: {terms.error}")
        index = ExistingTerms.of(snap)
        if not terms.has_required and not index.has(ANTI):
            return None, Status(Code.SKIP)
        namespaces = self._namespaces()
        s = filtering.compute(
            snap,
            self._mapper(snap),
            pod,
            merge_all(terms.required_affinity, namespaces),
            merge_all(terms.required_anti, namespaces),
            self._namespace_labels(pod.namespace),
        )
        if s.skip:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, s)
        return None, None

    def _pre_filter_state(self, state: CycleState) -> filtering.PreFilterState:
        return state.read_as(PRE_FILTER_KEY, filtering.PreFilterState, "error reading")

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, slot: int) -> Status | None:
        filtering.update_with_pod(self._pre_filter_state(state), self.handle.snapshot, pod, added, slot, 1)
        return None

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, slot: int) -> Status | None:
        filtering.update_with_pod(self._pre_filter_state(state), self.handle.snapshot, pod, removed, slot, -1)
        return None

    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        return filtering.filter_nodes(self._pre_filter_state(state), self._mapper(snap), slots)

    # ------------------------------------------------------------------ PreScore / Score
    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        if len(slots) == 0:
            return Status(Code.SKIP)
        terms = pod_terms(pod)
        if self.args.ignore_preferred_terms_of_existing_pods and not terms.has_preferred:
            return Status(Code.SKIP)
        if terms.error:
            return Status(Code.ERROR, f"failed to parse pod: {terms.error}")
        index = ExistingTerms.of(snap)
        hard = self.args.hard_pod_affinity_weight
        if (
            not terms.preferred_affinity
            and not terms.preferred_anti
            and not index.has(PREFERRED)
            and not (hard > 0 and index.has(HARD))
        ):
            return Status(Code.SKIP)
        namespaces = self._namespaces()
        s = scoring.compute(
            snap,
            self._mapper(snap),
            pod,
            _merge_weighted(terms.preferred_affinity, namespaces),
            _merge_weighted(terms.preferred_anti, namespaces),
            self._namespace_labels(pod.namespace),
            hard,
        )
        if s is None:
            return Status(Code.SKIP)
        state.write(PRE_SCORE_KEY, s)
        return None

    def _pre_score_state(self, state: CycleState) -> scoring.PreScoreState:
        return state.read_as(PRE_SCORE_KEY, scoring.PreScoreState, "error reading")

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        return scoring.score(self._pre_score_state(state), slots)

    def normalize_score(
        self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        self._pre_score_state(state)
        return scoring.normalize(scores)

    # ------------------------------------------------------------------ queueing hints
    def events_to_register(self) -> Sequence[EventWithHint]:
        return (
            EventWithHint(
                ClusterEvent(Resource.POD, Action.ADD | Action.UPDATE_POD_LABEL | Action.DELETE),
                self._after_pod_change,
            ),
            EventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL), self._after_node_change
            ),
        )

    def _after_pod_change(self, pod: Pod, old: Pod | None, new: Pod | None) -> Hint:
        """isSchedulableAfterPodChange."""
        if new is not None and old is not None and new.uid == pod.uid:
            # The pending pod's own labels changed: whether it matches its own terms (the first pod
            # of a group) or existing pods' terms may have changed.
            return Hint.QUEUE
        if (new is not None and not new.node_name) or (old is not None and not old.node_name):
            return Hint.SKIP
        terms = pod_terms(pod)
        if terms.error:
            return Hint.QUEUE
        affinity, anti = terms.required_affinity, terms.required_anti
        if old is not None and new is not None:
            if not matches_all(affinity, old) and matches_all(affinity, new):
                return Hint.QUEUE
            if matches_all(anti, old) and not matches_all(anti, new):
                return Hint.QUEUE
            return Hint.SKIP
        if new is not None:
            return Hint.QUEUE if matches_all(affinity, new) else Hint.SKIP
        assert old is not None
        if matches_all(anti, old):
            return Hint.QUEUE
        # The deleted pod's own anti-affinity may have been what kept the pending pod out.
        ns_labels = self._namespace_labels(pod.namespace)
        if any(t.matches(pod, ns_labels) for t in pod_terms(old).required_anti):
            return Hint.QUEUE
        return Hint.SKIP

    def _after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> Hint:
        """isSchedulableAfterNodeChange: a node that gains (or changes) an affinity topology key, or
        that loses (or changes) an anti-affinity topology key, or any new node for a pod with
        anti-affinity, may make the pod schedulable."""
        if new is None:
            return Hint.SKIP
        terms = pod_terms(pod)
        if terms.error:
            return Hint.QUEUE
        for t in terms.required_affinity:
            key = t.topology_key
            if old is None:
                if key in new.labels:
                    return Hint.QUEUE
            elif key in new.labels and old.labels.get(key) != new.labels[key]:
                return Hint.QUEUE
        for t in terms.required_anti:
            key = t.topology_key
            if old is None:
                return Hint.QUEUE
            if key in old.labels and old.labels.get(key) != new.labels.get(key):
                return Hint.QUEUE
        return Hint.SKIP


def _merge_weighted(
    terms: tuple[WeightedTerm, ...], namespaces: Mapping[str, Mapping[str, str]] | None
) -> tuple[WeightedTerm, ...]:
    return tuple(WeightedTerm(merge_namespaces(w.term, namespaces), w.weight) for w in terms)
