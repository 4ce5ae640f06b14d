"""ElasticQuota accounting (scheduler-plugins pkg/capacityscheduling/elasticquota.go).

Resources are ``{name: integer units}`` maps (millicores for cpu). Comparisons follow upstream's
``cmp2`` exactly: cpu, memory, ephemeral-storage and pods are always compared, a bound that does not
name them counting as 0 (so a quota whose ``max`` names only cpu admits no pod requesting memory);
any other resource the request names is compared against the bound's value, or against ``bound``
when the quota does not name it (0 for ``min``, unlimited for ``max``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from harmonic.api.batch import ElasticQuota
from harmonic.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resources

UPPER_BOUND_OF_MAX = 2**63 - 1
LOWER_BOUND_OF_MIN = 0
_CORE = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
#: Upstream's default bounds: cpu, memory and ephemeral-storage only (pods stays 0).
_BOUND_KEYS = (CPU, MEMORY, EPHEMERAL_STORAGE)


def over(x1: Mapping[str, int], x2: Mapping[str, int], y: Mapping[str, int], bound: int) -> bool:
    """cmp2: does ``x1 + x2`` exceed ``y`` in some resource?"""
    for r in _CORE:
        if x1.get(r, 0) + x2.get(r, 0) > y.get(r, 0):
            return True
    for r, q in x1.items():
        if r in _CORE:
            continue
        if q + x2.get(r, 0) > y.get(r, bound):
            return True
    return False


def add(total: Resources, extra: Mapping[str, int], sign: int = 1) -> None:
    for r, v in extra.items():
        total[r] = total.get(r, 0) + sign * v


class QuotaInfo:
    """One namespace's quota and what its pods use (ElasticQuotaInfo)."""

    __slots__ = ("max", "min", "namespace", "pods", "used")

    def __init__(self, namespace: str, lo: Resources | None, hi: Resources | None) -> None:
        self.namespace = namespace
        self.min: Resources = dict(lo) if lo is not None else dict.fromkeys(_BOUND_KEYS, LOWER_BOUND_OF_MIN)
        self.max: Resources = dict(hi) if hi is not None else dict.fromkeys(_BOUND_KEYS, UPPER_BOUND_OF_MAX)
        self.used: Resources = {}
        self.pods: set[str] = set()

    @classmethod
    def of(cls, eq: ElasticQuota) -> QuotaInfo:
        return cls(eq.namespace, eq.min, eq.max)

    def clone(self) -> QuotaInfo:
        c = QuotaInfo(self.namespace, self.min, self.max)
        c.used = dict(self.used)
        c.pods = set(self.pods)
        return c

    def used_over_min_with(self, request: Mapping[str, int]) -> bool:
        return over(request, self.used, self.min, LOWER_BOUND_OF_MIN)

    def used_over_max_with(self, request: Mapping[str, int]) -> bool:
        return over(request, self.used, self.max, UPPER_BOUND_OF_MAX)

    def used_over_min(self) -> bool:
        return over(self.used, {}, self.min, LOWER_BOUND_OF_MIN)

    def add_pod(self, uid: str, request: Mapping[str, int]) -> None:
        """addPodIfNotPresent."""
        if uid not in self.pods:
            self.pods.add(uid)
            add(self.used, request)

    def remove_pod(self, uid: str, request: Mapping[str, int]) -> None:
        """deletePodIfPresent."""
        if uid in self.pods:
            self.pods.discard(uid)
            add(self.used, request, -1)


class QuotaInfos(dict[str, QuotaInfo]):
    """Quotas by namespace (ElasticQuotaInfos)."""

    def aggregated_used_over_min_with(self, request: Mapping[str, int]) -> bool:
        used: Resources = {}
        lo: Resources = {}
        for q in self.values():
            add(used, q.used)
            add(lo, q.min)
        add(used, request)
        return over(used, {}, lo, LOWER_BOUND_OF_MIN)


def total(requests: Iterable[Mapping[str, int]]) -> Resources:
    out: Resources = {}
    for r in requests:
        add(out, r)
    return out
