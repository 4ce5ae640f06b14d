"""What the live adapter's choices cost: decoding pods, and one API request, per way of doing it.

    python benchmarks/k8s_client_cost.py [--pods 10000] [--requests 2000]

1. Decoding N realistic pods (a Deployment's pod with managed fields, probes, a projected volume;
   about 2.9 kB of JSON each) from one list body: ``json.loads``; the official client's typed models
   (``ApiClient.deserialize`` into ``V1PodList``); lightkube's models if installed; and Harmonic's
   compiled view (``parse_pod``) from the decoded JSON. With the cyclic GC on and frozen off, as in a
   long-running process, and with it off.
2. One POST of a small Event against the API-server double (in its own process): the official
   client's request path (``param_serialize`` + ``call_api``, urllib3) and ``harmonic``'s
   ``Transport.request`` (http.client, one write per request). CPU time of the calling thread.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client as kclient

from harmonic.api.pod import parse_pod
from harmonic.cluster.transport import Transport, load_client


def make_pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"web-7d9f8c6b5-{i:05d}",
            "namespace": "prod",
            "uid": f"0b6f5c3e-1a2b-4c5d-8e9f-{i:012d}",
            "resourceVersion": str(100000 + i),
            "creationTimestamp": "2026-01-01T10:00:00Z",
            "generateName": "web-7d9f8c6b5-",
            "labels": {"app": "web", "pod-template-hash": "7d9f8c6b5", "tier": "frontend", "version": "v3"},
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-7d9f8c6b5",
                    "uid": "aaaa-bbbb",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2026-01-01T10:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}}}},
                    },
                }
            ],
        },
        "spec": {
            "schedulerName": "harmonic",
            "containers": [
                {
                    "name": "web",
                    "image": "registry.example.com/web:3.2.1",
                    "imagePullPolicy": "IfNotPresent",
                    "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
                    "env": [
                        {"name": "LOG_LEVEL", "value": "info"},
                        {
                            "name": "POD_NAME",
                            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                        },
                    ],
                    "resources": {
                        "requests": {"cpu": "250m", "memory": "256Mi"},
                        "limits": {"cpu": "1", "memory": "512Mi"},
                    },
                    "readinessProbe": {
                        "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                        "periodSeconds": 10,
                        "timeoutSeconds": 1,
                        "successThreshold": 1,
                        "failureThreshold": 3,
                    },
                    "volumeMounts": [
                        {
                            "name": "kube-api-access-abcde",
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                            "readOnly": True,
                        }
                    ],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                },
                {
                    "name": "sidecar",
                    "image": "envoy:1.30",
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                },
            ],
            "volumes": [
                {
                    "name": "kube-api-access-abcde",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                        ],
                    },
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "priority": 0,
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def _per_item(label: str, n: int, fn: Callable[[], Any]) -> None:
    t0 = time.perf_counter()
    fn()
    dt = time.perf_counter() - t0
    print(f"  {label:52s} {dt * 1e6 / n:8.1f} us/pod")


def decoding(n: int) -> None:
    body = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "PodList",
            "metadata": {"resourceVersion": "1"},
            "items": [make_pod(i) for i in range(n)],
        }
    )
    print(f"decoding {n} pods ({len(body) // n} bytes of JSON each):")
    api = kclient.ApiClient()
    try:
        from lightkube.models.core_v1 import Pod as LightkubePod  # type: ignore[import-not-found]
    except ImportError:
        LightkubePod = None
    for gc_on in (True, False):
        print(f" cyclic GC {'on' if gc_on else 'off'}:")
        gc.enable() if gc_on else gc.disable()
        _decode_round(body, n, api, LightkubePod)
    gc.enable()


def _decode_round(body: str, n: int, api: kclient.ApiClient, lightkube_pod: Any) -> None:
    items = json.loads(body)["items"]
    _per_item("json.loads", n, lambda: json.loads(body))
    _per_item("harmonic parse_pod (from decoded JSON)", n, lambda: [parse_pod(p) for p in items])
    _per_item(
        "kubernetes ApiClient.deserialize -> V1PodList",
        n,
        lambda: api.deserialize(body, "V1PodList", "application/json"),
    )
    if lightkube_pod is not None:
        _per_item(
            "lightkube Pod.from_dict (from decoded JSON)",
            n,
            lambda: [lightkube_pod.from_dict(p) for p in items],
        )


def requests(n: int) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "harmonic.testing.apiserver"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    url, token = proc.stdout.readline().split()
    try:
        path = Path(tempfile.mkdtemp()) / "kubeconfig"
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "d", "cluster": {"server": url}}],
                    "users": [{"name": "u", "user": {"token": token}}],
                    "contexts": [{"name": "d", "context": {"cluster": "d", "user": "u"}}],
                    "current-context": "d",
                }
            )
        )
        api = load_client(str(path))
        transport = Transport(api, qps=-1, burst=1)
        events = "/apis/events.k8s.io/v1/namespaces/default/events"

        def official(i: int) -> None:
            params = api.param_serialize(
                "POST",
                events,
                body={"metadata": {"name": f"a{i}"}, "note": "x" * 100},
                header_params={"Content-Type": "application/json"},
                auth_settings=["BearerToken"],
            )
            api.call_api(*params).read()

        def ours(i: int) -> None:
            transport.request("POST", events, body={"metadata": {"name": f"b{i}"}, "note": "x" * 100})

        print(f"one POST of an Event to the API-server double ({n} requests, calling thread's CPU):")
        for label, fn in (
            ("kubernetes client (urllib3)", official),
            ("harmonic Transport (http.client)", ours),
        ):
            c0, w0 = time.thread_time(), time.perf_counter()
            for i in range(n):
                fn(i)
            cpu, wall = time.thread_time() - c0, time.perf_counter() - w0
            print(f"  {label:52s} {cpu * 1e6 / n:8.0f} us CPU, {wall * 1e6 / n:6.0f} us wall")
    finally:
        proc.stdin.close()
        proc.wait(10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--requests", type=int, default=2000)
    args = ap.parse_args()
    decoding(args.pods)
    requests(args.requests)
    return 0


if __name__ == "__main__":
    sys.exit(main())
