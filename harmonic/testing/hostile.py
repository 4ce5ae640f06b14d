"""Random and hostile Kubernetes objects for the live fuzzer (``harmonic.testing.livefuzz``).

Every object is a shape kube-apiserver accepts (names, labels, tolerations, affinity terms and
quantities follow its validation; checked against kube-apiserver 1.36: it stores ``cpu: 1e100`` and
``example.com/x: 1e19`` on Pods and Nodes, and refuses negative amounts), and each carries what Harmonic
must do with it, so a run can be judged:

- ``BIND``: a pod Harmonic must bind (its shape is odd, its request always fits a base node);
- ``REPORT``: a pod Harmonic cannot place or cannot read: a ``FailedScheduling`` event, or one log line
  naming it, and never bound;
- ``SETTLE``: a pod that may or may not fit: bound, or a ``FailedScheduling`` event, never silence;
- ``HOLD``: a pod that must stay pending without needing an event (scheduling gates, a gang short of
  its quorum, another scheduler's pod);
- ``LOGGED``: a non-pod object Harmonic refuses: one log line naming it;
- ``QUIET``: an object Harmonic uses as it is (nothing required but not to fall over).

Deterministic for a seed. Base nodes come first; a PodGroup comes before its members.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harmonic.api.batch import POD_GROUP_LABEL

Obj = dict[str, Any]

BIND, REPORT, SETTLE, HOLD, LOGGED, QUIET = "bind", "report", "settle", "hold", "logged", "quiet"

#: The profiles the fuzzed scheduler runs: kube-scheduler's default plugins, and the batch plugins.
SCHEDULER = "harmonic"
BATCH_SCHEDULER = "harmonic-batch"
#: Namespace of every pod and object but the quotas (each ElasticQuota has a namespace of its own, so a
#: hostile quota never holds back a pod that must bind).
NAMESPACE = "default"
#: Label of the pods that must bind; no hostile selector or term names it.
GOOD_LABEL = ("app", "fz-good")
BASE_NODES = 10

_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_ODD_TEXT = [
    "",
    "\u202eevil\u202c",  # right-to-left override
    "😀" * 50,
    "\u0000nul",
    "Ω≈ç√∫˜µ≤≥÷",
    "\ufeffbom",
    "a\u0301\u0302\u0303" * 40,  # stacked combining marks
    "\U0010fffd",
    "line\nbreak\ttab",
    "{'json': [1, 2]}",
    "' OR 1=1 --",
    "%s%n%x",
]
#: Quantities kube-apiserver stores that do not fit in 64 bits (Harmonic refuses them). Checked one by
#: one for cpu, memory, ephemeral-storage and example.com/x on Pods and Nodes: all are stored but
#: "99999999999999999999" of an extended resource ("must be an integer": its int64 view wraps around).
_HUGE = ["1e100", "1e400", "99999999999999999999", "9223372036854775808", "1e19", "10Ei", "8Ei"]
_HUGE_EXTENDED = [q for q in _HUGE if q != "99999999999999999999"]


@dataclass(slots=True)
class Made:
    """One object to create through the API, and what Harmonic must do with it."""

    kind: str  # Pod, Node, PodDisruptionBudget, PodGroup, ElasticQuota, Namespace
    obj: Obj
    expect: str
    why: str

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        ns = self.obj["metadata"].get("namespace")
        return str(ns) if ns else None

    @property
    def key(self) -> str:
        """How Harmonic's log lines name it: ``namespace/name``, or the name of a cluster object."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


