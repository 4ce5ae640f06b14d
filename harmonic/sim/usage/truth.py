"""The world side of usage: what every running pod really uses, tick by tick (part of the ground truth).

Every ``usage.interval`` the world draws each running pod's CPU and memory demand from its workload's
profile (``UsageProfile``; or the trace's series), sums them per node and applies what a kernel and a
kubelet would:

- **CPU throttling.** A node whose demand exceeds its allocatable CPU gives every pod the same share
  ``allocatable / demand`` (CFS shares in proportion to requests are not modelled); the shortfall is
  ``throttled_cpu_seconds``, and a pod with a fixed run time (a Job's) falls behind by ``(1 - share)`` of
  every throttled second: it finishes that much later.
- **Memory pressure.** A node whose memory demand exceeds its allocatable memory evicts pods in kubelet's
  order (``rankMemoryPressure``: pods using more than they request first, then lower priority, then the
  largest use above request) until the rest fits; controllers replace them.

Random draws come from a counter-based hash of (seed, pod name, tick), so every profile's world sees the
same demand for the same pod at the same time: differences come from placements alone. Schedulers never
read this module: they see usage through ``exporters`` (node-exporter, cAdvisor, metrics-server).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from harmonic.api.pod import parse_pod
from harmonic.api.resources import CPU, MEMORY
from harmonic.plugins.nodebandwidth import node_bandwidth, pod_bandwidth
from harmonic.signals.identity import WorkloadKey, workload_of
from harmonic.sim.metrics import EXTRA_METRICS
from harmonic.sim.records import PodRecord
from harmonic.sim.scenario import USAGE_PROFILE_FIELDS, UsageProfile, UsageSpec
from harmonic.sim.usage.alibaba import UsageSeries
from harmonic.sim.usage.forecast_error import HorizonError
from harmonic.sim.usage.traffic import Traffic

if TYPE_CHECKING:
    from harmonic.sim.engine import World

REASON_MEMORY_PRESSURE = "evicted: memory pressure"
#: Profile parameters, one array each, in this order.
_PARAMS = USAGE_PROFILE_FIELDS
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a well-spread 64-bit hash of each element."""
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _uniform(h: np.ndarray, salt: int) -> np.ndarray:
    """Uniforms in (0, 1), one per hash, independent across salts."""
    with np.errstate(over="ignore"):
        bits = _mix(h ^ _mix(np.full(1, salt, dtype=np.uint64)))
    return ((bits >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)


@dataclass
class Tick:
    """The world's usage at one tick: per node id, and per running pod."""

    time: float
    node_cpu: np.ndarray  # millicores used (after throttling); nan for nodes that are down
    node_memory: np.ndarray  # bytes
    pods: list[str]
    pod_cpu: np.ndarray
    pod_memory: np.ndarray


@dataclass
class UsageTotals:
    node_seconds: float = 0.0
    hot_node_seconds: float = 0.0
    throttled_cpu_seconds: float = 0.0
    memory_evictions: int = 0
    #: Time-weighted sums of the mean and stdev over nodes of actual CPU use / allocatable.
    util_mean_sum: float = 0.0
    util_std_sum: float = 0.0
    util_seconds: float = 0.0
    lost_progress_seconds: float = 0.0
    #: Node-seconds of nodes advertising a network / disk bandwidth, and of those saturated.
    network_node_seconds: float = 0.0
    network_saturated_seconds: float = 0.0
    disk_node_seconds: float = 0.0
    disk_saturated_seconds: float = 0.0
    #: Pod-seconds of progress lost to saturated NICs and disks (every pod, services included).
    bandwidth_lost_pod_seconds: float = 0.0
    ticks: int = 0
    #: Per tick: time, mean and stdev of node CPU utilisation, hot nodes (for the report).
    series: list[tuple[float, float, float, int]] = field(default_factory=list)


class UsageTruth:
    def __init__(self, world: World) -> None:
        self.world = world
        plan = world.plan
        spec: UsageSpec = plan.usage
        self.spec = spec
        self.interval = spec.interval or plan.sample_interval
        self.end = plan.duration if plan.duration is not None else math.inf
        self.seed = plan.seed
        self.node_ids: dict[str, int] = {}
        cap = 256
        self.node = np.full(cap, -1, dtype=np.int64)
        self.cpu_req = np.zeros(cap)
        self.mem_req = np.zeros(cap)
        self.priority = np.zeros(cap, dtype=np.int64)
        self.hash = np.zeros(cap, dtype=np.uint64)
        self.series_id = np.full(cap, -1, dtype=np.int64)
        self.timed = np.zeros(cap, dtype=bool)
        self.lost = np.zeros(cap)
        #: Topology service index (-1: none), declared network and disk bandwidth (bytes/s).
        self.svc = np.full(cap, -1, dtype=np.int64)
        self.net_decl = np.zeros(cap)
        self.disk_decl = np.zeros(cap)
        self.params = np.zeros((len(_PARAMS), cap))
        self.key: list[str] = [""] * cap
        self.slot_of: dict[str, int] = {}
        self._free: list[int] = []
        self.used = 0
        self.series: list[UsageSeries] = []
        self._series_index: dict[str, int] = {}
        self._profiles: dict[str, UsageProfile | UsageSeries] = {}
        self.totals = UsageTotals()
        self.history: list[Tick] = []
        #: Keep this much history for the exporters' windows.
        self.keep_seconds = 2 * 86400.0
        self._last: tuple[float, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._util: tuple[np.ndarray, np.ndarray, np.ndarray] = (
            np.zeros(0, dtype=bool),
            np.zeros(0),
            np.zeros(0),
        )
        #: Per node at the last tick: advertises / saturated, network then disk; per row, bandwidth loss.
        self._io: tuple[np.ndarray, np.ndarray, np.ndarray] = (
            np.zeros((0, 2), dtype=bool),
            np.zeros((0, 2), dtype=bool),
            np.zeros(0),
        )
        self.traffic = Traffic(plan, self.profile_of)
        self._workload_keys: dict[str, WorkloadKey | None] = {}
        self.horizon_error = HorizonError(self._workload_key)

    # ------------------------------------------------------------------ world events
    def start(self) -> None:
        self.world.after(0.0, self.tick)

    def profile_of(self, workload: str) -> UsageProfile | UsageSeries:
        found = self._profiles.get(workload)
        if found is None:
            found = self.world.plan.trace_usage.get(workload)
            if found is None:
                found = self.spec.profile_for(workload)
            self._profiles[workload] = found
        return found

    def _workload_key(self, key: str) -> WorkloadKey | None:
        """The workload as the usage model names it (``signals.identity``), cached per pod."""
        if key not in self._workload_keys:
            raw = self.world.cluster.pods.get(key)
            self._workload_keys[key] = workload_of(parse_pod(raw)) if raw is not None else None
        return self._workload_keys[key]

    def bound(self, rec: PodRecord) -> None:
        assert rec.node is not None
        pod = parse_pod(self.world.cluster.pods[rec.key])
        slot = self._free.pop() if self._free else self._grow_slot()
        self.slot_of[rec.key] = slot
        self.key[slot] = rec.key
        self.node[slot] = self.node_ids.setdefault(rec.node, len(self.node_ids))
        self.cpu_req[slot] = float(pod.requests.get(CPU, 0))
        self.mem_req[slot] = float(pod.requests.get(MEMORY, 0))
        self.priority[slot] = pod.priority
        self.hash[slot] = np.uint64(
            zlib.crc32(rec.key.encode()) | (zlib.crc32(str(self.seed).encode()) << 32)
        )
        self.timed[slot] = rec.run_for is not None
        self.lost[slot] = 0.0
        self.svc[slot] = self.traffic.service_of(rec.workload)
        declared = pod_bandwidth(pod)
        self.net_decl[slot], self.disk_decl[slot] = (0.0, 0.0) if isinstance(declared, str) else declared
        prof = self.profile_of(rec.workload)
        if isinstance(prof, UsageSeries):
            sid = self._series_index.setdefault(rec.workload, len(self.series))
            if sid == len(self.series):
                self.series.append(prof)
            self.series_id[slot] = sid
            self.params[:, slot] = [getattr(self.spec.default, p) for p in _PARAMS]
            self.params[_PARAMS.index("amplitude"), slot] = 0.0
            self.params[_PARAMS.index("memory_amplitude"), slot] = 0.0
        else:
            self.series_id[slot] = -1
            self.params[:, slot] = [getattr(prof, p) for p in _PARAMS]

    def _grow_slot(self) -> int:
        slot = self.used
        self.used += 1
        if slot == len(self.node):
            n = len(self.node)
            self.node = np.concatenate([self.node, np.full(n, -1, dtype=np.int64)])
            self.series_id = np.concatenate([self.series_id, np.full(n, -1, dtype=np.int64)])
            self.svc = np.concatenate([self.svc, np.full(n, -1, dtype=np.int64)])
            for name in ("cpu_req", "mem_req", "lost", "net_decl", "disk_decl"):
                setattr(self, name, np.concatenate([getattr(self, name), np.zeros(n)]))
            self.priority = np.concatenate([self.priority, np.zeros(n, dtype=np.int64)])
            self.hash = np.concatenate([self.hash, np.zeros(n, dtype=np.uint64)])
            self.timed = np.concatenate([self.timed, np.zeros(n, dtype=bool)])
            self.params = np.concatenate([self.params, np.zeros_like(self.params)], axis=1)
            self.key += [""] * n
        return slot

    def gone(self, rec: PodRecord) -> None:
        self._workload_keys.pop(rec.key, None)
        slot = self.slot_of.pop(rec.key, None)
        if slot is not None:
            self.node[slot] = -1
            self._free.append(slot)

    def extra_time(self, key: str) -> float:
        """Run time a pod still owes for the progress throttling took from it (then forgiven)."""
        slot = self.slot_of.get(key)
        if slot is None:
            return 0.0
        owed = float(self.lost[slot])
        self.lost[slot] = 0.0
        return owed if owed >= 1.0 else 0.0

    # ------------------------------------------------------------------ the tick
    def demand(self, t: float, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """CPU (millicores), memory (bytes), network and disk (bytes/s) demand of the pods in ``rows``
        (every running pod on an up node) at time ``t``; topology services' network is the NIC load
        ``traffic.nic`` computes per node, not theirs."""
        p = self.params[:, rows]
        cpu_f, mem_f, amp, mamp, period, phase, noise, bp, bf, net_f, disk_f = p
        sid = self.series_id[rows]
        for s in np.unique(sid[sid >= 0]).tolist():
            mine = sid == s
            ser = self.series[s]
            cpu_f = np.where(mine, np.interp(t, ser.times, ser.cpu), cpu_f)
            mem_f = np.where(mine, np.interp(t, ser.times, ser.memory), mem_f)
        angle = 2 * np.pi * (t + phase) / np.where(period > 0, period, 1.0)
        wave = np.sin(angle)
        k = np.full(1, round(t / self.interval), dtype=np.uint64)
        with np.errstate(over="ignore"):
            h = self.hash[rows] ^ _mix(k)
        u1, u2, u3 = _uniform(h, 1), _uniform(h, 2), _uniform(h, 3)
        z = np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2)
        burst = np.where(u3 < bp, bf, 1.0)
        svc = self.svc[rows]
        by_rate = self.traffic.cpu(svc)
        base = np.where(np.isnan(by_rate), self.cpu_req[rows] * cpu_f, by_rate)
        swing = (1 + amp * wave) * np.maximum(0.0, 1 + noise * z)
        cpu = base * swing * burst
        mem = self.mem_req[rows] * mem_f * (1 + mamp * wave) * np.maximum(0.0, 1 + 0.5 * noise * z)
        net = np.where(svc >= 0, 0.0, self.net_decl[rows] * net_f * swing)
        disk = self.disk_decl[rows] * disk_f * swing
        return cpu, mem, net, disk

    def _nodes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per node id: up, allocatable CPU (millicores) and memory (bytes), and network and disk
        bandwidth (bytes/s; -1 where not advertised)."""
        w = self.world
        for n in w.node_views:
            self.node_ids.setdefault(n, len(self.node_ids))
        k = len(self.node_ids)
        up = np.zeros(k, dtype=bool)
        cpu = np.zeros(k)
        mem = np.zeros(k)
        io = np.full((k, 2), -1.0)
        for n, view in w.node_views.items():
            i = self.node_ids[n]
            up[i] = n not in w.failed_nodes
            cpu[i] = float(view.allocatable.get(CPU, 0))
            mem[i] = float(view.allocatable.get(MEMORY, 0))
            io[i] = node_bandwidth(view)
        return up, cpu, mem, io

    def tick(self) -> None:
        now = self.world.now()
        self._account(now)
        up, alloc_cpu, alloc_mem, alloc_io = self._nodes()
        rows = np.flatnonzero(self.node[: self.used] >= 0)
        rows = rows[up[self.node[rows]]]
        cpu, mem, net, disk = self.demand(now, rows)
        nodes = self.node[rows]
        k = len(up)
        if self.spec.evictions:
            keep = self._memory_pressure(rows, mem, nodes, alloc_mem, k)
            rows, cpu, mem, net, disk, nodes = (
                rows[keep],
                cpu[keep],
                mem[keep],
                net[keep],
                disk[keep],
                nodes[keep],
            )
        demand = np.bincount(nodes, weights=cpu, minlength=k)
        share = np.divide(alloc_cpu, demand, out=np.ones(k), where=demand > alloc_cpu)
        used_cpu = np.minimum(demand, alloc_cpu)
        used_mem = np.bincount(nodes, weights=mem, minlength=k)
        node_cpu = np.where(up, used_cpu, np.nan)
        node_mem = np.where(up, used_mem, np.nan)
        svc = self.svc[rows]
        load = np.stack(
            [
                np.bincount(nodes, weights=net, minlength=k) + self.traffic.nic(now, svc, nodes, k),
                np.bincount(nodes, weights=disk, minlength=k),
            ],
            axis=1,
        )
        advertised = (alloc_io >= 0) & up[:, None]
        saturated = advertised & (load > alloc_io)
        io_share = np.divide(alloc_io, load, out=np.ones_like(load), where=saturated)
        # A pod slows with the scarcest resource it uses: CPU, its node's NIC, its node's disk.
        uses = np.stack([(net > 0) | (svc >= 0), disk > 0], axis=1)
        io_row = np.where(uses, io_share[nodes], 1.0).min(axis=1)
        self._last = (now, rows, np.minimum(share[nodes], io_row), np.maximum(demand - alloc_cpu, 0.0))
        self._util = (up, alloc_cpu, used_cpu)
        self._io = (advertised, saturated, 1.0 - io_row)
        keys = [self.key[r] for r in rows.tolist()]
        self.history.append(Tick(now, node_cpu, node_mem, keys, cpu * share[nodes], mem))
        model = self.world.usage_model
        if model is not None:
            self.horizon_error.observe(now, keys, cpu * share[nodes], model.view)
        while self.history and self.history[0].time < now - self.keep_seconds:
            self.history.pop(0)
        self.totals.ticks += 1
        if now + self.interval <= self.end:
            self.world.after(self.interval, self.tick)

    def _account(self, now: float) -> None:
        """Charge the interval since the last tick with the state the last tick found."""
        if self._last is None:
            return
        t0, rows, share, excess = self._last
        dt = now - t0
        if dt <= 0:
            return
        tot = self.totals
        up, alloc, used = self._util
        live = up & (alloc > 0)
        util = used[live] / alloc[live]
        tot.node_seconds += dt * int(live.sum())
        hot = int((util > self.spec.hot_threshold).sum())
        tot.hot_node_seconds += dt * hot
        tot.throttled_cpu_seconds += dt * float(excess.sum()) / 1000
        advertised, saturated, io_loss = self._io
        if advertised.any():
            counted = advertised.sum(axis=0)
            tot.network_node_seconds += dt * int(counted[0])
            tot.disk_node_seconds += dt * int(counted[1])
            hit = saturated.sum(axis=0)
            tot.network_saturated_seconds += dt * int(hit[0])
            tot.disk_saturated_seconds += dt * int(hit[1])
            tot.bandwidth_lost_pod_seconds += dt * float(io_loss.sum())
        if len(util):
            tot.util_mean_sum += dt * float(util.mean())
            tot.util_std_sum += dt * float(util.std())
            tot.util_seconds += dt
            tot.series.append((t0, float(util.mean()), float(util.std()), hot))
        still = self.node[rows] >= 0
        timed = rows[still & self.timed[rows]]
        lag = dt * (1.0 - share[still & self.timed[rows]])
        self.lost[timed] += lag
        tot.lost_progress_seconds += float(lag.sum())

    def _memory_pressure(
        self, rows: np.ndarray, mem: np.ndarray, nodes: np.ndarray, alloc_mem: np.ndarray, k: int
    ) -> np.ndarray:
        """Evict what memory pressure evicts; the mask of the rows that stay."""
        keep = np.ones(len(rows), dtype=bool)
        demand = np.bincount(nodes, weights=mem, minlength=k)
        pressured = np.flatnonzero((demand > alloc_mem) & (alloc_mem > 0))
        if not len(pressured):
            return keep
        evicted: list[int] = []
        for n in pressured.tolist():
            mine = np.flatnonzero(nodes == n)
            over = mem[mine] - self.mem_req[rows[mine]]
            # rankMemoryPressure: exceeding requests first, then lower priority, then larger excess.
            order = np.lexsort((-over, self.priority[rows[mine]], ~(over > 0)))
            excess = demand[n] - alloc_mem[n]
            for j in order.tolist():
                if excess <= 0:
                    break
                evicted.append(int(mine[j]))
                excess -= mem[mine[j]]
        keep[evicted] = False
        victims = [self.key[rows[i]] for i in evicted]
        for key in victims:
            self.totals.memory_evictions += 1
            self.world.delete_pod(key, REASON_MEMORY_PRESSURE)
        return keep

    def summary(self) -> dict[str, object]:
        self._account(self.world.now())
        self._last = None
        t = self.totals
        return {
            "hot_node_share": round(t.hot_node_seconds / t.node_seconds, 6) if t.node_seconds else None,
            "throttled_cpu_seconds": round(t.throttled_cpu_seconds, 3),
            "memory_evictions": t.memory_evictions,
            "actual_cpu_utilisation": {
                "mean": round(t.util_mean_sum / t.util_seconds, 6) if t.util_seconds else None,
                "stdev": round(t.util_std_sum / t.util_seconds, 6) if t.util_seconds else None,
            },
            "throttling_delay_seconds": round(t.lost_progress_seconds, 3),
            **self._bandwidth_summary(),
        }

    def _bandwidth_summary(self) -> dict[str, object]:
        """Only where some node advertises a bandwidth: other scenarios' metrics stay as they were."""
        t = self.totals
        if not (t.network_node_seconds or t.disk_node_seconds):
            return {}

        def share(hit: float, seen: float) -> float | None:
            return round(hit / seen, 6) if seen else None

        return {
            "network_saturated_share": share(t.network_saturated_seconds, t.network_node_seconds),
            "disk_saturated_share": share(t.disk_saturated_seconds, t.disk_node_seconds),
            "bandwidth_lost_pod_seconds": round(t.bandwidth_lost_pod_seconds, 3),
        }


def usage_metrics(world: World) -> dict[str, object]:
    usage: UsageTruth | None = world.usage
    if usage is None:
        return {}
    out = usage.summary()
    model = world.usage_model
    if model is not None:
        mape = model.mape()
        out["forecast_cpu_mape"] = round(mape, 6) if mape is not None else None
        out["forecast_cpu_mape_horizon"] = usage.horizon_error.summary()
    return out


EXTRA_METRICS.append(usage_metrics)
