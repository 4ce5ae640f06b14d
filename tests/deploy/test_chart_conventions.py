"""The chart's Helm conventions: values checked by values.schema.json, names derived from the release
(two releases in one namespace share nothing), Kubernetes' recommended labels, serviceAccount.*,
imagePullSecrets, podAnnotations, the PodDisruptionBudget, the ServiceMonitor, checksum/config and
NOTES.txt."""

from __future__ import annotations

from typing import Any

import helm_python
import kubernetes_validate
import pytest
import yaml

from harmonic.api.selectors import parse_selector as label_selector
from tests.deploy.helm import render_chart, render_templates
from tests.deploy.regenerate import CHART

RESCHEDULER = yaml.safe_load((CHART / "values-rescheduler.yaml").read_text())
EXTENDER = yaml.safe_load((CHART / "values-extender.yaml").read_text())
NEWEST_KUBE = "1.33"


def _objects(values: dict[str, Any] | None = None, release: str = "harmonic", ns: str = "harmonic-system"):
    return render_chart(CHART, values or {}, ns, release)


def _one(docs: list[dict[str, Any]], kind: str, component: str | None = None) -> dict[str, Any]:
    found = [
        d
        for d in docs
        if d["kind"] == kind
        and (component is None or d["metadata"]["labels"]["app.kubernetes.io/component"] == component)
    ]
    assert len(found) == 1, (kind, component, [d["metadata"]["name"] for d in found])
    return found[0]


