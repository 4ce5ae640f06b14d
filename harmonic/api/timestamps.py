"""RFC 3339 timestamps (metav1.Time) as integer nanoseconds since the Unix epoch.

Kubernetes writes ``2024-05-01T12:00:00Z``; clients may send fractional seconds down to nanoseconds
(``1970-01-01T00:00:00.000000001Z``) and numeric offsets. Python's ``datetime`` stops at microseconds,
so the fraction is kept as an integer.
"""

from __future__ import annotations

import calendar
import re

from harmonic.api.errors import ObjectError

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$"
)


def parse_time(obj: str, field: str, text: object) -> int:
    """Nanoseconds since the epoch for an RFC 3339 timestamp; ``ObjectError`` naming the field otherwise."""
    m = _RFC3339.match(text) if isinstance(text, str) else None
    if m is None:
        raise ObjectError(obj, field, f"{text!r} is not an RFC 3339 timestamp")
    year, month, day, hour, minute, second = (int(g) for g in m.group(1, 2, 3, 4, 5, 6))
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
        raise ObjectError(obj, field, f"{text!r} is not a valid date and time")
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    if m.group(9):
        offset = int(m.group(10)) * 3600 + int(m.group(11)) * 60
        seconds -= offset if m.group(9) == "+" else -offset
    fraction = int((m.group(7) or "0").ljust(9, "0"))
    return seconds * 1_000_000_000 + fraction
