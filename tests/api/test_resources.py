import pytest

from harmonic.api.errors import ObjectError
from harmonic.api.pod import parse_pod
from harmonic.testing import pod

GI = 2**30
MI = 2**20


@pytest.mark.parametrize(
    ("name", "builder", "cpu", "memory"),
    [
        ("one container", pod("p").req(cpu="1", memory="1Gi"), 1000, GI),
        ("containers add up", pod("p").req(cpu="1").container(cpu="500m"), 1500, 0),
        (
            "init container larger than containers wins",
            pod("p").req(cpu="1").init_container(cpu="3"),
            3000,
            0,
        ),
        ("init container smaller loses", pod("p").req(cpu="2").init_container(cpu="1"), 2000, 0),
        (
            "sidecar adds to containers and to later init containers",
            pod("p").req(cpu="1").init_container(sidecar=True, cpu="1").init_container(cpu="1500m"),
            2500,
            0,
        ),
        (
            "sidecars before a big init container",
            pod("p").req(cpu="100m").init_container(sidecar=True, cpu="200m").init_container(cpu="2"),
            2200,
            0,
        ),
        (
            "overhead is added",
            pod("p").req(cpu="1", memory="1Gi").overhead(cpu="250m", memory="120Mi"),
            1250,
            GI + 120 * MI,
        ),
        (
            "pod-level requests replace the aggregate for cpu/memory",
            pod("p").req(cpu="1", memory="1Gi").spec(resources={"requests": {"cpu": "3"}}),
            3000,
            GI,
        ),
        ("no requests", pod("p"), 0, 0),
    ],
)
def test_pod_requests(name, builder, cpu, memory):
    p = parse_pod(builder.obj())
    assert p.requests.get("cpu", 0) == cpu, name
    assert p.requests.get("memory", 0) == memory, name


def test_nonzero_defaults_only_fill_missing_requests():
    p = parse_pod(pod("p").req(memory="1Gi").container(cpu="0").obj())
    # first container: cpu missing -> 100m; second: cpu explicitly 0 stays 0, memory missing -> 200Mi
    assert p.nonzero_cpu == 100
    assert p.nonzero_memory == GI + 200 * MI
    assert p.requests == {"memory": GI, "cpu": 0}


def test_extended_resources_are_whole_units():
    p = parse_pod(pod("p").req(**{"example.com/gpu": "2"}).obj())
    assert p.requests["example.com/gpu"] == 2


def test_malformed_quantity_names_object_and_field():
    bad = pod("web").ns("shop").req(cpu="lots").obj()
    with pytest.raises(ObjectError) as e:
        parse_pod(bad)
    assert str(e.value).startswith("Pod shop/web: spec.containers[0].resources.requests.cpu:")
