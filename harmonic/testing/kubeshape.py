"""Objects shaped exactly as kube-scheduler sends them to an extender.

kube-scheduler marshals ``extenderv1.ExtenderArgs`` (and the preemption and binding args) with Go's
``encoding/json``: keys are the Go field names of the extender types, the embedded ``v1.Pod`` and
``v1.Node`` are informer copies of what the API server returned (every defaulted field present, no
``kind``/``apiVersion``: list items carry no TypeMeta), keys in struct field order, nil pointers as
``null``, a ``v1.NodeList`` built in code as ``{"metadata":{},"items":[...]}``. The builders here turn
the fluent test manifests (``harmonic.testing.builders``) into that shape, so extender tests and
benchmarks send what a real kube-scheduler sends.
"""

from __future__ import annotations

import copy
import json
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

Obj = dict[str, Any]

_TIME = "2025-06-01T12:00:00Z"

# Go struct field order (k8s.io/api/core/v1, k8s.io/apimachinery meta/v1).
_ORDER: dict[str, tuple[str, ...]] = {
    "object": ("kind", "apiVersion", "metadata", "spec", "status"),
    "meta": (
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    ),
    "podspec": (
        "volumes",
        "initContainers",
        "containers",
        "ephemeralContainers",
        "restartPolicy",
        "terminationGracePeriodSeconds",
        "activeDeadlineSeconds",
        "dnsPolicy",
        "nodeSelector",
        "serviceAccountName",
        "serviceAccount",
        "automountServiceAccountToken",
        "nodeName",
        "hostNetwork",
        "hostPID",
        "hostIPC",
        "shareProcessNamespace",
        "securityContext",
        "imagePullSecrets",
        "hostname",
        "subdomain",
        "affinity",
        "schedulerName",
        "tolerations",
        "hostAliases",
        "priorityClassName",
        "priority",
        "dnsConfig",
        "readinessGates",
        "runtimeClassName",
        "enableServiceLinks",
        "preemptionPolicy",
        "overhead",
        "topologySpreadConstraints",
        "setHostnameAsFQDN",
        "os",
        "hostUsers",
        "schedulingGates",
        "resourceClaims",
        "resources",
    ),
    "nodestatus": (
        "capacity",
        "allocatable",
        "phase",
        "conditions",
        "addresses",
        "daemonEndpoints",
        "nodeInfo",
        "images",
        "volumesInUse",
        "volumesAttached",
        "config",
        "runtimeHandlers",
        "features",
    ),
    "container": (
        "name",
        "image",
        "command",
        "args",
        "workingDir",
        "ports",
        "envFrom",
        "env",
        "resources",
        "resizePolicy",
        "restartPolicy",
        "volumeMounts",
        "volumeDevices",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "lifecycle",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "imagePullPolicy",
        "securityContext",
    ),
}

_DEFAULT_TOLERATIONS = [
    {"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    for k in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
]


def _ordered(obj: Mapping[str, Any], order: Sequence[str]) -> Obj:
    out = {k: obj[k] for k in order if k in obj}
    out.update({k: v for k, v in obj.items() if k not in out})
    return out


def _meta(meta: Mapping[str, Any], uid: str, rv: int) -> Obj:
    m = dict(meta)
    m.setdefault("uid", uid)
    m.setdefault("resourceVersion", str(rv))
    m.setdefault("creationTimestamp", _TIME)
    return _ordered(m, _ORDER["meta"])


def _qos(containers: Sequence[Mapping[str, Any]]) -> str:
    reqs = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in reqs):
        return "BestEffort"
    guaranteed = all(
        (r.get("limits") or {}).get(k) is not None
        and (r.get("requests") or {}).get(k, (r.get("limits") or {}).get(k)) == (r.get("limits") or {}).get(k)
        for r in reqs
        for k in ("cpu", "memory")
    )
    return "Guaranteed" if guaranteed else "Burstable"


def _container(c: Mapping[str, Any], mount: str) -> Obj:
    out = dict(c)
    res = out.get("resources") or {}
    out["resources"] = _ordered(res, ("limits", "requests", "claims"))
    ports = [{**p, "protocol": p.get("protocol", "TCP")} for p in out.get("ports") or ()]
    if ports:
        out["ports"] = ports
    out.setdefault(
        "volumeMounts",
        [{"name": mount, "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
    )
    out.setdefault("terminationMessagePath", "/dev/termination-log")
    out.setdefault("terminationMessagePolicy", "File")
    out.setdefault("imagePullPolicy", "IfNotPresent")
    return _ordered(out, _ORDER["container"])


def api_pod(manifest: Mapping[str, Any], rv: int = 1000) -> Obj:
    """``manifest`` as an informer holds it: API-server defaults, service-account volume, status."""
    src = copy.deepcopy(dict(manifest))
    meta = src.get("metadata") or {}
    digest = zlib.crc32(str(meta.get("name")).encode())
    uid = str(meta.get("uid") or f"8c0e3f8a-{digest % 10**8:08d}-4c1e-9a55-{rv:012d}")
    mount = "kube-api-access-x7k2p"
    spec = dict(src.get("spec") or {})
    spec.setdefault(
        "volumes",
        [
            {
                "name": mount,
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "configMap": {
                                "name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            }
                        },
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "path": "namespace",
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                    }
                                ]
                            }
                        },
                    ],
                    "defaultMode": 420,
                },
            }
        ],
    )
    containers = [_container(c, mount) for c in spec.get("containers") or ()]
    spec["containers"] = containers
    if spec.get("initContainers"):
        spec["initContainers"] = [_container(c, mount) for c in spec["initContainers"]]
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", "default")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec["tolerations"] = list(spec.get("tolerations") or ()) + _DEFAULT_TOLERATIONS
    spec.setdefault("priority", 0)
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    status = dict(src.get("status") or {})
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", _qos(containers))
    if spec.get("nodeName"):
        status.setdefault(
            "conditions",
            [{"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": _TIME}],
        )
    return _ordered(
        {"metadata": _meta(meta, uid, rv), "spec": _ordered(spec, _ORDER["podspec"]), "status": status},
        _ORDER["object"],
    )


