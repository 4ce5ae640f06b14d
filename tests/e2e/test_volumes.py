"""The volume plugins through ``harmonic run`` on a real control plane, side by side with kube-scheduler.

Each scenario is built twice on the same nodes, in a namespace of its own per scheduler (storage
objects named apart): first for the real kube-scheduler, then for Harmonic installed from deploy/ and
running as its ServiceAccount. kube-controller-manager's PV controller binds the claims, and a test
thread plays the external provisioner of WaitForFirstConsumer classes. Every scenario checks what its
construction implies (the node a local volume pins, the zone of a zonal volume) and that both
schedulers found the same nodes feasible.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import pytest

from harmonic.testing.kube import ControlPlane, KubeClient

from .conftest import delete_if_present, delete_pods
from .install import HarmonicInstall, wait_for
from .volumes import ZONE, FakeProvisioner, pod_with, pv, pvc, storage_class

SETTLE_SECONDS = 60


@dataclass(frozen=True)
class Outcome:
    node: str | None  # None: refused
    message: str  # the PodScheduled=False message when refused


@dataclass
class Run:
    """One scheduler's pass over a scenario."""

    kube: KubeClient
    namespace: str
    scheduler: str
    tag: str  # "k" or "h": keeps cluster-scoped objects of the two passes apart
    #: When the scenario's pods are settled (``outcomes``); a scenario expecting refusals sets it.
    done: Callable[[dict[str, Outcome]], bool] | None = None

    @property
    def pods_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"

    def claim(self, name: str, **kwargs: Any) -> dict[str, Any]:
        created: dict[str, Any] = self.kube.create(
            f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims", pvc(name, **kwargs)
        )
        return created

    def bound_claim(self, name: str, volume: dict[str, Any], **kwargs: Any) -> None:
        """A PV and a class-less claim the PV controller binds (waited for: a pod created before would
        only test the controller's speed)."""
        self.kube.create("/api/v1/persistentvolumes", volume)
        self.claim(name, **kwargs)
        path = f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims/{name}"
        wait_for(
            lambda: self.kube.get(path).get("status", {}).get("phase") == "Bound", 30, f"claim {name} bound"
        )

    def pod(self, name: str, *claims: str, **kwargs: Any) -> None:
        self.kube.create(self.pods_path, pod_with(name, self.scheduler, *claims, **kwargs))

    def outcomes(
        self, names: list[str], done: Callable[[dict[str, Outcome]], bool] | None = None
    ) -> dict[str, Outcome]:
        """Where each pod went (``None``: refused, or still pending), once ``done`` holds (default: all
        bound) or after ``SETTLE_SECONDS``. A scheduler may refuse a pod before its informers have the
        storage objects just created and bind it on their events, so a refusal alone ends no wait."""
        done = done or (lambda out: all(o.node for o in out.values()))
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            pods = {p["metadata"]["name"]: p for p in self.kube.items(self.pods_path)}
            out = {n: _outcome(pods[n]) for n in names}
            if done(out) or time.monotonic() > deadline:
                return out
            time.sleep(0.2)


def _outcome(pod: dict[str, Any]) -> Outcome:
    if pod["spec"].get("nodeName"):
        return Outcome(pod["spec"]["nodeName"], "")
    conditions = (pod.get("status") or {}).get("conditions") or []
    cond = next((c for c in conditions if c["type"] == "PodScheduled"), None)
    if cond is not None and cond["status"] == "False" and cond.get("reason") == "Unschedulable":
        return Outcome(None, diagnosis(cond.get("message", "")))
    return Outcome(None, "pending")


def refused(out: dict[str, Outcome], *names: str) -> bool:
    """Every other pod bound, and ``names`` refused by the filters (not merely pending)."""
    return all((o.node is None and o.message != "pending") == (n in names) for n, o in out.items())


Scenario = Callable[[Run], list[str]]


@dataclass
class SideBySide:
    """``side_by_side(scenario)``: the scenario's outcomes under kube-scheduler, then under Harmonic
    (``{"kube-scheduler": ..., "harmonic": ...}``), the first pass's pods deleted before the second;
    ``namespaces[who]`` is where each pass ran."""

    kube: KubeClient
    kube_scheduler: str
    harmonic: HarmonicInstall
    make_namespace: Callable[[str], str]
    namespaces: dict[str, str] = field(default_factory=dict)
    made_pvs: list[str] = field(default_factory=list)

    def __call__(self, scenario: Scenario) -> dict[str, dict[str, Outcome]]:
        out = {}
        harmonic = self.harmonic.config["profiles"][0]["schedulerName"]
        for who, scheduler, tag in (
            ("kube-scheduler", self.kube_scheduler, "k"),
            ("harmonic", harmonic, "h"),
        ):
            r = Run(self.kube, self.make_namespace(tag), scheduler, tag)
            self.namespaces[who] = r.namespace
            before = self._pvs()
            with self.harmonic.running() if who == "harmonic" else nullcontext():
                names = scenario(r)
                out[who] = r.outcomes(names, r.done)
            self.made_pvs.extend(self._pvs() - before)
            delete_pods(self.kube, r.namespace)
        return out

    def _pvs(self) -> set[str]:
        return {p["metadata"]["name"] for p in self.kube.items("/api/v1/persistentvolumes")}


