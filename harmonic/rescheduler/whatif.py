"""The scheduler's own plugins on a copy of the cluster: where would a pod go, does a plan hold.

A ``WhatIf`` owns a fresh ``Snapshot`` built from the rescheduler's ``ClusterState`` and one profile's
``Framework`` over it, so the live scheduler's snapshot is never touched. Moves are applied in place
(remove, add), the plugins' snapshot listeners keep their indexes current, and ``undo`` restores a
checkpoint, so a plan is checked by running PreFilter/Filter on the snapshot *with the moves applied*.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from harmonic.api.node import Node
from harmonic.api.pod import Pod, clone_pod
from harmonic.framework.config import Profile
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import Clock, ClusterClient, PluginsRunner, RefusingClient
from harmonic.framework.registry import Registry
from harmonic.framework.runtime import Framework
from harmonic.framework.services import NOMINATOR, ServiceAccess
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code
from harmonic.scheduler.nominator import Nominator


class WhatIfError(RuntimeError):
    """A plugin failed (Error status) while the rescheduler simulated scheduling."""


class _FixedClock:
    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now


class _Handle(ServiceAccess):
    def __init__(self, w: WhatIf, profile: str) -> None:
        self._w = w
        self._profile = profile

    @property
    def snapshot(self) -> Snapshot:
        return self._w.snapshot

    @property
    def client(self) -> ClusterClient:
        return RefusingClient("the rescheduler's what-if scheduler does not change the cluster")

    @property
    def clock(self) -> Clock:
        return self._w.clock

    @property
    def profile_name(self) -> str:
        return self._profile

    @property
    def runner(self) -> PluginsRunner:
        return self._w.framework

    def waiting_pod(self, uid: str) -> Any:
        return None

    def service_map(self) -> Mapping[str, Any]:
        return self._w.services


def replacement(pod: Pod) -> Pod:
    """The pod its controller would create after an eviction: same spec, not bound to a node."""
    r = clone_pod(pod)
    r.node_name = ""
    r.nominated_node_name = ""
    return r


class WhatIf:
    def __init__(
        self,
        profile: Profile,
        registry: Registry,
        nodes: Iterable[Node],
        pods: Iterable[Pod],
        *,
        services: Mapping[str, Any] | None = None,
        now: float = 0.0,
    ) -> None:
        nodes = list(nodes)
        self.snapshot = Snapshot(max(64, 2 * len(nodes)))
        self.clock = _FixedClock(now)
        self.services: dict[str, Any] = dict(services or {})
        # No pod is nominated in the what-if's world (a scheduler's nominator is its own thread's state,
        # never handed over): an empty one says so, where a missing one would be warned about.
        self.services.setdefault(NOMINATOR.name, Nominator())
        self.framework = Framework(profile, registry, _Handle(self, profile.scheduler_name))
        for n in nodes:
            self.snapshot.set_node(n)
        #: uid -> (pod, node) of every pod accounted here.
        self.where: dict[str, tuple[Pod, str]] = {}
        self._journal: list[tuple[str, Pod, str]] = []
        for p in pods:
            if p.node_name and not p.is_terminal and self.snapshot.has_node(p.node_name):
                self.add(p, p.node_name)
        self._journal.clear()

    # ------------------------------------------------------------------ changes
    def add(self, pod: Pod, node: str) -> None:
        self.snapshot.add_pod(pod, node)
        self.where[pod.uid] = (pod, node)
        self._journal.append(("add", pod, node))

    def remove(self, pod: Pod) -> None:
        at = self.where.pop(pod.uid, None)
        if at is None:
            return
        self.snapshot.remove_pod(at[0], at[1])
        self._journal.append(("remove", at[0], at[1]))

    def checkpoint(self) -> int:
        return len(self._journal)

    def undo(self, mark: int) -> None:
        """Revert every change made since ``checkpoint()`` returned ``mark``."""
        while len(self._journal) > mark:
            op, pod, node = self._journal.pop()
            if op == "add":
                self.snapshot.remove_pod(pod, node)
                self.where.pop(pod.uid, None)
            else:
                self.snapshot.add_pod(pod, node)
                self.where[pod.uid] = (pod, node)

    def node_of(self, pod: Pod) -> str | None:
        at = self.where.get(pod.uid)
        return at[1] if at else None

    # ------------------------------------------------------------------ questions
    def feasible(self, pod: Pod, slots: np.ndarray | None = None) -> tuple[np.ndarray, CycleState]:
        """Slots (of ``slots``, default every listed node) where ``pod`` passes PreFilter and Filter."""
        cand = self.snapshot.order if slots is None else np.asarray(slots, dtype=np.int64)
        ev = self.framework.evaluate(pod, self.snapshot, cand)
        if ev.pre_filter is not None and ev.pre_filter.code == Code.ERROR:
            raise WhatIfError(ev.pre_filter.message)
        if ev.error is not None:
            raise WhatIfError(ev.error.message)
        return cand[ev.passed], ev.state

    def fits(self, pod: Pod, node: str) -> bool:
        slot = self.snapshot.slot_of.get(node)
        if slot is None or not self.snapshot.live[slot]:
            return False
        ok, _ = self.feasible(pod, np.asarray([slot], dtype=np.int64))
        return len(ok) == 1

    def scores(self, pod: Pod, slots: np.ndarray, state: CycleState) -> np.ndarray:
        total, _, st = self.framework.score_nodes(state, pod, self.snapshot, slots)
        if st is not None:
            raise WhatIfError(st.message)
        return total

    def place(self, pod: Pod, exclude: Iterable[str] = ()) -> tuple[str | None, dict[str, int]]:
        """Where the scheduler would put ``pod`` (highest score, first in node order on ties), and every
        feasible node's score; None when it fits nowhere outside ``exclude``."""
        ok, state = self.feasible(pod)
        names = self.snapshot.names()
        banned = set(exclude)
        if banned:
            ok = ok[np.fromiter((names[s] not in banned for s in ok), dtype=bool, count=len(ok))]
        if len(ok) == 0:
            return None, {}
        total = self.scores(pod, ok, state)
        best = int(np.argmax(total))
        return str(names[ok[best]]), {str(names[s]): int(v) for s, v in zip(ok, total, strict=True)}

    def reasons_on(self, pod: Pod, node: str) -> set[str]:
        """Every reason any PreFilter or Filter plugin gives against ``pod`` on ``node`` (each filter is
        asked, not only the first to reject), for checks that need one plugin's verdict."""
        snap, fw = self.snapshot, self.framework
        slot = snap.slot_of.get(node)
        if slot is None:
            return {"node not found"}
        state = CycleState()
        pre, st, _ = fw.run_pre_filter(state, pod, snap)
        if st is not None:
            return {st.message}
        if pre is not None and pre.node_names is not None and node not in pre.node_names:
            return {"excluded by PreFilter"}
        out: set[str] = set()
        one = np.asarray([slot], dtype=np.int64)
        for pl in fw.filter_plugins:
            if pl.name in state.skip_filter:
                continue
            v = pl.filter(state, pod, snap, one)
            if v is not None and v.code[0] != 0:
                out.update(v.reasons[int(v.reason[0])])
        return out