class HostileObjects:
    """An endless, seeded stream of ``Made`` objects: ``take(n)`` gives the next ``n`` (a gang's group
    and members count one each)."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self._n = 0
        self._stream = self._objects()

    def take(self, n: int) -> list[Made]:
        return [next(self._stream) for _ in range(n)]

    # ------------------------------------------------------------------ the stream
    def _objects(self) -> Iterator[Made]:
        for i in range(BASE_NODES):
            yield self._base_node(i)
        makers = [
            (0.62, self._pod),
            (0.12, self._node),
            (0.08, self._pdb),
            (0.10, self._pod_group),
            (0.08, self._quota),
        ]
        weights = [w for w, _ in makers]
        while True:
            (maker,) = self.rng.choices([m for _, m in makers], weights)
            yield from maker()

    def _name(self, kind: str, long: bool = True) -> str:
        """Unique, and sometimes (``long``) as long as kube-apiserver allows (253 characters, dotted)."""
        self._n += 1
        base = f"fz-{kind}-{self._n:06d}"
        if long and self.rng.random() < 0.1:
            filler = ".".join("".join(self.rng.choices(_ALNUM, k=self.rng.randint(1, 60))) for _ in range(6))
            base = f"{base}.{filler}"[:253].rstrip(".-")
        return base

    # ------------------------------------------------------------------ nodes
    def _base_node(self, i: int) -> Made:
        obj = _node(f"fz-base-{i:02d}", {"cpu": "1000", "memory": "4Ti", "pods": "100000"})
        obj["metadata"]["labels"]["topology.kubernetes.io/zone"] = f"zone-{i % 3}"
        return Made("Node", obj, QUIET, "base node")

    def _node(self) -> Iterator[Made]:
        r = self.rng
        name = self._name("n")
        variant = r.randrange(8)
        if variant == 0:
            res = r.choice(["cpu", "memory", "ephemeral-storage", "example.com/x"])
            what = r.choice(_HUGE_EXTENDED if "/" in res else _HUGE)
            obj = _node(name, {"cpu": "4", "memory": "8Gi", "pods": "110", res: what})
            yield Made("Node", obj, LOGGED, f"{res}: {what} does not fit in 64 bits")
            return
        if variant == 1:
            obj = _node(name, {"cpu": "0", "memory": "0", "pods": "0"})
            yield Made("Node", obj, QUIET, "no room at all")
            return
        obj = _node(
            name, {"cpu": r.choice(["1", "64", "9e15"]), "memory": r.choice(["1Gi", "9e18"]), "pods": "110"}
        )
        if variant == 2:
            obj["spec"]["taints"] = [
                {
                    "key": f"fz.example/t{j}-{_word(r, 20)}",
                    "value": _label_value(r),
                    "effect": r.choice(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
                }
                for j in range(r.randint(1, 40))
            ]
            yield Made("Node", obj, QUIET, "many taints")
        elif variant == 3:
            obj["spec"]["unschedulable"] = True
            yield Made("Node", obj, QUIET, "cordoned")
        elif variant == 4:
            obj["metadata"]["labels"].update(_labels(r, 60))
            obj["metadata"]["annotations"] = _annotations(r)
            yield Made("Node", obj, QUIET, "odd labels and annotations")
        elif variant == 5:
            obj["status"]["images"] = [
                {"names": [f"registry.example/{_word(r, 30)}:{j}"], "sizeBytes": r.choice([0, 1, 2**62])}
                for j in range(r.randint(1, 300))
            ]
            yield Made("Node", obj, QUIET, "many images")
        else:
            # Capacity near the 64-bit limit, tainted so pods that must bind land there only if they
            # tolerate everything.
            obj["status"]["capacity"] = {
                "cpu": "9223372036854775",
                "memory": "9223372036854775807",
                "pods": "110",
            }
            obj["status"]["allocatable"] = dict(obj["status"]["capacity"])
            obj["spec"]["taints"] = [{"key": "fz.example/huge", "effect": "NoSchedule"}]
            yield Made("Node", obj, QUIET, "capacity at the 64-bit limit")

    # ------------------------------------------------------------------ pods
    def _pod(self) -> Iterator[Made]:
        r = self.rng
        name = self._name("p")
        obj = _pod(name, SCHEDULER)
        c = obj["spec"]["containers"][0]
        variant = r.randrange(18)
        if variant < 4:
            obj["metadata"]["labels"] = dict([GOOD_LABEL])
            c["resources"] = {
                "requests": {"cpu": r.choice(["1m", "10m", "100m"]), "memory": r.choice(["1Mi", "64Mi"])}
            }
            yield Made("Pod", obj, BIND, "plain")
        elif variant == 4:
            obj["metadata"]["labels"] = dict([GOOD_LABEL])
            obj["spec"]["containers"] = [_container(f"c{j}", "1m") for j in range(r.randint(2, 60))]
            obj["spec"]["initContainers"] = [
                {**_container(f"i{j}", "2m"), **({"restartPolicy": "Always"} if j % 2 else {})}
                for j in range(r.randint(1, 10))
            ]
            yield Made("Pod", obj, BIND, "many containers")
        elif variant == 5:
            obj["metadata"]["labels"] = {**dict([GOOD_LABEL]), **_labels(r, 30)}
            obj["metadata"]["annotations"] = _annotations(r)
            yield Made("Pod", obj, BIND, "odd unicode in annotations, many labels")
        elif variant == 6:
            obj["metadata"]["labels"] = dict([GOOD_LABEL])
            obj["spec"]["tolerations"] = [{"operator": "Exists"}] + [
                {
                    "key": f"fz.example/{_word(r, 10)}",
                    "operator": "Equal",
                    "value": _label_value(r),
                    "effect": "NoExecute",
                    "tolerationSeconds": r.choice([0, -1, 2**63 - 1]),
                }
                for _ in range(r.randint(0, 20))
            ]
            yield Made("Pod", obj, BIND, "tolerates everything")
        elif variant == 7:
            obj["metadata"]["labels"] = dict([GOOD_LABEL])
            obj["spec"]["affinity"] = {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": r.randint(1, 100), "preference": {"matchExpressions": [_expression(r)]}}
                        for _ in range(r.randint(1, 30))
                    ]
                }
            }
            obj["spec"]["topologySpreadConstraints"] = [
                {
                    "maxSkew": r.choice([1, 2**31 - 1]),
                    "topologyKey": f"fz.example/{_word(r, 40)}",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"fz-spread": _word(r, 8)}},
                }
            ]
            yield Made("Pod", obj, BIND, "odd preferences and soft spreading")
        elif variant == 8:
            res = r.choice(["cpu", "memory", "ephemeral-storage", "example.com/x"])
            amount = r.choice(_HUGE_EXTENDED if "/" in res else _HUGE)
            c["resources"] = {"requests": {res: amount}}
            if "/" in res:
                c["resources"]["limits"] = {res: amount}  # extended resources: limit == request
            yield Made("Pod", obj, REPORT, f"request {res}: {amount} beyond 64 bits")
        elif variant == 9:
            obj["spec"]["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": f"fz.example/never-{self._n}", "operator": "Exists"}
                                ]
                            }
                        ]
                    }
                }
            }
            yield Made("Pod", obj, REPORT, "requires a label no node has")
        elif variant == 10:
            obj["spec"]["nodeSelector"] = {f"fz.example/{_word(r, 30)}": _label_value(r) or "x"}
            yield Made("Pod", obj, REPORT, "node selector no node matches")
        elif variant == 11:
            c["resources"] = {
                "requests": {"cpu": r.choice(["2000", "1e9", "9223372036854775"]), "memory": "1Mi"}
            }
            yield Made("Pod", obj, SETTLE, "more CPU than the base nodes have")
        elif variant == 12:
            c["ports"] = [{"containerPort": 80, "hostPort": r.choice([1, 80, 65535])}]
            yield Made("Pod", obj, SETTLE, "host port")
        elif variant == 13:
            obj["metadata"]["labels"] = {"fz-anti": "x"}
            obj["spec"]["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"fz-anti": "x"}},
                            "topologyKey": r.choice(
                                [
                                    "kubernetes.io/hostname",
                                    "topology.kubernetes.io/zone",
                                    f"fz.example/{_word(r, 9)}",
                                ]
                            ),
                        }
                    ]
                }
            }
            yield Made("Pod", obj, SETTLE, "required anti-affinity to its own kind")
        elif variant == 14:
            obj["metadata"]["labels"] = {"fz-spread": "hard"}
            obj["spec"]["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": r.choice(["topology.kubernetes.io/zone", f"fz.example/{_word(r, 9)}"]),
                    "whenUnsatisfiable": "DoNotSchedule",
                    "minDomains": r.choice([1, 5, 2**31 - 1]),
                    "labelSelector": {"matchLabels": {"fz-spread": "hard"}},
                }
            ]
            yield Made("Pod", obj, SETTLE, "hard spreading, odd domains")
        elif variant == 15:
            obj["spec"]["schedulingGates"] = [{"name": f"fz.example/{_word(r, 12)}"}]
            yield Made("Pod", obj, HOLD, "scheduling gate")
        elif variant == 16:
            obj["spec"]["schedulerName"] = r.choice(["default-scheduler", f"fz-{_word(r, 20)}"])
            yield Made("Pod", obj, HOLD, "another scheduler's pod")
        else:
            obj["spec"]["nodeName"] = r.choice([f"fz-missing-{self._n}", "fz-base-00"])
            yield Made("Pod", obj, QUIET, "already assigned (maybe to a node that does not exist)")

    # ------------------------------------------------------------------ PDBs
    def _pdb(self) -> Iterator[Made]:
        r = self.rng
        spec: Obj = {}
        if r.random() < 0.5:
            spec["minAvailable"] = r.choice([0, 1, 2**31 - 1, "0%", "50%", "100%"])
        else:
            spec["maxUnavailable"] = r.choice([0, 1, 2**31 - 1, "0%", "100%"])
        spec["selector"] = r.choice(
            [
                {},
                {"matchLabels": {"fz-anti": "x"}},
                {"matchExpressions": [_expression(r, pod=True) for _ in range(r.randint(1, 5))]},
            ]
        )
        if r.random() < 0.3:
            spec["unhealthyPodEvictionPolicy"] = r.choice(["IfHealthyBudget", "AlwaysAllow"])
        obj = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": self._name("pdb"), "namespace": NAMESPACE},
            "spec": spec,
        }
        yield Made("PodDisruptionBudget", obj, QUIET, "budget")

    # ------------------------------------------------------------------ gangs
    def _pod_group(self) -> Iterator[Made]:
        r = self.rng
        # Its members name it in a label, whose value is at most 63 characters.
        name = self._name("pg", long=False)
        variant = r.randrange(6)
        group: Obj = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"minMember": 1},
        }
        if variant == 0:
            group["spec"]["minMember"] = r.choice([0, -1, -(2**31)])
            yield Made("PodGroup", group, LOGGED, "minMember below 1")
            return
        if variant == 1:
            res = r.choice(["cpu", "memory", "example.com/x"])
            group["spec"]["minResources"] = {
                res: r.choice([*(_HUGE_EXTENDED if "/" in res else _HUGE), "-1"])
            }
            yield Made("PodGroup", group, LOGGED, f"minResources.{res} negative or beyond 64 bits")
            return
        members = r.randint(1, 4)
        short = variant == 2
        group["spec"]["minMember"] = members + 1 if short else members
        if r.random() < 0.3:
            group["spec"]["scheduleTimeoutSeconds"] = r.choice([1, 2**31 - 1])
        yield Made("PodGroup", group, QUIET, "gang")
        for j in range(members):
            pod = _pod(f"{name[:240].rstrip('.-')}-m{j}", BATCH_SCHEDULER)
            pod["metadata"]["labels"] = {POD_GROUP_LABEL: name, **dict([GOOD_LABEL])}
            pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "10m"}}
            if short:
                yield Made("Pod", pod, HOLD, "member of a gang short of its quorum")
            else:
                yield Made("Pod", pod, BIND, "member of a gang")

    # ------------------------------------------------------------------ quotas
    def _quota(self) -> Iterator[Made]:
        r = self.rng
        name = self._name("eq")
        ns = f"fz-q-{name}"[:63].rstrip(".-").replace(".", "-")
        yield Made(
            "Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, QUIET, ""
        )
        quota: Obj = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "ElasticQuota",
            "metadata": {"name": name, "namespace": ns},
            "spec": {},
        }
        variant = r.randrange(5)
        if variant == 0:
            quota["spec"] = {"min": {"cpu": "4"}, "max": {"cpu": "1"}}
            yield Made("ElasticQuota", quota, LOGGED, "min above max")
        elif variant == 1:
            res = r.choice(["cpu", "memory"])
            quota["spec"] = {r.choice(["min", "max"]): {res: r.choice([*_HUGE, "-1", "-1Gi"])}}
            yield Made("ElasticQuota", quota, LOGGED, f"{res} negative or beyond 64 bits")
        else:
            quota["spec"] = {
                "min": {"cpu": r.choice(["0", "1", "9e15"])},
                "max": {"cpu": r.choice(["1", "9e15"])},
            }
            if float(quota["spec"]["min"]["cpu"]) > float(quota["spec"]["max"]["cpu"]):
                quota["spec"]["min"] = dict(quota["spec"]["max"])
            yield Made("ElasticQuota", quota, QUIET, "quota")
            for j in range(r.randint(0, 3)):
                pod = _pod(f"{name[:240].rstrip('.-')}-q{j}", BATCH_SCHEDULER)
                pod["metadata"]["namespace"] = ns
                pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "600m"}}
                yield Made("Pod", pod, SETTLE, "pod under a quota")


# ---------------------------------------------------------------------- shapes
def _node(name: str, capacity: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name[:63].rstrip(".-")}},
        "spec": {},
        "status": {
            "capacity": dict(capacity),
            "allocatable": dict(capacity),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str, scheduler: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "registry.example/pause"}],
        },
    }


def _container(name: str, cpu: str) -> Obj:
    return {"name": name, "image": "registry.example/pause", "resources": {"requests": {"cpu": cpu}}}


def _word(r: random.Random, n: int) -> str:
    """A DNS label of 1..n characters."""
    k = r.randint(1, n)
    return ("a" + "".join(r.choices(_ALNUM, k=k - 1)))[:k] if k > 1 else "a"


def _label_value(r: random.Random) -> str:
    """A valid label value: empty, or up to 63 of [A-Za-z0-9_.-] starting and ending alphanumeric."""
    k = r.choice([0, 1, 5, 63])
    if k == 0:
        return ""
    if k == 1:
        return r.choice(_ALNUM)
    middle = "".join(r.choices(_ALNUM + "ABCXYZ_.-", k=k - 2))
    return f"{r.choice(_ALNUM)}{middle}{r.choice(_ALNUM)}"


def _labels(r: random.Random, most: int) -> dict[str, str]:
    out = {}
    for _ in range(r.randint(1, most)):
        prefix = ".".join(_word(r, 60) for _ in range(r.randint(1, 4)))[:253].rstrip(".-")
        out[f"{prefix}/{_word(r, 63)}"] = _label_value(r)
    return out


def _annotations(r: random.Random) -> dict[str, str]:
    out = {f"fz.example/odd-{i}": r.choice(_ODD_TEXT) for i in range(r.randint(1, 8))}
    if r.random() < 0.2:
        out["fz.example/big"] = "x" * r.choice([10_000, 200_000])  # kube-apiserver allows 256 KiB in all
    return out


def _expression(r: random.Random, pod: bool = False) -> Obj:
    key = f"fz.example/{_word(r, 30)}"
    ops = ["In", "NotIn", "Exists", "DoesNotExist"] + ([] if pod else ["Gt", "Lt"])
    op = r.choice(ops)
    if op in ("Exists", "DoesNotExist"):
        return {"key": key, "operator": op}
    if op in ("Gt", "Lt"):
        return {"key": key, "operator": op, "values": [str(r.choice([0, -1, 2**63 - 1]))]}
    return {"key": key, "operator": op, "values": [_label_value(r) for _ in range(r.randint(1, 5))]}
