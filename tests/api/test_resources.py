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


@pytest.mark.parametrize(
    ("builder", "field"),
    [
        (pod("p").req(cpu="-1"), "spec.containers[0].resources.requests.cpu"),
        (pod("p").req(cpu="1").container(memory="-1Gi"), "spec.containers[1].resources.requests.memory"),
        (pod("p").init_container(cpu="-0.001"), "spec.initContainers[0].resources.requests.cpu"),
        (pod("p").req(**{"example.com/x": "-1"}), "spec.containers[0].resources.requests.example.com/x"),
        (pod("p").overhead(memory="-5"), "spec.overhead.memory"),
        (pod("p").spec(resources={"requests": {"cpu": "-2"}}), "spec.resources.requests.cpu"),
    ],
)
def test_negative_requests_are_refused_as_kube_apiserver_does(builder, field):
    """Issue 33: negative requests were accepted (silent overcommit, scores out of range); kube-apiserver
    refuses them with "must be greater than or equal to 0"."""
    with pytest.raises(ObjectError) as e:
        parse_pod(builder.obj())
    assert e.value.field == field
    assert e.value.message.endswith("must be greater than or equal to 0")


@pytest.mark.parametrize(
    ("quantity", "resource"),
    [("1e100", "cpu"), ("9223372036854775808", "memory"), ("1e19", "example.com/x"), ("1e400", "cpu")],
)
def test_requests_beyond_int64_are_refused_naming_the_field(quantity, resource):
    with pytest.raises(ObjectError) as e:
        parse_pod(pod("p").req(**{resource: quantity}).obj())
    assert e.value.field == f"spec.containers[0].resources.requests.{resource}"
    assert "too large" in e.value.message


@pytest.mark.parametrize(
    ("status", "field"),
    [
        ({"capacity": {"cpu": "-4"}}, "status.capacity.cpu"),
        ({"allocatable": {"memory": "-1Gi"}, "capacity": {"memory": "1Gi"}}, "status.allocatable.memory"),
        ({"allocatable": {"cpu": "1e100"}}, "status.allocatable.cpu"),
    ],
)
def test_nodes_with_negative_or_huge_amounts_are_refused_naming_the_field(status, field):
    from harmonic.api.node import parse_node

    with pytest.raises(ObjectError) as e:
        parse_node({"metadata": {"name": "n"}, "status": status})
    assert e.value.field == field