def api_node(manifest: Mapping[str, Any], rv: int = 1000, images: int = 0) -> Obj:
    """``manifest`` as an informer holds it: kubelet-reported status (conditions, addresses, node info,
    ``images`` container images) and the labels every kubelet sets."""
    src = copy.deepcopy(dict(manifest))
    meta = dict(src.get("metadata") or {})
    name = str(meta["name"])
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "m5.xlarge",
        **(meta.get("labels") or {}),
    }
    meta["labels"] = labels
    meta.setdefault(
        "annotations",
        {
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        },
    )
    uid = f"0f6c1e3a-{rv:08d}-4d7e-9a55-{zlib.crc32(name.encode()) % 10**12:012d}"
    spec = {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"], **(src.get("spec") or {})}
    status = dict(src.get("status") or {})
    cap = status.get("capacity") or {"cpu": "4", "memory": "16Gi", "pods": "110"}
    status["capacity"] = cap
    status.setdefault("allocatable", dict(cap))
    conditions = [
        {
            "type": t,
            "status": "False",
            "lastHeartbeatTime": _TIME,
            "lastTransitionTime": _TIME,
            "reason": reason,
            "message": message,
        }
        for t, reason, message in (
            ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        )
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": "True",
            "lastHeartbeatTime": _TIME,
            "lastTransitionTime": _TIME,
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
        }
    )
    status["conditions"] = conditions
    status["addresses"] = [
        {"type": "InternalIP", "address": "10.0.1.2"},
        {"type": "Hostname", "address": name},
    ]
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
    status["nodeInfo"] = {
        "machineID": "ec2d3f1c6b1a4f0e9d8c7b6a5f4e3d2c",
        "systemUUID": "ec2d3f1c-6b1a-4f0e-9d8c-7b6a5f4e3d2c",
        "bootID": "6f1e2d3c-4b5a-4697-8877-665544332211",
        "kernelVersion": "6.1.0-28-cloud-amd64",
        "osImage": "Debian GNU/Linux 12 (bookworm)",
        "containerRuntimeVersion": "containerd://1.7.24",
        "kubeletVersion": "v1.34.1",
        "kubeProxyVersion": "",
        "operatingSystem": "linux",
        "architecture": "amd64",
    }
    listed = list(status.get("images") or ())
    listed += [
        {
            "names": [
                f"registry.example.com/team/app-{k}@sha256:{k:064x}",
                f"registry.example.com/team/app-{k}:v1.{k}.0",
            ],
            "sizeBytes": 50_000_000 + k * 1_000_000,
        }
        for k in range(images)
    ]
    if listed:
        status["images"] = listed
    status = _ordered(status, _ORDER["nodestatus"])
    return _ordered({"metadata": _meta(meta, uid, rv), "spec": spec, "status": status}, _ORDER["object"])


def extender_args(
    pod: Obj, nodes: Sequence[Obj] | None = None, node_names: Sequence[str] | None = None
) -> Obj:
    """ExtenderArgs as HTTPExtender builds it: full nodes (nodeCacheCapable: false) or names."""
    return {
        "Pod": pod,
        "Nodes": None if nodes is None else {"metadata": {}, "items": list(nodes)},
        "NodeNames": None if node_names is None else list(node_names),
    }


def preemption_args(pod: Obj, victims: Mapping[str, tuple[Sequence[Obj], int]], meta: bool) -> Obj:
    """ExtenderPreemptionArgs: ``victims`` is node -> (victim pods, PDB violations); ``meta`` sends
    UIDs only (nodeCacheCapable: true), else the full pods."""
    if meta:
        return {
            "Pod": pod,
            "NodeNameToVictims": None,
            "NodeNameToMetaVictims": {
                n: {"Pods": [{"UID": p["metadata"]["uid"]} for p in ps], "NumPDBViolations": v}
                for n, (ps, v) in victims.items()
            },
        }
    return {
        "Pod": pod,
        "NodeNameToVictims": {n: {"Pods": list(ps), "NumPDBViolations": v} for n, (ps, v) in victims.items()},
        "NodeNameToMetaVictims": None,
    }


def binding_args(pod: Obj, node: str) -> Obj:
    meta = pod["metadata"]
    return {
        "PodName": meta["name"],
        "PodNamespace": meta.get("namespace", ""),
        "PodUID": meta["uid"],
        "Node": node,
    }


def marshal(obj: Any) -> bytes:
    """Compact JSON as Go's encoding/json writes it (no spaces, non-ASCII kept)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
