"""Table-driven tests of the volume plugins (VolumeRestrictions, NodeVolumeLimits, VolumeBinding,
VolumeZone) through ``harmonic.conformance.evaluate``, plus args, hints and parse errors."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from harmonic.api.errors import ObjectError
from harmonic.api.pod import parse_pod
from harmonic.api.storage import parse_pv, parse_pvc, parse_storage_class
from harmonic.conformance import evaluate, evaluate_pre_filter
from harmonic.framework.events import Hint
from harmonic.plugins.volumebinding import VolumeBindingArgs
from harmonic.plugins.volumezone import _after_class_added, _after_pv_change
from tests.plugins.storage import WFFC, claim_volume, csi_node, node, pod_with, pv, pvc, storage_class

OK = {"code": "Success", "reasons": []}
DISK = {"code": "Unschedulable", "reasons": ["node(s) had no available disk"]}
RWOP = {
    "code": "Unschedulable",
    "reasons": [
        # kube-scheduler 1.36's message, as the real binary reports it (tests/e2e/test_volumes.py)
        "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
    ],
}
MAX = {"code": "Unschedulable", "reasons": ["node(s) exceed max volume count"]}


def unresolvable(*reasons: str) -> dict[str, Any]:
    return {"code": "UnschedulableAndUnresolvable", "reasons": list(reasons)}


def run(
    plugin: str, pod: dict, nodes: list[dict], volumes: dict | None = None, existing=(), args=None
) -> dict:
    case = {"plugin": plugin, "kind": "filter", "pod": pod, "nodes": nodes, "existingPods": list(existing)}
    if volumes:
        case["volumes"] = volumes
    if args:
        case["args"] = args
    return evaluate(case)


def gce(pd: str, ro: bool = False) -> dict:
    return {"name": pd, "gcePersistentDisk": {"pdName": pd, "readOnly": ro}}


def ebs(vid: str) -> dict:
    return {"name": vid, "awsElasticBlockStore": {"volumeID": vid}}


def rbd(mons: list[str], image: str, ro: bool = False) -> dict:
    return {"name": image, "rbd": {"monitors": mons, "pool": "p", "image": image, "readOnly": ro}}


def iscsi(iqn: str, ro: bool = False) -> dict:
    return {"name": iqn, "iscsi": {"targetPortal": "t", "iqn": iqn, "lun": 0, "readOnly": ro}}


# ----------------------------------------------------------------------------- VolumeRestrictions
@pytest.mark.parametrize(
    ("mine", "theirs", "want"),
    [
        ([gce("foo")], [gce("foo")], DISK),
        ([gce("foo", ro=True)], [gce("foo", ro=True)], OK),
        ([gce("foo", ro=True)], [gce("foo")], DISK),
        ([gce("foo")], [gce("bar")], OK),
        ([ebs("foo")], [ebs("foo")], DISK),
        ([ebs("foo")], [ebs("bar")], OK),
        ([rbd(["a", "b"], "img")], [rbd(["b", "c"], "img")], DISK),
        ([rbd(["a"], "img")], [rbd(["c"], "img")], OK),
        ([rbd(["a"], "img", ro=True)], [rbd(["a"], "img", ro=True)], OK),
        ([iscsi("iqn.1")], [iscsi("iqn.1")], DISK),
        ([iscsi("iqn.1", ro=True)], [iscsi("iqn.1", ro=True)], OK),
        ([iscsi("iqn.1")], [iscsi("iqn.2")], OK),
    ],
)
def test_volume_restrictions_disk_conflicts(mine, theirs, want):
    got = run(
        "VolumeRestrictions",
        pod_with("p", mine),
        [node("n1"), node("n2")],
        existing=[pod_with("e", theirs, node="n1")],
    )
    assert got == {"n1": want, "n2": OK}


def test_volume_restrictions_read_write_once_pod():
    vols = {"pvcs": [pvc("c", modes=("ReadWriteOncePod",), volume="v", bound=True)]}
    other = pod_with("e", [claim_volume("c")], node="n1")
    got = run(
        "VolumeRestrictions", pod_with("p", [claim_volume("c")]), [node("n1"), node("n2")], vols, [other]
    )
    assert got == {"n1": RWOP, "n2": RWOP}
    # Nobody else uses it: PreFilter skips.
    case = {
        "plugin": "VolumeRestrictions",
        "kind": "filter",
        "pod": pod_with("p", [claim_volume("c")]),
        "nodes": [node("n1")],
        "volumes": vols,
    }
    assert evaluate_pre_filter(case)["code"] == "Skip"


def test_volume_restrictions_missing_claim_and_no_volumes():
    got = run("VolumeRestrictions", pod_with("p", [claim_volume("gone")]), [node("n1")])
    assert got == {"n1": unresolvable('persistentvolumeclaim "gone" not found')}
    case = {"plugin": "VolumeRestrictions", "kind": "filter", "pod": pod_with("p", []), "nodes": [node("n1")]}
    assert evaluate_pre_filter(case)["code"] == "Skip"


# ----------------------------------------------------------------------------- NodeVolumeLimits
def _csi_objects(n: int, limit: int | None = 2) -> dict:
    return {
        "pvcs": [pvc(f"c{i}", volume=f"v{i}", bound=True) for i in range(n)],
        "pvs": [
            pv(f"v{i}", csi=("ebs.csi.aws.com", f"h{i}"), claim=("default", f"c{i}"), phase="Bound")
            for i in range(n)
        ],
        "csiNodes": [csi_node("n1", {"ebs.csi.aws.com": limit}), csi_node("n2", {"ebs.csi.aws.com": 10})],
    }


@pytest.mark.parametrize(
    ("existing_claims", "new_claims", "limit", "want_n1"),
    [
        (["c0"], ["c1"], 2, OK),
        (["c0", "c1"], ["c2"], 2, MAX),
        (["c0", "c1"], ["c1"], 2, OK),  # already attached there: counts once
        (["c0"], ["c1", "c2"], 2, MAX),
        (["c0", "c1"], ["c2"], None, OK),  # the driver reports no limit
        ([], ["c0", "c1", "c2"], 2, MAX),
    ],
)
def test_node_volume_limits(existing_claims, new_claims, limit, want_n1):
    vols = _csi_objects(3, limit)
    existing = (
        [pod_with("e", [claim_volume(c) for c in existing_claims], node="n1")] if existing_claims else []
    )
    got = run(
        "NodeVolumeLimits",
        pod_with("p", [claim_volume(c) for c in new_claims]),
        [node("n1"), node("n2")],
        vols,
        existing,
    )
    assert got == {"n1": want_n1, "n2": OK}


def test_node_volume_limits_unbound_claims_count_against_their_provisioner():
    vols = {
        "storageClasses": [storage_class("sc", WFFC, provisioner="ebs.csi.aws.com")],
        "pvcs": [pvc("u1", sc="sc"), pvc("u2", sc="sc")],
        "csiNodes": [csi_node("n1", {"ebs.csi.aws.com": 1})],
    }
    got = run(
        "NodeVolumeLimits",
        pod_with("p", [claim_volume("u1"), claim_volume("u2")]),
        [node("n1"), node("n0")],
        vols,
    )
    assert got == {"n1": MAX, "n0": OK}  # n0 has no CSINode: no limit


def test_node_volume_limits_in_tree_volumes_migrate_only_with_a_csinode():
    vols = {"csiNodes": [csi_node("n1", {"ebs.csi.aws.com": 1})]}
    existing = [pod_with("e", [ebs("vol-a")], node="n1")]
    got = run("NodeVolumeLimits", pod_with("p", [ebs("vol-b")]), [node("n1"), node("n2")], vols, existing)
    assert got == {"n1": MAX, "n2": OK}


def test_node_volume_limits_volume_attachments_count():
    vols = _csi_objects(2, 1)
    vols["volumeAttachments"] = [
        {
            "metadata": {"name": "va"},
            "spec": {
                "attacher": "ebs.csi.aws.com",
                "nodeName": "n1",
                "source": {"persistentVolumeName": "v0"},
            },
        }
    ]
    got = run("NodeVolumeLimits", pod_with("p", [claim_volume("c1")]), [node("n1"), node("n2")], vols)
    assert got == {"n1": MAX, "n2": OK}


def test_node_volume_limits_missing_claim_is_unresolvable():
    got = run("NodeVolumeLimits", pod_with("p", [claim_volume("gone")]), [node("n1")])
    assert got == {"n1": unresolvable('looking up PVC default/gone: persistentvolumeclaim "gone" not found')}


# ----------------------------------------------------------------------------- VolumeBinding
def test_volume_binding_prefilter_rejections():
    cases = [
        ({"pvcs": [pvc("c", sc="")]}, unresolvable("pod has unbound immediate PersistentVolumeClaims")),
        ({}, unresolvable('persistentvolumeclaim "c" not found')),
        (
            {"pvcs": [pvc("c", sc="s", volume="v", phase="Lost")]},
            unresolvable('persistentvolumeclaim "c" bound to non-existent persistentvolume "v"'),
        ),
    ]
    for vols, want in cases:
        assert run("VolumeBinding", pod_with("p", [claim_volume("c")]), [node("n1")], vols) == {"n1": want}


def test_volume_binding_bound_claims():
    vols = {
        "pvcs": [pvc("c", volume="v", bound=True), pvc("gone", volume="nope", bound=True)],
        "pvs": [pv("v", claim=("default", "c"), phase="Bound", affinity={"zone": ["z1"]})],
    }
    nodes = [node("n1", {"zone": "z1"}), node("n2", {"zone": "z2"})]
    got = run("VolumeBinding", pod_with("p", [claim_volume("c")]), nodes, vols)
    assert got == {"n1": OK, "n2": unresolvable("node(s) had volume node affinity conflict")}
    got = run("VolumeBinding", pod_with("p", [claim_volume("gone")]), nodes, vols)
    assert got == {n: unresolvable("pvc(s) bound to non-existent pv(s)") for n in ("n1", "n2")}


def test_volume_binding_local_pv_narrows_nodes():
    vols = {
        "pvcs": [pvc("c", volume="v", bound=True)],
        "pvs": [pv("v", claim=("default", "c"), phase="Bound", affinity={"kubernetes.io/hostname": ["n2"]})],
    }
    case = {
        "plugin": "VolumeBinding",
        "kind": "filter",
        "pod": pod_with("p", [claim_volume("c")]),
        "nodes": [node("n1"), node("n2")],
        "volumes": vols,
    }
    assert evaluate_pre_filter(case)["nodeNames"] == ["n2"]


@pytest.mark.parametrize(
    ("pvs", "klass", "want"),
    [
        # A static PV on n1 only; the class cannot provision.
        (
            [pv("a", sc="local", affinity={"kubernetes.io/hostname": ["n1"]})],
            storage_class("local"),
            {"n1": OK, "n2": unresolvable("node(s) didn't find available persistent volumes to bind")},
        ),
        # Too small, wrong class, wrong access mode, already claimed: nothing fits.
        (
            [
                pv("a", sc="local", size="1Mi"),
                pv("b", sc="other"),
                pv("c", sc="local", modes=("ReadOnlyMany",)),
                pv("d", sc="local", claim=("default", "x")),
            ],
            storage_class("local"),
            {
                n: unresolvable("node(s) didn't find available persistent volumes to bind")
                for n in ("n1", "n2")
            },
        ),
        # Dynamic provisioning restricted to zone z2.
        (
            [],
            storage_class("local", provisioner="csi.example.com", topologies=[{"zone": ["z2"]}]),
            {"n1": unresolvable("node(s) didn't find available persistent volumes to bind"), "n2": OK},
        ),
    ],
)
def test_volume_binding_wait_for_first_consumer(pvs, klass, want):
    vols = {"pvcs": [pvc("c", sc="local")], "pvs": pvs, "storageClasses": [klass]}
    nodes = [node("n1", {"zone": "z1"}), node("n2", {"zone": "z2"})]
    assert run("VolumeBinding", pod_with("p", [claim_volume("c")]), nodes, vols) == want


def test_volume_binding_storage_capacity():
    vols = {
        "pvcs": [pvc("c", sc="fast", size="10Gi")],
        "storageClasses": [storage_class("fast", provisioner="csi.example.com")],
        "csiDrivers": [{"metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": True}}],
        "csiStorageCapacities": [
            {
                "metadata": {"name": "cap1", "namespace": "kube-system"},
                "storageClassName": "fast",
                "capacity": "100Gi",
                "nodeTopology": {"matchLabels": {"zone": "z1"}},
            },
            {
                "metadata": {"name": "cap2", "namespace": "kube-system"},
                "storageClassName": "fast",
                "capacity": "1Gi",
                "nodeTopology": {"matchLabels": {"zone": "z2"}},
            },
        ],
    }
    nodes = [node("n1", {"zone": "z1"}), node("n2", {"zone": "z2"})]
    got = run("VolumeBinding", pod_with("p", [claim_volume("c")]), nodes, vols)
    assert got == {"n1": OK, "n2": unresolvable("node(s) did not have enough free storage")}


def test_volume_binding_score_with_shape():
    vols = {
        "pvcs": [pvc("c", sc="local", size="50Gi")],
        "storageClasses": [storage_class("local")],
        "pvs": [
            pv("a", sc="local", size="100Gi", affinity={"kubernetes.io/hostname": ["n1"]}),
            pv("b", sc="local", size="200Gi", affinity={"kubernetes.io/hostname": ["n2"]}),
        ],
    }
    case = {
        "plugin": "VolumeBinding",
        "kind": "score",
        "pod": pod_with("p", [claim_volume("c")]),
        "nodes": [node("n1"), node("n2")],
        "volumes": vols,
        "args": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
    }
    # Scoring needs Filter's per-node bindings: run it through a filter first.
    import numpy as np

    from harmonic.conformance import build
    from harmonic.framework.cycle_state import CycleState

    plugin, pod, snap, names = build(case)
    state = CycleState()
    plugin.pre_filter(state, pod, snap)
    slots = np.asarray([snap.slot(n) for n in names])
    assert plugin.filter(state, pod, snap, slots) is None
    assert plugin.pre_score(state, pod, snap, slots) is None
    assert plugin.score(state, pod, snap, slots).tolist() == [50, 25]  # 50% and 25% utilisation
    assert evaluate({**case, "args": {}})["n1"] == 0  # no shape: upstream's default, no scoring


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"bindTimeoutSeconds": -1}, "invalid BindTimeoutSeconds, should not be a negative value"),
        (
            {"shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]},
            "sorted in increasing order",
        ),
        ({"shape": [{"utilization": 101, "score": 1}]}, r"not in valid range \[0, 100\]"),
        ({"shape": [{"utilization": 1, "score": 11}]}, r"not in valid range \[0, 10\]"),
    ],
)
def test_volume_binding_args_validation(args, message):
    with pytest.raises(ValidationError, match=message):
        VolumeBindingArgs.model_validate(args)
    assert VolumeBindingArgs().bind_timeout_seconds == 600 and VolumeBindingArgs().shape == ()


# ----------------------------------------------------------------------------- VolumeZone hints
def test_volume_zone_queueing_hints():
    pod = parse_pod(pod_with("p", [claim_volume("c")]))
    assert _after_class_added(pod, None, parse_storage_class(storage_class("s", None))) == Hint.SKIP
    assert _after_class_added(pod, None, parse_storage_class(storage_class("s", WFFC))) == Hint.QUEUE
    zone = "failure-domain.beta.kubernetes.io/zone"
    a = parse_pv(pv("v", labels={zone: "us-west1-a"}))
    b = parse_pv(pv("v", labels={zone: "us-west1-b"}))
    assert _after_pv_change(pod, None, a) == Hint.QUEUE
    assert _after_pv_change(pod, a, b) == Hint.QUEUE
    assert _after_pv_change(pod, a, parse_pv(pv("v", labels={zone: "us-west1-a", "x": "y"}))) == Hint.SKIP


def test_volume_zone_missing_storage_class_uses_the_informer_message():
    vols = {"pvcs": [pvc("c", sc="Class_0", size=None)]}
    got = run("VolumeZone", pod_with("p", [claim_volume("c")]), [node("n1")], vols)
    assert got == {"n1": unresolvable('storageclass.storage.k8s.io "Class_0" not found')}


# ----------------------------------------------------------------------------- parse errors
@pytest.mark.parametrize(
    ("parse", "raw", "where"),
    [
        (
            parse_pvc,
            {"metadata": {"name": "c"}, "spec": {"resources": {"requests": {"storage": "lots"}}}},
            "PersistentVolumeClaim default/c: spec.resources.requests.storage",
        ),
        (
            parse_pv,
            {"metadata": {"name": "v"}, "spec": {"accessModes": "RWO"}},
            "PersistentVolume v: spec.accessModes",
        ),
        (
            parse_storage_class,
            {"metadata": {"name": "s"}, "volumeBindingMode": "Later"},
            "StorageClass s: volumeBindingMode",
        ),
        (parse_pvc, {"metadata": {}}, "PersistentVolumeClaim: metadata.name"),
    ],
)
def test_malformed_storage_objects_name_object_and_field(parse, raw, where):
    with pytest.raises(ObjectError) as e:
        parse(raw)
    assert str(e.value).startswith(where)
