"""Every simulator input answers a bad value with one ``ScenarioError`` naming the file and field, or
loads (and runs): the example scenario, its manifests, a topology file and the trace CSVs mutated by
hypothesis. And the documented limits refuse oversized scenarios at load time with the count."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from harmonic.framework.config import ConfigError
from harmonic.plugins.registry import default_registry
from harmonic.sim.errors import ScenarioError
from harmonic.sim.run import prepare
from tests.fuzzing import NASTY, fuzz_settings, mutated
from tests.sim.helpers import deployment, job, objects, plan_of, run, scenario

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "simulator"
TOPOLOGY = ROOT / "examples" / "topologies" / "hotel-reservation.json"
REGISTRY = default_registry()
TRACES = ("arrivals.csv", "batch_task.csv", "container_meta.csv")


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Path:
    """A copy of the example scenario whose topology is a file (so it can be mutated too)."""
    d = tmp_path_factory.mktemp("example") / "s"
    shutil.copytree(EXAMPLE, d)
    shutil.copy(TOPOLOGY, d / "topology.json")
    sc = yaml.safe_load((d / "scenario.yaml").read_text())
    for w in sc["workloads"]:
        if w["type"] == "topology":
            w["topology"] = "topology.json"
    (d / "scenario.yaml").write_text(yaml.safe_dump(sc))
    return d


def _loads_or_fails_clearly(scenario_file: Path) -> None:
    try:
        prepare(scenario_file, [], REGISTRY)
    except (ScenarioError, ConfigError) as e:
        assert str(e).strip(), "an error must say something"


def _mutating(example: Path, relative: str, text: str) -> None:
    target = example / relative
    original = target.read_text()
    target.write_text(text)
    try:
        _loads_or_fails_clearly(example / "scenario.yaml")
    finally:
        target.write_text(original)


SCENARIO = yaml.safe_load((EXAMPLE / "scenario.yaml").read_text())
MANIFESTS = [d for d in yaml.safe_load_all((EXAMPLE / "manifests" / "shop.yaml").read_text()) if d]


@fuzz_settings(60)
@given(doc=mutated(SCENARIO))
def test_fuzz_scenario_file(example, doc):
    (example / "mutated.yaml").write_text(yaml.safe_dump(doc))
    _loads_or_fails_clearly(example / "mutated.yaml")


@fuzz_settings(60)
@given(docs=mutated(MANIFESTS))
def test_fuzz_manifest_file(example, docs):
    text = yaml.safe_dump_all(docs) if isinstance(docs, list) else yaml.safe_dump(docs)
    _mutating(example, "manifests/shop.yaml", text)


@fuzz_settings(40)
@given(doc=mutated(json.loads(TOPOLOGY.read_text())))
def test_fuzz_topology_file(example, doc):
    try:
        text = json.dumps(doc)
    except ValueError:
        return
    _mutating(example, "topology.json", text)


_cells = st.one_of(
    st.sampled_from([str(v) for v in NASTY if not isinstance(v, list | dict)]), st.text(max_size=8)
)


@st.composite
def _csv(draw: st.DrawFn) -> tuple[str, str]:
    name = draw(st.sampled_from(TRACES))
    lines = (EXAMPLE / "traces" / name).read_text().splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        cols = lines[i].split(",")
        op = draw(st.sampled_from(["cell", "cell", "drop", "truncate", "duplicate"]))
        if op == "cell":
            cols[draw(st.integers(0, len(cols) - 1))] = draw(_cells).replace(",", ";").replace("\n", " ")
            lines[i] = ",".join(cols)
        elif op == "drop" and len(lines) > 1:
            del lines[i]
        elif op == "truncate":
            lines[i] = ",".join(cols[: draw(st.integers(0, len(cols)))])
        else:
            lines.insert(i, lines[i])
    return name, "\n".join(lines) + "\n"


@fuzz_settings(60)
@given(csv=_csv())
def test_fuzz_trace_files(example, csv):
    name, text = csv
    _mutating(example, f"traces/{name}", text)


_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "labels": {"app": "p"}},
    "spec": {
        "containers": [
            {
                "name": "c",
                "image": "i",
                "resources": {"requests": {"cpu": "100m"}},
                "ports": [{"containerPort": 80, "hostPort": 8080}],
            }
        ],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 5,
                        "preference": {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]},
                    }
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app": "p"}},
                        },
                    }
                ]
            },
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "p"}},
            }
        ],
    },
}


@fuzz_settings(25)
@given(pod=mutated(_POD))
def test_fuzz_pod_that_loads_also_runs(pod):
    """What the loader accepts, the engine and the plugins run (no traceback half-way through)."""
    try:
        sc = scenario([objects(pod)], duration=600)
        plan_of(sc)
    except ScenarioError:
        return
    run(sc)


# ---------------------------------------------------------------- limits
@pytest.mark.parametrize(
    ("sc", "pattern"),
    [
        (
            scenario([objects(deployment("web", 10_000_000))]),
            r"workloads: the workloads ask for 10000000 pods, more than limits.maxPods \(150000\)",
        ),
        (
            scenario(nodes=10_000_000),
            r"cluster.nodePools\[0\].count: .* 10000000 nodes, more than limits.maxNodes \(5000\)",
        ),
        (
            scenario(
                [{"type": "arrivals", "name": "a", "rate": 1000, "end": "10h", "template": _POD}],
            ),
            r"workloads\[0\]: the scenario would ask for about 36000000 pods",
        ),
        (
            scenario(events=[{"type": "nodeAdded", "at": 60, "pool": "n", "count": 4998}]),
            r"events\[0\].count: the scenario would have 5001 nodes",
        ),
        (
            scenario(
                [objects(deployment("web", 10))],
                events=[{"type": "deploymentScaled", "at": 60, "name": "web", "replicas": 200_000}],
            ),
            r"ask for 200000 pods",
        ),
        (
            scenario(
                [objects(job("j", parallelism=100, completions=10**9), duration=60)], limits={"maxPods": 99}
            ),
            r"ask for 100 pods, more than limits.maxPods \(99\)",
        ),
        (scenario(duration="1000h", sampleInterval=1), r"360000\d samples.*limits.maxSamples \(100000\)"),
    ],
)
def test_limits_refuse_at_load_time_with_the_count(sc, pattern):
    with pytest.raises(ScenarioError, match=pattern):
        plan_of(sc)


def test_limits_can_be_raised():
    big: dict[str, Any] = scenario([objects(deployment("web", 200_000))], limits={"maxPods": 200_000})
    assert len(plan_of(big).timeline) == 1
    with pytest.raises(ScenarioError, match="200000 pods"):
        plan_of({**big, "limits": {}})


def test_daemonset_pods_count_one_per_node():
    ds = deployment("d", 1)
    ds = {**ds, "kind": "DaemonSet", "spec": {k: v for k, v in ds["spec"].items() if k != "replicas"}}
    with pytest.raises(ScenarioError, match="ask for 3 pods"):
        plan_of(scenario([objects(ds)], limits={"maxPods": 2}))
    assert plan_of(scenario([objects(ds)], limits={"maxPods": 3}))


@pytest.mark.parametrize(
    ("relative", "pattern"),
    [
        ("scenario.yaml", r"scenario.yaml: cannot read scenario: not UTF-8 text"),
        ("manifests/shop.yaml", r"shop.yaml: cannot read: not UTF-8 text"),
        ("topology.json", r"topology.json: not a readable JSON topology"),
        ("traces/arrivals.csv", r"arrivals.csv:1: cannot read: not UTF-8 text"),
        ("traces/batch_task.csv", r"batch_task.csv:1: cannot read: not UTF-8 text"),
    ],
)
def test_binary_input_files_are_errors_naming_the_file(example, relative, pattern):
    target = example / relative
    original = target.read_bytes()
    target.write_bytes(b"\xff\xfe\x00\x81garbage")
    try:
        with pytest.raises(ScenarioError, match=pattern):
            prepare(example / "scenario.yaml", [], REGISTRY)
    finally:
        target.write_bytes(original)


@pytest.mark.parametrize("key", ["tolerations", "volumes"])
@pytest.mark.parametrize("value", [True, "x", {"a": 1}, 3])
def test_pod_spec_lists_of_the_wrong_type_name_the_field(key, value):
    pod = {**_POD, "spec": {**_POD["spec"], key: value}}
    with pytest.raises(ScenarioError, match=rf"spec\.{key}: must be a list"):
        plan_of(scenario([objects(pod)], duration=600))


@pytest.mark.parametrize(
    ("name", "cell", "value", "pattern"),
    [
        ("batch_task.csv", 7, "1e+308", r"batch_task.csv:2: plan_cpu: is more than a Kubernetes quantity"),
        ("batch_task.csv", 8, "1e+300", r"batch_task.csv:2: plan_mem: is more than a Kubernetes quantity"),
        ("container_meta.csv", 5, "1e+308", r"container_meta.csv:2: cpu_request: is more than"),
    ],
)
def test_trace_requests_beyond_int64_name_the_cell(example, name, cell, value, pattern):
    target = example / "traces" / name
    original = target.read_text()
    lines = original.splitlines()
    cols = lines[1].split(",")
    cols[cell] = value
    target.write_text("\n".join([lines[0], ",".join(cols), *lines[2:]]) + "\n")
    try:
        with pytest.raises(ScenarioError, match=pattern):
            prepare(example / "scenario.yaml", [], REGISTRY)
    finally:
        target.write_text(original)


def test_null_replicas_count_as_one():
    d = deployment("d", 1)
    d["spec"]["replicas"] = None
    plan_of(scenario([objects(d)], limits={"maxPods": 1}))  # counted as 1 pod, within the limit
