"""The open reservations of moved pods' replacements, kept in a ConfigMap so that they outlive a restart
of ``harmonic run`` or a change of leader (``harmonic.scheduler.reservations``).

The object is the ConfigMap ``<lease>-reservations`` in the namespace of the leader-election lease
(``leaderElection.resourceName`` / ``resourceNamespace``, used even when ``leaderElect`` is false),
labelled ``app.kubernetes.io/managed-by: harmonic``. One ``data`` key per reservation no replacement
is bound on yet (open, or consumed by a pending replacement),
``<owner uid>.<n>`` (n: its rank among the owner's), whose value is a JSON object::

    {"owner": "<controller uid>", "node": "n1", "expires": "2026-11-25T03:04:05.123456Z",
     "moved": "shop/web-1", "known": ["<uid>", ...], "tag": "shop/web"}

``expires`` is an absolute wall-clock time (RFC 3339, UTC): another process reads it against its own
clock. The whole table is written at once, on every change (reserve, take, cancel, expiry), by a
writer thread that coalesces changes, so the scheduling thread never waits: PUT with the last
``resourceVersion`` read (POST when there is no object), and on 409 Conflict the object is read again
and the write retried with its ``resourceVersion`` (the in-memory table is what this replica holds
true: it replaces what another writer put there). Writes are fenced on the lease as bindings and
evictions are: nothing is written while this replica may not act as leader, and nothing before the
object was read back at the start of leadership (a write before then would drop the entries not yet
restored). A failed write is logged, counted in
``harmonic_feedback_reservation_store_total{op="write"}`` and tried again a second later, while
scheduling goes on (waits doubling up to 30 s while it keeps failing). The entries written stay under
``DATA_LIMIT`` (the API server refuses an object past 1 MiB whole): past it, those closest to expiry
are left out of the object (logged, counted ``too_large``) and held in this process only.

``restore`` runs once leadership is acquired (at start-up without leader election), before the first
pod is scheduled: it reads the object and puts every entry not yet expired back into the scheduler's
table with the time it had left, except those a replacement already consumed (a pod of the owner,
not among the entry's ``known`` uids, already bound or nominated). A malformed entry is skipped with a
warning naming the object, the key and the field.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from harmonic.cluster.leader import micro_time
from harmonic.cluster.transport import ApiStatusError, Transport, TransportError, object_path
from harmonic.scheduler.reservations import Reservation, Reservations, Table
from harmonic.signals.metrics import FEEDBACK_RESERVATION_STORE

log = logging.getLogger(__name__)

SUFFIX = "-reservations"
MANAGED_BY = {"app.kubernetes.io/managed-by": "harmonic"}
#: Writes retried on 409 Conflict before the change waits for the next attempt.
CONFLICT_RETRIES = 5
#: Reads of the object at the start of leadership before giving up on restoring it.
LOAD_ATTEMPTS = 3
#: The bytes of entries written at most: the API server refuses an object past 1 MiB, metadata included.
DATA_LIMIT = 900 * 1024
#: The longest wait between attempts of a write that keeps failing (doubling from ``retry_seconds``).
MAX_RETRY_SECONDS = 30.0


def configmap_name(lease_name: str) -> str:
    """The reservations' ConfigMap beside the lease ``lease_name``."""
    return lease_name + SUFFIX


# ---------------------------------------------------------------------------------------- the format
def encode(entries: Iterable[Reservation], limit: int | None = None) -> tuple[dict[str, str], int]:
    """The ConfigMap's ``data`` for ``entries`` (``expires`` on the wall clock; keys numbered per owner in
    the table's order), and how many were left out to keep it within ``limit`` bytes of keys and
    values: the latest to expire are kept first, as an object past the API server's 1 MiB is refused
    whole."""
    table = list(entries)
    texts = [
        json.dumps(
            {
                "owner": r.owner,
                "node": r.node,
                "expires": micro_time(r.expires),
                "moved": r.moved,
                "known": sorted(r.known),
                "tag": r.tag,
            },
            separators=(",", ":"),
        )
        for r in table
    ]
    kept = set(range(len(table)))
    if limit is not None:
        kept, size = set(), 0
        for i in sorted(range(len(table)), key=lambda i: table[i].expires, reverse=True):
            # the key is at most the owner, a dot and the entry's count as digits
            cost = len(table[i].owner) + 1 + len(str(len(table))) + len(texts[i])
            if size + cost <= limit:
                kept.add(i)
                size += cost
    data: dict[str, str] = {}
    rank: dict[str, int] = {}
    for i, r in enumerate(table):
        if i in kept:
            n = rank[r.owner] = rank.get(r.owner, -1) + 1
            data[f"{r.owner}.{n}"] = texts[i]
    return data, len(table) - len(kept)


