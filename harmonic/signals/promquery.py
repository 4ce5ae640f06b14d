"""Instant PromQL queries with a total deadline and a body limit: the one HTTP client to Prometheus
(the affinity graph's mesh telemetry, the load-aware plugins' usage, the feedback loop's flourish
reports, the rescheduler's metrics providers).

httpx's timeouts bound each read, not the query: a server that sends a byte a second never trips a
5 s read timeout and holds the caller (``harmonic graph``, a refresher thread of ``harmonic run``)
for as long as it likes; and the body is read whole, so an answer of hundreds of MB becomes GBs of
Python objects. Here every query has:

- a deadline for all of it (connect, headers, body): a timer shuts the connection's socket when it
  passes, so even a read that is trickling in ends at once. Each query opens its own connection
  (no keep-alive) so the timer always knows the socket; a query every few seconds makes that free;
- a limit on the body (the declared Content-Length, then the bytes as they arrive, after
  decompression), past which the answer is dropped unread.

Both default to ``QueryLimits()`` and can be set per process with the environment variables
``HARMONIC_PROMETHEUS_DEADLINE_SECONDS`` and ``HARMONIC_PROMETHEUS_MAX_BODY_BYTES`` (all the
clients of a process), or per source where its args say so (CommunicationAffinity's
``telemetry.prometheus``). A query that fails says why in one line and never raises.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

DEADLINE_ENV = "HARMONIC_PROMETHEUS_DEADLINE_SECONDS"
MAX_BODY_ENV = "HARMONIC_PROMETHEUS_MAX_BODY_BYTES"
#: A refresh happens every 30 s or so: a query may take most of that, not more.
DEFAULT_DEADLINE_SECONDS = 20.0
#: Per-pod series of a 5,000-node cluster (150,000 pods at ~250 bytes a series) fit in 40 MB; the
#: decoded objects take several times the body.
DEFAULT_MAX_BODY_BYTES = 64 << 20
PATH = "/api/v1/query"


@dataclass(frozen=True)
class QueryLimits:
    deadline_seconds: float = DEFAULT_DEADLINE_SECONDS
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES

    def __post_init__(self) -> None:
        if not (math.isfinite(self.deadline_seconds) and self.deadline_seconds > 0):
            raise ValueError(
                f"the query deadline must be a positive number of seconds, not {self.deadline_seconds!r}"
            )
        if self.max_body_bytes <= 0:
            raise ValueError(
                f"the body limit must be a positive number of bytes, not {self.max_body_bytes!r}"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> QueryLimits:
        """The process's limits: the environment's, else the defaults. Raises ValueError naming the
        variable."""
        deadline, body = DEFAULT_DEADLINE_SECONDS, DEFAULT_MAX_BODY_BYTES
        try:
            if environ.get(DEADLINE_ENV):
                deadline = float(environ[DEADLINE_ENV])
            if environ.get(MAX_BODY_ENV):
                body = int(environ[MAX_BODY_ENV])
            return cls(deadline, body)
        except ValueError as e:
            raise ValueError(f"${DEADLINE_ENV} / ${MAX_BODY_ENV}: {e}") from None


class _Failed(Exception):
    """Why a query gave no answer (its message is the reason)."""


class PrometheusClient:
    """Instant queries against one Prometheus server (``transport``: how requests reach it; the
    simulator answers them itself, tests use ``httpx.MockTransport``)."""

    def __init__(
        self,
        url: str,
        timeout: float = 5.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        limits: QueryLimits | None = None,
    ) -> None:
        self.limits = limits or QueryLimits.from_env()
        #: Over the network (no ``transport`` given) the deadline also has a timer that shuts the socket;
        #: a transport of the caller's (the simulator's, in process) has no socket to shut.
        self._network = transport is None
        self._http = httpx.Client(
            base_url=url.rstrip("/"),
            timeout=min(timeout, self.limits.deadline_seconds),
            headers=dict(headers or {}),
            transport=transport,
            limits=httpx.Limits(max_keepalive_connections=0),
        )

    def close(self) -> None:
        self._http.close()

    def query(self, promql: str) -> list[dict[str, Any]] | str:
        """The series of an instant vector query, or why there are none (never raises)."""
        try:
            status, body = self._get(promql)
        except _Failed as e:
            return str(e)
        try:
            doc = json.loads(body)
        except ValueError:
            return f"bad response: HTTP {status}, not JSON"
        if status != 200 or not isinstance(doc, dict) or doc.get("status") != "success":
            detail = f"{doc.get('errorType', '')} {doc.get('error', '')}" if isinstance(doc, dict) else ""
            return f"query failed: HTTP {status}: {detail}".strip()
        data = doc.get("data") or {}
        if not isinstance(data, dict) or data.get("resultType") != "vector":
            kind = data.get("resultType") if isinstance(data, dict) else None
            return f"query failed: expected an instant vector, got {kind!r}"
        result = data.get("result")
        if not isinstance(result, list):
            return "bad response: data.result is not a list"
        return result

    def _get(self, promql: str) -> tuple[int, bytes]:
        limits = self.limits
        deadline = time.monotonic() + limits.deadline_seconds
        sockets: list[socket.socket] = []
        expired = threading.Event()

        def trace(event: str, info: Mapping[str, Any]) -> None:
            if event == "connection.connect_tcp.complete":
                sock = info["return_value"].get_extra_info("socket")
                if sock is not None:
                    sockets.append(sock)

        def expire() -> None:
            expired.set()
            for sock in sockets:
                with contextlib.suppress(OSError):  # already closed: the query is over anyway
                    sock.shutdown(socket.SHUT_RDWR)

        too_late = f"timed out: no complete answer within the {limits.deadline_seconds:g} s deadline"
        timer = threading.Timer(limits.deadline_seconds, expire)
        timer.daemon = True
        if self._network:
            timer.start()
        try:
            with self._http.stream(
                "GET", PATH, params={"query": promql}, extensions={"trace": trace}
            ) as resp:
                declared = resp.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > limits.max_body_bytes:
                    raise _Failed(self._too_large(int(declared)))
                chunks: list[bytes] = []
                size = 0
                for chunk in resp.iter_bytes():
                    size += len(chunk)
                    if size > limits.max_body_bytes:
                        raise _Failed(self._too_large(size, partial=True))
                    if time.monotonic() > deadline:
                        raise _Failed(too_late)
                    chunks.append(chunk)
                return resp.status_code, b"".join(chunks)
        except httpx.HTTPError as e:
            if expired.is_set():
                raise _Failed(too_late) from None
            raise _Failed(f"unreachable: {type(e).__name__}: {e}") from None
        finally:
            timer.cancel()

    def _too_large(self, size: int, partial: bool = False) -> str:
        more = "more than " if partial else ""
        return f"response too large: {more}{size} bytes, the limit is {self.limits.max_body_bytes}"
