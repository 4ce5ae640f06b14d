"""String label selectors (``labels.Parse``): descheduler's ``nodeSelector`` fields are written this way."""

from __future__ import annotations

import re

from harmonic.api.errors import ObjectError
from harmonic.api.selectors import DOES_NOT_EXIST, EXISTS, IN, NOT_IN, LabelSelector, Requirement

_SET = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*")
_EQ = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|=|!=)\s*([A-Za-z0-9_.-]*)\s*")
_KEY = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*")


def parse_label_selector(obj: str, field: str, text: str) -> LabelSelector:
    """Compile ``"zone=a,tier in (web,api),!spot"``; "" selects everything. Errors name ``field``."""
    reqs: list[Requirement] = []
    rest = text.strip()
    while rest:
        m = _SET.match(rest)
        if m:
            values = frozenset(v.strip() for v in m.group(3).split(",") if v.strip())
            reqs.append(Requirement(m.group(1), IN if m.group(2) == "in" else NOT_IN, values))
        else:
            m = _EQ.match(rest)
            if m:
                op = NOT_IN if m.group(2) == "!=" else IN
                reqs.append(Requirement(m.group(1), op, frozenset((m.group(3),))))
            else:
                m = _KEY.match(rest)
                if not m:
                    raise ObjectError(obj, field, f"cannot parse label selector {text!r}")
                reqs.append(Requirement(m.group(2), DOES_NOT_EXIST if m.group(1) else EXISTS, frozenset()))
        rest = rest[m.end() :]
        if rest:
            if not rest.startswith(","):
                raise ObjectError(obj, field, f"cannot parse label selector {text!r}")
            rest = rest[1:]
    return LabelSelector(tuple(reqs))
