"""A real Kubernetes control plane for tests: etcd and kube-apiserver (kube-controller-manager and
kube-scheduler on demand) on loopback, started from a folder of binaries (``HARMONIC_KUBE_ASSETS``).

    folder = locate(default)            # AssetsMissing when there are none: skip the test
    with ControlPlane(prepare(folder), tmp) as cp:
        kube = cp.client()
        kube.namespace("demo"); kube.ready_nodes(["n1", "n2"])
"""

from harmonic.testing.kube.assets import ENV, Assets, AssetsMissing, locate, prepare
from harmonic.testing.kube.client import KubeClient, load_manifests
from harmonic.testing.kube.controlplane import ControlPlane, ControlPlaneError

__all__ = [
    "ENV",
    "Assets",
    "AssetsMissing",
    "ControlPlane",
    "ControlPlaneError",
    "KubeClient",
    "load_manifests",
    "locate",
    "prepare",
]
