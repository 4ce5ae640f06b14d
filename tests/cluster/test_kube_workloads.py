"""`harmonic run` spreads pods as kube-scheduler's system default constraints do: PodTopologySpread
reads the Services, ReplicationControllers, ReplicaSets and StatefulSets selecting a pod from the
live "workloads" service, fed by informers over HTTP from the API-server double."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from harmonic.testing import node, pod
from harmonic.testing.apiserver import ApiServerDouble
from harmonic.testing.harness import Harness

from .conftest import scheduler_config, wait_until

PROFILE = {"profiles": [{"schedulerName": "harmonic"}]}
HASH = "7d9f8"
#: A Deployment's ReplicaSet and a Service in front of its pods.
REPLICA_SET = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": f"web-{HASH}", "namespace": "default", "labels": {"app": "web"}},
    "spec": {
        "replicas": 12,
        "selector": {"matchLabels": {"app": "web", "pod-template-hash": HASH}},
        "template": {"metadata": {"labels": {"app": "web", "pod-template-hash": HASH}}},
    },
}


def _service(selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": selector, "ports": [{"port": 80}]},
    }


def _nodes() -> list[dict[str, Any]]:
    """Four nodes in zone a, one in zone b already half used by another app: by requests alone
    (NodeResourcesFit, BalancedAllocation) every web pod would go to zone a."""
    out = [node(f"a{i}").cap(cpu="4", memory="16Gi", pods=110).zone("a").obj() for i in range(4)]
    return [*out, node("b0").cap(cpu="4", memory="16Gi", pods=110).zone("b").obj()]


FILLER = pod("filler").req(cpu="2", memory="4Gi").node("b0").obj()


def _replicas(n: int) -> list[dict[str, Any]]:
    return [
        pod(f"web-{HASH}-{i:02d}")
        .labels({"app": "web", "pod-template-hash": HASH})
        .owner("ReplicaSet", f"web-{HASH}")
        .req(cpu="100m")
        .scheduler("harmonic")
        .obj()
        for i in range(n)
    ]


def _harness_placement(seed: int, workloads: bool) -> dict[str, str]:
    h = Harness(PROFILE, seed=seed)
    h.add_nodes(_nodes())
    h.add_pods([FILLER])
    if workloads:
        h.cluster.apply_workload(REPLICA_SET)
        h.cluster.apply_workload(_service({"app": "web"}))
    h.add_pods(_replicas(12))
    h.schedule()
    return {k: v for k, v in h.placement().items() if k != "default/filler"}


def _zones(placement: dict[str, str]) -> Counter[str]:
    return Counter(n[0] for n in placement.values())


def test_replica_set_pods_spread_as_with_the_in_memory_cluster(api: ApiServerDouble, start_scheduler):
    seed = 3
    api.create_many("nodes", _nodes())
    api.create("pods", FILLER)
    api.create("replicasets", REPLICA_SET)
    api.create("services", _service({"app": "web"}))
    api.create_many("pods", _replicas(12))
    r = start_scheduler(leader=False, config=scheduler_config(leader=False), seed=seed)
    wait_until(lambda: len(api.pod_placement()) == 13, timeout=20, what="12 replicas bound")
    live = {k: v for k, v in api.pod_placement().items() if k != "default/filler"}
    assert r.stop() == 0

    expected = _harness_placement(seed, workloads=True)
    assert live == expected
    # The system defaults made the difference: without the ReplicaSet and Service the same pods pack
    # into zone a; with them, zone b gets its share and no host is stacked beyond the hostname skew.
    assert _zones(_harness_placement(seed, workloads=False))["b"] == 0
    assert _zones(live)["b"] > 0
    per_host = Counter(live.values())
    assert max(per_host.values()) - min(per_host.values()) <= 3


def test_harmonic_run_process_spreads_them_too(api: ApiServerDouble, tmp_path: Path):
    """The same through the CLI process, whose seed is 0."""
    config = tmp_path / "sched.yaml"
    kubeconfig = str(api.kubeconfig(tmp_path / "kubeconfig"))
    config.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                **PROFILE,
                "leaderElection": {"leaderElect": False},
                "clientConnection": {"kubeconfig": kubeconfig},
            }
        )
    )
    api.create_many("nodes", _nodes())
    api.create("pods", FILLER)
    api.create("replicasets", REPLICA_SET)
    api.create("services", _service({"app": "web"}))
    api.create_many("pods", _replicas(12))
    proc = subprocess.Popen(
        [sys.executable, "-m", "harmonic", "run", "--config", str(config), "--metrics-port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: len(api.pod_placement()) == 13, timeout=30, what="12 replicas bound")
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0
    live = {k: v for k, v in api.pod_placement().items() if k != "default/filler"}
    assert live == _harness_placement(0, workloads=True)
    assert live != _harness_placement(0, workloads=False)


def test_a_service_selector_update_is_seen(api: ApiServerDouble, start_scheduler):
    def web(name: str) -> dict[str, Any]:
        return pod(name).label("app", "web").req(cpu="100m").scheduler("harmonic").obj()

    api.create_many("nodes", _nodes())
    api.create("pods", FILLER)
    api.create("services", _service({"app": "cache"}))  # selects other pods: no default spreading
    api.create_many("pods", [web(f"web-{i}") for i in range(4)])
    r = start_scheduler(leader=False, config=scheduler_config(leader=False))
    wait_until(lambda: len(api.pod_placement()) == 5, what="first web pods bound")
    assert _zones(api.pod_placement())["a"] == 4  # all in zone a, by requests

    def select(selector: dict[str, str]) -> None:
        current = api.get("services", "web", "default")
        api.update("services", {**current, "spec": {**current["spec"], "selector": selector}})
        wait_until(
            lambda: list(r.live.scheduler.services["workloads"].service_selectors("default")) == [selector],
            what=f"the Service selecting {selector}",
        )

    select({"app": "web"})
    api.create("pods", web("web-4"))
    wait_until(lambda: "default/web-4" in api.pod_placement(), what="web-4 bound")
    assert api.pod_placement()["default/web-4"] == "b0"  # spread to the zone without web pods

    select({"app": "cache"})
    api.create("pods", web("web-5"))
    wait_until(lambda: "default/web-5" in api.pod_placement(), what="web-5 bound")
    assert api.pod_placement()["default/web-5"] != "b0"  # back to packing by requests
    assert r.stop() == 0


def test_not_ready_until_the_workload_lists_are_in(api: ApiServerDouble, start_scheduler):
    api.create("nodes", node("n0").obj())
    failing = api.inject(status=500, method="GET", path=r"^/apis/apps/v1/replicasets$")
    r = start_scheduler(leader=False, config=scheduler_config(leader=False))
    wait_until(lambda: failing.hits >= 2, what="the ReplicaSet list to fail")
    assert r.live.informers["nodes"].synced.is_set()
    assert not r.live.synced.is_set()
    assert r.live.ready_checks()["informerSync"]() == "informers have not synced yet"
    api.create("pods", pod("p").scheduler("harmonic").obj())
    assert api.pod_placement() == {}
    api.clear_faults()
    wait_until(lambda: r.live.synced.is_set(), what="sync once the list succeeds")
    wait_until(lambda: api.pod_placement() == {"default/p": "n0"}, what="scheduling after sync")
    assert r.stop() == 0
