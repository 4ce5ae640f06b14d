"""Translate volume_zone_test.go's TestSingleZone, TestMultiZone and TestWithBinding.

Each Go case runs PreFilter then Filter on one node; the PersistentVolume(Claim) listers of the test
become the case's ``volumes``.
"""

from __future__ import annotations

from k8s import SUCCESS, Obj, node, unresolvable, write

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = unresolvable("node(s) had no available volume zone")
SOURCE = "pkg/scheduler/framework/plugins/volumezone/volume_zone_test.go"


def pv(name: str, labels: dict[str, str]) -> Obj:
    return {"metadata": {"name": name, "labels": labels}, "spec": {}}


def pvc(name: str, volume: str = "", sc: str | None = None) -> Obj:
    spec: Obj = {}
    if volume:
        spec["volumeName"] = volume
    if sc is not None:
        spec["storageClassName"] = sc
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


def pod_with(claim: str | None) -> Obj:
    spec: Obj = {"containers": [{"name": "pause", "image": "pause"}]}
    if claim:
        spec["volumes"] = [{"name": claim, "persistentVolumeClaim": {"claimName": claim}}]
    return {"metadata": {"name": "pod_1", "namespace": "default"}, "spec": spec}


def case(name: str, claim: str | None, labels: dict[str, str], volumes: Obj, want: Obj = SUCCESS) -> Obj:
    return {
        "name": name,
        "kind": "filter",
        "pod": pod_with(claim),
        "nodes": [node("host1", labels=labels)],
        "volumes": volumes,
        "expected": {"host1": want},
    }


single = {
    "pvs": [
        pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
        pv("Vol_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}),
        pv("Vol_3", {BETA_REGION: "us-west1"}),
        pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
        pv("Vol_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}),
        pv("Vol_Stable_3", {ZONE: "us-west1-a", REGION: "us-west1-a"}),
    ],
    "pvcs": [
        pvc("PVC_1", "Vol_1"),
        pvc("PVC_2", "Vol_2"),
        pvc("PVC_3", "Vol_3"),
        pvc("PVC_4", "Vol_not_exist"),
        pvc("PVC_Stable_1", "Vol_Stable_1"),
        pvc("PVC_Stable_2", "Vol_Stable_2"),
        pvc("PVC_Stable_3", "Vol_Stable_3"),
    ],
}
useless = {"uselessLabel": "none"}
cases = [
    case("single: pod without volume", None, {BETA_ZONE: "us-west1-a"}, single),
    case("single: node without labels", "PVC_1", {}, single),
    case("single: beta zone label matched", "PVC_1", {BETA_ZONE: "us-west1-a", **useless}, single),
    case("single: beta region label matched", "PVC_2", {BETA_REGION: "us-west1", **useless}, single),
    case(
        "single: beta region label doesn't match",
        "PVC_2",
        {BETA_REGION: "no_us-west1", **useless},
        single,
        CONFLICT,
    ),
    case(
        "single: beta zone label doesn't match",
        "PVC_1",
        {BETA_ZONE: "no_us-west1-a", **useless},
        single,
        CONFLICT,
    ),
    case("single: zone label matched", "PVC_Stable_1", {ZONE: "us-west1-a", **useless}, single),
    case("single: region label matched", "PVC_Stable_2", {REGION: "us-west1", **useless}, single),
    case(
        "single: region label doesn't match",
        "PVC_Stable_2",
        {REGION: "no_us-west1", **useless},
        single,
        CONFLICT,
    ),
    case(
        "single: zone label doesn't match",
        "PVC_Stable_1",
        {ZONE: "no_us-west1-a", **useless},
        single,
        CONFLICT,
    ),
    case(
        "single: pv with zone and region, node with only zone",
        "PVC_Stable_3",
        {ZONE: "us-west1-a"},
        single,
        CONFLICT,
    ),
    case(
        "single: pv with zone,node with beta zone",
        "PVC_Stable_1",
        {BETA_ZONE: "us-west1-a"},
        single,
        CONFLICT,
    ),
    case("single: pv with beta label,node with ga label, matched", "PVC_1", {ZONE: "us-west1-a"}, single),
    case(
        "single: pv with beta label,node with ga label, don't match",
        "PVC_1",
        {ZONE: "us-west1-b"},
        single,
        CONFLICT,
    ),
]

multi = {
    "pvs": [
        pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
        pv("Vol_2", {BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
        pv("Vol_3", {BETA_ZONE: "us-west1-c__us-west1-a"}),
        pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
        pv("Vol_Stable_2", {ZONE: "us-west1-c__us-west1-a"}),
    ],
    "pvcs": [
        pvc("PVC_1", "Vol_1"),
        pvc("PVC_2", "Vol_2"),
        pvc("PVC_3", "Vol_3"),
        pvc("PVC_4", "Vol_not_exist"),
        pvc("PVC_Stable_1", "Vol_Stable_1"),
        pvc("PVC_Stable_2", "Vol_Stable_2"),
    ],
}
cases += [
    case("multi: node without labels", "PVC_3", {}, multi),
    case("multi: beta zone label matched", "PVC_3", {BETA_ZONE: "us-west1-a", **useless}, multi),
    case(
        "multi: beta zone label doesn't match", "PVC_1", {BETA_ZONE: "us-west1-b", **useless}, multi, CONFLICT
    ),
    case("multi: zone label matched", "PVC_Stable_2", {ZONE: "us-west1-a", **useless}, multi),
    case("multi: zone label doesn't match", "PVC_Stable_1", {ZONE: "us-west1-b", **useless}, multi, CONFLICT),
]

binding = {
    "storageClasses": [
        {"metadata": {"name": "Class_Immediate"}},
        {"metadata": {"name": "Class_Wait"}, "volumeBindingMode": "WaitForFirstConsumer"},
    ],
    "pvs": [pv("Vol_1", {BETA_ZONE: "us-west1-a"})],
    "pvcs": [
        pvc("PVC_1", "Vol_1"),
        pvc("PVC_NoSC", sc="Class_0"),
        pvc("PVC_EmptySC"),
        pvc("PVC_WaitSC", sc="Class_Wait"),
        pvc("PVC_ImmediateSC", sc="Class_Immediate"),
    ],
}
test_node = {BETA_ZONE: "us-west1-a", **useless}
cases += [
    case("binding: label zone failure domain matched", "PVC_1", test_node, binding),
    case(
        "binding: unbound volume empty storage class",
        "PVC_EmptySC",
        test_node,
        binding,
        unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
    ),
    case(
        "binding: unbound volume immediate binding mode",
        "PVC_ImmediateSC",
        test_node,
        binding,
        unresolvable('VolumeBindingMode not set for StorageClass "Class_Immediate"'),
    ),
    case("binding: unbound volume wait binding mode", "PVC_WaitSC", test_node, binding),
]
for c in cases:
    if c["name"] in ("single: pod without volume", "binding: unbound volume wait binding mode"):
        c["expectedPreFilter"] = {"code": "Skip", "reasons": [], "nodeNames": None}

skipped = [
    {
        "name": "TestWithBinding/unbound volume no storage class",
        "why": 'the expected message `storageclasses.storage.k8s.io "Class_0" not found` comes from the test\'s '
        "fake lister; the informer listers kube-scheduler runs with name the resource in the singular "
        '(`storageclass.storage.k8s.io "Class_0" not found`), which Harmonic prints; covered in tests/plugins',
    },
    {
        "name": "TestIsSchedulableAfter* (queueing hints)",
        "why": "not filter or score tables; translated into tests/plugins/test_volumezone.py",
    },
]
write("VolumeZone", SOURCE, cases, skipped)
