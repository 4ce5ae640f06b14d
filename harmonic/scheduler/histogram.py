"""A labelled Prometheus histogram for the scheduling hot path, exposed exactly as prometheus_client's.

kube-scheduler observes every extension point of every cycle (and the attempt itself); with
prometheus_client's ``Histogram`` each observation searches the buckets in Python and takes a lock per
bucket it counts in, about 2 us, several times per pod. ``Histogram`` here finds the bucket with
``bisect`` and counts under one lock per label set, and its ``collect`` yields the same
``HistogramMetricFamily`` (cumulative buckets with Go-formatted ``le``, ``_count``, ``_sum``), so
the exposition does not change. It registers itself in the given registry, as prometheus_client's
metrics do.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from itertools import accumulate

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString


class HistogramChild:
    """One label set's counts: ``counts[i]`` observations in bucket ``i`` (``v <= bounds[i]``, the
    last one +Inf)."""

    __slots__ = ("_bounds", "_counts", "_lock", "_sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = bounds
        self._counts = [0] * (len(bounds) + 1)
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        i = bisect_left(self._bounds, value)
        with self._lock:
            self._counts[i] += 1
            self._sum += value

    def snapshot(self) -> tuple[list[int], float]:
        with self._lock:
            return list(self._counts), self._sum


class Histogram:
    """``Histogram(name, documentation, labelnames, buckets, registry)`` with ``labels(*values)``
    returning a child to ``observe`` (the subset of prometheus_client's API the scheduler uses)."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        buckets: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.bounds = tuple(sorted(float(b) for b in buckets if not math.isinf(b)))
        self._children: dict[tuple[str, ...], HistogramChild] = {}
        self._lock = threading.Lock()
        registry.register(self)

    def labels(self, *values: str) -> HistogramChild:
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name}: expected {len(self.labelnames)} label values, got {len(values)}")
        child = self._children.get(values)
        if child is None:
            with self._lock:
                child = self._children.setdefault(tuple(str(v) for v in values), HistogramChild(self.bounds))
        return child

    def describe(self) -> list[Metric]:
        return [HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)]

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        les = [floatToGoString(b) for b in (*self.bounds, math.inf)]  # type: ignore[no-untyped-call]
        with self._lock:
            children = list(self._children.items())
        for values, child in children:
            counts, total = child.snapshot()
            family.add_metric(list(values), list(zip(les, accumulate(counts), strict=True)), total)
        yield family
