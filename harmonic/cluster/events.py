"""Kubernetes Events, written the way kube-scheduler's event recorder writes them.

kube-scheduler records through client-go's events.k8s.io/v1 broadcaster (core/v1 Events when the
server lacks that API): each profile's recorder has ``reportingController`` = the profile's scheduler
name and ``reportingInstance`` = ``<controller>-<hostname>``; ``Scheduled`` (action ``Binding``) and
``FailedScheduling`` (action ``Scheduling``) regard the pod. Recording never blocks the caller: events
go to a bounded queue drained by worker threads; when it is full (10,000 waiting, which client-go's
goroutine per event never reaches in practice) new events are dropped, as client-go drops them.

Repeats are aggregated as client-go does: an event *isomorphic* to one recorded in the last 6 minutes
(same type, action, reason, reporting controller and instance, and regarding object — including its
resourceVersion) becomes a series: the second occurrence PATCHes ``series.count = 2``; later ones
only count locally and are written when the series goes quiet for 6 minutes or every 30 minutes.
Writes that fail for lack of a server are retried up to 12 times, 10 s apart (jittered); a server
rejection is logged and dropped.
"""

from __future__ import annotations

import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harmonic.cluster.leader import micro_time
from harmonic.cluster.transport import (
    STRATEGIC_MERGE_PATCH,
    ApiStatusError,
    Transport,
    TransportError,
    object_path,
)
from harmonic.cluster.workers import WorkQueue

log = logging.getLogger(__name__)

EVENTS_V1 = "events.k8s.io/v1"
CORE_V1 = "v1"
#: validation.NoteLengthLimit: longer notes are truncated with " ..." (truncateMessage).
NOTE_LENGTH_LIMIT = 1024
MAX_QUEUED = 10_000
MAX_TRIES = 12
FINISH_TIME = 6 * 60.0
REFRESH_TIME = 30 * 60.0

Obj = Mapping[str, Any]


def truncate_note(note: str) -> str:
    if len(note) <= NOTE_LENGTH_LIMIT:
        return note
    suffix = " ..."
    return note[: NOTE_LENGTH_LIMIT - len(suffix)] + suffix


def reference(obj: Obj) -> dict[str, str]:
    """The ObjectReference of a manifest (reference.GetReference)."""
    meta = obj.get("metadata") or {}
    ref = {
        "kind": str(obj.get("kind") or "Pod"),
        "namespace": str(meta.get("namespace") or ""),
        "name": str(meta.get("name") or ""),
        "uid": str(meta.get("uid") or ""),
        "apiVersion": str(obj.get("apiVersion") or "v1"),
        "resourceVersion": str(meta.get("resourceVersion") or ""),
    }
    return {k: v for k, v in ref.items() if v}


@dataclass
class _Recorded:
    name: str
    namespace: str
    body: dict[str, Any]
    last_seen: float
    count: int = 1
    series: bool = False
    #: Counted locally since the series was last written.
    pending: bool = False


#: What ``event`` queues: regarding, type, reason, action, note, controller, and the time (epoch s).
_Queued = tuple[Obj, str, str, str, str, str, float]


#: The fields of an ObjectReference that ``reference`` may set, in a fixed order for ``_key``.
_REFERENCE_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion")


def _key(ev: Mapping[str, Any]) -> tuple[Any, ...]:
    reg = ev["regarding"]
    return (
        ev["type"],
        ev["action"],
        ev["reason"],
        ev["reportingController"],
        ev["reportingInstance"],
        *map(reg.get, _REFERENCE_FIELDS),
    )