@pytest.fixture
def side_by_side(
    kube: KubeClient,
    controllers: ControlPlane,
    kube_scheduler: str,
    harmonic_install: HarmonicInstall,
    make_namespace: Callable[[str], str],
) -> Iterator[SideBySide]:
    sbs = SideBySide(kube, kube_scheduler, harmonic_install, make_namespace)
    yield sbs
    for name in sbs.made_pvs:
        delete_if_present(kube, f"/api/v1/persistentvolumes/{name}")


def diagnosis(message: str) -> str:
    """The filter plugins' part of a FailedScheduling message ("0/2 nodes are available: 2 node(s) ...");
    what follows is PostFilter's (kube-scheduler's DynamicResources adds "no new claims to deallocate",
    Harmonic has no DRA plugin)."""
    return message.split(". ")[0]


def nodes_of(outcomes: dict[str, Outcome]) -> dict[str, str | None]:
    return {pod: o.node for pod, o in outcomes.items()}


# ----------------------------------------------------------------------------- VolumeBinding
def test_bound_claim_on_a_local_volume(side_by_side, nodes):
    """The issue's bug: a pod with a bound claim was refused ('persistentvolumeclaim "claim1" not
    found') by Harmonic, while kube-scheduler bound it."""
    names = ["vb-bound-0", "vb-bound-1", "vb-bound-2"]
    nodes(names)

    def scenario(r: Run) -> list[str]:
        r.bound_claim("claim1", pv(f"vb-bound-{r.tag}", node=names[1]))
        r.pod("p", "claim1")
        return ["p"]

    out = side_by_side(scenario)
    assert nodes_of(out["kube-scheduler"]) == {"p": names[1]}  # the local volume's node
    assert nodes_of(out["harmonic"]) == nodes_of(out["kube-scheduler"])


def test_wait_for_first_consumer_picks_a_node_with_a_static_volume(side_by_side, nodes, kube):
    names = ["vb-static-0", "vb-static-1", "vb-static-2"]
    nodes(names)
    with_volume = {names[0], names[2]}

    def scenario(r: Run) -> list[str]:
        sc = f"e2e-local-{r.tag}"
        kube.create(
            "/apis/storage.k8s.io/v1/storageclasses", storage_class(sc, "kubernetes.io/no-provisioner")
        )
        for n in sorted(with_volume):
            kube.create("/api/v1/persistentvolumes", pv(f"{n}-{r.tag}", storage_class=sc, node=n))
        r.claim("data", storage_class=sc)
        r.pod("p", "data")
        return ["p"]

    try:
        out = side_by_side(scenario)
    finally:
        for tag in "kh":
            delete_if_present(kube, f"/apis/storage.k8s.io/v1/storageclasses/e2e-local-{tag}")
    for who, outcome in out.items():
        node = outcome["p"].node
        assert node in with_volume, who
        claim = kube.get(f"/api/v1/namespaces/{side_by_side.namespaces[who]}/persistentvolumeclaims/data")
        # Bound (by kube-controller-manager) to the volume on the pod's node, which PreBind pre-bound.
        assert claim["status"]["phase"] == "Bound"
        assert claim["spec"]["volumeName"] == f"{node}-{'k' if who == 'kube-scheduler' else 'h'}", who


