"""Kubernetes resource quantities, parsed exactly.

Grammar (k8s.io/apimachinery resource.Quantity): a signed decimal number followed by a binary SI
suffix (Ki..Ei), a decimal SI suffix (m, "", k, M..E) or a decimal exponent (e3, E-2). Values are kept
as exact fractions; conversion to integers rounds away from zero, as ``Quantity.Value()`` and
``Quantity.MilliValue()`` do.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
#: The largest decimal exponent kept exactly (see ``parse_quantity``).
_MAX_EXPONENT = 100
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exp>[+-]?\d+)|(?P<dec>[numkMGTPE]?))$"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: object) -> Fraction:
    """Parse a quantity (string, int or float as YAML/JSON give them) into an exact fraction."""
    if isinstance(value, bool):
        raise QuantityError(f"quantities must be strings or numbers, not {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a quantity (must be finite)")
        return Fraction(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"quantities must be strings or numbers, not {type(value).__name__}")
    m = _QUANTITY.match(value.strip())
    if m is None:
        raise QuantityError(f"{value!r} is not a quantity (expected e.g. '500m', '2Gi', '1.5', '1e3')")
    number = Fraction(m.group("num"))
    if m.group("bin"):
        return number * _BINARY[m.group("bin")]
    if m.group("exp") is not None:
        exponent = int(m.group("exp"))
        # kube-apiserver accepts any exponent ("1e400" is stored as 10e399). The exact value of a huge
        # one is never needed and would cost time and memory ("1e99999999"): beyond 1e100 a non-zero
        # amount is refused as too large; below 1e-100 it is kept as that tiny amount, which rounds
        # to the same integer (one unit away from zero) as the real one.
        if exponent > _MAX_EXPONENT and number:
            raise QuantityError(f"{value!r} is too large (the exponent is above {_MAX_EXPONENT})")
        return number * Fraction(10) ** min(max(exponent, -_MAX_EXPONENT), _MAX_EXPONENT)
    return number * _DECIMAL[m.group("dec") or ""]


def value(q: Fraction) -> int:
    """``Quantity.Value()``: whole units, rounded away from zero."""
    return _away(q)


def milli_value(q: Fraction) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded away from zero."""
    return _away(q * 1000)


def _away(x: Fraction) -> int:
    if x >= 0:
        return -((-x.numerator) // x.denominator)
    return x.numerator // x.denominator


@lru_cache(maxsize=65536)
def _cached(value: str) -> Fraction:
    return parse_quantity(value)


def parse_cached(value: object) -> Fraction:
    """``parse_quantity`` with a cache for strings: manifests repeat the same few quantities."""
    if isinstance(value, str):
        return _cached(value)
    return parse_quantity(value)
