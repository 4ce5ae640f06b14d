import json

import pytest

from harmonic.api.errors import ObjectError
from harmonic.signals.static import AppGroupSource, TopologySource, load_topology


def test_topology_source_scales_calls_by_user_rate(tmp_path):
    f = tmp_path / "t.json"
    f.write_text(
        json.dumps(
            {
                "name": "demo",
                "services": [{"name": "a"}, {"name": "b"}],
                "edges": [{"src": "a", "dst": "b", "weight": 2.5}],
            }
        )
    )
    r = TopologySource(load_topology(f), namespace="ns", user_rate=4).read()
    assert r.ok
    assert [(str(s.src), str(s.dst), s.requests) for s in r.samples] == [("ns/a", "ns/b", 10.0)]


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"services": [], "edges": []}, "services"),
        ({"services": [{"name": "a"}], "edges": [{"src": "a", "dst": "zz", "weight": 1}]}, "edges[0].dst"),
        (
            {"services": [{"name": "a"}, {"name": "b"}], "edges": [{"src": "a", "dst": "b", "weight": -1}]},
            "edges[0].weight",
        ),
        *(
            (
                {
                    "services": [{"name": "a"}, {"name": "b"}],
                    "edges": [{"src": "a", "dst": "b", "weight": w}],
                },
                "edges[0].weight",
            )
            for w in (1e30, float("inf"), float("nan"))
        ),
    ],
)
def test_bad_topologies_name_the_field(tmp_path, doc, field):
    f = tmp_path / "t.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(ObjectError) as e:
        load_topology(f)
    assert field in str(e.value)


def test_shared_online_boutique_loads():
    from importlib import resources

    path = resources.files("harmonic.data").joinpath("topologies", "online-boutique.json")
    src = TopologySource(json.loads(path.read_text()))
    assert src.read().ok


APPGROUP = """
apiVersion: appgroup.diktyo.x-k8s.io/v1alpha1
kind: AppGroup
metadata: {name: a1, namespace: apps}
spec:
  numMembers: 3
  topologySortingAlgorithm: KahnSort
  workloads:
  - workload: {kind: Deployment, apiVersion: apps/v1, name: p1, selector: p1}
    dependencies:
    - workload: {kind: Deployment, apiVersion: apps/v1, name: p2, selector: p2}
      minBandwidth: 100Mi
      maxNetworkCost: 30
  - workload: {kind: Deployment, apiVersion: apps/v1, name: p2, selector: p2}
    dependencies:
    - workload: {kind: Deployment, apiVersion: apps/v1, name: p3, selector: p3, namespace: other}
  - workload: {kind: Deployment, apiVersion: apps/v1, name: p3, selector: p3}
"""


def test_appgroup_dependencies_become_edges(tmp_path):
    f = tmp_path / "ag.yaml"
    f.write_text(APPGROUP)
    r = AppGroupSource.from_file(f).read()
    got = {(str(s.src), str(s.dst)): (s.requests, s.bytes) for s in r.samples}
    assert got == {("apps/p1", "apps/p2"): (1.0, 100 * 2**20), ("apps/p2", "other/p3"): (1.0, 0.0)}


def test_appgroup_errors_name_the_field(tmp_path):
    f = tmp_path / "ag.yaml"
    f.write_text(APPGROUP.replace("minBandwidth: 100Mi", "minBandwidth: lots"))
    with pytest.raises(ObjectError, match=r"spec.workloads\[0\].dependencies\[0\].minBandwidth"):
        AppGroupSource.from_file(f)


@pytest.mark.parametrize("rate", [1e15, float("inf"), float("nan"), -1.0])
def test_a_user_rate_out_of_bounds_is_refused(rate):
    doc = {"services": [{"name": "a"}, {"name": "b"}], "edges": [{"src": "a", "dst": "b", "weight": 1}]}
    with pytest.raises(ValueError, match="user actions per second"):
        TopologySource(doc, user_rate=rate)