@pytest.mark.parametrize("volume", ["claim", "ephemeral"])
def test_wait_for_first_consumer_with_a_provisioner(side_by_side, nodes, kube, volume):
    """Dynamic provisioning: PreBind writes the selected-node annotation; the provisioner (this test)
    creates a volume there; the PV controller binds it; then the pod is bound, to that node. A generic
    ephemeral volume goes the same way once kube-controller-manager has created the pod's claim."""
    names = ["vb-dyn-0", "vb-dyn-1"]
    nodes(names)
    classes = {tag: f"e2e-dynamic-{volume}-{tag}" for tag in "kh"}
    provisioners = [FakeProvisioner(kube, sc) for sc in classes.values()]

    def scenario(r: Run) -> list[str]:
        sc = classes[r.tag]
        kube.create("/apis/storage.k8s.io/v1/storageclasses", storage_class(sc, "e2e.harmonic.test/fake"))
        if volume == "claim":
            r.claim("data", storage_class=sc)
            r.pod("p", "data")
        else:
            spec = {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": sc,
                "resources": {"requests": {"storage": "1Gi"}},
            }
            r.pod("p", ephemeral=spec)
        return ["p"]

    try:
        with provisioners[0], provisioners[1]:
            out = side_by_side(scenario)
    finally:
        for sc in classes.values():
            delete_if_present(kube, f"/apis/storage.k8s.io/v1/storageclasses/{sc}")
    claim = "data" if volume == "claim" else "p-scratch"
    for (who, outcome), prov in zip(out.items(), provisioners, strict=True):
        assert outcome["p"].node in names, who
        (selected,) = prov.provisioned.values()
        assert prov.provisioned == {f"{side_by_side.namespaces[who]}/{claim}": outcome["p"].node}, who
        assert selected == outcome["p"].node


# ----------------------------------------------------------------------------- VolumeRestrictions
def test_read_write_once_pod_claim_admits_one_pod(side_by_side, nodes):
    names = ["vr-0", "vr-1"]
    nodes(names)

    def scenario(r: Run) -> list[str]:
        modes = ("ReadWriteOncePod",)
        r.bound_claim("only-one", pv(f"vr-{r.tag}", modes=modes), modes=modes)
        r.pod("first", "only-one")
        r.outcomes(["first"])
        r.pod("second", "only-one")
        r.done = lambda out: refused(out, "second")
        return ["first", "second"]

    out = side_by_side(scenario)
    for who, outcome in out.items():
        assert outcome["first"].node in names, who
        assert outcome["second"].node is None, who
    assert out["harmonic"]["second"].message == out["kube-scheduler"]["second"].message


# ----------------------------------------------------------------------------- NodeVolumeLimits
def test_csi_attach_limit_per_node(side_by_side, nodes, kube):
    names = ["nvl-0", "nvl-1"]
    nodes(names)
    driver = "csi.e2e.harmonic.test"
    kube.create(
        "/apis/storage.k8s.io/v1/csidrivers", {"metadata": {"name": driver}, "spec": {"attachRequired": True}}
    )
    for n in names:
        drivers = [{"name": driver, "nodeID": n, "topologyKeys": None, "allocatable": {"count": 1}}]
        kube.create(
            "/apis/storage.k8s.io/v1/csinodes", {"metadata": {"name": n}, "spec": {"drivers": drivers}}
        )

    def scenario(r: Run) -> list[str]:
        pods = [f"p{i}" for i in range(3)]
        for p in pods:
            r.bound_claim(f"c-{p}", pv(f"nvl-{r.tag}-{p}", csi_driver=driver))
        for p in pods:
            r.pod(p, f"c-{p}")
        r.done = lambda out: (
            sum(o.node is None and o.message != "pending" for o in out.values()) == 1
            and sum(o.node is not None for o in out.values()) == 2
        )
        return pods

    try:
        out = side_by_side(scenario)
    finally:
        delete_if_present(kube, f"/apis/storage.k8s.io/v1/csidrivers/{driver}")
        for n in names:
            delete_if_present(kube, f"/apis/storage.k8s.io/v1/csinodes/{n}")
    for who, outcome in out.items():
        placed = sorted(o.node for o in outcome.values() if o.node is not None)
        assert placed == sorted(names), who  # one attachable volume per node: one pod each
    refused = {who: [o.message for o in outcome.values() if o.node is None] for who, outcome in out.items()}
    assert (
        refused["harmonic"]
        == refused["kube-scheduler"]
        == ["0/2 nodes are available: 2 node(s) exceed max volume count"]
    )


# ----------------------------------------------------------------------------- VolumeZone
def test_zonal_volume_pins_its_zone(side_by_side, nodes):
    zones = {"vz-a": "zone-a", "vz-b": "zone-b", "vz-b2": "zone-b"}
    for n, z in zones.items():
        nodes([n], labels={ZONE: z})

    def scenario(r: Run) -> list[str]:
        r.bound_claim("zonal", pv(f"vz-{r.tag}", labels={ZONE: "zone-a"}))
        r.pod("p", "zonal")
        return ["p"]

    out = side_by_side(scenario)
    assert nodes_of(out["kube-scheduler"]) == {"p": "vz-a"}
    assert nodes_of(out["harmonic"]) == {"p": "vz-a"}
