"""Scenario files: the model, its JSON Schema, the examples, and clear errors for what cannot be honoured."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from harmonic.sim.errors import ScenarioError
from harmonic.sim.run import BUNDLED_SCENARIO
from harmonic.sim.scenario import json_schema, load_scenario_file, parse_scenario

from .helpers import container, deployment, job, objects, plan_of, scenario

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "harmonic" / "data" / "schemas" / "scenario.schema.json"
SCENARIO_EXAMPLES = sorted((ROOT / "examples" / "scenarios").glob("*.yaml"))
EXAMPLES = [ROOT / "examples" / "simulator" / "scenario.yaml", BUNDLED_SCENARIO, *SCENARIO_EXAMPLES]


def test_committed_schema_is_the_generated_one():
    assert json.loads(SCHEMA.read_text()) == json.loads(json.dumps(json_schema()))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_validate_against_the_schema_and_plan(path):
    data = yaml.safe_load(path.read_text())
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    plan = plan_of(data, path.parent)
    assert plan.nodes and plan.timeline


@pytest.mark.parametrize("path", SCENARIO_EXAMPLES, ids=lambda p: p.name)
def test_example_scenarios_say_what_they_check_and_how_to_run_them(path):
    text = path.read_text()
    assert text.startswith("# ")
    header = text.split("apiVersion:", 1)[0]
    assert f"harmonic simulate examples/scenarios/{path.name}" in header


def test_schema_rejects_what_the_model_rejects():
    schema = json.loads(SCHEMA.read_text())
    bad = scenario(workloads=[{"type": "topology", "topology": "online-boutique", "userRate": 5, "typo": 1}])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    with pytest.raises(ScenarioError, match=r"test.yaml: workloads\[0\].typo: unknown field"):
        parse_scenario(bad, "test.yaml")


def _pod(**spec) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [container()], **spec},
    }


BAD = {
    "unknown top-level field": (
        scenario(clusterr={}),
        r"test.yaml: clusterr: unknown field",
    ),
    "wrong apiVersion": (
        dict(scenario(), apiVersion="v1"),
        r"test.yaml: apiVersion: expected harmonic.dev/v1alpha1",
    ),
    "negative user rate": (
        scenario([{"type": "topology", "topology": "online-boutique", "userRate": -1}]),
        r"workloads\[0\].userRate: Input should be greater than 0",
    ),
    "unknown topology": (
        scenario([{"type": "topology", "topology": "no-such-app", "userRate": 1}]),
        r"workloads\[0\].topology: 'no-such-app' is neither a bundled topology",
    ),
    "bad duration": (
        scenario([objects(_pod(), duration="ten minutes")]),
        r"workloads\[0\].duration: 'ten minutes' is not a duration",
    ),
    "uniform without max": (
        scenario([objects(_pod(), duration={"distribution": "uniform", "min": 5})]),
        r"workloads\[0\].duration: a uniform distribution needs 'max'",
    ),
    "unknown kind": (
        scenario([objects({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"}})]),
        r"test.yaml: workloads\[0\].objects\[0\]: kind: 'CronJob' is not simulated",
    ),
    "persistent volume": (
        scenario([objects(_pod(volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}]))]),
        r"\(Pod default/p\): spec.volumes\[0\].persistentVolumeClaim: persistent volumes are not simulated",
    ),
    "volume claim templates": (
        scenario(
            [
                objects(
                    {
                        **deployment("db", 1),
                        "kind": "StatefulSet",
                        "spec": {**deployment("db", 1)["spec"], "volumeClaimTemplates": []},
                    }
                )
            ]
        ),
        r"\(StatefulSet default/db\): spec.volumeClaimTemplates: not supported for StatefulSet",
    ),
    "pod failure policy": (
        scenario([objects(job("j", podFailurePolicy={"rules": []}), duration=10)]),
        r"\(Job default/j\): spec.podFailurePolicy: not supported for Job",
    ),
    "job without duration": (
        scenario([objects(job("j"))]),
        r"\(Job default/j\): a Job's pods need a duration",
    ),
    "duration on a deployment": (
        scenario([objects(deployment("web", 1), duration=10)]),
        r"\(Deployment default/web\): duration: pods of a Deployment restart",
    ),
    "job restart policy": (
        scenario(
            [objects({**job("j"), "spec": {"template": {"spec": {"containers": [container()]}}}}, duration=1)]
        ),
        r"spec.template.spec.restartPolicy: Unsupported value: \"Always\"",
    ),
    "other scheduler": (
        scenario([objects(_pod(schedulerName="my-scheduler"))]),
        r"spec.schedulerName: 'my-scheduler': the simulator runs every pod under each profile",
    ),
    "unknown priority class": (
        scenario([objects(_pod(priorityClassName="gold"))]),
        r"spec.priorityClassName: no PriorityClass with name gold was found",
    ),
    "selector mismatch": (
        scenario(
            [
                objects(
                    {
                        **deployment("web", 1),
                        "spec": {
                            **deployment("web", 1)["spec"],
                            "selector": {"matchLabels": {"app": "other"}},
                        },
                    }
                )
            ]
        ),
        r"spec.template.metadata.labels: `selector` does not match template `labels`",
    ),
    "bad quantity in a template": (
        scenario([objects(deployment("web", 1, cpu="lots"))]),
        r"\(Deployment default/web\): spec.template.spec.containers\[0\].resources.requests.cpu: 'lots' is not",
    ),
    "owner references": (
        scenario(
            [objects({**_pod(), "metadata": {"name": "p", "ownerReferences": [{"kind": "ReplicaSet"}]}})]
        ),
        r"metadata.ownerReferences: objects made by a controller",
    ),
    "duplicate object": (
        scenario([objects(deployment("web", 1), deployment("web", 2))]),
        r"metadata.name: Deployment default/web already exists",
    ),
    "scale of an unknown deployment": (
        scenario(events=[{"type": "deploymentScaled", "at": 5, "name": "ghost", "replicas": 2}]),
        r"test.yaml: events\[0\].name: no Deployment default/ghost exists at 5s",
    ),
    "drain of an unknown node": (
        scenario(events=[{"type": "nodeDrained", "at": 5, "node": "n-9"}]),
        r"test.yaml: events\[0\].node: no node 'n-9' exists at 5s",
    ),
    "node added from an unknown pool": (
        scenario(events=[{"type": "nodeAdded", "at": 5, "pool": "gpu"}]),
        r"events\[0\].pool: no node pool 'gpu'",
    ),
    "unknown event type": (
        scenario(events=[{"type": "nodeExploded", "at": 5}]),
        r"events\[0\]: Input tag 'nodeExploded' found using 'type' does not match",
    ),
    "bad node pool allocatable": (
        dict(scenario(), cluster={"nodePools": [{"name": "p", "count": 1, "allocatable": {"cpu": "x"}}]}),
        r"cluster.nodePools\[0\].status.allocatable.cpu",
    ),
    # Issue 33: negative amounts were accepted (memory allocation mean -4.2%, scores out of range).
    "negative request in a template": (
        scenario([objects(deployment("web", 1, memory="-1Gi"))]),
        r"\(Deployment default/web\): spec.template.spec.containers\[0\].resources.requests.memory: "
        r"'-1Gi': must be greater than or equal to 0",
    ),
    "negative request in a pod": (
        scenario([objects({**_pod(), "spec": {"containers": [container(cpu="-500m")]}})]),
        r"spec.containers\[0\].resources.requests.cpu: '-500m': must be greater than or equal to 0",
    ),
    "negative node pool allocatable": (
        dict(scenario(), cluster={"nodePools": [{"name": "p", "count": 1, "allocatable": {"cpu": "-4"}}]}),
        r"cluster.nodePools\[0\].status.allocatable.cpu: '-4': must be greater than or equal to 0",
    ),
    "node pool allocatable beyond int64": (
        dict(
            scenario(), cluster={"nodePools": [{"name": "p", "count": 1, "allocatable": {"memory": "1e19"}}]}
        ),
        r"cluster.nodePools\[0\].status.allocatable.memory: '1e19' is too large",
    ),
    "poisson without rate": (
        scenario([{"type": "arrivals", "name": "a", "template": _pod(), "end": 10}]),
        r"workloads\[0\]: a poisson process needs 'rate'",
    ),
    "missing manifest file": (
        scenario([{"type": "manifests", "files": ["nope.yaml"]}]),
        r"workloads\[0\].files\[0\]: nope.yaml: no such file",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_scenarios_are_clear_errors(case):
    sc, pattern = BAD[case]
    with pytest.raises(ScenarioError, match=pattern):
        plan_of(sc)


def test_errors_in_manifest_files_name_file_and_document(tmp_path):
    (tmp_path / "apps.yaml").write_text(
        yaml.safe_dump_all(
            [
                deployment("ok", 1),
                {**deployment("bad", 1), "spec": {**deployment("bad", 1)["spec"], "replicas": -2}},
            ]
        )
    )
    with pytest.raises(ScenarioError) as e:
        plan_of(scenario([{"type": "manifests", "files": ["apps.yaml"]}]), tmp_path)
    assert (
        str(e.value)
        == f"{tmp_path}/apps.yaml: document 2 (Deployment default/bad): spec.replicas: -2 must be a non-negative integer"
    )


def test_services_are_kept_and_inert_kinds_counted_not_dropped():
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}},
    }
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "conf"}}
    plan = plan_of(scenario([objects(deployment("web", 1), svc, cm)]))
    assert plan.inert == {"ConfigMap": 1}
    assert [s["metadata"] for s in plan.services] == [{"name": "web", "namespace": "default"}]


def test_load_scenario_file_reports_yaml_errors(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("apiVersion: [\n")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario_file(p)
