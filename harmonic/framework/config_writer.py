"""A resolved ``SchedulerConfiguration`` written back as a KubeSchedulerConfiguration document with every
default filled in, as kube-scheduler's ``--write-config-to`` writes one: loading it gives the same
profiles (each extension point's plugins in run order, score weights, every plugin's args).

Each extension point lists its plugins explicitly and disables the rest (``"*"``), MultiPoint
included, so the document does not depend on the defaults of the Harmonic version that reads it.
"""

from __future__ import annotations

from typing import Any

from harmonic.framework.config import API_VERSION, KIND, Profile, SchedulerConfiguration
from harmonic.framework.interface import EXTENSION_POINTS


def _duration(seconds: float) -> str:
    return f"{seconds:g}s"


def _profile(p: Profile) -> dict[str, Any]:
    plugins: dict[str, Any] = {}
    for point in EXTENSION_POINTS:
        enabled: list[dict[str, Any]] = []
        for name in p.points.get(point, ()):
            entry: dict[str, Any] = {"name": name}
            if point == "score":
                entry["weight"] = p.weights[name]
            enabled.append(entry)
        plugins[point] = {"enabled": enabled, "disabled": [{"name": "*"}]}
    plugins["multiPoint"] = {"enabled": [], "disabled": [{"name": "*"}]}
    out: dict[str, Any] = {"schedulerName": p.scheduler_name}
    if p.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = p.percentage_of_nodes_to_score
    out["plugins"] = plugins
    out["pluginConfig"] = [
        {"name": name, "args": args.model_dump(mode="json", by_alias=True)} for name, args in p.args.items()
    ]
    return out


def to_v1(cfg: SchedulerConfiguration) -> dict[str, Any]:
    le = cfg.leader_election
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "parallelism": 16,
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": _duration(le.lease_duration),
            "renewDeadline": _duration(le.renew_deadline),
            "retryPeriod": _duration(le.retry_period),
            "resourceLock": "leases",
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
        },
        "clientConnection": {
            "kubeconfig": cfg.client_connection.kubeconfig,
            "acceptContentTypes": "",
            "contentType": "application/vnd.kubernetes.protobuf",
            "qps": cfg.client_connection.qps,
            "burst": cfg.client_connection.burst,
        },
        "enableProfiling": True,
        "enableContentionProfiling": True,
        "percentageOfNodesToScore": cfg.percentage_of_nodes_to_score,
        "podInitialBackoffSeconds": int(cfg.pod_initial_backoff_seconds),
        "podMaxBackoffSeconds": int(cfg.pod_max_backoff_seconds),
        "profiles": [_profile(p) for p in cfg.profiles],
    }