class _Malformed(ValueError):
    pass


def _text(value: Mapping[str, Any], key: str, required: bool = True) -> str:
    v = value.get(key, None if required else "")
    if not isinstance(v, str) or (required and not v):
        raise _Malformed(f"{key}: {'missing or empty' if v in (None, '') else 'not a string'}")
    return v


def _entry(raw: Any) -> Reservation:
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError as e:
        raise _Malformed(f"not JSON ({e})") from None
    if not isinstance(value, dict):
        raise _Malformed("not a JSON object")
    stamp = _text(value, "expires")
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        raise _Malformed(f"expires: not an RFC 3339 time: {stamp!r}") from None
    if when.tzinfo is None:
        raise _Malformed(f"expires: no time zone: {stamp!r}")
    known = value.get("known", [])
    if not isinstance(known, list) or not all(isinstance(k, str) for k in known):
        raise _Malformed("known: not a list of pod uids")
    return Reservation(
        owner=_text(value, "owner"),
        node=_text(value, "node"),
        expires=when.timestamp(),
        moved=_text(value, "moved", required=False),
        known=frozenset(known),
        tag=_text(value, "tag", required=False),
    )


def decode(data: Any, where: str) -> tuple[list[Reservation], list[str]]:
    """The entries of a ConfigMap's ``data`` (``where``: the object, for the warnings), and a warning
    per entry left out."""
    if data is None:
        return [], []
    if not isinstance(data, Mapping):
        return [], [f"configmap {where}: data: not a map of entries; no reservation restored"]
    entries: list[Reservation] = []
    warnings: list[str] = []
    for key in sorted(data):
        try:
            entries.append(_entry(data[key]))
        except _Malformed as e:
            warnings.append(f"configmap {where}: entry {key!r}: {e}; skipped")
    return entries, warnings


def placed_by_owner(pods: Iterable[Mapping[str, Any]], owners: set[str]) -> dict[str, set[str]]:
    """Owner uid -> uids of its pods (manifests) already bound or nominated, for ``owners`` only."""
    placed: dict[str, set[str]] = {}
    for obj in pods:
        meta = obj.get("metadata") or {}
        ref = next((o for o in meta.get("ownerReferences") or () if o.get("controller")), None)
        if ref is None or ref.get("uid") not in owners:
            continue
        if (obj.get("spec") or {}).get("nodeName") or (obj.get("status") or {}).get("nominatedNodeName"):
            placed.setdefault(str(ref["uid"]), set()).add(str(meta.get("uid") or ""))
    return placed


