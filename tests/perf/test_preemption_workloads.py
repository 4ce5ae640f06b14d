"""The preemption scheduler_perf workloads at upstream's integration-test size (5 nodes)."""

from harmonic.perf.runner import run_workload
from harmonic.perf.workloads import WORKLOADS
from harmonic.perf.workloads.preemption import preemption_async, preemption_basic
from harmonic.plugins.registry import default_registry


def test_registered_with_upstream_sizes():
    assert WORKLOADS["PreemptionBasic"][1] == (1000, 4000, 1000)
    assert WORKLOADS["PreemptionAsync"][1] == (5000, 20000, 5000)


def test_preemption_basic_every_measured_pod_preempts_then_binds():
    r = run_workload(preemption_basic(5, 20, 5), default_registry())
    assert r.scheduled == 5
    # Each high-priority pod first fails, preempts three low-priority pods, and binds on its retry.
    assert r.unschedulable_attempts == 5


def test_preemption_async_measures_the_regular_pods():
    r = run_workload(preemption_async(5, 20, 5), default_registry())
    assert r.scheduled == 5 and r.measured_pods == 5
