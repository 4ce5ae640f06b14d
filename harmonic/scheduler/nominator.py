"""Pods nominated to run on nodes (internal/queue nominator + PodNominator).

A pod that preempted others waits, pending, for its victims to go; its ``status.nominatedNodeName``
names the node it made room on. The nominator remembers those pods per node so that filtering can
count them as if they already ran there (``Framework.run_filters_with_nominated_pods``) and a
lower-priority pod does not take the room meanwhile.

The scheduler records a nomination in memory as soon as preemption picks the node, before the API
update arrives (upstream does the same to avoid racing the next cycle); pod events keep the entry
current and remove it when the pod is bound or deleted.
"""

from __future__ import annotations

from collections.abc import Sequence

from harmonic.api.pod import Pod


class Nominator:
    """node name -> nominated pods (in nomination order), and pod uid -> node name."""

    __slots__ = ("_by_node", "_node_of", "_pods", "version")

    def __init__(self) -> None:
        self._by_node: dict[str, list[str]] = {}
        self._node_of: dict[str, str] = {}
        self._pods: dict[str, Pod] = {}
        #: Bumped on every change, so readers may cache what they derived from the nominations.
        self.version = 0

    def __len__(self) -> int:
        return len(self._node_of)

    def node_of(self, uid: str) -> str | None:
        return self._node_of.get(uid)

    def nodes(self) -> list[str]:
        """Nodes that have nominated pods."""
        return list(self._by_node)

    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]:
        uids = self._by_node.get(node_name)
        if not uids:
            return ()
        pods = self._pods
        return [pods[u] for u in uids]

    def add(self, pod: Pod, nominated: str | None = None) -> None:
        """addNominatedPod. ``nominated`` overrides the node (``""`` clears the nomination); ``None``
        keeps what the pod's ``status.nominatedNodeName`` says (NominatingMode Noop)."""
        self.delete(pod)
        node = pod.nominated_node_name if nominated is None else nominated
        if not node:
            return
        self.version += 1
        self._node_of[pod.uid] = node
        self._pods[pod.uid] = pod
        self._by_node.setdefault(node, []).append(pod.uid)

    def update(self, new: Pod) -> None:
        """UpdateNominatedPod with the stored pod as the old one. A nomination made in memory survives
        an update that still carries no ``nominatedNodeName`` (the API update has not arrived yet)."""
        old = self._pods.get(new.uid)
        keep: str | None = None
        if old is not None and not old.nominated_node_name and not new.nominated_node_name:
            keep = self._node_of[new.uid]
        self.add(new, keep)

    def delete(self, pod: Pod) -> None:
        node = self._node_of.pop(pod.uid, None)
        if node is None:
            return
        self.version += 1
        del self._pods[pod.uid]
        uids = self._by_node[node]
        uids.remove(pod.uid)
        if not uids:
            del self._by_node[node]