@pytest.mark.parametrize(
    ("values", "refused_at"),
    [
        ({"mode": "schedular"}, "/mode"),
        ({"replicaCount": "two"}, "/replicaCount"),
        ({"replicaCount": 0}, "/replicaCount"),
        ({"replicacount": 2}, "replicacount"),
        ({"image": {"repository": "r", "tag": "t", "pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
        ({"image": {"tag": 1.0}}, "/image/tag"),
        ({"scheduler": {"metricsPort": 70000}}, "/scheduler/metricsPort"),
        ({"extender": {"port": "8888"}}, "/extender/port"),
        ({"fullnameOverride": "My_Scheduler"}, "/fullnameOverride"),
        ({"serviceAccount": {"create": "yes"}}, "/serviceAccount/create"),
        ({"serviceMonitor": {"enabled": True, "interval": "30 seconds"}}, "/serviceMonitor/interval"),
        ({"podAnnotations": {"prometheus.io/port": 10259}}, "/podAnnotations/prometheus.io~1port"),
        ({"imagePullSecrets": ["regcred"]}, "/imagePullSecrets/0"),
        ({"profiles": []}, "/profiles"),
        ({"profiles": [{"plugins": {}}]}, "/profiles/0"),
        ({"decisionsBuffer": -1}, "/decisionsBuffer"),
        ({"rescheduler": {"enabled": True, "interval": "often"}}, "/rescheduler/interval"),
        ({"rescheduler": {"policy": {"apiVersion": "descheduler/v1alpha1", "kind": "DeschedulerPolicy"}}}, "/rescheduler/policy/apiVersion"),
    ],
)  # fmt: skip
def test_the_schema_refuses_bad_values_naming_them(values: dict[str, Any], refused_at: str) -> None:
    with pytest.raises(helm_python.errors.HelmValuesError) as e:
        render_templates(CHART, values)
    assert refused_at in str(e.value)


@pytest.mark.parametrize("values", [{}, EXTENDER, RESCHEDULER, {"global": {"imageRegistry": "x"}}])
def test_the_schema_accepts_the_shipped_values(values: dict[str, Any]) -> None:
    assert _objects(values)


@pytest.mark.parametrize("values", [{}, EXTENDER, {**RESCHEDULER, "mode": "extender"}, RESCHEDULER])
def test_two_releases_in_one_namespace_share_nothing(values: dict[str, Any]) -> None:
    a, b = _objects(values, "blue"), _objects(values, "green")

    def names(docs: list[dict[str, Any]]) -> set[tuple[str, str]]:
        return {(d["kind"], d["metadata"]["name"]) for d in docs}

    assert not names(a) & names(b)
    # No selector of one release picks the other's pods, no two use one Lease.
    pods_b = [d["spec"]["template"]["metadata"]["labels"] for d in b if d["kind"] == "Deployment"]
    for d in a:
        selector = d["spec"].get("selector") if d["kind"] in ("Deployment", "PodDisruptionBudget") else None
        if d["kind"] == "Service":
            selector = {"matchLabels": d["spec"]["selector"]}
        if selector is not None:
            sel = label_selector(selector)
            assert not any(sel.matches(labels) for labels in pods_b), d["metadata"]["name"]

    def leases(docs: list[dict[str, Any]]) -> set[str]:
        out = set()
        for d in docs:
            if d["kind"] == "ConfigMap" and "config.yaml" in d["data"]:
                le = yaml.safe_load(d["data"]["config.yaml"])["leaderElection"]
                out.add(le.get("resourceName", ""))
            if d["kind"] == "Deployment":
                args = d["spec"]["template"]["spec"]["containers"][0]["args"]
                out |= {a.split("=", 1)[1] for a in args if a.startswith("--lease-name=")}
        return out - {""}

    assert not leases(a) & leases(b)


@pytest.mark.parametrize(
    ("values", "release", "deployment"),
    [
        ({}, "harmonic", "harmonic-scheduler"),
        (EXTENDER, "harmonic", "harmonic-extender"),
        ({}, "blue", "blue-harmonic-scheduler"),
        ({}, "harmonic-blue", "harmonic-blue-scheduler"),
        ({"fullnameOverride": "edge"}, "blue", "edge-scheduler"),
        ({"nameOverride": "sched"}, "blue", "blue-sched-scheduler"),
    ],
)
def test_names_derive_from_the_release(values: dict[str, Any], release: str, deployment: str) -> None:
    docs = _objects(values, release)
    dep = _one(docs, "Deployment")
    assert dep["metadata"]["name"] == deployment
    spec = dep["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == deployment
    (volume,) = (v for v in spec["volumes"] if v["name"] == "config")
    assert volume["configMap"]["name"] == f"{deployment}-config"
    assert _one(docs, "Service")["metadata"]["name"] == deployment


@pytest.mark.parametrize("values", [{}, EXTENDER, RESCHEDULER])
def test_every_object_carries_the_recommended_labels(values: dict[str, Any]) -> None:
    for d in _objects(values, "blue"):
        labels = d["metadata"]["labels"]
        assert labels["helm.sh/chart"] == "harmonic-0.1.0"
        assert labels["app.kubernetes.io/name"] == "harmonic"
        assert labels["app.kubernetes.io/instance"] == "blue"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["app.kubernetes.io/version"] == "0.1.0"
        assert labels["app.kubernetes.io/component"] in ("scheduler", "extender", "rescheduler")


def test_service_account_create_name_and_annotations() -> None:
    docs = _objects({"serviceAccount": {"annotations": {"iam.example/role": "harmonic"}}})
    sa = _one(docs, "ServiceAccount", "scheduler")
    assert sa["metadata"]["annotations"] == {"iam.example/role": "harmonic"}

    docs = _objects({"serviceAccount": {"create": False, "name": "existing"}})
    assert [d for d in docs if d["kind"] == "ServiceAccount"] == []
    assert _one(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "existing"
    for binding in (d for d in docs if d["kind"] in ("ClusterRoleBinding", "RoleBinding")):
        assert [s["name"] for s in binding["subjects"]] == ["existing"]


def test_image_pull_secrets_and_pod_annotations_reach_every_deployment() -> None:
    values = {
        **RESCHEDULER,
        "imagePullSecrets": [{"name": "regcred"}],
        "podAnnotations": {"team": "platform"},
    }
    deployments = [d for d in _objects(values) if d["kind"] == "Deployment"]
    assert len(deployments) == 2
    for d in deployments:
        template = d["spec"]["template"]
        assert template["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
        assert template["metadata"]["annotations"]["team"] == "platform"


@pytest.mark.parametrize(
    ("values", "component"),
    [({}, "scheduler"), (RESCHEDULER, "rescheduler"), (EXTENDER, "extender")],
)
def test_checksum_config_follows_the_configuration(values: dict[str, Any], component: str) -> None:
    def checksum(v: dict[str, Any]) -> str:
        dep = _one(_objects(v), "Deployment", component)
        return str(dep["spec"]["template"]["metadata"]["annotations"]["checksum/config"])

    same = checksum(values)
    assert same == checksum(values)
    changed = {**values, "profiles": [{"schedulerName": "another"}]}
    assert checksum(changed) != same


@pytest.mark.parametrize(
    ("values", "rendered"),
    [
        ({}, {"minAvailable": 1}),
        ({"podDisruptionBudget": {"enabled": True, "maxUnavailable": 1}}, {"maxUnavailable": 1}),
        ({"replicaCount": 1}, None),  # a budget on one replica would block every drain
        ({"podDisruptionBudget": {"enabled": False}}, None),
    ],
)
def test_the_pod_disruption_budget(values: dict[str, Any], rendered: dict[str, Any] | None) -> None:
    docs = _objects(values)
    pdbs = [d for d in docs if d["kind"] == "PodDisruptionBudget"]
    if rendered is None:
        assert pdbs == []
        return
    (pdb,) = pdbs
    assert {k: v for k, v in pdb["spec"].items() if k != "selector"} == rendered
    pod_labels = _one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert label_selector(pdb["spec"]["selector"]).matches(pod_labels)
    kubernetes_validate.validate(pdb, NEWEST_KUBE, strict=True)


@pytest.mark.parametrize(("values", "port"), [({}, "metrics"), (EXTENDER, "extender")])
def test_the_service_monitor_scrapes_the_service(values: dict[str, Any], port: str) -> None:
    assert [d for d in _objects(values) if d["kind"] == "ServiceMonitor"] == []
    docs = _objects({**values, "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}})
    monitor = _one(docs, "ServiceMonitor")
    service = _one(docs, "Service")
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert label_selector(monitor["spec"]["selector"]).matches(service["metadata"]["labels"])
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in [p["name"] for p in service["spec"]["ports"]] == [port]
    assert endpoint["path"] == "/metrics"


def _notes(values: dict[str, Any], release: str = "harmonic") -> str:
    templates = render_templates(CHART, values, "harmonic-system", release)
    return next(text for path, text in templates.items() if path.endswith("NOTES.txt"))


@pytest.mark.parametrize("buffer", [0, 1000])
def test_notes_show_a_first_pod_and_the_explorer_through_port_forward(buffer: int) -> None:
    notes = _notes({"decisionsBuffer": buffer, "profiles": [{"schedulerName": "harmony"}]}, "blue")
    assert "kubectl run hello" in notes and '"schedulerName": "harmony"' in notes
    assert "kubectl -n harmonic-system port-forward svc/blue-harmonic-scheduler 10259:10259" in notes
    assert "harmonic ui --url http://127.0.0.1:10259" in notes
    assert ("--set decisionsBuffer=" in notes) == (buffer == 0)


def test_notes_of_the_extender_name_its_service() -> None:
    notes = _notes(EXTENDER)
    assert "http://harmonic-extender.harmonic-system.svc:8888/scheduler" in notes
    assert "port-forward svc/harmonic-extender 8888:8888" in notes


def test_decisions_buffer_reaches_the_container() -> None:
    for values in ({}, EXTENDER):
        args = _one(_objects({**values, "decisionsBuffer": 500}), "Deployment")["spec"]["template"]["spec"]
        assert "--decisions-buffer=500" in args["containers"][0]["args"]
