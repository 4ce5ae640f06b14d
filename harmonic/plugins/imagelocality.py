"""ImageLocality — Score.

Favours nodes that already hold the pod's container images (init containers included). Each image
present on a node contributes its size scaled by its spread (nodes having it / all nodes, to avoid
piling pods onto the few nodes with an image); the sum is clamped to [23 MiB, 1000 MiB x number of
containers] and mapped linearly onto 0..100. Image names without a tag get ``:latest``. No args.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from harmonic.api.pod import Pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import MAX_NODE_SCORE, ScorePlugin
from harmonic.framework.snapshot import Snapshot

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """The image name with the default ``:latest`` tag when it has none (a ':' only in the registry
    host's port does not count as a tag)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def _containers(pod: Pod) -> list[str]:
    """Images of init containers then containers, as upstream walks them (empty names kept)."""
    spec = pod.spec
    return [str(c.get("image") or "") for c in (*(spec.get("initContainers") or ()), *spec["containers"])]


class ImageLocality(ScorePlugin):
    NAME: ClassVar[str] = "ImageLocality"

    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        images = _containers(pod)
        total_nodes = snap.num_nodes
        sums = np.zeros(len(slots), dtype=np.int64)
        if total_nodes:
            for image in images:
                sizes, num_nodes = snap.image(normalized_image_name(image))
                if num_nodes == 0:
                    continue
                spread = num_nodes / total_nodes
                # int64(float64(size) * spread), per image, as scaledImageScore truncates.
                sums += (sizes[slots].astype(np.float64) * spread).astype(np.int64)
        if not sums.any():
            return sums
        max_threshold = MAX_CONTAINER_THRESHOLD * len(images)
        clamped = np.clip(sums, MIN_THRESHOLD, max_threshold)
        return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
