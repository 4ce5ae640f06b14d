"""Nodes reserved for a pod that does not exist yet: the replacement of a pod moved by eviction.

A move (``harmonic run --feedback-moves``) evicts a pod so that its controller creates a replacement,
which this scheduler places. The mover has already chosen where the replacement should go (its
what-if); to carry that choice across the eviction it reserves the node for the pod's *owner* (the
controller's uid) before evicting, for a limited time. The first new pending pod of that owner that
this scheduler handles consumes the reservation, and the scheduler nominates the node the way
preemption does: ``status.nominatedNodeName`` patched through the API and the pod in the nominator, so
``evaluateNominatedNode`` tries that node first and the filters of pods of equal or lower priority count
the replacement there meanwhile.

A reservation is a preference, never a filter (as an external component's ``nominatedNodeName`` is a
hint to kube-scheduler, KEP-5278): when the node no longer fits, the pod is scheduled normally.
Each reservation ends in one outcome, reported to ``on_outcome``: ``landed`` (the replacement was bound
to the reserved node), ``fell_back`` (bound elsewhere, or deleted before it was bound), ``expired``
(no replacement within its time) or ``cancelled`` (the mover gave it up, e.g. the eviction failed).

The mover reserves from its own thread and the scheduler consumes on its own: the tables are guarded by
a lock, and outcomes are reported outside it. The scheduler's hot path reads ``open`` (a dict) for
truthiness and looks one owner up per new pending pod; nothing per node.

The open reservations outlive the process through a ``ReservationStore``: every change (reserve,
take, cancel, expiry) tells the store the table changed, and the store reads the table (``saved()``:
expiries as wall-clock times) when it writes. A store must not block the caller: the scheduler's
thread is one of them. ``restore`` puts a store's entries back, with the time they had left, leaving
out the expired ones and those a placed pod of the owner already consumed. The default store is
``MemoryStore``: nothing outlives the process (the simulator, the extender, tests); ``harmonic run``
keeps them in a ConfigMap (``harmonic.cluster.reservation_store``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from harmonic.api.pod import Pod

LANDED = "landed"
FELL_BACK = "fell_back"
EXPIRED = "expired"
CANCELLED = "cancelled"
OUTCOMES = (LANDED, FELL_BACK, EXPIRED, CANCELLED)


@dataclass(frozen=True)
class Reservation:
    #: The controller's uid: any new pod it creates is a replacement.
    owner: str
    node: str
    #: On the reservations' clock.
    expires: float
    #: The moved pod (``namespace/name``), for the record.
    moved: str
    #: The uids of the owner's pods when the node was reserved: none of them is the replacement.
    known: frozenset[str] = field(default=frozenset())
    #: Whatever the mover wants back with the outcome (the workload, for its decision log).
    tag: str = ""


#: ``(reservation, outcome, replacement pod key or "", node it was bound to or "")``.
OnOutcome = Callable[[Reservation, str, str, str], None]


def _ignore(r: Reservation, outcome: str, pod: str, node: str) -> None:
    return None


#: The open reservations as a store keeps them: ``expires`` in wall-clock seconds since the epoch.
Table = Callable[[], list[Reservation]]


class ReservationStore(Protocol):
    """Where the open reservations are kept beyond the process."""

    def changed(self, table: Table) -> None:
        """The table changed; ``table()`` gives it when the store writes. Must not block."""

    def flush(self, timeout: float) -> bool:
        """Wait (at most ``timeout``) until the changes so far were written, or tried; False if not."""
        ...


class MemoryStore:
    """Nothing outlives the process: ``load`` gives the last table it was told of, read now."""

    def __init__(self) -> None:
        self._table: Table | None = None

    def changed(self, table: Table) -> None:
        self._table = table

    def flush(self, timeout: float) -> bool:
        return True

    def load(self) -> list[Reservation]:
        return self._table() if self._table is not None else []


class Reservations:
    def __init__(
        self,
        now: Callable[[], float],
        *,
        wall: Callable[[], float] = time.time,
        store: ReservationStore | None = None,
    ) -> None:
        self.now = now
        #: Wall-clock seconds since the epoch: the store's expiries are on it (``now`` is monotonic).
        self.wall = wall
        self.store: ReservationStore = store or MemoryStore()
        self.on_outcome: OnOutcome = _ignore
        self._lock = threading.Lock()
        #: owner uid -> its reservations not consumed yet, oldest first (two pods of one owner moved in
        #: one round leave two, one per replacement).
        self.open: dict[str, list[Reservation]] = {}
        #: replacement pod uid -> the reservation it consumed, until it is bound or deleted.
        self.taken: dict[str, Reservation] = {}
        self._next_expiry = math.inf

    def reserve(
        self,
        owner: str,
        node: str,
        seconds: float,
        moved: str,
        known: frozenset[str] = frozenset(),
        tag: str = "",
    ) -> Reservation:
        """Hold ``node`` for the next new pod of ``owner`` for ``seconds``; call before evicting."""
        r = Reservation(owner, node, self.now() + seconds, moved, known, tag)
        with self._lock:
            self.open.setdefault(owner, []).append(r)
            self._next_expiry = min(self._next_expiry, r.expires)
        self.store.changed(self.saved)
        return r

    def cancel(self, r: Reservation) -> bool:
        """Give ``r`` up if nobody consumed it yet (outcome ``cancelled``); False if it was."""
        with self._lock:
            held = self.open.get(r.owner) or []
            at = next((i for i, x in enumerate(held) if x is r), None)
            if at is None:
                return False
            del held[at]
            if not held:
                del self.open[r.owner]
        self.store.changed(self.saved)
        self.on_outcome(r, CANCELLED, "", "")
        return True

    def take(self, pod: Pod) -> Reservation | None:
        """The reservation a new pending ``pod`` consumes: the oldest live one of its controller, unless
        the pod is one the owner already had. Expired ones met on the way are dropped."""
        owner = pod.controller
        if owner is None:
            return None
        now = self.now()
        expired: list[Reservation] = []
        got: Reservation | None = None
        with self._lock:
            held = self.open.get(owner.uid)
            if not held:
                return None
            while held and held[0].expires <= now:
                expired.append(held.pop(0))
            if held and pod.uid not in held[0].known:
                got = held.pop(0)
                self.taken[pod.uid] = got
            if not held:
                del self.open[owner.uid]
        if got is not None or expired:
            self.store.changed(self.saved)
        for r in expired:
            self.on_outcome(r, EXPIRED, "", "")
        return got

    def expire(self) -> None:
        """Drop the reservations past their time (a float comparison when none is)."""
        now = self.now()
        if now < self._next_expiry:
            return
        expired: list[Reservation] = []
        with self._lock:
            nxt = math.inf
            for owner in list(self.open):
                held = self.open[owner]
                expired += [r for r in held if r.expires <= now]
                held[:] = [r for r in held if r.expires > now]
                if held:
                    nxt = min(nxt, held[0].expires)
                else:
                    del self.open[owner]
            self._next_expiry = nxt
        if expired:
            self.store.changed(self.saved)
        for r in expired:
            self.on_outcome(r, EXPIRED, "", "")

    def bound(self, pod: Pod) -> None:
        """``pod`` was bound: if it consumed a reservation, that ends ``landed`` or ``fell_back``."""
        with self._lock:
            r = self.taken.pop(pod.uid, None)
        if r is not None:
            self.store.changed(self.saved)
            self.on_outcome(r, LANDED if pod.node_name == r.node else FELL_BACK, pod.key, pod.node_name)

    def deleted(self, uid: str, key: str) -> None:
        """The pod ``uid`` went away: if it consumed a reservation before being bound, it fell back."""
        with self._lock:
            r = self.taken.pop(uid, None)
        if r is not None:
            self.store.changed(self.saved)
            self.on_outcome(r, FELL_BACK, key, "")

    # ------------------------------------------------------------------ beyond the process
    def saved(self) -> list[Reservation]:
        """The reservations a replacement has not been bound on yet, soonest to expire first, with
        ``expires`` on the wall clock: the open ones, and those a pending replacement consumed — should
        this process stop before the replacement's nomination reached the API server, the next one
        restores the entry and the replacement, still pending and not nominated, consumes it again."""
        with self._lock:
            offset = self.wall() - self.now()
            held = [r for rs in self.open.values() for r in rs] + list(self.taken.values())
        return sorted((replace(r, expires=r.expires + offset) for r in held), key=lambda r: r.expires)

    def flush(self, timeout: float) -> bool:
        """Wait (at most ``timeout``) until the store wrote the changes so far, or tried to."""
        return self.store.flush(timeout)

    def restore(
        self, saved: Iterable[Reservation], placed: Mapping[str, Collection[str]]
    ) -> list[Reservation]:
        """Put back ``saved`` reservations (``expires`` on the wall clock) with the time they had left.
        Left out: the expired ones, and per owner as many as it has pods not ``known`` to them that are
        already bound or nominated (``placed``: owner uid -> such pods' uids; each consumed one, the
        oldest first). Returns those put back, on this table's clock."""
        wall, now = self.wall(), self.now()
        used: dict[str, set[str]] = {}
        back: list[Reservation] = []
        for r in sorted(saved, key=lambda x: x.expires):
            left = r.expires - wall
            if left <= 0:
                continue
            taken = used.setdefault(r.owner, set())
            skip = r.known | taken
            consumer = next((u for u in sorted(placed.get(r.owner, ())) if u not in skip), None)
            if consumer is not None:
                taken.add(consumer)
                continue
            back.append(replace(r, expires=now + left))
        with self._lock:
            for r in back:
                self.open.setdefault(r.owner, []).append(r)
                self._next_expiry = min(self._next_expiry, r.expires)
            for held in self.open.values():
                held.sort(key=lambda x: x.expires)
        self.store.changed(self.saved)
        return back


def describe(r: Reservation, outcome: str, pod: str, node: str, seconds: float) -> str:
    """How a reservation ended, for a decision log (``seconds``: how long it was held)."""
    held = f"the reservation of {r.node} for {r.moved}'s replacement"
    if outcome == LANDED:
        return f"replacement {pod} of {r.moved} bound to {r.node}: landed on the reserved node"
    if outcome == EXPIRED:
        return f"{held} expired: no new pod of its owner within {seconds:g} s"
    if outcome == CANCELLED:
        return f"{held} cancelled: the eviction did not happen"
    if node:
        return (
            f"replacement {pod} of {r.moved} bound to {node}, not the reserved {r.node}: fell back to "
            "normal scheduling (the reserved node did not fit it)"
        )
    return f"replacement {pod} of {r.moved} deleted before it was bound: {held} fell back"
