"""Hypothesis strategies for fuzzing Harmonic's input boundaries: a valid document mutated the way a
hurried user (or a buggy client) would, at one or more places.

``mutated(doc)`` picks a path in ``doc`` and replaces the value there with a wrongly typed, extreme or
malformed one, deletes it, adds an unknown sibling, or changes the case of a key. The fuzz tests under
``tests/`` and ``scripts/fuzz.py`` assert the property every boundary must have: a clear error naming
the input and field, or a valid result; never an uncaught exception (or a 5xx for the extender).
"""

from __future__ import annotations

import copy
import math
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

INT64_MAX = 2**63 - 1
#: Set by ``scripts/fuzz.py``: examples per fuzz test, drawn at random instead of the suite's fixed set.
EXAMPLES_ENV = "HARMONIC_FUZZ_EXAMPLES"


def fuzz_settings(examples: int) -> settings:
    """The suite runs ``examples`` derandomized examples (the same every run, so CI is stable);
    ``scripts/fuzz.py`` runs many more, freshly random."""
    longer = os.environ.get(EXAMPLES_ENV)
    return settings(
        max_examples=int(longer) if longer else examples,
        derandomize=not longer,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


#: Values that break naive parsers: wrong types, int64 and float edges, odd strings.
NASTY: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2**31,
    INT64_MAX,
    INT64_MAX + 1,
    -(2**63) - 1,
    10**30,
    10_000_000,
    1.5,
    -0.5,
    1e308,
    math.inf,
    -math.inf,
    math.nan,
    "",
    "abc",
    "-1",
    "1e400",
    "9223372036854775808",
    "99999999999999999999Ei",
    "NaN",
    "1h2x",
    "\x00",
    "ü" * 3,
    "a" * 300,
    [],
    [None],
    ["abc", 1],
    {},
    {"abc": 1},
    {"": None},
]

_scalars = st.one_of(
    st.sampled_from(NASTY).map(copy.deepcopy),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
)
bad_values = st.one_of(
    _scalars,
    st.lists(_scalars, max_size=3),
    st.dictionaries(st.text(max_size=8), _scalars, max_size=3),
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _mutate_once(draw: st.DrawFn, doc: Any) -> Any:
    paths = _paths(doc)
    path = draw(st.sampled_from(paths))
    if not path:
        return draw(bad_values) if draw(st.booleans()) else doc
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    last = path[-1]
    op = draw(st.sampled_from(["replace", "replace", "replace", "delete", "extra", "case"]))
    if op == "replace":
        parent[last] = draw(bad_values)
    elif op == "delete":
        del parent[last]
    elif op == "extra" and isinstance(parent, dict):
        parent[draw(st.text(min_size=1, max_size=8))] = draw(bad_values)
    elif op == "extra":
        parent.append(draw(bad_values))
    elif isinstance(parent, dict) and isinstance(last, str):
        value = parent.pop(last)
        parent[draw(st.sampled_from([last.upper(), last.lower(), last.capitalize()]))] = value
    return doc


@st.composite
def mutated(draw: st.DrawFn, doc: Any, max_mutations: int = 3) -> Any:
    """``doc`` (deep-copied) with 1..``max_mutations`` mutations."""
    out = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, max_mutations))):
        out = _mutate_once(draw, out)
    return out
