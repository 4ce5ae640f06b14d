"""Label selectors (metav1.LabelSelector) and node selectors (v1.NodeSelector), compiled once.

A compiled selector is a tuple of requirements evaluated against a label map; the node-side
vectorised evaluation over all nodes lives in the snapshot (``scheduler.snapshot``), which uses the
same requirement tuples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harmonic.api.errors import ObjectError, as_list

IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT = "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"
_LABEL_OPS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)
_NODE_OPS = (*_LABEL_OPS, GT, LT)


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str
    values: frozenset[str]
    #: For Gt/Lt: the single integer operand.
    bound: int = 0

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == IN:
            v = labels.get(self.key)
            return v is not None and v in self.values
        if op == NOT_IN:
            v = labels.get(self.key)
            return v is None or v not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        v = labels.get(self.key)
        if v is None:
            return False
        try:
            n = int(v, 10)
        except ValueError:
            return False
        return n > self.bound if op == GT else n < self.bound


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A compiled metav1.LabelSelector. ``None`` selectors are represented by ``MATCH_NOTHING``."""

    requirements: tuple[Requirement, ...]
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    @property
    def everything(self) -> bool:
        return not self.nothing and not self.requirements


MATCH_NOTHING = LabelSelector((), nothing=True)
MATCH_EVERYTHING = LabelSelector(())


def _values(obj: str, field: str, raw: Any) -> frozenset[str]:
    if raw is None:
        return frozenset()
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise ObjectError(obj, field, "must be a list of strings")
    return frozenset(str(v) for v in raw)


def _requirement(obj: str, field: str, raw: Any, allowed: Sequence[str]) -> Requirement:
    if not isinstance(raw, Mapping):
        raise ObjectError(obj, field, "must be a map with key, operator and values")
    key = raw.get("key")
    if not isinstance(key, str) or not key:
        raise ObjectError(obj, f"{field}.key", "is required")
    op = raw.get("operator")
    if op not in allowed:
        raise ObjectError(obj, f"{field}.operator", f"{op!r} is not one of {', '.join(allowed)}")
    values = _values(obj, f"{field}.values", raw.get("values"))
    if op in (IN, NOT_IN) and not values:
        raise ObjectError(obj, f"{field}.values", f"must be non-empty for operator {op}")
    if op in (EXISTS, DOES_NOT_EXIST) and values:
        raise ObjectError(obj, f"{field}.values", f"must be empty for operator {op}")
    bound = 0
    if op in (GT, LT):
        if len(values) != 1:
            raise ObjectError(obj, f"{field}.values", f"must have exactly one integer for operator {op}")
        try:
            bound = int(next(iter(values)), 10)
        except ValueError:
            raise ObjectError(obj, f"{field}.values", f"{next(iter(values))!r} is not an integer") from None
    return Requirement(key, str(op), values, bound)


def label_selector(obj: str, field: str, raw: Any) -> LabelSelector:
    """Compile a metav1.LabelSelector. A missing (null) selector matches nothing, an empty one everything."""
    if raw is None:
        return MATCH_NOTHING
    if not isinstance(raw, Mapping):
        raise ObjectError(obj, field, "must be a label selector map")
    reqs: list[Requirement] = []
    ml = raw.get("matchLabels") or {}
    if not isinstance(ml, Mapping):
        raise ObjectError(obj, f"{field}.matchLabels", "must be a map of strings")
    for k, v in ml.items():
        reqs.append(Requirement(str(k), IN, frozenset((str(v),))))
    for i, expr in enumerate(as_list(obj, f"{field}.matchExpressions", raw.get("matchExpressions"))):
        reqs.append(_requirement(obj, f"{field}.matchExpressions[{i}]", expr, _LABEL_OPS))
    return LabelSelector(tuple(reqs))


def labels_of(obj: str, field: str, raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ObjectError(obj, field, "must be a map of strings")
    return {str(k): str(v) for k, v in raw.items()}


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements ANDed together: ``expressions`` on labels, ``fields`` on ``metadata.name``."""

    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        if not all(r.matches(labels) for r in self.expressions):
            return False
        return all(r.matches({"metadata.name": name}) for r in self.fields)


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """Terms ORed together. Empty terms are dropped at compile time since they match nothing."""

    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        return any(t.matches(labels, name) for t in self.terms)


def node_selector_term(obj: str, field: str, raw: Any) -> NodeSelectorTerm | None:
    """Compile one term; ``None`` for an empty term (it matches no node)."""
    if not isinstance(raw, Mapping):
        raise ObjectError(obj, field, "must be a node selector term")
    exprs = tuple(
        _requirement(obj, f"{field}.matchExpressions[{i}]", e, _NODE_OPS)
        for i, e in enumerate(as_list(obj, f"{field}.matchExpressions", raw.get("matchExpressions")))
    )
    fields: list[Requirement] = []
    for i, f in enumerate(as_list(obj, f"{field}.matchFields", raw.get("matchFields"))):
        r = _requirement(obj, f"{field}.matchFields[{i}]", f, _NODE_OPS)
        if r.key != "metadata.name":
            raise ObjectError(
                obj, f"{field}.matchFields[{i}].key", f"{r.key!r} is not supported (only metadata.name)"
            )
        if r.op not in (IN, NOT_IN):
            raise ObjectError(
                obj, f"{field}.matchFields[{i}].operator", "must be In or NotIn for metadata.name"
            )
        if len(r.values) != 1:
            raise ObjectError(
                obj, f"{field}.matchFields[{i}].values", "must have exactly one value for metadata.name"
            )
        fields.append(r)
    if not exprs and not fields:
        return None
    return NodeSelectorTerm(exprs, tuple(fields))


def node_selector(obj: str, field: str, raw: Any) -> NodeSelector:
    if not isinstance(raw, Mapping):
        raise ObjectError(obj, field, "must be a node selector")
    terms = []
    for i, t in enumerate(as_list(obj, f"{field}.nodeSelectorTerms", raw.get("nodeSelectorTerms"))):
        term = node_selector_term(obj, f"{field}.nodeSelectorTerms[{i}]", t)
        if term is not None:
            terms.append(term)
    return NodeSelector(tuple(terms))
