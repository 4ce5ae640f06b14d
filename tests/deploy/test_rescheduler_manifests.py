"""The rescheduler's chart objects (``rescheduler.enabled``), its plain manifest in deploy/, its RBAC
against harmonic/rescheduler/permissions.py and the calls it really makes, its mounted policy and
configuration, and its container arguments against the CLI. Regenerate the manifest with
``python -m tests.deploy.test_rescheduler_manifests``."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import yaml

from harmonic.cli import main as cli
from harmonic.cluster.events import EventRecorder
from harmonic.cluster.informer import wait_for_sync
from harmonic.cluster.leader import LeaderElector
from harmonic.cluster.permissions import allows, rbac_rules, request_attributes
from harmonic.cluster.services import StorageInformers
from harmonic.cluster.transport import Transport, load_client
from harmonic.framework.config import LeaderElection, load_config
from harmonic.framework.services import VOLUMES
from harmonic.plugins.registry import default_registry
from harmonic.rescheduler.cache import ClusterCache
from harmonic.rescheduler.live import LiveRescheduler
from harmonic.rescheduler.permissions import rescheduler_permissions
from harmonic.rescheduler.policy import load_policy
from harmonic.rescheduler.providers import MetricsProvidersConfig, connect
from harmonic.testing.apiserver import ApiServerDouble
from tests.cluster.conftest import wait_until
from tests.deploy.helm import render_chart
from tests.deploy.regenerate import CHART, NAMESPACE, ROOT

MANIFEST = ROOT / "deploy" / "harmonic-rescheduler.yaml"


def rendered() -> list[dict[str, Any]]:
    values = yaml.safe_load((CHART / "values-rescheduler.yaml").read_text())
    docs = render_chart(CHART, values, NAMESPACE)
    return [d for d in docs if d["metadata"]["name"].startswith("harmonic-rescheduler")]


def kinds() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for d in rendered():
        assert d["kind"] not in out, d["kind"]
        out[d["kind"]] = d
    return out


def test_disabled_by_default():
    assert not [d for d in render_chart(CHART, {}, NAMESPACE) if "rescheduler" in d["metadata"]["name"]]


def test_plain_manifest_is_the_chart_rendered():
    assert list(yaml.safe_load_all(MANIFEST.read_text())) == rendered()


def test_rbac_is_exactly_the_permission_table():
    k = kinds()
    perms = rescheduler_permissions("harmonic-rescheduler")
    assert k["ClusterRole"]["rules"] == rbac_rules(perms, namespaced=False)
    assert k["Role"]["rules"] == rbac_rules(perms, namespaced=True)
    assert (
        k["Deployment"]["spec"]["template"]["spec"]["serviceAccountName"]
        == k["ServiceAccount"]["metadata"]["name"]
    )
    for b in (k["ClusterRoleBinding"], k["RoleBinding"]):
        assert b["subjects"] == [
            {"kind": "ServiceAccount", "name": "harmonic-rescheduler", "namespace": NAMESPACE}
        ]


def test_mounted_policy_and_configuration_load():
    cm = kinds()["ConfigMap"]
    policy = load_policy(yaml.safe_load(cm["data"]["policy.yaml"]), "configmap")
    assert {n for p in policy.profiles for n in p.plugins["balance"]} == {
        "MakeRoomForPending",
        "RemoveDuplicates",
    }
    load_config(yaml.safe_load(cm["data"]["config.yaml"]), default_registry(), source="configmap")


def test_container_arguments_parse_with_the_cli():
    k = kinds()
    (c,) = k["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert c["args"][0] == "reschedule"
    command = cli.commands["reschedule"]  # type: ignore[attr-defined]
    args = [re.sub(r"^(--[\w-]+)=/etc/harmonic/.*", r"\1=" + str(Path(__file__)), a) for a in c["args"][1:]]
    ctx = command.make_context("reschedule", args)
    assert ctx.params["kubeconfig"] is None and ctx.params["lease_name"] == "harmonic-rescheduler"
    assert ctx.params["port"] == c["ports"][0]["containerPort"] == k["Service"]["spec"]["ports"][0]["port"]
    assert ctx.params["lease_namespace"] == NAMESPACE


def test_rbac_allows_the_calls_the_rescheduler_makes(tmp_path):
    from tests.rescheduler.test_live import MAKE_ROOM, load
    from tests.rescheduler.test_makeroom import fragmented, pending

    with ApiServerDouble(bookmark_interval=0.2) as api:
        load(api, [*fragmented(), pending("big", "2")])
        transport = Transport(load_client(str(api.kubeconfig(tmp_path / "kc"))), qps=-1, burst=100)
        events = EventRecorder(transport)
        lease = LeaderElection(True, 1.5, 1.0, 0.2, "harmonic-rescheduler", NAMESPACE)
        leader = LeaderElector(transport, lease, "rbac")
        stop = threading.Event()
        elector = threading.Thread(target=leader.run, args=(stop,), daemon=True)
        elector.start()
        events.start()
        wait_until(lambda: leader.is_leader, what="leadership")
        prof = load_config(None, default_registry()).profiles[0]
        cache = ClusterCache(transport)
        cache.start()
        assert cache.wait_for_sync(10)
        storage = StorageInformers(transport)  # as `harmonic reschedule` starts them for the default profile
        for inf in storage.informers.values():
            inf.start()
        assert wait_for_sync(storage.informers, 10)
        # The metrics-server reads of metricsProviders: [{source: KubernetesMetrics}].
        metrics = connect(
            MetricsProvidersConfig(metrics_collector={"enabled": True}),
            lambda path: transport.request("GET", path),
        )
        assert metrics.collector is not None
        metrics.collector.collect()
        lr = LiveRescheduler(
            transport,
            load_policy(MAKE_ROOM),
            prof,
            default_registry(),
            events=events,
            leader=leader,
            cache=cache,
            services={VOLUMES.name: storage.volumes},
        )
        report = lr.cycle()
        assert report.evicted and report.nominated
        cache.stop()
        for inf in storage.informers.values():
            inf.stop()
        wait_until(
            lambda: (
                api.stats().requests["create events"] + api.stats().requests["create events.k8s.io/events"]
                >= 1
            ),
            what="event",
        )
        stop.set()
        elector.join(5)
        events.stop()
        calls = api.stats().calls
    k = kinds()
    cluster, ns_rules = k["ClusterRole"]["rules"], k["Role"]["rules"]
    made = set()
    for method, url in calls:
        a = request_attributes(method, url)
        if a is None:
            continue
        made.add((a.verb, a.resource))
        rules = cluster + (ns_rules if a.namespace == NAMESPACE and a.resource == "leases" else [])
        assert allows(rules, a.verb, a.group, a.resource, a.name), (method, url, a)
    assert made >= {
        ("list", "nodes"),
        ("list", "pods"),
        ("watch", "pods"),
        ("watch", "nodes"),
        ("create", "pods/eviction"),
        ("patch", "pods/status"),
        ("create", "leases"),
        *{
            (v, r)
            for v in ("list", "watch")
            for r in ("persistentvolumeclaims", "csinodes", "storageclasses")
        },
    }
    for method, url in [
        ("DELETE", "/api/v1/namespaces/shop/pods/web-1"),
        ("POST", "/api/v1/namespaces/a/pods/p/binding"),
    ]:
        a = request_attributes(method, url)
        assert a is not None and not allows(cluster, a.verb, a.group, a.resource, a.name)


def main() -> None:
    header = "# Rendered from charts/harmonic with values-rescheduler.yaml (rescheduler objects only) by\n# `python -m tests.deploy.test_rescheduler_manifests`; edit the chart, not this file.\n"
    MANIFEST.write_text(header + yaml.safe_dump_all(rendered(), sort_keys=False, default_flow_style=False))


if __name__ == "__main__":
    main()
