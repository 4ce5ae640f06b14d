"""Which workload a pod belongs to, as service meshes name it.

Istio and Linkerd label traffic with the *workload* (the Deployment, StatefulSet, DaemonSet, ... that
owns the pod), so that is the primary identity. Resolution order:

1. annotation ``harmonic.dev/workload`` (explicit override);
2. the controller owner reference: a ReplicaSet owned through a Deployment is named
   ``<deployment>-<pod-template-hash>``, so the hash (from the pod's ``pod-template-hash`` label) is
   stripped; StatefulSet, DaemonSet, Job, ReplicaSet and other controllers give their own name;
3. label ``app.kubernetes.io/name``, then ``app``;
4. mesh workload labels: ``service.istio.io/canonical-name``, ``linkerd.io/proxy-deployment``;
5. the pod's own name (a bare pod is its own workload).
"""

from __future__ import annotations

from dataclasses import dataclass

from harmonic.api.pod import Pod

WORKLOAD_ANNOTATION = "harmonic.dev/workload"
_LABELS = ("app.kubernetes.io/name", "app", "service.istio.io/canonical-name", "linkerd.io/proxy-deployment")


@dataclass(frozen=True, slots=True, order=True)
class WorkloadKey:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, text: str, default_namespace: str = "default") -> WorkloadKey:
        ns, sep, name = text.partition("/")
        return cls(ns, name) if sep else cls(default_namespace, ns)


class Interner:
    """Small integer ids for workload keys, so hot paths index arrays instead of hashing keys."""

    def __init__(self) -> None:
        self._ids: dict[WorkloadKey, int] = {}
        self._keys: list[WorkloadKey] = []

    def id_of(self, key: WorkloadKey) -> int:
        i = self._ids.get(key)
        if i is None:
            i = self._ids[key] = len(self._keys)
            self._keys.append(key)
        return i

    def key_of(self, i: int) -> WorkloadKey:
        return self._keys[i]


#: Process-wide: the graph and the plugins' pod indexes must agree on ids.
WORKLOAD_IDS = Interner()


def workload_id(pod: Pod) -> int:
    cached = pod.extra.get("harmonic/workload-id")
    if cached is not None:
        i: int = cached
        return i
    i = WORKLOAD_IDS.id_of(workload_of(pod))
    pod.extra["harmonic/workload-id"] = i
    return i


def workload_of(pod: Pod) -> WorkloadKey:
    cached = pod.extra.get("harmonic/workload")
    if cached is not None:
        key: WorkloadKey = cached
        return key
    key = WorkloadKey(pod.namespace, _name(pod))
    pod.extra["harmonic/workload"] = key
    return key


def _name(pod: Pod) -> str:
    explicit = pod.annotations.get(WORKLOAD_ANNOTATION)
    if explicit:
        return explicit
    owner = pod.controller
    if owner is not None and owner.name:
        if owner.kind == "ReplicaSet":
            suffix = pod.labels.get("pod-template-hash")
            if suffix and owner.name.endswith(f"-{suffix}"):
                return owner.name[: -len(suffix) - 1]
        return owner.name
    for label in _LABELS:
        v = pod.labels.get(label)
        if v:
            return v
    return pod.name
