"""What topology traffic and declared bandwidth weigh on CPUs, NICs and disks (part of the usage truth).

- **Services scale with their user rate.** A pod of a topology service that receives calls uses, on
  average, ``calls per second into the service / its running replicas x CPU per call`` millicores (CPU
  per call: the service's ``service_time_ms``, else the ground truth's ``serviceTimeMs`` — the time the
  latency model has a replica busy per call): doubling ``userRate`` doubles it, and so does halving the
  replicas. The workload's usage profile (swing, noise, bursts) applies on top; its ``cpu`` fraction does
  not. Services nobody calls (a load generator) keep their profile.
- **NICs.** Each topology edge carries ``weight x userRate`` calls per second, times the caller's swing,
  of ``bytes`` each (``usage.bandwidth.bytesPerCall`` when the edge gives none). Calls spread evenly over
  the callee's running replicas, so of a caller's calls the share going to callees on other nodes leaves
  through its node's NIC and arrives through theirs; calls between pods on one node cross no NIC. Other
  pods use ``network`` x the bandwidth they declare (NodeBandwidth's request or annotation).
- **Disks.** Pods use ``disk`` x the disk bandwidth they declare.

A NIC's load is its in and out traffic together, against the node's advertised
``harmonic.dev/network-bandwidth``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harmonic.sim.plan import Plan
from harmonic.sim.scenario import UsageProfile
from harmonic.sim.usage.alibaba import UsageSeries


class Traffic:
    """The scenario's topology services (one index each) and edges, as arrays."""

    def __init__(self, plan: Plan, profile_of: Callable[[str], UsageProfile | UsageSeries]) -> None:
        default_bytes = plan.usage.bandwidth.bytes_per_call
        service_ms = plan.ground_truth.service_time_ms
        self.index: dict[str, int] = {}
        rate_in: list[float] = []
        cpu_ms: list[float] = []
        src: list[int] = []
        dst: list[int] = []
        bps: list[float] = []
        for topo in plan.topologies:
            own_ms = dict(topo.service_time_ms)
            for s in topo.services:
                self.index[topo.workload(s)] = len(rate_in)
                rate_in.append(topo.calls_per_second(s))
                cpu_ms.append(own_ms.get(s, service_ms))
            for e in topo.edges:
                src.append(self.index[topo.workload(e.src)])
                dst.append(self.index[topo.workload(e.dst)])
                bps.append(topo.user_rate * e.weight * (e.bytes if e.bytes is not None else default_bytes))
        self.rate_in = np.asarray(rate_in, dtype=np.float64)
        self.cpu_ms = np.asarray(cpu_ms, dtype=np.float64)
        self.src = np.asarray(src, dtype=np.int64)
        self.dst = np.asarray(dst, dtype=np.int64)
        self.bps = np.asarray(bps, dtype=np.float64)
        # Each service's swing (amplitude, period, phase): callers' swings drive their edges.
        self.swing = np.zeros((len(rate_in), 3))
        for workload, i in self.index.items():
            prof = profile_of(workload)
            if isinstance(prof, UsageProfile):
                self.swing[i] = (prof.amplitude, prof.period, prof.phase)

    def service_of(self, workload: str) -> int:
        """The workload's service index, -1 when it is no topology service."""
        return self.index.get(workload, -1)

    def cpu(self, svc: np.ndarray) -> np.ndarray:
        """Mean CPU (millicores) of each running pod whose service index is ``svc`` (-1: not a service),
        NaN where the profile's fraction of the request applies (no service, or one nobody calls)."""
        out = np.full(len(svc), np.nan)
        mine = svc >= 0
        if not mine.any():
            return out
        s = svc[mine]
        replicas = np.bincount(s, minlength=len(self.rate_in))
        per_pod = self.rate_in[s] * self.cpu_ms[s] / replicas[s]
        out[mine] = np.where(self.rate_in[s] > 0, per_pod, np.nan)
        return out

    def nic(self, t: float, svc: np.ndarray, nodes: np.ndarray, k: int) -> np.ndarray:
        """Bytes per second through each of ``k`` nodes' NICs from topology calls, given each running
        pod's service index and node id."""
        out = np.zeros(k)
        mine = svc >= 0
        if not len(self.bps) or not mine.any():
            return out
        n = len(self.rate_in)
        counts = np.bincount(svc[mine] * k + nodes[mine], minlength=n * k).reshape(n, k).astype(np.float64)
        totals = counts.sum(axis=1)
        share = np.divide(counts, totals[:, None], out=np.zeros_like(counts), where=totals[:, None] > 0)
        amp, period, phase = self.swing[self.src].T
        wave = 1 + amp * np.sin(2 * np.pi * (t + phase) / np.where(period > 0, period, 1.0))
        # An edge with no caller or no callee running carries nothing (its calls fail).
        live = (totals[self.src] > 0) & (totals[self.dst] > 0)
        rate = np.where(live, self.bps * wave, 0.0)[:, None]
        fs, fd = share[self.src], share[self.dst]
        crossing = rate * (fs * (1 - fd) + fd * (1 - fs))
        out += crossing.sum(axis=0)
        return out
