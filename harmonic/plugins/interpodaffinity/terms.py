"""A pod's (anti-)affinity terms, compiled once and cached in ``Pod.extra`` (upstream ``framework.PodInfo``).

Each ``PodAffinityTerm`` becomes an ``AffinityTerm``: its namespaces (the pod's own when neither
``namespaces`` nor ``namespaceSelector`` is set), its namespace selector (``null``: nothing), its label
selector and its topology key. ``matchLabelKeys`` / ``mismatchLabelKeys`` are merged into the label
selector as the API server does when it admits the pod — ``key In (the pod's value)`` and
``key NotIn (the pod's value)`` for each key the pod carries — so pods that never went through an API
server (manifests, the simulator) behave the same; for pods that did, the repeated requirements change
nothing.

The four term lists parse independently as upstream's ``PodInfo.Update`` does: a list whose selector
fails validation is empty and its error is kept (``requiredAffinityTerms: values[0][k]: ...``). For an
incoming pod that error rejects it; for an existing pod the list is simply ignored.

An incoming pod's terms are matched against existing pods after ``merge_namespaces``: a non-empty
namespace selector is resolved to the namespaces whose labels it matches (the ``"namespaces"`` handle
service) and then dropped, as ``mergeAffinityTermNamespacesIfNotEmpty`` does. Existing pods' terms are
matched against the incoming pod with the labels of the incoming pod's namespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harmonic.api.pod import Pod
from harmonic.api.selectors import IN, MATCH_NOTHING, NOT_IN, LabelSelector, SelectorError, parse_selector
from harmonic.framework.snapshot import extra_key

NAME = "InterPodAffinity"
_CACHE = extra_key(NAME, "terms")
#: Handle service: namespace name -> its labels (``harmonic.cluster.services.NamespaceLabels``).
NAMESPACES_SERVICE = "namespaces"
NO_LABELS: Mapping[str, str] = {}


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A compiled ``PodAffinityTerm`` (framework.AffinityTerm). Hashable: equal terms of different pods
    are one signature in the existing-terms index."""

    namespaces: frozenset[str]
    ns_selector: LabelSelector
    selector: LabelSelector
    topology_key: str

    def matches(self, pod: Pod, ns_labels: Mapping[str, str]) -> bool:
        """AffinityTerm.Matches: ``pod`` is in one of the namespaces (or its namespace's labels match the
        namespace selector) and its labels match the selector."""
        if pod.namespace in self.namespaces or self.ns_selector.matches(ns_labels):
            return self.selector.matches(pod.labels)
        return False

    @property
    def any_namespace(self) -> bool:
        """The namespace selector is empty: every namespace is in scope."""
        return self.ns_selector.everything


@dataclass(frozen=True, slots=True)
class WeightedTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodTerms:
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedTerm, ...] = ()
    preferred_anti: tuple[WeightedTerm, ...] = ()
    #: The aggregated parse error of the lists that failed ("" when all parsed).
    error: str = ""
    #: The spec lists preferred terms (PreScore's hasConstraints, which counts them before parsing).
    has_preferred: bool = False

    @property
    def has_required(self) -> bool:
        return bool(self.required_affinity or self.required_anti)

    @property
    def empty(self) -> bool:
        return not (
            self.required_affinity or self.required_anti or self.preferred_affinity or self.preferred_anti
        )


EMPTY = PodTerms()


def _list(raw: Any) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise SelectorError("must be a list of pod affinity terms")
    return list(raw)


def _term(pod: Pod, raw: Any) -> AffinityTerm:
    """newAffinityTerm with the API server's matchLabelKeys/mismatchLabelKeys merge."""
    if not isinstance(raw, Mapping):
        raise SelectorError("a pod affinity term must be an object")
    selector_raw = raw.get("labelSelector")
    extra: list[dict[str, Any]] = []
    if selector_raw is not None:
        for field, op in (("matchLabelKeys", IN), ("mismatchLabelKeys", NOT_IN)):
            keys = raw.get(field) or ()
            if isinstance(keys, str) or not isinstance(keys, Sequence):
                raise SelectorError(f"{field} must be a list of label keys")
            for k in keys:
                if isinstance(k, str) and k in pod.labels:
                    extra.append({"key": k, "operator": op, "values": [pod.labels[k]]})
    selector = parse_selector(selector_raw, extra)
    ns_raw = raw.get("namespaceSelector")
    ns_selector = parse_selector(ns_raw)
    names = raw.get("namespaces") or []
    if (
        isinstance(names, str)
        or not isinstance(names, Sequence)
        or not all(isinstance(n, str) for n in names)
    ):
        raise SelectorError("namespaces must be a list of strings")
    namespaces = frozenset(names) if names or ns_raw is not None else frozenset((pod.namespace,))
    key = raw.get("topologyKey") or ""
    if not isinstance(key, str):
        raise SelectorError("topologyKey must be a string")
    return AffinityTerm(namespaces, ns_selector, selector, key)


