"""Deployment artefacts: the Helm chart (rendered and linted by Helm's own library, every object checked
against Kubernetes' OpenAPI schemas), the plain manifests in deploy/, RBAC against harmonic/cluster/permissions.py, the mounted
scheduler configuration, the container arguments against the CLI, and the Dockerfile."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from harmonic.cli import main as cli
from harmonic.cluster.kube import LiveScheduler
from harmonic.cluster.permissions import (
    allows,
    extender_permissions,
    rbac_rules,
    request_attributes,
    scheduler_permissions,
)
from harmonic.cluster.services import uses_service
from harmonic.cluster.transport import Transport, load_client
from harmonic.extender.engine import Extender
from harmonic.extender.live import LiveCluster
from harmonic.extender.server import DEFAULT_PREFIX, VERBS
from harmonic.framework.config import SchedulerConfiguration, load_config
from harmonic.framework.services import VOLUMES
from harmonic.plugins.registry import default_registry
from harmonic.testing import node, pod
from harmonic.testing.apiserver import ApiServerDouble
from harmonic.testing.kubeshape import binding_args, marshal
from tests.cluster.conftest import wait_until
from tests.deploy.helm import lint_chart, render_chart
from tests.deploy.regenerate import CHART, RENDERED, ROOT, expected

TLS_AND_TOKEN = {
    "mode": "extender",
    "extender": {"tls": {"secretName": "harmonic-tls", "clientCA": True}, "tokenSecret": "harmonic-token"},
}
VARIANTS = {
    "scheduler": {},
    "extender": yaml.safe_load((CHART / "values-extender.yaml").read_text()),
    "extender-tls": TLS_AND_TOKEN,
}
#: What lint and schema validation cover: every variant, and the rescheduler beside the scheduler.
CHECKED = {**VARIANTS, "rescheduler": yaml.safe_load((CHART / "values-rescheduler.yaml").read_text())}


def by_kind(docs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        out.setdefault(d["kind"], []).append(d)
    return out


@pytest.fixture(params=sorted(VARIANTS))
def rendered(request) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    values = VARIANTS[request.param]
    return values.get("mode", "scheduler"), by_kind(render_chart(CHART, values))


def test_plain_manifests_are_the_chart_rendered():
    for name, values in RENDERED.items():
        on_disk = [d for d in yaml.safe_load_all((ROOT / "deploy" / name).read_text()) if d]
        assert on_disk == expected(values), f"deploy/{name} is stale: run python -m tests.deploy.regenerate"


def test_every_object_is_well_formed_and_namespaced_in_the_release(rendered):
    _, kinds = rendered
    for kind, docs in kinds.items():
        for d in docs:
            assert d["apiVersion"] and d["metadata"]["name"], d
            if kind not in ("ClusterRole", "ClusterRoleBinding"):
                assert d["metadata"]["namespace"] == "harmonic-system", (kind, d["metadata"])
    assert set(kinds) >= {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "Service",
    }


def test_deployment_probes_resources_and_security(rendered):
    mode, kinds = rendered
    (dep,) = kinds["Deployment"]
    spec = dep["spec"]
    assert spec["replicas"] == 2
    pod = spec["template"]
    assert spec["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    (c,) = pod["spec"]["containers"]
    port_names = {p["name"] for p in c["ports"]}
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    for probe in ("livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"]["port"] in port_names
    tls = mode == "extender" and "--tls-cert=/etc/harmonic/tls/tls.crt" in c["args"]
    assert c["livenessProbe"]["httpGet"]["scheme"] == ("HTTPS" if tls else "HTTP")
    assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
    assert c["resources"]["limits"]["memory"]
    sc = c["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"]["drop"] == ["ALL"]
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    volumes = {v["name"] for v in pod["spec"]["volumes"]}
    assert set(mounts) == volumes
    for arg in c["args"]:
        if "=/etc/harmonic/" in arg:
            path = arg.split("=", 1)[1]
            assert any(path.startswith(m + "/") for m in mounts.values()), arg


def test_service_selects_the_pods_and_exposes_the_container_port(rendered):
    _, kinds = rendered
    (svc,) = kinds["Service"]
    (dep,) = kinds["Deployment"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= labels.items()
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    container_ports = {p["name"] for p in c["ports"]}
    assert {p["targetPort"] for p in svc["spec"]["ports"]} <= container_ports


def test_rbac_is_exactly_the_permission_table(rendered):
    mode, kinds = rendered
    perms = scheduler_permissions("harmonic-scheduler") if mode == "scheduler" else extender_permissions()
    (cr,) = kinds["ClusterRole"]
    assert cr["rules"] == rbac_rules(perms, namespaced=False)
    assert kinds.get("Role", [{"rules": []}])[0]["rules"] == rbac_rules(perms, namespaced=True)
    for role in kinds["ClusterRole"] + kinds.get("Role", []):
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]
    (sa,) = kinds["ServiceAccount"]
    (dep,) = kinds["Deployment"]
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"]
    for binding, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        for b in kinds.get(binding, []):
            assert b["roleRef"]["name"] in {r["metadata"]["name"] for r in kinds[role_kind]}
            assert b["subjects"] == [
                {"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": "harmonic-system"}
            ]


def _record_scheduler_calls(config: SchedulerConfiguration, tmp: Path) -> set[tuple[str, str]]:
    """`harmonic run`'s API calls with the chart's configuration: informers, a binding, a
    FailedScheduling event and condition, a preemption (eviction, nomination), the lease."""
    with ApiServerDouble(bookmark_interval=0.2) as api:
        api.create_many(
            "nodes", [node("n1").cap(cpu="2", pods=110).obj(), node("n2").cap(cpu="1", pods=110).obj()]
        )
        api.create("pods", pod("victim").req(cpu="2").node("n1").obj())
        name = config.profiles[0].scheduler_name
        api.create_many(
            "pods",
            [
                pod("fits").req(cpu="500m").scheduler(name).obj(),
                pod("too-big").req(cpu="8").scheduler(name).obj(),
                pod("urgent").req(cpu="2").priority(100).scheduler(name).obj(),
            ],
        )
        transport = Transport(load_client(str(api.kubeconfig(tmp / "kubeconfig"))), qps=-1, burst=100)
        live = LiveScheduler(config, default_registry(), transport, identity="rbac", event_retry_sleep=0.05)
        thread = threading.Thread(target=live.run, daemon=True)
        thread.start()
        try:
            wait_until(
                lambda: (
                    api.pod_placement() == {"default/fits": "n2", "default/urgent": "n1"}
                    and api.stats().requests["patch pods/status"] >= 2
                ),
                timeout=30,
                what="binding, preemption and status patches",
            )
        finally:
            live.stop()
            thread.join(20)
        assert live.exit_code == 0
        return api.stats().calls


def _record_extender_calls(config: SchedulerConfiguration, tmp: Path) -> set[tuple[str, str]]:
    """`harmonic extender`'s API calls with the chart's configuration: its informers and the bind verb."""
    with ApiServerDouble(bookmark_interval=0.2) as api:
        api.create("nodes", node("n1").obj())
        web = api.create("pods", pod("web").obj())
        transport = Transport(load_client(str(api.kubeconfig(tmp / "kubeconfig"))), qps=-1, burst=100)
        live = LiveCluster(transport, storage=uses_service(config, default_registry(), VOLUMES))
        ext = Extender(
            config, default_registry(), cache=live.cache, client=live.client, services=live.services
        )
        live.start()
        try:
            wait_until(lambda: live.cache.synced, what="cache sync")
            assert json.loads(ext.bind(marshal(binding_args(web, "n1")))) == {"Error": ""}
        finally:
            live.stop()
        return api.stats().calls


@pytest.fixture(scope="module")
def recorded_calls(tmp_path_factory) -> Callable[[str], set[tuple[str, str]]]:
    """The API calls each mode makes against the API-server double, run once per mode with the
    configuration the chart mounts."""
    done: dict[str, set[tuple[str, str]]] = {}

    def calls(mode: str) -> set[tuple[str, str]]:
        if mode not in done:
            (cm,) = by_kind(render_chart(CHART, VARIANTS[mode]))["ConfigMap"]
            config = load_config(yaml.safe_load(cm["data"]["config.yaml"]), default_registry(), source="cm")
            record = _record_scheduler_calls if mode == "scheduler" else _record_extender_calls
            done[mode] = record(config, tmp_path_factory.mktemp(mode))
        return done[mode]

    return calls


def test_rbac_allows_the_calls_each_mode_makes(rendered, recorded_calls):
    """Every API request the component issued against the API-server double (informers' lists and
    watches, binding, status patches, events, eviction, leader election), resolved as kube-apiserver
    authorizes it, is granted by the rendered roles."""
    mode, kinds = rendered
    cluster_rules = kinds["ClusterRole"][0]["rules"]
    ns_rules = kinds.get("Role", [{"rules": []}])[0]["rules"]
    made = set()
    for method, url in recorded_calls(mode):
        a = request_attributes(method, url)
        if a is None:
            continue  # discovery: open to every authenticated client
        made.add((a.verb, a.resource))
        rules = cluster_rules + (ns_rules if a.namespace == "harmonic-system" else [])
        assert allows(rules, a.verb, a.group, a.resource, a.name), (method, url, a)
    # The recording covered what each mode does (so the loop above checked something).
    informed = (
        *("nodes", "pods", "namespaces", "poddisruptionbudgets"),
        *("services", "replicationcontrollers", "replicasets", "statefulsets"),  # default spreading
        *("persistentvolumes", "persistentvolumeclaims", "storageclasses", "csinodes"),  # volume plugins
        *("csidrivers", "csistoragecapacities", "volumeattachments"),
    )
    expected = {(v, r) for v in ("list", "watch") for r in informed}
    expected.add(("create", "pods/binding"))
    if mode == "scheduler":
        expected |= {
            ("patch", "pods/status"),
            ("create", "pods/eviction"),
            ("create", "events"),
            ("create", "leases"),
            ("update", "leases"),
            ("get", "configmaps"),  # the moved pods' reservations, read back at the start of leadership
        }
    assert made >= expected, expected - made
    # Least privilege: what neither mode does stays forbidden.
    for method, url in [
        ("DELETE", "/api/v1/namespaces/shop/pods/web-1"),
        ("GET", "/api/v1/secrets"),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"),
    ]:
        a = request_attributes(method, url)
        assert a is not None
        assert not allows(cluster_rules, a.verb, a.group, a.resource, a.name), (method, url)
    # The Role writes the reservations' ConfigMap only, never the scheduler's own configuration.
    own = request_attributes("PUT", "/api/v1/namespaces/harmonic-system/configmaps/harmonic-scheduler-config")
    assert own is not None and not allows(
        cluster_rules + ns_rules, own.verb, own.group, own.resource, own.name
    )
    if mode == "scheduler":
        ours = "harmonic-scheduler-reservations"
        assert allows(ns_rules, "update", "", "configmaps", ours) and allows(
            ns_rules, "create", "", "configmaps"
        )


def test_request_attributes_resolve_like_the_api_server():
    r = request_attributes
    assert r("GET", "/api/v1/pods?limit=500").verb == "list"  # type: ignore[union-attr]
    assert r("GET", "/api/v1/pods?watch=true").verb == "watch"  # type: ignore[union-attr]
    assert r("GET", "/api/v1/namespaces/a/pods/p").verb == "get"  # type: ignore[union-attr]
    b = r("POST", "/api/v1/namespaces/a/pods/p/binding")
    assert b is not None and (b.verb, b.group, b.resource, b.namespace, b.name) == (
        "create",
        "",
        "pods/binding",
        "a",
        "p",
    )
    lease = r("PUT", "/apis/coordination.k8s.io/v1/namespaces/h/leases/l")
    assert lease is not None and (lease.verb, lease.group, lease.resource) == (
        "update",
        "coordination.k8s.io",
        "leases",
    )
    ns = r("GET", "/api/v1/namespaces/shop")
    assert ns is not None and (ns.verb, ns.resource, ns.name) == ("get", "namespaces", "shop")
    assert r("GET", "/apis/events.k8s.io/v1") is None
    assert r("GET", "/healthz") is None


def test_mounted_configuration_loads(rendered):
    mode, kinds = rendered
    (cm,) = kinds["ConfigMap"]
    cfg = load_config(yaml.safe_load(cm["data"]["config.yaml"]), default_registry(), source="configmap")
    assert cfg.leader_election.leader_elect is (mode == "scheduler")
    if mode == "scheduler":
        assert cfg.leader_election.resource_namespace == "harmonic-system"
        (role,) = kinds["Role"]
        named = [r for r in role["rules"] if r.get("resourceNames")]
        assert named[0]["resourceNames"] == [cfg.leader_election.resource_name]


def test_container_arguments_parse_with_the_cli(rendered):
    mode, kinds = rendered
    (c,) = kinds["Deployment"][0]["spec"]["template"]["spec"]["containers"]
    assert c["args"][0] == ("run" if mode == "scheduler" else "extender")
    command = cli.commands[c["args"][0]]  # type: ignore[attr-defined]
    args = [re.sub(r"^(--[\w-]+)=/etc/harmonic/.*", r"\1=" + str(Path(__file__)), a) for a in c["args"][1:]]
    ctx = command.make_context(c["args"][0], args)
    assert ctx.params["config_path"] == str(Path(__file__))
    # In the pod: the in-cluster service account, no kubeconfig.
    assert ctx.params["kubeconfig"] is None
    assert ctx.params["bind_address"] == "0.0.0.0"
    svc_ports = {p["port"] for p in kinds["Service"][0]["spec"]["ports"]}
    container_ports = {p["containerPort"] for p in c["ports"]}
    port = ctx.params["metrics_port"] if mode == "scheduler" else ctx.params["port"]
    assert port in svc_ports and port in container_ports


#: The oldest Kubernetes minor the chart supports (its Chart.yaml ``kubeVersion``) and the newest one
#: whose OpenAPI schemas kubernetes-validate ships.
OLDEST_KUBE, NEWEST_KUBE = "1.29", kubernetes_validate.utils.major_minor(kubernetes_validate.latest_version())


def test_chart_declares_the_oldest_supported_kubernetes():
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["kubeVersion"] == f">={OLDEST_KUBE}.0-0"
    assert [int(p) for p in NEWEST_KUBE.split(".")] > [int(p) for p in OLDEST_KUBE.split(".")]


@pytest.mark.parametrize("kube", [OLDEST_KUBE, NEWEST_KUBE])
@pytest.mark.parametrize("variant", sorted(CHECKED))
def test_helm_lint_strict_finds_nothing_but_the_missing_icon(variant, kube):
    assert lint_chart(CHART, CHECKED[variant], kube_version=f"v{kube}.0") == [
        "INFO Chart.yaml: icon is recommended"
    ]


def test_helm_lint_catches_a_broken_template(tmp_path):
    """The lint above can fail: the same linter on a chart with a template error reports it."""
    broken = tmp_path / "harmonic"
    broken.mkdir()
    for f in ("Chart.yaml", "values.yaml"):
        (broken / f).write_text((CHART / f).read_text())
    (broken / "templates").mkdir()
    (broken / "templates" / "x.yaml").write_text("a: {{ .Values.image.tag | nosuchfunction }}\n")
    findings = lint_chart(broken)
    assert any(f.startswith("ERROR") and "nosuchfunction" in f for f in findings), findings


@pytest.mark.parametrize("kube", [OLDEST_KUBE, NEWEST_KUBE])
@pytest.mark.parametrize("variant", sorted(CHECKED))
def test_every_rendered_object_validates_strictly_against_the_kubernetes_schemas(variant, kube):
    """Strict: an unknown field (a typo such as ``containerport``) is an error, as with
    ``kubectl apply --validate=strict``. The schemas are the package's own files: no network."""
    docs = render_chart(CHART, CHECKED[variant])
    for d in docs:
        try:
            kubernetes_validate.validate(d, kube, strict=True)
        except kubernetes_validate.ValidationError as e:
            pytest.fail(f"{variant} {d['kind']}/{d['metadata']['name']} on Kubernetes {kube}: {e.message}")


