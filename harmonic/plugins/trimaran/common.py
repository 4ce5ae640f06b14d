"""What the Trimaran plugins share (scheduler-plugins ``pkg/trimaran``): the metric-provider args, node
usage from the ``node_usage`` service as arrays over slots, and the cache of pods assigned since the
metrics were taken (``PodAssignEventHandler``).

Upstream reads node metrics from load-watcher (as a library over a metric provider, or as a service).
Here the usage model (``harmonic.signals.usage``) does that job; ``metricProvider`` says where it reads
from when ``harmonic run`` builds it. A node without metrics — new, or every node when the model has no
fresh reading — scores the minimum, as upstream does; each such cycle is counted in
``harmonic_usage_fallback_total``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from harmonic.api.pod import Pod
from harmonic.api.quantity import parse_quantity
from harmonic.framework.args import PluginArgs
from harmonic.framework.services import Need
from harmonic.framework.snapshot import Snapshot
from harmonic.signals.usage import EMPTY_VIEW, NODE_USAGE, UsageView

#: Seconds a just-assigned pod may still be missing from the metrics (metricsAgentReportingIntervalSeconds).
METRICS_AGENT_REPORTING_INTERVAL = 60.0


class MetricProviderSpec(PluginArgs):
    type: Literal["KubernetesMetricsServer", "Prometheus", "SignalFx"] = "KubernetesMetricsServer"
    address: str = ""
    token: str = ""
    insecure_skip_verify: bool = True

    @model_validator(mode="after")
    def _supported(self) -> MetricProviderSpec:
        if self.type == "SignalFx":
            raise ValueError(
                "metricProvider.type SignalFx is not supported; use Prometheus or KubernetesMetricsServer"
            )
        if self.type == "Prometheus" and not self.address:
            raise ValueError("metricProvider.address is required for type Prometheus")
        return self


class TrimaranSpec(PluginArgs):
    metric_provider: MetricProviderSpec = Field(default_factory=MetricProviderSpec)
    watcher_address: str = ""

    @model_validator(mode="after")
    def _no_watcher(self) -> TrimaranSpec:
        if self.watcher_address:
            raise ValueError(
                "watcherAddress (a load-watcher service) is not supported: Harmonic reads usage itself; "
                "give metricProvider instead"
            )
        return self


@dataclass
class NodeUsage:
    """Per slot: whether metrics exist, and CPU (millicores) / memory (bytes) mean and spread."""

    has: np.ndarray
    cpu: np.ndarray
    cpu_std: np.ndarray
    memory: np.ndarray
    memory_std: np.ndarray


#: What the load-aware plugins (TargetLoadPacking, LoadVariationRiskBalancing, LoadAware) read.
USAGE_NEEDS = (Need(NODE_USAGE, "no node has metrics: every node is scored from requests"),)


class UsageReader:
    """The ``node_usage`` view as arrays over snapshot slots, rebuilt only when the view or the node set
    changes (a loop over nodes once per refresh, never per cycle)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self._key: tuple[int, int, int] | None = None
        self._arrays: NodeUsage | None = None

    def view(self) -> UsageView:
        source = self.handle.optional_service(NODE_USAGE)
        return EMPTY_VIEW if source is None else source.view

    def arrays(self, view: UsageView, snap: Snapshot) -> NodeUsage:
        key = (id(view), snap.node_generation, snap.capacity)
        if self._key != key or self._arrays is None:
            cap = snap.capacity
            a = NodeUsage(
                np.zeros(cap, dtype=bool), np.zeros(cap), np.zeros(cap), np.zeros(cap), np.zeros(cap)
            )
            for name, s in view.nodes.items():
                slot = snap.slot_of.get(name)
                if slot is not None:
                    a.has[slot] = True
                    a.cpu[slot], a.cpu_std[slot] = s.cpu_mean, s.cpu_std
                    a.memory[slot], a.memory_std[slot] = s.memory_mean, s.memory_std
            self._key, self._arrays = key, a
        return self._arrays


def _cpu_millis(q: Any) -> int | None:
    if q is None:
        return None
    return int(parse_quantity(str(q)) * 1000)


def predicted_cpu(pod: Pod, default_millis: int, multiplier: float) -> int:
    """TargetLoadPacking's PredictUtilisation summed over containers, plus the pod's CPU overhead: a
    container's limit, else its request x ``multiplier`` (rounded), else ``default_millis``."""
    cache_key = ("trimaran/predicted-cpu", default_millis, multiplier)
    cached = pod.extra.get(str(cache_key))
    if cached is not None:
        v: int = cached
        return v
    total = 0
    for c in pod.spec.get("containers") or ():
        res = c.get("resources") or {}
        limit = _cpu_millis((res.get("limits") or {}).get("cpu"))
        request = _cpu_millis((res.get("requests") or {}).get("cpu"))
        if limit is not None:
            total += limit
        elif request is not None:
            total += round(request * multiplier)
        else:
            total += default_millis
    total += _cpu_millis((pod.spec.get("overhead") or {}).get("cpu")) or 0
    pod.extra[str(cache_key)] = total
    return total


class AssignedPods:
    """Pods assigned to nodes recently (Reserve), with the time and their predicted CPU, until the
    metrics can be expected to include them (``PodAssignEventHandler``'s ScheduledPodsCache)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.slots: list[int] = []
        self.cpu: list[float] = []
        self.uids: list[str] = []

    def add(self, now: float, slot: int, cpu: float, uid: str) -> None:
        self.times.append(now)
        self.slots.append(slot)
        self.cpu.append(cpu)
        self.uids.append(uid)

    def remove(self, uid: str) -> None:
        if uid in self.uids:
            i = self.uids.index(uid)
            for lst in (self.times, self.slots, self.cpu, self.uids):
                del lst[i]

    def cleanup(self, now: float, horizon: float) -> None:
        keep = [i for i, t in enumerate(self.times) if t + horizon > now]
        if len(keep) != len(self.times):
            self.times = [self.times[i] for i in keep]
            self.slots = [self.slots[i] for i in keep]
            self.cpu = [self.cpu[i] for i in keep]
            self.uids = [self.uids[i] for i in keep]

    def missing(self, window_end: float | None, capacity: int) -> np.ndarray:
        """Per slot, the predicted CPU of pods assigned after ``window_end`` or within the reporting
        interval before it (upstream's condition)."""
        if not self.times:
            return np.zeros(capacity)
        t = np.asarray(self.times)
        end = window_end if window_end is not None else -np.inf
        take = (t > end) | ((t <= end) & (end - t < METRICS_AGENT_REPORTING_INTERVAL))
        return np.bincount(
            np.asarray(self.slots)[take], weights=np.asarray(self.cpu)[take], minlength=capacity
        )
