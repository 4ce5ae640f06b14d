"""Node taints and pod tolerations (core/v1 ToleratesTaint semantics)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harmonic.api.errors import ObjectError

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
EFFECTS = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str  # "Equal" or "Exists"
    value: str
    effect: str  # "" tolerates every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator == "Equal" and self.value == taint.value


def tolerated(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def parse_taints(obj: str, field: str, raw: Any) -> tuple[Taint, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ObjectError(obj, field, "must be a list of taints")
    out = []
    for i, t in enumerate(raw):
        if not isinstance(t, Mapping) or not t.get("key"):
            raise ObjectError(obj, f"{field}[{i}].key", "is required")
        effect = t.get("effect")
        if effect not in EFFECTS:
            raise ObjectError(obj, f"{field}[{i}].effect", f"{effect!r} is not one of {', '.join(EFFECTS)}")
        out.append(Taint(str(t["key"]), str(t.get("value") or ""), effect))
    return tuple(out)


def parse_tolerations(obj: str, field: str, raw: Any) -> tuple[Toleration, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ObjectError(obj, field, "must be a list of tolerations")
    out = []
    for i, t in enumerate(raw):
        where = f"{field}[{i}]"
        if not isinstance(t, Mapping):
            raise ObjectError(obj, where, "must be a toleration map")
        op = t.get("operator") or "Equal"
        if op not in ("Equal", "Exists"):
            raise ObjectError(obj, f"{where}.operator", f"{op!r} is not one of Equal, Exists")
        key = str(t.get("key") or "")
        value = str(t.get("value") or "")
        if op == "Exists" and value:
            raise ObjectError(obj, f"{where}.value", "must be empty when operator is Exists")
        if not key and op != "Exists":
            raise ObjectError(obj, f"{where}.operator", "must be Exists when key is empty")
        effect = str(t.get("effect") or "")
        if effect and effect not in EFFECTS:
            raise ObjectError(obj, f"{where}.effect", f"{effect!r} is not one of {', '.join(EFFECTS)}")
        out.append(Toleration(key, op, value, effect))
    return tuple(out)
