"""Label selectors of pod (anti-)affinity terms, compiled with upstream's validation and messages.

kube-scheduler compiles a term's ``labelSelector`` and ``namespaceSelector`` with
``metav1.LabelSelectorAsSelector``, which validates every requirement (``labels.NewRequirement``): a
qualified-name key, a valid label value for each value, the right number of values for the operator. A
pod whose terms fail this is rejected at PreFilter with the error text (``parsing pod: ...``), so the
messages here are upstream's, word for word (``values[0][service]: Invalid value: "{{.bad-value.}}":
a valid label must be ...``). A selector that is ``null`` matches nothing, an empty one everything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from harmonic.api.selectors import (
    DOES_NOT_EXIST,
    EXISTS,
    IN,
    MATCH_EVERYTHING,
    MATCH_NOTHING,
    NOT_IN,
    LabelSelector,
    Requirement,
)

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
_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


class SelectorError(ValueError):
    """A selector upstream's LabelSelectorAsSelector rejects; the message is upstream's."""


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


def _requirement(key: str, op: str, values: list[str]) -> Requirement:
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
        raise SelectorError(_aggregate(errs))
    return Requirement(key, op, frozenset(values))


def _strings(raw: Any, what: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, Sequence) or isinstance(raw, str) or not all(isinstance(v, str) for v in raw):
        raise SelectorError(f"{what} must be a list of strings")
    return list(raw)


def parse_selector(raw: Any, extra: Sequence[Mapping[str, Any]] = ()) -> LabelSelector:
    """metav1.LabelSelectorAsSelector of ``raw`` with ``extra`` match expressions appended (the API
    server's merge of matchLabelKeys/mismatchLabelKeys). Raises ``SelectorError``."""
    if raw is None:
        return MATCH_NOTHING
    if not isinstance(raw, Mapping):
        raise SelectorError("a label selector must be an object")
    labels = raw.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        raise SelectorError("matchLabels must be a map of strings")
    exprs = raw.get("matchExpressions") or []
    if not isinstance(exprs, Sequence) or isinstance(exprs, str):
        raise SelectorError("matchExpressions must be a list")
    exprs = [*exprs, *extra]
    if not labels and not exprs:
        return MATCH_EVERYTHING
    reqs: list[Requirement] = []
    # Go ranges over matchLabels in random order and stops at the first error: sorted keys make the
    # reported error deterministic.
    for k in sorted(labels):
        v = labels[k]
        if not isinstance(v, str):
            raise SelectorError(f"matchLabels[{k}] must be a string")
        reqs.append(_requirement(str(k), IN, [v]))
    for e in exprs:
        if not isinstance(e, Mapping):
            raise SelectorError("a match expression must be an object")
        op = _OPERATORS.get(e.get("operator"))  # type: ignore[arg-type]
        if op is None:
            raise SelectorError(f'"{e.get("operator")}" is not a valid label selector operator')
        key = e.get("key")
        reqs.append(
            _requirement(key if isinstance(key, str) else "", op, _strings(e.get("values"), "values"))
        )
    return LabelSelector(tuple(reqs))