def _terms(pod: Pod, raw: Any) -> tuple[AffinityTerm, ...]:
    return tuple(_term(pod, t) for t in _list(raw))


def _weighted(pod: Pod, raw: Any) -> tuple[WeightedTerm, ...]:
    out = []
    for t in _list(raw):
        if not isinstance(t, Mapping):
            raise SelectorError("a weighted pod affinity term must be an object")
        weight = t.get("weight", 0)
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            # The API server's range (validateWeightedPodAffinityTerms); also keeps scores in int64.
            raise SelectorError(f"weight {weight!r} must be an integer in 1..100")
        out.append(WeightedTerm(_term(pod, t.get("podAffinityTerm") or {}), weight))
    return tuple(out)


def _section(affinity: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    section = affinity.get(name)
    return section if isinstance(section, Mapping) else {}


def _compile(pod: Pod) -> PodTerms:
    affinity = pod.spec.get("affinity")
    if not isinstance(affinity, Mapping):
        return EMPTY
    aff = _section(affinity, "podAffinity")
    anti = _section(affinity, "podAntiAffinity")
    if not aff and not anti:
        return EMPTY
    required, preferred = (
        "requiredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution",
    )
    lists: dict[str, Any] = {}
    errors: list[str] = []
    for label, parse, raw in (
        ("requiredAffinityTerms", _terms, aff.get(required)),
        ("requiredAntiAffinityTerms", _terms, anti.get(required)),
        ("preferredAffinityTerms", _weighted, aff.get(preferred)),
        ("preferredAntiAffinityTerms", _weighted, anti.get(preferred)),
    ):
        try:
            lists[label] = parse(pod, raw)
        except SelectorError as e:
            lists[label] = ()
            errors.append(f"{label}: {e}")
    return PodTerms(
        lists["requiredAffinityTerms"],
        lists["requiredAntiAffinityTerms"],
        lists["preferredAffinityTerms"],
        lists["preferredAntiAffinityTerms"],
        errors[0] if len(errors) == 1 else ("[" + ", ".join(errors) + "]" if errors else ""),
        bool(aff.get(preferred)) or bool(anti.get(preferred)),
    )


def pod_terms(pod: Pod) -> PodTerms:
    """The pod's compiled terms, cached on the pod."""
    cached: PodTerms | None = pod.extra.get(_CACHE)
    if cached is None:
        cached = pod.extra[_CACHE] = _compile(pod)
    return cached


def matches_all(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    """podMatchesAllAffinityTerms for an incoming pod's (merged) terms: no namespace labels are needed."""
    return bool(terms) and all(t.matches(pod, NO_LABELS) for t in terms)


def merge_namespaces(term: AffinityTerm, namespaces: Mapping[str, Mapping[str, str]] | None) -> AffinityTerm:
    """mergeAffinityTermNamespacesIfNotEmpty: a non-empty namespace selector becomes the names of the
    namespaces it matches, added to the term's namespaces; an empty one (all namespaces) stays."""
    if term.ns_selector.everything:
        return term
    names = set(term.namespaces)
    if namespaces is not None and not term.ns_selector.nothing:
        names.update(n for n in namespaces if term.ns_selector.matches(namespaces[n]))
    return AffinityTerm(frozenset(names), MATCH_NOTHING, term.selector, term.topology_key)


def merge_all(
    terms: Iterable[AffinityTerm], namespaces: Mapping[str, Mapping[str, str]] | None
) -> tuple[AffinityTerm, ...]:
    return tuple(merge_namespaces(t, namespaces) for t in terms)