# ---------------------------------------------------------------------------------------- the store
class ConfigMapStore:
    """A ``ReservationStore`` in the ConfigMap ``namespace/name`` through ``transport``. ``fence`` gives
    the seconds a leader-only request may take, or None when this replica must not write."""

    def __init__(
        self,
        transport: Transport,
        namespace: str,
        name: str,
        fence: Callable[[], float | None],
        *,
        retry_seconds: float = 1.0,
    ) -> None:
        self.transport = transport
        self.namespace = namespace
        self.name = name
        self.fence = fence
        self.retry_seconds = retry_seconds
        self.where = f"{namespace}/{name}"
        self.path = object_path("v1", "configmaps", namespace, name)
        self._cond = threading.Condition()
        self._table: Table | None = None
        #: Changes told (``changed``), and the latest of them written and tried.
        self._gen = self._written = self._tried = 0
        #: Set once the object was read back and restored: no write before (see the module).
        self._ready = False
        self._rv = ""
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reservation-store", daemon=True)

    # ------------------------------------------------------------------ ReservationStore
    def changed(self, table: Table) -> None:
        with self._cond:
            self._table = table
            self._gen += 1
            self._cond.notify_all()

    def flush(self, timeout: float) -> bool:
        with self._cond:
            target = self._gen
            self._cond.wait_for(
                lambda: self._tried >= target or not self._ready or not self._thread.is_alive(), timeout
            )
            return self._written >= target

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Write what is pending (one attempt), then stop the writer."""
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def ready(self) -> None:
        """The object was read back and restored: changes may be written from now on."""
        with self._cond:
            self._ready = True
            self._cond.notify_all()

    # ------------------------------------------------------------------ reading
    def load(self) -> list[Reservation]:
        """The entries of the object (none when there is none, or when it cannot be read)."""
        for attempt in range(1, LOAD_ATTEMPTS + 1):
            try:
                obj = self.transport.request("GET", self.path)
            except ApiStatusError as e:
                if e.code == 404:
                    self._rv = ""
                    return []
                FEEDBACK_RESERVATION_STORE.labels("load", "failed").inc()
                log.warning("reading reservations from configmap %s: %s", self.where, e)
                if not e.retriable:
                    break
            except TransportError as e:
                FEEDBACK_RESERVATION_STORE.labels("load", "failed").inc()
                log.warning("reading reservations from configmap %s: %s", self.where, e)
            else:
                self._rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                entries, warnings = decode(obj.get("data"), self.where)
                for w in warnings:
                    FEEDBACK_RESERVATION_STORE.labels("load", "skipped").inc()
                    log.warning("reservations: %s", w)
                FEEDBACK_RESERVATION_STORE.labels("load", "ok").inc()
                return entries
            if self._stopping.wait(0.5 * attempt):
                break
        log.error(
            "reservations: configmap %s could not be read: the reservations it holds are not restored "
            "(the next change overwrites it)",
            self.where,
        )
        return []

    # ------------------------------------------------------------------ writing
    def _run(self) -> None:
        failures = 0
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopping.is_set() or self._due())
                if not self._due():
                    return
                gen, table = self._gen, self._table
            assert table is not None
            ok = self._write(table())
            with self._cond:
                self._tried = max(self._tried, gen)
                if ok:
                    self._written = max(self._written, gen)
                self._cond.notify_all()
            failures = 0 if ok else failures + 1
            if failures and self._stopping.wait(self._delay(failures)):
                return

    def _delay(self, failures: int) -> float:
        return float(min(self.retry_seconds * 2 ** (failures - 1), MAX_RETRY_SECONDS))

    def _due(self) -> bool:
        return self._ready and self._gen > self._written

    def _write(self, entries: list[Reservation]) -> bool:
        """Replace the object's entries with ``entries``; False when it was not written."""
        remaining = self.fence()
        if remaining is None:
            FEEDBACK_RESERVATION_STORE.labels("write", "not_leader").inc()
            return False
        timeout = min(self.transport.timeout, remaining)
        data, left_out = encode(entries, DATA_LIMIT)
        if left_out:
            FEEDBACK_RESERVATION_STORE.labels("write", "too_large").inc()
            log.error(
                "configmap %s: %d of %d reservations left out, past %d bytes; they hold in this process only",
                self.where,
                left_out,
                len(entries),
                DATA_LIMIT,
            )
        for _ in range(CONFLICT_RETRIES):
            meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace, "labels": MANAGED_BY}
            if self._rv:
                meta["resourceVersion"] = self._rv
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}
            try:
                if self._rv:
                    got = self.transport.request("PUT", self.path, body=body, timeout=timeout)
                else:
                    parent = object_path("v1", "configmaps", self.namespace)
                    got = self.transport.request("POST", parent, body=body, timeout=timeout)
            except ApiStatusError as e:
                if e.code not in (404, 409):
                    return self._failed(e)
                # 409: someone else wrote it (or created it first); 404: deleted under us. Read the
                # object's resourceVersion again and write over it.
                FEEDBACK_RESERVATION_STORE.labels("write", "conflict").inc()
                if not self._reread(timeout):
                    return False
                continue
            except TransportError as e:
                return self._failed(e)
            self._rv = str((got.get("metadata") or {}).get("resourceVersion") or "")
            FEEDBACK_RESERVATION_STORE.labels("write", "ok").inc()
            return True
        return self._failed(f"still conflicting after {CONFLICT_RETRIES} attempts")

    def _reread(self, timeout: float) -> bool:
        try:
            obj = self.transport.request("GET", self.path, timeout=timeout)
        except ApiStatusError as e:
            if e.code == 404:
                self._rv = ""
                return True
            return self._failed(e)
        except TransportError as e:
            return self._failed(e)
        self._rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        return True

    def _failed(self, why: object) -> bool:
        FEEDBACK_RESERVATION_STORE.labels("write", "failed").inc()
        log.warning("writing reservations to configmap %s: %s; tried again later", self.where, why)
        return False


def restore(store: ConfigMapStore, reservations: Reservations, pods: Iterable[Mapping[str, Any]]) -> None:
    """At the start of leadership: put the object's live entries back into ``reservations``, judging
    which were consumed from ``pods`` (the informer's manifests), then let the store write."""
    saved = store.load()
    if saved:
        placed = placed_by_owner(pods, {r.owner for r in saved})
        back = reservations.restore(saved, placed)
        log.info(
            "reservations: %d of %d restored from configmap %s (the others expired or were consumed)",
            len(back),
            len(saved),
            store.where,
        )
    store.ready()
