"""``POST /v1/feedback``: applications report a flourish value over HTTP.

Body (JSON, at most ``max_body_bytes``)::

    {"namespace": "shop", "workload": "cart" | "pod": "cart-7d9c-x2x", "metric": "p99_latency_ms",
     "value": 12.5, "timestamp": 1732470000.0 | "2024-11-24T17:40:00Z", "goal": "minimize"}

``namespace``, one of ``workload``/``pod``, ``metric`` and ``value`` are required; ``timestamp`` defaults
to the time of receipt, ``goal`` to ``minimize``. Answers: 202 with ``{"accepted": 1}``; 400 naming the
field for a malformed body; 401 without the bearer token; 413 over the size limit; 429 with
``Retry-After`` when the identity (namespace + workload or pod) exceeds its rate (token bucket:
``rate_per_second``, burst ``burst``). Rejected posts change nothing. Values go through
``check_value``: NaN, infinities, 1e308 and negative values are refused, never learnt.

``FeedbackIntake`` is transport-free (``handle(authorization, body)``); ``harmonic run``'s HTTP server and
``harmonic extender``'s ASGI app route the endpoint to it. Accepted reports wait in a bounded queue for
the feedback loop (``drain``), which stores each with the placement in force when it processes it.
"""

from __future__ import annotations

import hmac
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harmonic.signals.feedback.observation import GOALS, BadValue, Goal, check_value

PATH = "/v1/feedback"
DEFAULT_MAX_BODY_BYTES = 16 << 10
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_METRIC = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]{0,199}$")
_FIELDS = frozenset({"namespace", "workload", "pod", "metric", "value", "timestamp", "goal"})


@dataclass(frozen=True, slots=True)
class Posted:
    namespace: str
    metric: str
    value: float
    goal: Goal
    timestamp: float
    workload: str = ""
    pod: str = ""

    @property
    def identity(self) -> str:
        return f"{self.namespace}/{self.pod or self.workload}"


class Invalid(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def parse(body: bytes, now: float) -> Posted:
    """The report in ``body``, or ``Invalid`` naming the field."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise Invalid("body", f"not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise Invalid("body", "must be a JSON object")
    unknown = sorted(set(doc) - _FIELDS)
    if unknown:
        raise Invalid(unknown[0], f"unknown field; known: {', '.join(sorted(_FIELDS))}")
    namespace = _name(doc, "namespace", required=True)
    workload, pod = _name(doc, "workload"), _name(doc, "pod")
    if bool(workload) == bool(pod):
        raise Invalid("workload", "give exactly one of workload and pod")
    metric = doc.get("metric")
    if not isinstance(metric, str) or not _METRIC.match(metric):
        raise Invalid("metric", "must be a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)")
    if "value" not in doc:
        raise Invalid("value", "required")
    try:
        value = check_value(doc["value"])
    except BadValue as e:
        raise Invalid("value", str(e)) from None
    goal = doc.get("goal", "minimize")
    if goal not in GOALS:
        raise Invalid("goal", f"must be one of {', '.join(GOALS)}")
    return Posted(namespace, metric, value, goal, _timestamp(doc.get("timestamp"), now), workload, pod)


def _name(doc: dict[str, Any], field: str, required: bool = False) -> str:
    v = doc.get(field)
    if v is None:
        if required:
            raise Invalid(field, "required")
        return ""
    if not isinstance(v, str) or not _NAME.match(v):
        raise Invalid(field, "must be a Kubernetes object name (lower case, digits, '-', '.')")
    return v


def _timestamp(v: Any, now: float) -> float:
    if v is None:
        return now
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        t = float(v)
    elif isinstance(v, str):
        try:
            t = datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise Invalid("timestamp", "must be seconds since the epoch or RFC 3339") from None
    else:
        raise Invalid("timestamp", "must be seconds since the epoch or RFC 3339")
    # A report from the future or from more than a day ago is a clock or replay problem, not feedback.
    if not math.isfinite(t) or t > now + 300 or t < now - 86_400:
        raise Invalid("timestamp", "must be within the last day (and not in the future)")
    return t


class _Bucket:
    __slots__ = ("at", "tokens")

    def __init__(self, tokens: float, at: float) -> None:
        self.tokens, self.at = tokens, at


class FeedbackIntake:
    """Authenticates, validates and rate-limits posts; keeps accepted ones until ``drain``."""

    def __init__(
        self,
        token: str | None,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        rate_per_second: float = 1.0,
        burst: int = 10,
        capacity: int = 100_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if rate_per_second <= 0 or burst < 1:
            raise ValueError("rate_per_second must be > 0 and burst >= 1")
        self._token = token.encode() if token else None
        self.max_body_bytes = max_body_bytes
        self._rate, self._burst = rate_per_second, float(burst)
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._queue: deque[Posted] = deque(maxlen=capacity)
        self._lock = threading.Lock()
        self.accepted = 0
        self.rejected: dict[int, int] = {}

    def handle(self, authorization: str, body: bytes) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(status, JSON body, extra headers) for one post."""
        status, doc, headers = self._handle(authorization, body)
        with self._lock:
            if status == 202:
                self.accepted += 1
            else:
                self.rejected[status] = self.rejected.get(status, 0) + 1
        return status, doc, headers

    def _handle(self, authorization: str, body: bytes) -> tuple[int, dict[str, Any], dict[str, str]]:
        if self._token is not None:
            scheme, _, value = authorization.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self._token):
                return 401, {"error": "missing or wrong bearer token"}, {"WWW-Authenticate": "Bearer"}
        if len(body) > self.max_body_bytes:
            return 413, {"error": f"body is larger than the limit of {self.max_body_bytes} bytes"}, {}
        now = self._clock()
        try:
            posted = parse(body, now)
        except Invalid as e:
            return 400, {"error": str(e), "field": e.field}, {}
        wait = self._take(posted.identity, now)
        if wait > 0:
            return 429, {"error": f"rate limit for {posted.identity}"}, {"Retry-After": str(math.ceil(wait))}
        with self._lock:
            self._queue.append(posted)
        return 202, {"accepted": 1}, {}

    def _take(self, identity: str, now: float) -> float:
        """0 when ``identity`` may post now (a token is taken), else seconds until it may."""
        with self._lock:
            b = self._buckets.get(identity)
            if b is None:
                b = self._buckets[identity] = _Bucket(self._burst, now)
            b.tokens = min(self._burst, b.tokens + (now - b.at) * self._rate)
            b.at = now
            if b.tokens >= 1:
                b.tokens -= 1
                return 0.0
            return (1 - b.tokens) / self._rate

    def drain(self) -> list[Posted]:
        with self._lock:
            out = list(self._queue)
            self._queue.clear()
        return out
