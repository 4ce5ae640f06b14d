"""Harmonic's gang guard: no two gangs hold part of the cluster at once, and the oldest gang that
failed for room gets that room kept for it (what scheduler-plugins lacks; see docs/batch.md).

Deadlock. Upstream lets every gang park assumed pods at Permit while it waits for the rest, so two
gangs can each hold half of what both need until their Permit timeouts, then retry and do it again.
Here one gang at a time is the *holder*, the only one allowed to wait at Permit. Another gang's pods
are turned away at PreFilter (UnschedulableAndUnresolvable, so nothing is preempted for them) until
the holder completes or lets go, then they are activated. A more senior gang (higher priority, or
older) takes over: the holder's waiting pods are rejected and released. So at any moment at most one
gang is partially assumed, and it gives up within one Permit timeout.

Starvation. A large gang loses to a stream of small ones because room never frees up all at once.
The most senior gang that failed while it fits the empty cluster becomes *reserved*, like a nominated
pod. While the free room cannot hold the gang's missing pods, pods of other gangs and plain pods (of no
higher priority) may not take any node the gang could use, so room freed by finishing pods adds up for
it. Once the room suffices, they may backfill where they leave enough of it (the number of the gang's
pods the free room can hold, counted per node, stays at least what the gang is missing). The reservation ends when the gang is admitted at Permit or its PodGroup is deleted.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harmonic.api.pod import Pod
from harmonic.api.resources import Resources, max_into
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code
from harmonic.framework.verdicts import Verdicts

GangKey = tuple[int, float]


def fits_per_node(free: np.ndarray, template: np.ndarray) -> np.ndarray:
    """How many pods requesting ``template`` each row of ``free`` can still hold."""
    cols = np.flatnonzero(template > 0)
    if not len(cols):
        return np.full(len(free), np.iinfo(np.int64).max // 4, dtype=np.int64)
    per = free[:, cols] // template[cols]
    return np.maximum(per.min(axis=1), 0)


class GangGuard:
    def __init__(self, now: Callable[[], float], hold_limit: float) -> None:
        self._now = now
        #: Longest a holder keeps the turn without completing (a safety net: its Permit timeout).
        self._hold_limit = hold_limit
        self.holder: str | None = None
        self._holder_key: GangKey | None = None
        self._holder_since = 0.0
        #: Gangs turned away while another held the turn: activated when it ends.
        self.blocked: set[str] = set()
        self.reserved: str | None = None
        self.reserved_key: GangKey | None = None
        self._reserved_template: Resources = {}
        self._reserved_min = 0
        #: Pods the reservation turned away: activated when it ends.
        self.kept_out: dict[str, Pod] = {}

    # ------------------------------------------------------------------ one gang assembles at a time
    def may_assemble(self, gang: str, key: GangKey) -> bool:
        """May ``gang`` try to place pods now? If not it is remembered as blocked."""
        if self.holder is not None and self._now() - self._holder_since > self._hold_limit:
            self.holder = None
        if self.holder is None or self.holder == gang or key < (self._holder_key or key):
            return True
        self.blocked.add(gang)
        return False

    def hold(self, gang: str, key: GangKey) -> str | None:
        """``gang`` parks a pod at Permit. Returns the previous holder to release, if another."""
        previous = self.holder if self.holder not in (None, gang) else None
        if self.holder != gang:
            self._holder_since = self._now()
        self.holder, self._holder_key = gang, key
        return previous

    def release(self, gang: str) -> set[str]:
        """``gang`` completed or let go: the blocked gangs to activate (none if it did not hold)."""
        if self.holder != gang:
            return set()
        self.holder = self._holder_key = None
        out, self.blocked = self.blocked, set()
        return out

    # ------------------------------------------------------------------ room kept for the senior gang
    def note_failure(self, gang: str, key: GangKey, pods: list[Pod], min_member: int, snap: Snapshot) -> None:
        """``gang`` failed for room: reserve for it if it fits the empty cluster and is more senior
        than the gang reserved now."""
        if self.reserved is not None and self.reserved != gang and (self.reserved_key or key) <= key:
            return
        if len(pods) < min_member:
            return  # cannot assemble anyway (members missing): keeping room would only waste it
        template: Resources = {}
        for p in pods:
            if not p.node_name:
                max_into(template, p.requests)
        if not template:
            return
        vec = snap.request_vector(template)
        slots = snap.order
        if int(fits_per_node(snap.allocatable[slots], vec).sum()) < min_member:
            return  # never fits, even on an empty cluster: keeping room would only waste it
        self.reserved, self.reserved_key = gang, key
        self._reserved_template, self._reserved_min = template, min_member

    def clear_reservation(self, gang: str) -> None:
        if self.reserved == gang:
            self.reserved = self.reserved_key = None

    def take_kept_out(self) -> list[Pod]:
        out, self.kept_out = list(self.kept_out.values()), {}
        return out

    def filter(
        self, pod: Pod, gang: str, snap: Snapshot, slots: np.ndarray, assigned: int
    ) -> Verdicts | None:
        """Nodes ``pod`` may not take because the reserved gang would then no longer fit."""
        if self.reserved is None or gang == self.reserved or self.reserved_key is None:
            return None
        if pod.priority > -self.reserved_key[0]:
            return None
        needed = self._reserved_min - assigned
        if needed <= 0:
            return None
        t = snap.request_vector(self._reserved_template)
        order = snap.order
        total = int(fits_per_node(snap.allocatable[order] - snap.requested[order], t).sum())
        if total < needed:
            # Not enough room yet: keep every node the gang could use for it, so that room freed by
            # pods that finish accumulates instead of going to the next small pod.
            fail = fits_per_node(snap.allocatable[slots], t) > 0
        else:
            # Enough room: others may backfill wherever the gang keeps enough of it.
            free = snap.allocatable[slots] - snap.requested[slots]
            before = fits_per_node(free, t)
            after = fits_per_node(free - snap.pod_vector(pod)[: free.shape[1]], t)
            loss = before - after
            fail = (loss > 0) & (total - loss < needed)
        if not fail.any():
            return None
        return Verdicts.failing(fail, Code.UNSCHEDULABLE, f"node(s) kept for gang {self.reserved}")
