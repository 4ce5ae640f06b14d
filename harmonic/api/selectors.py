"""Label selectors (metav1.LabelSelector) and node selectors (v1.NodeSelector), compiled once.

A compiled selector is a tuple of requirements evaluated against a label map; the node-side
vectorised evaluation over all nodes lives in the snapshot (``scheduler.snapshot``), which uses the
same requirement tuples.
"""

from __future__ import annotations

import re
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


# --------------------------------------------------------------------------- label selectors
# One parser for every metav1.LabelSelector (workloads, PDBs, pod affinity terms, spread constraints,
# policies), with labels.NewRequirement's validation and messages word for word: a pod whose affinity
# terms fail is rejected at PreFilter with this text, a manifest with the ObjectError naming its field.
_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}
_QUALIFIED_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED = re.compile(_QUALIFIED_FMT)
_QUALIFIED_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_FMT = f"({_QUALIFIED_FMT})?"
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = f"{_DNS1123_LABEL_FMT}(\\.{_DNS1123_LABEL_FMT})*"
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)


class SelectorError(ValueError):
    """A selector upstream's LabelSelectorAsSelector rejects; the message is upstream's and ``path``
    the field inside the selector it is about (``matchExpressions[1]``; empty for the whole)."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """validation.RegexError, spacing included (" (e.g. 'a',  or 'b', regex used ...)")."""
    out = msg + " (e.g. "
    for i, e in enumerate(examples):
        if i > 0:
            out += " or "
        out += f"'{e}', "
    return out + f"regex used for validation is '{fmt}')"


def qualified_name_errors(value: str) -> list[str]:
    """validation.IsQualifiedName: ``[prefix/]name``, the name at most 63 characters."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 characters")
            if not _DNS1123_SUBDOMAIN.fullmatch(prefix):
                errs.append(
                    "prefix part "
                    + _regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com")
                )
    else:
        return [
            "a qualified name "
            + _regex_error(_QUALIFIED_MSG, _QUALIFIED_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QUALIFIED.fullmatch(name):
        errs.append(
            "name part " + _regex_error(_QUALIFIED_MSG, _QUALIFIED_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """validation.IsValidLabelValue."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _go_strings(values: Sequence[str] | None) -> str:
    """How field.Invalid prints a []string value (%#v)."""
    if not values:
        return "[]string(nil)"
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


def _aggregate(errs: list[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message as is, several (deduplicated) in brackets."""
    unique = list(dict.fromkeys(errs))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _label_requirement(key: str, op: str, values: list[str], path: str) -> Requirement:
    """labels.NewRequirement: validates the key, the value count for the operator and every value."""
    errs: list[str] = []
    key_errs = qualified_name_errors(key)
    if key_errs:
        errs.append(f'key: Invalid value: "{key}": {"; ".join(key_errs)}')
    if op in (IN, NOT_IN) and not values:
        errs.append(
            f"values: Invalid value: {_go_strings(values)}: for 'in', 'notin' operators, values set can't be empty"
        )
    if op in (EXISTS, DOES_NOT_EXIST) and values:
        errs.append(
            f"values: Invalid value: {_go_strings(values)}: values set must be empty for exists and does not exist"
        )
    for i, v in enumerate(values):
        value_errs = label_value_errors(v)
        if value_errs:
            errs.append(f'values[{i}][{key}]: Invalid value: "{v}": {"; ".join(value_errs)}')
    if errs:
        raise SelectorError(_aggregate(errs), path)
    return Requirement(key, op, frozenset(values))


def _strings(raw: Any, path: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, Sequence) or isinstance(raw, str) or not all(isinstance(v, str) for v in raw):
        raise SelectorError("values must be a list of strings", path)
    return list(raw)


def parse_selector(raw: Any, extra: Sequence[Mapping[str, Any]] = ()) -> LabelSelector:
    """metav1.LabelSelectorAsSelector of ``raw`` with ``extra`` match expressions appended (the API
    server's merge of matchLabelKeys/mismatchLabelKeys): it accepts what the API server accepts, and
    raises ``SelectorError`` with upstream's message otherwise."""
    if raw is None:
        return MATCH_NOTHING
    if not isinstance(raw, Mapping):
        raise SelectorError("a label selector must be an object")
    labels = raw.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        raise SelectorError("matchLabels must be a map of strings", "matchLabels")
    exprs = raw.get("matchExpressions") or []
    if not isinstance(exprs, Sequence) or isinstance(exprs, str):
        raise SelectorError("matchExpressions must be a list", "matchExpressions")
    exprs = [*exprs, *extra]
    if not labels and not exprs:
        return MATCH_EVERYTHING
    reqs: list[Requirement] = []
    # Go ranges over matchLabels in random order and stops at the first error: sorted keys make the
    # reported error deterministic.
    for k in sorted(labels):
        v = labels[k]
        if not isinstance(v, str):
            raise SelectorError(f"matchLabels[{k}] must be a string", f"matchLabels.{k}")
        reqs.append(_label_requirement(str(k), IN, [v], f"matchLabels.{k}"))
    for i, e in enumerate(exprs):
        path = f"matchExpressions[{i}]"
        if not isinstance(e, Mapping):
            raise SelectorError("a match expression must be an object", path)
        op = _OPERATORS.get(e.get("operator"))  # type: ignore[arg-type]
        if op is None:
            raise SelectorError(f'"{e.get("operator")}" is not a valid label selector operator', path)
        key = e.get("key")
        values = _strings(e.get("values"), f"{path}.values")
        reqs.append(_label_requirement(key if isinstance(key, str) else "", op, values, path))
    return LabelSelector(tuple(reqs))


def label_selector(obj: str, field: str, raw: Any) -> LabelSelector:
    """``parse_selector`` for a manifest's ``field``: a refusal is an ``ObjectError`` naming the object and
    the field inside the selector. A missing (null) selector matches nothing, an empty one everything."""
    try:
        return parse_selector(raw)
    except SelectorError as e:
        raise ObjectError(obj, f"{field}.{e.path}" if e.path else field, str(e)) from None


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
