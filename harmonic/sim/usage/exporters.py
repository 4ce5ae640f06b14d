"""What node-exporter, cAdvisor and a Prometheus server would report about the world's usage.

``SimulatedUsagePrometheus`` answers the instant queries ``PrometheusUsageSource`` sends (and only
those: anything else is a PromQL error) from the ticks the usage truth recorded, ``exporterDelay``
behind the world's clock and over the query's window, with relative noise ``exporterNoise``: the node's
CPU rate and its spread, memory in use and its spread, each pod's CPU rate and working set. Nothing
is reported before the first tick has aged past the delay, as with a freshly started Prometheus.

``usage_model_for`` builds the ``node_usage`` handle service of a profile that enables a load-aware
plugin, fed by this exporter; the world refreshes it on its virtual clock.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np

from harmonic.api.pod import parse_pod
from harmonic.framework.config import Profile
from harmonic.signals.identity import WorkloadKey, workload_of
from harmonic.signals.usage import POD_RATE_WINDOW, PrometheusUsageSource, UsageModel, prometheus_queries

if TYPE_CHECKING:
    from harmonic.sim.engine import World
    from harmonic.sim.usage.truth import Tick, UsageTruth

USAGE_URL = "http://prometheus.usage.simulated"
#: Plugins that read the ``node_usage`` service.
LOAD_AWARE_PLUGINS = ("TargetLoadPacking", "LoadVariationRiskBalancing", "LoadAware")


def _seconds(window: str) -> float:
    from harmonic.framework.config import parse_duration

    return parse_duration(window)


class SimulatedUsagePrometheus(httpx.BaseTransport):
    def __init__(
        self, world: World, truth: UsageTruth, window: str = "15m", pod_window: str = POD_RATE_WINDOW
    ) -> None:
        self._world = world
        self._truth = truth
        self._window = _seconds(window)
        self._pod_window = _seconds(pod_window)
        self._roles = {q: role for role, q in prometheus_queries(window, pod_window=pod_window).items()}
        self._queries = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path != "/api/v1/query":
            return _reply(404, {"status": "error", "errorType": "not_found", "error": request.url.path})
        query = request.url.params.get("query", "")
        role = self._roles.get(query)
        if role is None:
            return _reply(
                400, {"status": "error", "errorType": "bad_data", "error": f"unsupported query {query}"}
            )
        now = self._world.now()
        end = now - self._truth.spec.exporter_delay
        window = self._pod_window if role == "pod_cpu" else self._window
        ticks = [t for t in self._truth.history if end - window <= t.time <= end]
        self._queries += 1
        rng = np.random.default_rng([self._world.plan.seed, self._queries])
        series = self._node_series(role, ticks) if role.startswith("node") else self._pod_series(role, ticks)
        noise = self._truth.spec.exporter_noise
        result = []
        for labels, v in series:
            noisy = max(0.0, v * (1.0 + noise * float(rng.standard_normal())))
            result.append({"metric": labels, "value": [now, repr(noisy)]})
        return _reply(200, {"status": "success", "data": {"resultType": "vector", "result": result}})

    def _node_series(self, role: str, ticks: list[Tick]) -> list[tuple[dict[str, str], float]]:
        if not ticks:
            return []
        names = {i: n for n, i in self._truth.node_ids.items()}
        width = max(len(t.node_cpu) for t in ticks)
        cpu = role in ("node_cpu", "node_cpu_std")
        rows = np.full((len(ticks), width), np.nan)
        for j, t in enumerate(ticks):
            v = t.node_cpu if cpu else t.node_memory
            rows[j, : len(v)] = v
        seen = ~np.isnan(rows).all(axis=0)
        with np.errstate(invalid="ignore"):
            stat = (
                np.nanstd(rows[:, seen], axis=0)
                if role.endswith("_std")
                else np.nanmean(rows[:, seen], axis=0)
            )
        scale = 1000.0 if cpu else 1.0
        return [
            ({"node": names[int(i)]}, float(s) / scale)
            for i, s in zip(np.flatnonzero(seen), stat, strict=True)
        ]

    def _pod_series(self, role: str, ticks: list[Tick]) -> list[tuple[dict[str, str], float]]:
        if not ticks:
            return []
        if role == "pod_memory":
            last = ticks[-1]
            values = dict(zip(last.pods, last.pod_memory.tolist(), strict=True))
        else:
            acc: dict[str, list[float]] = {}
            for t in ticks:
                for key, v in zip(t.pods, t.pod_cpu.tolist(), strict=True):
                    a = acc.setdefault(key, [0.0, 0.0])
                    a[0] += v / 1000
                    a[1] += 1
            values = {k: a[0] / a[1] for k, a in acc.items()}
        out = []
        for key, v in sorted(values.items()):
            ns, name = key.split("/", 1)
            out.append(({"namespace": ns, "pod": name}, v))
        return out


def _reply(status: int, body: dict[str, Any]) -> httpx.Response:
    return httpx.Response(
        status, content=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )


def usage_model_for(profile: Profile, world: World) -> UsageModel | None:
    """The ``node_usage`` service for a profile that enables a load-aware plugin (None otherwise, or
    when the scenario has no usage: the plugins then fall back to requests)."""
    enabled = [p for p in LOAD_AWARE_PLUGINS if p in profile.plugin_names]
    truth: UsageTruth | None = world.usage
    if not enabled or truth is None:
        return None
    args = profile.args.get("LoadAware")
    season = float(getattr(args, "season_seconds", 86400.0))
    horizon = float(getattr(args, "horizon_seconds", 3600.0))
    backend = str(getattr(args, "forecast_backend", "numpy"))
    pods = world.cluster.pods
    known: dict[str, WorkloadKey] = {}

    def resolve(namespace: str, name: str) -> WorkloadKey | None:
        key = f"{namespace}/{name}"
        found = known.get(key)
        if found is None:
            raw = pods.get(key)
            if raw is None:
                return None
            found = known[key] = workload_of(parse_pod(raw))
        return found

    source = PrometheusUsageSource(
        USAGE_URL, transport=SimulatedUsagePrometheus(world, truth), name="sim/usage"
    )
    return UsageModel(
        source,
        resolve,
        refresh_seconds=truth.interval,
        season_seconds=season,
        horizon_seconds=horizon,
        backend=backend,
    )
