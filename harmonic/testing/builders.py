"""Fluent builders for Pod and Node manifests, in the spirit of upstream's ``st.MakePod()``.

pod("web").ns("shop").req(cpu="500m", memory="1Gi").label("app", "web").tolerate("gpu", "yes").obj()
node("n1").cap(cpu="4", memory="16Gi", pods=110).zone("a").taint("gpu", "yes").obj()
"""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]


def _res(kwargs: dict[str, Any]) -> dict[str, str]:
    out = {}
    for k, v in kwargs.items():
        name = {"ephemeral_storage": "ephemeral-storage"}.get(k, k)
        out[name] = str(v)
    return out


class PodBuilder:
    def __init__(self, name: str) -> None:
        self._o: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"containers": [{"name": "c0", "image": "pause"}]},
        }

    @property
    def _meta(self) -> Obj:
        m: Obj = self._o["metadata"]
        return m

    @property
    def _spec(self) -> Obj:
        s: Obj = self._o["spec"]
        return s

    def ns(self, namespace: str) -> PodBuilder:
        self._meta["namespace"] = namespace
        self._meta["uid"] = f"uid-{namespace}-{self._meta['name']}"
        return self

    def uid(self, uid: str) -> PodBuilder:
        self._meta["uid"] = uid
        return self

    def label(self, key: str, value: str) -> PodBuilder:
        self._meta.setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: dict[str, str]) -> PodBuilder:
        self._meta.setdefault("labels", {}).update(labels)
        return self

    def annotation(self, key: str, value: str) -> PodBuilder:
        self._meta.setdefault("annotations", {})[key] = value
        return self

    def owner(self, kind: str, name: str, uid: str | None = None, controller: bool = True) -> PodBuilder:
        self._meta.setdefault("ownerReferences", []).append(
            {
                "apiVersion": "apps/v1",
                "kind": kind,
                "name": name,
                "uid": uid or f"uid-{kind}-{name}",
                "controller": controller,
            }
        )
        return self

    def req(self, **resources: Any) -> PodBuilder:
        """Requests of the first container (``ephemeral_storage=`` for ephemeral-storage)."""
        c = self._spec["containers"][0]
        c.setdefault("resources", {}).setdefault("requests", {}).update(_res(resources))
        return self

    def limits(self, **resources: Any) -> PodBuilder:
        c = self._spec["containers"][0]
        c.setdefault("resources", {}).setdefault("limits", {}).update(_res(resources))
        return self

    def container(self, name: str | None = None, image: str = "pause", **requests: Any) -> PodBuilder:
        """Add another container with these requests."""
        c: Obj = {"name": name or f"c{len(self._spec['containers'])}", "image": image}
        if requests:
            c["resources"] = {"requests": _res(requests)}
        self._spec["containers"].append(c)
        return self

    def init_container(self, sidecar: bool = False, image: str = "pause", **requests: Any) -> PodBuilder:
        inits = self._spec.setdefault("initContainers", [])
        c: Obj = {"name": f"init{len(inits)}", "image": image}
        if requests:
            c["resources"] = {"requests": _res(requests)}
        if sidecar:
            c["restartPolicy"] = "Always"
        inits.append(c)
        return self

    def overhead(self, **resources: Any) -> PodBuilder:
        self._spec["overhead"] = _res(resources)
        return self

    def image(self, image: str) -> PodBuilder:
        self._spec["containers"][0]["image"] = image
        return self

    def images(self, *images: str) -> PodBuilder:
        self._spec["containers"] = [{"name": f"c{i}", "image": im} for i, im in enumerate(images)]
        return self

    def node(self, name: str) -> PodBuilder:
        self._spec["nodeName"] = name
        return self

    def nominated(self, name: str) -> PodBuilder:
        self._o.setdefault("status", {})["nominatedNodeName"] = name
        return self

    def group(self, name: str) -> PodBuilder:
        """Member of the PodGroup ``name`` (label ``scheduling.x-k8s.io/pod-group``)."""
        return self.label("scheduling.x-k8s.io/pod-group", name)

    def priority(self, value: int) -> PodBuilder:
        self._spec["priority"] = value
        return self

    def preemption_policy(self, policy: str) -> PodBuilder:
        self._spec["preemptionPolicy"] = policy
        return self

    def scheduler(self, name: str) -> PodBuilder:
        self._spec["schedulerName"] = name
        return self

    def phase(self, phase: str) -> PodBuilder:
        self._o.setdefault("status", {})["phase"] = phase
        return self

    def gate(self, *names: str) -> PodBuilder:
        self._spec.setdefault("schedulingGates", []).extend({"name": n} for n in names)
        return self

    def tolerate(
        self, key: str = "", value: str = "", effect: str = "", operator: str | None = None
    ) -> PodBuilder:
        t: Obj = {"key": key, "operator": operator or ("Equal" if value or key else "Exists")}
        if value:
            t["value"] = value
        if effect:
            t["effect"] = effect
        self._spec.setdefault("tolerations", []).append(t)
        return self

    def node_selector(self, selector: dict[str, str]) -> PodBuilder:
        self._spec["nodeSelector"] = dict(selector)
        return self

    def _node_affinity(self) -> Obj:
        na: Obj = self._spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        return na

    def required_term(
        self, *expressions: tuple[str, str, list[str]], fields: list[tuple[str, str, list[str]]] | None = None
    ) -> PodBuilder:
        """Add a required node selector term of (key, operator, values) expressions (terms are ORed)."""
        term: Obj = {}
        if expressions:
            term["matchExpressions"] = [
                {"key": k, "operator": op, "values": list(v)} if v else {"key": k, "operator": op}
                for k, op, v in expressions
            ]
        if fields:
            term["matchFields"] = [{"key": k, "operator": op, "values": list(v)} for k, op, v in fields]
        req = self._node_affinity().setdefault(
            "requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []}
        )
        req["nodeSelectorTerms"].append(term)
        return self

    def host_port(self, port: int, protocol: str = "TCP", ip: str = "") -> PodBuilder:
        p: Obj = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if ip:
            p["hostIP"] = ip
        self._spec["containers"][0].setdefault("ports", []).append(p)
        return self

    def spread(
        self,
        max_skew: int,
        topology_key: str,
        when: str = "DoNotSchedule",
        selector: dict[str, Any] | None = None,
        **extra: Any,
    ) -> PodBuilder:
        """Add a topology spread constraint; ``extra`` takes the other fields by their API names
        (``minDomains=2``, ``nodeTaintsPolicy="Honor"``, ``matchLabelKeys=[...]``)."""
        c: Obj = {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when}
        if selector is not None:
            c["labelSelector"] = copy.deepcopy(selector)
        c.update(copy.deepcopy(extra))
        self._spec.setdefault("topologySpreadConstraints", []).append(c)
        return self

    def spec(self, **fields: Any) -> PodBuilder:
        """Set arbitrary spec fields (affinity, topologySpreadConstraints, ...)."""
        self._spec.update(copy.deepcopy(fields))
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._o)


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self._o: Obj = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
        }

    def cap(self, **resources: Any) -> NodeBuilder:
        """Set allocatable (replacing the default 4 CPU / 16Gi / 110 pods for the named resources)."""
        self._o["status"]["allocatable"].update(_res(resources))
        return self

    def only(self, **resources: Any) -> NodeBuilder:
        """Set allocatable to exactly these resources."""
        self._o["status"]["allocatable"] = _res(resources)
        return self

    def label(self, key: str, value: str) -> NodeBuilder:
        self._o["metadata"]["labels"][key] = value
        return self

    def labels(self, labels: dict[str, str]) -> NodeBuilder:
        self._o["metadata"]["labels"].update(labels)
        return self

    def zone(self, zone: str, region: str | None = None) -> NodeBuilder:
        self.label("topology.kubernetes.io/zone", zone)
        if region is not None:
            self.label("topology.kubernetes.io/region", region)
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        t: Obj = {"key": key, "effect": effect}
        if value:
            t["value"] = value
        self._o["spec"].setdefault("taints", []).append(t)
        return self

    def unschedulable(self, value: bool = True) -> NodeBuilder:
        self._o["spec"]["unschedulable"] = value
        return self

    def image(self, size: int, *names: str) -> NodeBuilder:
        self._o["status"].setdefault("images", []).append({"names": list(names), "sizeBytes": size})
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._o)


