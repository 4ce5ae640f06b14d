"""What the resource-scoring plugins share (noderesources.resourceAllocationScorer), over many nodes.

``ResourceSpec`` is the ``{name, weight}`` entry of NodeResourcesFit's scoring strategy and of
NodeResourcesBalancedAllocation's args; ``allocatable_and_requested`` is
calculateResourceAllocatableRequest for a batch of node slots.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import Field

from harmonic.api.pod import Pod
from harmonic.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource_name
from harmonic.framework.args import PluginArgs
from harmonic.framework.snapshot import CPU_COL, EPHEMERAL_COL, MEMORY_COL, Snapshot


class ResourceSpec(PluginArgs):
    name: str = Field(min_length=1)
    #: 0 (or unset) defaults to 1, as the v1 defaulting does; the range is checked by each plugin.
    weight: int = 1


DEFAULT_RESOURCES = (ResourceSpec(name=CPU, weight=1), ResourceSpec(name=MEMORY, weight=1))


def default_weights(resources: tuple[ResourceSpec, ...]) -> tuple[ResourceSpec, ...]:
    """SetDefaults: no resources means cpu and memory; a zero weight means 1."""
    if not resources:
        return DEFAULT_RESOURCES
    return tuple(r if r.weight != 0 else ResourceSpec(name=r.name, weight=1) for r in resources)


def pod_requests(pod: Pod, names: Sequence[str], use_requested: bool) -> np.ndarray:
    """calculatePodResourceRequestList: the pod's request for each resource; with ``use_requested``
    false, CPU and memory count containers that set no request at 100m / 200Mi."""
    out = np.zeros(len(names), dtype=np.int64)
    for j, name in enumerate(names):
        if not use_requested and name == CPU:
            out[j] = pod.nonzero_cpu
        elif not use_requested and name == MEMORY:
            out[j] = pod.nonzero_memory
        else:
            out[j] = pod.requests.get(name, 0)
    return out


_INT64_MAX = 2**63 - 1


def allocatable_and_requested(
    snap: Snapshot, slots: np.ndarray, names: Sequence[str], pod_req: np.ndarray, use_requested: bool
) -> tuple[np.ndarray, np.ndarray]:
    """[nodes, resources] allocatable and requested-after-placement. Allocatable is 0 where upstream
    leaves a resource out of scoring: a scalar resource the pod does not request, a resource the node
    does not offer, or one that is not tracked at all; scorers skip those entries."""
    # Snapshot columns per scored resource (-1: left out); CPU and memory may come from non-zero requests.
    cols: list[int] = []
    nonzero: list[bool] = []
    for j, name in enumerate(names):
        if name in (CPU, MEMORY):
            cols.append(CPU_COL if name == CPU else MEMORY_COL)
            nonzero.append(not use_requested)
        elif name == EPHEMERAL_STORAGE:
            cols.append(EPHEMERAL_COL)
            nonzero.append(False)
        else:
            col = snap.column(name) if pod_req[j] != 0 and is_scalar_resource_name(name) else None
            cols.append(-1 if col is None else col)
            nonzero.append(False)
    if cols == [CPU_COL, MEMORY_COL]:
        # The usual case, two column slices of one row gather each.
        alloc = snap.allocatable.take(slots, axis=0)[:, :2]
        used = (snap.nonzero if nonzero[0] else snap.requested).take(slots, axis=0)[:, :2]
    elif all(c >= 0 for c in cols):
        alloc = snap.allocatable.take(slots, axis=0)[:, cols]
        used = snap.requested.take(slots, axis=0)[:, cols]
        if any(nonzero):
            nz = snap.nonzero.take(slots, axis=0)
            for j, c in enumerate(cols):
                if nonzero[j]:
                    used[:, j] = nz[:, c]
    else:
        n, k = len(slots), len(names)
        alloc = np.zeros((n, k), dtype=np.int64)
        used = np.zeros((n, k), dtype=np.int64)
        for j, c in enumerate(cols):
            if c >= 0:
                alloc[:, j] = snap.allocatable[slots, c]
                used[:, j] = snap.nonzero[slots, c] if nonzero[j] else snap.requested[slots, c]
    # Where ``alloc`` is 0 the resource is not scored, whatever ``requested`` says.
    if used.max(initial=0) <= _INT64_MAX - pod_req.max(initial=0):
        return alloc, used + pod_req
    # A request near 2^63 (kube-apiserver accepts it) plus what a node runs leaves int64; the sum
    # saturates instead: it exceeds any capacity either way, which is all a scorer reads from it.
    return alloc, np.minimum(used, _INT64_MAX - pod_req) + pod_req
