"""The simulated exporters: a load-aware profile learns usage only through Prometheus, late and noisy."""

from __future__ import annotations

import numpy as np
import pytest

from ..helpers import deployment, objects, run_worlds, scenario


def test_load_aware_profile_reads_the_truth_through_prometheus(tmp_path):
    cfg = tmp_path / "la.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: la\n  plugins:\n    multiPoint:\n      enabled: [{name: LoadAware}]\n"
        "  pluginConfig:\n  - name: LoadAware\n    args: {seasonSeconds: 600}\n"
    )
    sc = scenario(
        [objects(deployment("web", 4, cpu="1"))], nodes=2, cpu="4", duration="20m",
        usage={"default": {"cpu": 0.5, "amplitude": 0, "noise": 0}, "exporterNoise": 0},
    )  # fmt: skip
    worlds = run_worlds(sc, configs=(str(cfg),))
    la = worlds["la"]
    assert worlds["default-scheduler"].usage_model is None
    view = la.usage_model.view
    assert view.fresh
    # 4 pods x 1 core x 0.5 spread over the 2 nodes: the nodes together use 2 cores.
    assert sum(s.cpu_mean for s in view.nodes.values()) == pytest.approx(2000, rel=0.01)
    (fc,) = view.workloads.values()
    assert float(np.mean(fc.cpu.mean)) == pytest.approx(500, rel=0.02)
    metrics = la.usage.summary()
    assert metrics["hot_node_share"] == 0


def test_nothing_is_reported_before_the_exporter_delay():
    from harmonic.signals.usage import PrometheusUsageSource
    from harmonic.sim.usage.exporters import SimulatedUsagePrometheus

    sc = scenario([objects(deployment("web", 1))], nodes=1, duration="30s", usage={"exporterDelay": "60s"})
    world = next(iter(run_worlds(sc).values()))
    src = PrometheusUsageSource("http://sim", transport=SimulatedUsagePrometheus(world, world.usage))
    r = src.read()
    assert not r.ok and "no node_cpu_seconds_total" in r.reason
