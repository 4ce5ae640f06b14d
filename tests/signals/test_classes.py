import pytest

from harmonic.api.pod import parse_pod
from harmonic.signals.classes import WorkloadClass, classify
from harmonic.testing import pod

LC, BC, BM, BI, BE, G = (
    WorkloadClass.LATENCY_CRITICAL,
    WorkloadClass.BATCH_CPU,
    WorkloadClass.BATCH_MEMORY,
    WorkloadClass.BATCH_IO,
    WorkloadClass.BEST_EFFORT,
    WorkloadClass.GENERAL,
)


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        (pod("p").annotation("harmonic.dev/class", "batch-io").owner("ReplicaSet", "web"), BI),
        (pod("p").label("harmonic.dev/class", "latency-critical").owner("Job", "j").req(cpu="1"), LC),
        (pod("p").annotation("harmonic.dev/class", "nonsense").owner("Job", "j").req(cpu="1"), BC),
        (pod("p").owner("ReplicaSet", "web"), BE),  # no requests or limits at all
        (pod("p").owner("Job", "j").req(cpu="4", memory="8Gi"), BC),
        (pod("p").owner("Job", "j").req(cpu="1", memory="32Gi"), BM),
        (pod("p").owner("Job", "j").req(cpu="1").annotation("harmonic.dev/io-intensive", "true"), BI),
        (pod("p").owner("ReplicaSet", "web").req(cpu="100m"), LC),
        (pod("p").owner("StatefulSet", "db").req(cpu="100m"), LC),
        (pod("p").owner("DaemonSet", "agent").req(cpu="100m"), G),
        (pod("p").req(cpu="100m"), G),
    ],
)
def test_class_rules(builder, expected):
    assert classify(parse_pod(builder.obj())) == expected