def test_plain_manifests_validate_strictly_against_the_kubernetes_schemas():
    for name in RENDERED:
        for d in yaml.safe_load_all((ROOT / "deploy" / name).read_text()):
            if d:
                for kube in (OLDEST_KUBE, NEWEST_KUBE):
                    kubernetes_validate.validate(d, kube, strict=True)


def test_strict_schema_validation_rejects_an_unknown_field():
    (dep,) = by_kind(render_chart(CHART))["Deployment"]
    dep["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerport"] = 1
    with pytest.raises(kubernetes_validate.ValidationError, match="containerport"):
        kubernetes_validate.validate(dep, NEWEST_KUBE, strict=True)


def test_kube_scheduler_sample_points_at_the_extender():
    cfg = yaml.safe_load((ROOT / "deploy" / "kube-scheduler-config.yaml").read_text())
    assert cfg["kind"] == "KubeSchedulerConfiguration"
    (ext,) = cfg["extenders"]
    known = {
        "urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb", "enableHTTPS",
        "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable",
    }  # fmt: skip
    assert set(ext) <= known
    assert ext["urlPrefix"].endswith(DEFAULT_PREFIX)
    assert {ext[k] for k in ("filterVerb", "prioritizeVerb", "preemptVerb", "bindVerb")} == set(VERBS)
    chart_port = yaml.safe_load((CHART / "values.yaml").read_text())["extender"]["port"]
    assert ext["urlPrefix"].startswith("http://") and f":{chart_port}/" in ext["urlPrefix"]
    assert ext["weight"] > 0
    readme = (ROOT / "docs" / "extender.md").read_text()
    block = re.search(
        r"```yaml\n(apiVersion: kubescheduler.config.k8s.io/v1\n.*?extenders:.*?)```", readme, re.S
    )
    assert block is not None, "docs/extender.md lacks the sample extenders stanza"
    assert yaml.safe_load(block.group(1))["extenders"] == cfg["extenders"]


def test_dockerfile_is_slim_non_root_and_installs_the_package():
    text = (ROOT / "Dockerfile").read_text()
    froms = re.findall(r"^FROM (\S+)", text, re.M)
    assert froms and all(f == "python:3.11-slim" for f in froms)
    user = re.findall(r"^USER (\S+)", text, re.M)
    assert user and user[-1].split(":")[0] not in ("0", "root")
    assert "pip install" in text and "-e " not in text
    assert re.search(r'^ENTRYPOINT \["harmonic"\]', text, re.M)
    (dep,) = by_kind(render_chart(CHART))["Deployment"]
    run_as = dep["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
    assert user[-1].split(":")[0] == str(run_as)
