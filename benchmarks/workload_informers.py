"""Memory of the "workloads" service's informers: whole objects kept versus selectors only.

    python benchmarks/workload_informers.py --objects 5000

Creates N ReplicaSets and N Services in the API-server test double (in this process), shaped as a
Deployment's controller and ``kubectl apply`` leave them (labels, annotations, owner reference,
managedFields, a pod template with one container, probes and env; a Service with ports and a
ClusterIP), then lists them with informers over HTTP twice: as plain informers keeping whole
manifests, and as ``LiveServices`` does (``selector_view`` transform, ``WorkloadIndex`` fed by the
handlers). Prints the Python heap each way holds once synced (tracemalloc, after a full collection).
Figures are printed, never assumed.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

from harmonic.cluster.informer import REPLICA_SETS, SERVICES, Informer
from harmonic.cluster.services import LiveServices
from harmonic.cluster.transport import Transport, load_client
from harmonic.testing.apiserver import ApiServerDouble


def _fields(*paths: str) -> dict[str, Any]:
    return {f"f:{p}": {} for p in paths}


def replica_set(i: int) -> dict[str, Any]:
    app, hash_ = f"app-{i:05d}", f"{i:010x}"
    labels = {"app": app, "pod-template-hash": hash_, "team": f"team-{i % 40}"}
    container = {
        "name": "main",
        "image": f"registry.example.com/{app}:1.{i % 17}.3",
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "env": [{"name": f"SETTING_{k}", "value": f"value-{k}"} for k in range(6)],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/live", "port": "http"}, "periodSeconds": 10},
        "terminationMessagePath": "/dev/termination-log",
        "imagePullPolicy": "IfNotPresent",
    }
    return {
        "metadata": {
            "name": f"{app}-{hash_}",
            "namespace": f"ns-{i % 50}",
            "labels": labels,
            "annotations": {
                "deployment.kubernetes.io/desired-replicas": "3",
                "deployment.kubernetes.io/max-replicas": "4",
                "deployment.kubernetes.io/revision": "7",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": app,
                    "uid": f"00000000-0000-0000-0000-{i:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "apps/v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": _fields("labels", "annotations", "ownerReferences"),
                        "f:spec": _fields("replicas", "selector", "template"),
                        "f:status": _fields("replicas", "readyReplicas", "availableReplicas"),
                    },
                }
            ],
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": app, "pod-template-hash": hash_}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [container],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "schedulerName": "default-scheduler",
                },
            },
        },
        "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "observedGeneration": 7},
    }


def service(i: int) -> dict[str, Any]:
    app = f"app-{i:05d}"
    return {
        "metadata": {"name": app, "namespace": f"ns-{i % 50}", "labels": {"app": app}},
        "spec": {
            "selector": {"app": app},
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
            "clusterIP": f"10.96.{i // 250}.{i % 250}",
            "clusterIPs": [f"10.96.{i // 250}.{i % 250}"],
            "type": "ClusterIP",
            "sessionAffinity": "None",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
        },
    }


def measure(transport: Transport, selectors_only: bool) -> int:
    """Bytes the ReplicaSet and Service informers (and the index) hold once synced."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    if selectors_only:
        live = LiveServices(transport)
        informers = [live.informers["replicasets"], live.informers["services"]]
    else:
        informers = [Informer(transport, REPLICA_SETS), Informer(transport, SERVICES)]
    for inf in informers:
        inf.start()
    for inf in informers:
        inf.wait_for_sync()
    for inf in informers:
        inf.stop()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert all(len(inf) for inf in informers)
    return held


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", type=int, default=5000, help="ReplicaSets, and as many Services")
    args = ap.parse_args()
    with ApiServerDouble(token=None) as api, tempfile.TemporaryDirectory() as tmp:
        api.create_many("replicasets", (replica_set(i) for i in range(args.objects)))
        api.create_many("services", (service(i) for i in range(args.objects)))
        transport = Transport(load_client(str(api.kubeconfig(Path(tmp) / "kubeconfig"))), qps=-1)
        print(f"{args.objects} ReplicaSets + {args.objects} Services")
        for label, selectors_only in (("whole objects", False), ("selectors only", True)):
            held = measure(transport, selectors_only)
            print(
                f"  {label:15s} {held / 2**20:6.1f} MiB held ({held / (2 * args.objects):,.0f} bytes per object)"
            )


if __name__ == "__main__":
    main()
