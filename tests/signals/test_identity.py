import pytest

from harmonic.api.pod import parse_pod
from harmonic.signals.identity import WorkloadKey, workload_of
from harmonic.testing import pod


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        (pod("web-7d9f-abcde").owner("ReplicaSet", "web-7d9f").label("pod-template-hash", "7d9f"), "web"),
        (pod("db-0").owner("StatefulSet", "db"), "db"),
        (pod("x").owner("ReplicaSet", "plain-rs"), "plain-rs"),
        (pod("job-abc").owner("Job", "nightly"), "nightly"),
        (pod("p").label("app.kubernetes.io/name", "cart").label("app", "other"), "cart"),
        (pod("p").label("app", "cart"), "cart"),
        (pod("p").label("service.istio.io/canonical-name", "mesh-cart"), "mesh-cart"),
        (pod("p").annotation("harmonic.dev/workload", "forced").owner("StatefulSet", "db"), "forced"),
        (pod("lonely"), "lonely"),
    ],
)
def test_workload_identity(builder, expected):
    assert workload_of(parse_pod(builder.ns("shop").obj())) == WorkloadKey("shop", expected)
