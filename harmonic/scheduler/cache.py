"""The scheduler cache: nodes, bound pods and assumed pods, kept in the ``Snapshot`` (backend/cache).

A pod is *assumed* onto a node as soon as the scheduling cycle picks it, so the next cycle already
sees its resources used; the informer's add event later *confirms* it. If binding fails the pod is
*forgotten*. An assumed pod whose binding finished but whose confirmation never arrives expires
``assumed_ttl`` seconds after binding finished (0 disables expiry: kube-scheduler passes 0 since
v1.28, so assumed pods wait for their confirmation or deletion).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.framework.interface import Clock
from harmonic.framework.snapshot import Snapshot

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _PodState:
    pod: Pod
    node: str
    assumed: bool
    deadline: float | None = None


class CacheError(RuntimeError):
    pass


class Cache:
    def __init__(self, clock: Clock, assumed_ttl: float = 0.0, snapshot: Snapshot | None = None) -> None:
        self.snapshot = snapshot if snapshot is not None else Snapshot()
        self._clock = clock
        self.assumed_ttl = assumed_ttl
        self._pods: dict[str, _PodState] = {}
        #: Assumed pods whose binding finished, by uid: the only ones that can expire.
        self._expiring: dict[str, _PodState] = {}

    # ------------------------------------------------------------------ queries
    def is_assumed(self, uid: str) -> bool:
        st = self._pods.get(uid)
        return st is not None and st.assumed

    def node_of(self, uid: str) -> str | None:
        st = self._pods.get(uid)
        return st.node if st is not None else None

    def pod(self, uid: str) -> Pod | None:
        st = self._pods.get(uid)
        return st.pod if st is not None else None

    @property
    def num_pods(self) -> int:
        return len(self._pods)

    def assumed_pods(self) -> list[tuple[Pod, str]]:
        return [(s.pod, s.node) for s in self._pods.values() if s.assumed]

    # ------------------------------------------------------------------ assume / forget
    def assume(self, pod: Pod, node_name: str) -> None:
        if pod.uid in self._pods:
            raise CacheError(f"pod {pod.key} is already in the cache and cannot be assumed")
        self.snapshot.add_pod(pod, node_name)
        self._pods[pod.uid] = _PodState(pod, node_name, assumed=True)

    def finish_binding(self, pod: Pod) -> None:
        """The binding call returned (whatever its outcome): the expiry clock starts (FinishBinding)."""
        st = self._pods.get(pod.uid)
        if st is not None and st.assumed and self.assumed_ttl > 0:
            st.deadline = self._clock.now() + self.assumed_ttl
            self._expiring[pod.uid] = st

    def forget(self, pod: Pod) -> None:
        """Undo ``assume`` (ForgetPod)."""
        st = self._pods.get(pod.uid)
        if st is None:
            return
        if not st.assumed:
            raise CacheError(f"pod {pod.key} is bound, not assumed, and cannot be forgotten")
        if st.node != pod.node_name:
            raise CacheError(f"pod {pod.key} was assumed on {st.node} but assigned to {pod.node_name}")
        self._drop(st)

    def cleanup_expired(self) -> list[Pod]:
        """Drop assumed pods whose binding finished more than ``assumed_ttl`` ago without confirmation."""
        if not self._expiring:
            return []
        now = self._clock.now()
        expired = [s for s in self._expiring.values() if s.deadline is not None and s.deadline < now]
        for s in expired:
            log.warning("assumed pod %s on %s expired without confirmation", s.pod.key, s.node)
            self._drop(s)
        return [s.pod for s in expired]

    def _drop(self, st: _PodState) -> None:
        self.snapshot.remove_pod(st.pod, st.node)
        del self._pods[st.pod.uid]
        self._expiring.pop(st.pod.uid, None)

    # ------------------------------------------------------------------ informer events
    def add_pod(self, pod: Pod) -> None:
        """A bound pod was observed. Confirms an assumed pod (moving it if it landed elsewhere)."""
        st = self._pods.get(pod.uid)
        if st is not None and st.assumed:
            if st.node != pod.node_name:
                log.warning("pod %s was assumed on %s but bound to %s", pod.key, st.node, pod.node_name)
            if st.node == pod.node_name and self.snapshot.swap_pod(pod, st.node):
                # The confirmation of what we assumed: nothing to recount.
                self._expiring.pop(pod.uid, None)
                self._pods[pod.uid] = _PodState(pod, pod.node_name, assumed=False)
                return
            self._drop(st)
            self.snapshot.add_pod(pod, pod.node_name)
            self._pods[pod.uid] = _PodState(pod, pod.node_name, assumed=False)
            return
        if st is not None:
            self.update_pod(st.pod, pod)
            return
        self.snapshot.add_pod(pod, pod.node_name)
        self._pods[pod.uid] = _PodState(pod, pod.node_name, assumed=False)

    def update_pod(self, old: Pod, new: Pod) -> None:
        st = self._pods.get(new.uid)
        if st is None:
            self.add_pod(new)
            return
        if st.assumed:
            # An update to an assumed pod is its confirmation arriving as an update.
            self.add_pod(new)
            return
        self.snapshot.remove_pod(st.pod, st.node)
        self.snapshot.add_pod(new, new.node_name)
        self._pods[new.uid] = _PodState(new, new.node_name, assumed=False)

    def remove_pod(self, pod: Pod) -> None:
        st = self._pods.get(pod.uid)
        if st is not None:
            self._drop(st)

    def add_node(self, node: Node) -> None:
        self.snapshot.set_node(node)

    def update_node(self, node: Node) -> None:
        self.snapshot.set_node(node)

    def remove_node(self, name: str) -> None:
        self.snapshot.remove_node(name)
