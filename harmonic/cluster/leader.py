"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection package does it.

A candidate reads the Lease every ``retry_period``; it takes it when nobody holds it, or when the
holder's record has not changed for the record's ``leaseDurationSeconds`` *as observed locally*
(clocks of different machines are never compared). Writes carry the read ``resourceVersion``, so two
candidates racing for the same Lease cannot both win (the loser gets 409 Conflict). The leader renews
every ``retry_period`` (without reading first while its lease is valid) and gives up when it could not
renew for ``renew_deadline``.

Fencing: another candidate can take over only ``lease_duration`` after it first saw the leader's
latest renewal, which was sent no earlier than the renewal's start, ``renewed_at``. So the leader may
*start* side effects (binds) until ``renewed_at + renew_deadline`` and must have *finished* them by
``renewed_at + lease_duration``; ``remaining()`` gives the time left for a request (its timeout), or
None once the leader must not act. With kube-scheduler's defaults (15 s / 10 s / 2 s) that leaves a
5 s margin for a request to reach the server.
"""

from __future__ import annotations

import logging
import math
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from harmonic.cluster.transport import ApiStatusError, Transport, TransportError, object_path
from harmonic.framework.config import LeaderElection

log = logging.getLogger(__name__)

LEASE_API = "coordination.k8s.io/v1"
#: client-go jitters the acquire period by this factor (wait.JitterUntil).
JITTER_FACTOR = 1.2


#: The last whole second formatted by ``micro_time``: an Event per bound pod formats the same second
#: hundreds of times, and ``strftime`` was a tenth of the Event writers' time.
_last_second: tuple[int, str] = (-1, "")


def micro_time(t: float | None = None) -> str:
    """``t`` (epoch seconds, default now) as a metav1.MicroTime: RFC 3339 in UTC with microseconds."""
    global _last_second
    if t is None:
        t = time.time()
    second = math.floor(t)
    cached, text = _last_second  # one read of the pair: writers on other threads replace it whole
    if second != cached:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _last_second = (second, text)
    return f"{text}.{int(t % 1 * 1e6):06d}Z"


def default_identity() -> str:
    """``hostname_uuid``, as kube-scheduler names itself."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaderElector:
    """Campaigns for, holds and releases one Lease. Run ``run(stop)`` on its own thread.

    ``on_started`` is called (on the elector's thread) once leadership is acquired; ``on_stopped``
    once it is lost or released. ``clock`` is monotonic seconds (injectable for tests).
    """

    def __init__(
        self,
        transport: Transport,
        config: LeaderElection,
        identity: str,
        *,
        on_started: Callable[[], None] | None = None,
        on_stopped: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.transport = transport
        self.config = config
        self.identity = identity
        self.on_started = on_started
        self.on_stopped = on_stopped
        self.clock = clock
        self.path = object_path(LEASE_API, "leases", config.resource_namespace, config.resource_name)
        self._leading = False
        self._renewed_at = float("-inf")
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = float("-inf")
        self._observed_rv = ""
        self._lock = threading.Lock()
        self.lost = threading.Event()

    # ------------------------------------------------------------------ fencing
    @property
    def is_leader(self) -> bool:
        return self._leading

    def remaining(self) -> float | None:
        """Seconds a request started now may take, or None when this replica must not act as leader."""
        with self._lock:
            if not self._leading:
                return None
            now = self.clock()
            if now >= self._renewed_at + self.config.renew_deadline:
                return None
            return self._renewed_at + self.config.lease_duration - now

    # ------------------------------------------------------------------ the loop
    def run(self, stop: threading.Event) -> None:
        """Acquire (retrying), then renew until the lease is lost or ``stop`` is set (then release)."""
        if not self._acquire(stop):
            return
        log.info("became leader", extra={"lease": self.path, "identity": self.identity})
        if self.on_started is not None:
            self.on_started()
        self._renew(stop)
        if stop.is_set() and not self.lost.is_set():
            self.release()
        with self._lock:
            self._leading = False
        if self.on_stopped is not None:
            self.on_stopped()

    def _acquire(self, stop: threading.Event) -> bool:
        period = self.config.retry_period
        while not stop.is_set():
            if self.try_acquire_or_renew():
                return True
            stop.wait(period * (1 + JITTER_FACTOR * random.random()))
        return False

    def _renew(self, stop: threading.Event) -> None:
        period = self.config.retry_period
        while not stop.wait(period):
            while not self.try_acquire_or_renew():
                with self._lock:
                    expired = self.clock() >= self._renewed_at + self.config.renew_deadline
                if expired:
                    log.error("leader election lost", extra={"lease": self.path, "identity": self.identity})
                    with self._lock:
                        self._leading = False
                    self.lost.set()
                    return
                if stop.wait(period):
                    return

    # ------------------------------------------------------------------ one attempt
    def try_acquire_or_renew(self) -> bool:
        """One round of tryAcquireOrRenew; True when this replica holds a freshly renewed lease."""
        start = self.clock()
        now = micro_time()
        timeout = max(0.05, min(self.config.renew_deadline, self.config.retry_period * 2))
        desired: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.config.lease_duration)),
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        }
        if self._leading and self._observed_spec is not None and self._observed_rv:
            # Fast path: renew without reading while the lease is ours and valid.
            desired["acquireTime"] = self._observed_spec.get("acquireTime", now)
            desired["leaseTransitions"] = self._observed_spec.get("leaseTransitions", 0)
            if self._put(desired, self._observed_rv, start, timeout):
                return True
        try:
            lease = self.transport.request("GET", self.path, timeout=timeout)
        except ApiStatusError as e:
            if e.code != 404:
                log.warning("reading lease %s failed: %s", self.path, e)
                return False
            return self._create(desired, start, timeout)
        except TransportError as e:
            log.warning("reading lease %s failed: %s", self.path, e)
            return False
        spec = dict(lease.get("spec") or {})
        rv = str((lease.get("metadata") or {}).get("resourceVersion") or "")
        if spec != self._observed_spec:
            self._observed_spec, self._observed_at, self._observed_rv = spec, self.clock(), rv
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.config.lease_duration)
        if holder and holder != self.identity and self._observed_at + duration > self.clock():
            return False
        if holder == self.identity:
            desired["acquireTime"] = spec.get("acquireTime", now)
            desired["leaseTransitions"] = spec.get("leaseTransitions", 0)
        else:
            desired["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        return self._put(desired, rv, start, timeout)

    def _create(self, spec: dict[str, Any], start: float, timeout: float) -> bool:
        body = {
            "apiVersion": LEASE_API,
            "kind": "Lease",
            "metadata": {"name": self.config.resource_name, "namespace": self.config.resource_namespace},
            "spec": spec,
        }
        try:
            created = self.transport.request(
                "POST",
                object_path(LEASE_API, "leases", self.config.resource_namespace),
                body=body,
                timeout=timeout,
            )
        except (ApiStatusError, TransportError) as e:
            log.info("creating lease %s failed: %s", self.path, e)
            return False
        self._won(spec, str(created["metadata"]["resourceVersion"]), start)
        return True

    def _put(self, spec: dict[str, Any], rv: str, start: float, timeout: float) -> bool:
        body = {
            "apiVersion": LEASE_API,
            "kind": "Lease",
            "metadata": {
                "name": self.config.resource_name,
                "namespace": self.config.resource_namespace,
                "resourceVersion": rv,
            },
            "spec": spec,
        }
        try:
            updated = self.transport.request("PUT", self.path, body=body, timeout=timeout)
        except (ApiStatusError, TransportError) as e:
            log.info("updating lease %s failed: %s", self.path, e)
            return False
        self._won(spec, str(updated["metadata"]["resourceVersion"]), start)
        return True

    def _won(self, spec: dict[str, Any], rv: str, start: float) -> None:
        with self._lock:
            self._observed_spec, self._observed_rv = dict(spec), rv
            self._observed_at = start
            self._renewed_at = start
            self._leading = True

    def release(self) -> bool:
        """Give the lease up (holder emptied) so a standby takes over at once; False if it failed."""
        spec = self._observed_spec
        if spec is None or spec.get("holderIdentity") != self.identity:
            return False
        now = micro_time()
        empty = {
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": spec.get("leaseTransitions", 0),
        }
        with self._lock:
            self._leading = False
        body = {
            "apiVersion": LEASE_API,
            "kind": "Lease",
            "metadata": {
                "name": self.config.resource_name,
                "namespace": self.config.resource_namespace,
                "resourceVersion": self._observed_rv,
            },
            "spec": empty,
        }
        try:
            self.transport.request("PUT", self.path, body=body, timeout=self.config.retry_period * 2)
        except (ApiStatusError, TransportError) as e:
            log.warning("releasing lease %s failed: %s", self.path, e)
            return False
        log.info("released lease", extra={"lease": self.path, "identity": self.identity})
        return True
