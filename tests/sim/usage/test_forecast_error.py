"""HorizonError: forecasts scored step by step against what the workload's pods really used."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harmonic.signals.forecast import Forecast
from harmonic.signals.identity import WorkloadKey
from harmonic.signals.usage import UsageView, WorkloadForecast
from harmonic.sim.usage.forecast_error import HorizonError

from ..helpers import run_worlds, scenario

WEB = WorkloadKey("shop", "web")


def _view(version: int, at: float, cpu: list[float]) -> UsageView:
    fc = WorkloadForecast(Forecast(np.asarray(cpu), 0.0), Forecast(np.zeros(len(cpu)), 0.0))
    return UsageView(version, at, True, {}, {WEB: fc}, 60.0)


def _error() -> HorizonError:
    return HorizonError(lambda key: WEB if key.startswith("shop/web") else None)


def test_each_step_is_scored_against_the_tick_it_forecast():
    e = _error()
    pods = ["shop/web-1", "shop/web-2", "shop/db-0"]
    e.observe(0.0, pods, np.asarray([100.0, 100.0, 999.0]), _view(1, 0.0, [200.0, 300.0]))
    # t=60: step 1 forecast 200 per pod, the pods used (150 + 250) / 2 = 200: no error.
    e.observe(60.0, pods, np.asarray([150.0, 250.0, 999.0]), _view(1, 0.0, [200.0, 300.0]))
    # t=120: step 2 forecast 300, used 200: |300 - 200| / 200 = 0.5.
    e.observe(120.0, pods, np.asarray([200.0, 200.0, 999.0]), _view(1, 0.0, [200.0, 300.0]))
    # t=180: past the horizon, nothing more is scored.
    e.observe(180.0, pods, np.asarray([1.0, 1.0, 1.0]), _view(1, 0.0, [200.0, 300.0]))
    assert e.summary() == {"mean": 0.25, "first_step": 0.0, "last_step": 0.5, "steps": 2}


def test_no_forecast_no_figure():
    e = _error()
    e.observe(0.0, ["shop/web-1"], np.asarray([1.0]), UsageView(0, None, False, {}, {}, 60.0))
    assert e.summary() is None


def test_a_load_aware_run_reports_the_horizon_error(tmp_path):
    sc = scenario(
        [{"type": "manifests", "namespace": "shop", "objects": [{
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}},
        }]}],
        nodes=1, zones=("a",), duration="40m",
        usage={"default": {"cpu": 0.5, "amplitude": 0, "noise": 0}},
    )  # fmt: skip
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "la", "plugins": {"multiPoint": {"enabled": [{"name": "LoadAware"}]}},
                      "pluginConfig": [{"name": "LoadAware", "args": {"horizonSeconds": 600}}]}],
    }  # fmt: skip
    path = tmp_path / "la.json"
    path.write_text(json.dumps(config))
    world = run_worlds(sc, tmp_path, (str(path),))["la"]
    m = world.usage.horizon_error.summary()
    # Steady 500m per pod: once the exporter's delay and rate window have passed, the forecast is exact.
    assert m is not None and m["steps"] == 10
    assert m["last_step"] == pytest.approx(0.0, abs=0.01)