def pod(name: str) -> PodBuilder:
    return PodBuilder(name)


def node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


class PodGroupBuilder:
    """A ``scheduling.x-k8s.io/v1alpha1`` PodGroup (upstream's ``tu.MakePodGroup()``)."""

    def __init__(self, name: str) -> None:
        self._o: Obj = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": 1},
        }

    def ns(self, namespace: str) -> PodGroupBuilder:
        self._o["metadata"]["namespace"] = namespace
        return self

    def min_member(self, n: int) -> PodGroupBuilder:
        self._o["spec"]["minMember"] = n
        return self

    def min_resources(self, **resources: Any) -> PodGroupBuilder:
        self._o["spec"]["minResources"] = _res(resources)
        return self

    def timeout(self, seconds: int) -> PodGroupBuilder:
        self._o["spec"]["scheduleTimeoutSeconds"] = seconds
        return self

    def created(self, rfc3339: str) -> PodGroupBuilder:
        self._o["metadata"]["creationTimestamp"] = rfc3339
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._o)


class ElasticQuotaBuilder:
    """A ``scheduling.x-k8s.io/v1alpha1`` ElasticQuota for a namespace."""

    def __init__(self, namespace: str, name: str = "quota") -> None:
        self._o: Obj = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "ElasticQuota",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {},
        }

    def min(self, **resources: Any) -> ElasticQuotaBuilder:
        self._o["spec"]["min"] = _res(resources)
        return self

    def max(self, **resources: Any) -> ElasticQuotaBuilder:
        self._o["spec"]["max"] = _res(resources)
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._o)


def pod_group(name: str) -> PodGroupBuilder:
    return PodGroupBuilder(name)


def elastic_quota(namespace: str, name: str = "quota") -> ElasticQuotaBuilder:
    return ElasticQuotaBuilder(namespace, name)