class EventRecorder:
    """Writes Events for one or more reporting controllers through ``transport``.

    ``api``: ``events.k8s.io/v1`` or ``v1``; ``None`` asks the server (discovery), as client-go's
    adapter does. ``retry_sleep``: base pause between retries of an unreachable server. ``workers``:
    writers in parallel. 4 (16 before) write one Event per pod as fast as ``benchmarks/live_scheduler.py``
    binds them, for less CPU: every extra thread is one more contending with the scheduling thread for
    the interpreter.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        api: str | None = None,
        workers: int = 4,
        retry_sleep: float = 10.0,
        hostname: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_drop: Callable[[], None] | None = None,
    ) -> None:
        self.transport = transport
        #: Called for each event dropped because the queue is full (a metric's ``inc``).
        self.on_drop = on_drop
        self.api = api
        self.hostname = hostname or socket.gethostname()
        self.retry_sleep = retry_sleep
        self.clock = clock
        self.dropped = 0
        self._cache: dict[tuple[Any, ...], _Recorded] = {}
        #: The Events collection path of each namespace (quoting it once).
        self._collections: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self._writes: WorkQueue[_Queued] = WorkQueue(
            "events",
            lambda item: self._record(self._expand(item)),
            workers=workers,
            maxsize=MAX_QUEUED,
            idle=self._housekeeping,
        )
        self._last_finish = clock()
        self._last_refresh = clock()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self.api is None:
            self.api = self._discover()
        self._writes.start()

    def _discover(self) -> str:
        try:
            self.transport.request("GET", f"/apis/{EVENTS_V1}", timeout=10.0)
            return EVENTS_V1
        except ApiStatusError:
            return CORE_V1
        except TransportError:
            # Unreachable now: the modern API is the likelier one, and writes retry anyway.
            return EVENTS_V1

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued (up to ``timeout``), then stop the workers."""
        self._writes.stop(timeout)

    # ------------------------------------------------------------------ recording
    def event(self, regarding: Obj, type_: str, reason: str, action: str, note: str, controller: str) -> None:
        """Queue an event about ``regarding`` (a manifest, read later: it must not be mutated) reported
        by ``controller``; never blocks. The caller only pays for the enqueue: the Event is built by a
        worker, so recording costs the scheduling thread no more than a few microseconds."""
        if not self._writes.put((regarding, type_, reason, action, note, controller, time.time())):
            self.dropped += 1
            if self.on_drop is not None:
                self.on_drop()
            # Logged at the 1st, 10th and every 1000th drop: a storm must not flood the logs too.
            if self.dropped in (1, 10) or self.dropped % 1000 == 0:
                log.warning("event queue full, %d events dropped so far (latest: %s)", self.dropped, reason)

    def _expand(self, item: _Queued) -> dict[str, Any]:
        regarding, type_, reason, action, note, controller, at = item
        return {
            "type": type_,
            "reason": reason,
            "action": action,
            "note": truncate_note(note),
            "regarding": reference(regarding),
            "reportingController": controller,
            "reportingInstance": f"{controller}-{self.hostname}",
            "at": micro_time(at),
        }

    @property
    def pending(self) -> int:
        """Events queued and not yet taken by a worker."""
        return self._writes.pending

    def _record(self, ev: dict[str, Any]) -> None:
        key = _key(ev)
        now = self.clock()
        with self._lock:
            rec = self._cache.get(key)
            if rec is not None and now - rec.last_seen < FINISH_TIME:
                rec.count += 1
                rec.last_seen = now
                if rec.series:
                    rec.pending = True
                    return
                rec.series = True
                patch = self._series_patch(rec, ev["at"])
                name, ns = rec.name, rec.namespace
            else:
                body = self._body(ev)
                rec = _Recorded(body["metadata"]["name"], body["metadata"]["namespace"], body, now)
                self._cache[key] = rec
                patch = None
        if patch is None:
            self._write(
                lambda: self.transport.request(
                    "POST", self._collection(rec.namespace), body=rec.body, decode=False
                )
            )
        else:
            self._write(
                lambda: self.transport.request(
                    "PATCH",
                    self._item(ns, name),
                    body=patch,
                    content_type=STRATEGIC_MERGE_PATCH,
                    decode=False,
                ),
                fallback=lambda: self.transport.request(
                    "POST", self._collection(ns), body=rec.body, decode=False
                ),
            )

    def _series_patch(self, rec: _Recorded, at: str) -> dict[str, Any]:
        if self.api == EVENTS_V1:
            return {"series": {"count": rec.count, "lastObservedTime": at}}
        return {"count": rec.count, "lastTimestamp": at[:19] + "Z"}

    def _body(self, ev: dict[str, Any]) -> dict[str, Any]:
        reg = ev["regarding"]
        name = f"{reg.get('name', 'unknown')}.{time.time_ns():x}"
        ns = reg.get("namespace") or "default"
        if self.api == EVENTS_V1:
            return {
                "apiVersion": EVENTS_V1,
                "kind": "Event",
                "metadata": {"name": name, "namespace": ns},
                "eventTime": ev["at"],
                "reportingController": ev["reportingController"],
                "reportingInstance": ev["reportingInstance"],
                "action": ev["action"],
                "reason": ev["reason"],
                "regarding": reg,
                "note": ev["note"],
                "type": ev["type"],
            }
        ts = ev["at"][:19] + "Z"
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": reg,
            "reason": ev["reason"],
            "message": ev["note"],
            "source": {"component": ev["reportingController"]},
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "count": 1,
            "type": ev["type"],
            "action": ev["action"],
            "reportingComponent": ev["reportingController"],
            "reportingInstance": ev["reportingInstance"],
        }

    def _collection(self, ns: str) -> str:
        api = self.api or EVENTS_V1
        path = self._collections.get((api, ns))
        if path is None:
            path = self._collections[(api, ns)] = object_path(api, "events", ns)
        return path

    def _item(self, ns: str, name: str) -> str:
        return object_path(self.api or EVENTS_V1, "events", ns, name)

    def _write(self, call: Callable[[], Any], fallback: Callable[[], Any] | None = None) -> None:
        for attempt in range(MAX_TRIES):
            try:
                call()
                return
            except ApiStatusError as e:
                if e.code == 404 and fallback is not None:
                    # The series' first event expired from the server: write it anew.
                    call, fallback = fallback, None
                    continue
                if not e.retriable:
                    log.error("server rejected event (will not retry): %s", e)
                    return
            except TransportError as e:
                log.warning("unable to write event (may retry): %s", e)
            if attempt + 1 < MAX_TRIES and self._writes.stopping.wait(
                self.retry_sleep * (1 + 0.25 * random.random())
            ):
                return
        log.error("unable to write event (retry limit exceeded)")

    def _housekeeping(self) -> None:
        """Write the final counts of series gone quiet, refresh long ones, forget old singletons."""
        now = self.clock()
        if now - self._last_finish < FINISH_TIME and now - self._last_refresh < REFRESH_TIME:
            return
        refresh = now - self._last_refresh >= REFRESH_TIME
        self._last_finish = now
        if refresh:
            self._last_refresh = now
        flush: list[_Recorded] = []
        with self._lock:
            for key, rec in list(self._cache.items()):
                quiet = now - rec.last_seen >= FINISH_TIME
                if rec.series and rec.pending and (quiet or refresh):
                    rec.pending = False
                    flush.append(rec)
                if quiet:
                    del self._cache[key]
        for rec in flush:
            self._write_series(rec)

    def _write_series(self, rec: _Recorded) -> None:
        patch = self._series_patch(rec, micro_time())
        self._write(
            lambda: self.transport.request(
                "PATCH", self._item(rec.namespace, rec.name), body=patch, content_type=STRATEGIC_MERGE_PATCH
            )
        )

    def flush_series_now(self) -> None:
        """Write pending series counts immediately (tests; clean shutdown)."""
        self._last_finish = self.clock() - FINISH_TIME
        self._last_refresh = self.clock() - REFRESH_TIME
        self._housekeeping()
