"""Every Prometheus query ends: a real server on loopback that drips its answer a byte at a time, or
answers with far more than anyone should read. Before, the first held ``harmonic graph`` (and a
refresher thread of ``harmonic run``) forever; the second was read whole (2.65 GB RSS for 400 MB)."""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from harmonic.cluster.health import HealthServer
from harmonic.signals.freshness import Freshness
from harmonic.signals.metrics import FRESHNESS, exposition
from harmonic.signals.prometheus import PrometheusSource
from harmonic.signals.promquery import PrometheusClient, QueryLimits

#: Generous: a query that is bounded returns within its 1 s deadline; one that is not never does.
JOIN_SECONDS = 30.0
LIMITS = QueryLimits(deadline_seconds=1.0, max_body_bytes=1 << 20)
VECTOR = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()


class _Handler(socketserver.BaseRequestHandler):
    """Answers per ``server.mode`` until the client goes away (or the test ends)."""

    server: _Server

    def handle(self) -> None:
        self.request.recv(65536)
        mode, stop = self.server.mode, self.server.stop
        try:
            if mode == "good":
                head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(VECTOR)}\r\n\r\n"
                self.request.sendall(head.encode() + VECTOR)
            elif mode == "drip headers":
                self.request.sendall(b"HTTP/1.1 200 OK\r\nX-Drip: ")
                while not stop.wait(0.2):  # a header line that never ends
                    self.request.sendall(b"a")
            elif mode == "drip body":
                self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
                while not stop.wait(0.2):
                    self.request.sendall(b" ")
            elif mode == "declared huge":
                self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 400000000\r\n\r\n")
                self._flood(stop)
            elif mode == "chunked huge":
                self.request.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
                while not stop.is_set():
                    self.request.sendall(chunk)
                    self.server.sent += 65536
        except OSError:
            return  # the client hung up: what a bounded query does

    def _flood(self, stop: threading.Event) -> None:
        block = b" " * 65536
        while not stop.is_set() and self.server.sent < 400_000_000:
            self.request.sendall(block)
            self.server.sent += len(block)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, mode: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.mode = mode
        self.stop = threading.Event()
        self.sent = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def serving(mode: str) -> Iterator[_Server]:
    server = _Server(mode)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop.set()
        server.shutdown()
        server.server_close()


def _query(client: PrometheusClient) -> list[object] | str:
    """The query, on a thread joined with a generous bound, so an unbounded one fails the test."""
    out: list[list[object] | str] = []
    t = threading.Thread(target=lambda: out.append(client.query("up")), daemon=True)
    t.start()
    t.join(JOIN_SECONDS)
    assert out, "the query did not return"
    return out[0]


#: mode -> how the query's answer starts.
CASES = {
    "drip headers": "timed out: no complete answer within the 1 s deadline",
    "drip body": "timed out: no complete answer within the 1 s deadline",
    "declared huge": "response too large: 400000000 bytes, the limit is 1048576",
    "chunked huge": "response too large: more than ",
}


@pytest.mark.parametrize("mode", sorted(CASES))
def test_a_query_ends_with_the_reason(mode):
    with serving(mode) as server:
        client = PrometheusClient(server.url, timeout=5.0, limits=LIMITS)
        try:
            answer = _query(client)
        finally:
            client.close()
        assert isinstance(answer, str) and answer.startswith(CASES[mode]), answer
        if mode == "chunked huge":
            # It stopped reading soon after the limit (the socket buffers hold a few MB at most).
            assert server.sent < 64 * LIMITS.max_body_bytes


def test_a_good_server_still_answers():
    with serving("good") as server:
        client = PrometheusClient(server.url, limits=LIMITS)
        try:
            assert _query(client) == []
        finally:
            client.close()


def test_the_limits_come_from_the_environment():
    limits = QueryLimits.from_env(
        {"HARMONIC_PROMETHEUS_DEADLINE_SECONDS": "7", "HARMONIC_PROMETHEUS_MAX_BODY_BYTES": "99"}
    )
    assert limits == QueryLimits(7.0, 99)
    assert QueryLimits.from_env({}) == QueryLimits()
    for bad in (
        {"HARMONIC_PROMETHEUS_DEADLINE_SECONDS": "nan"},
        {"HARMONIC_PROMETHEUS_MAX_BODY_BYTES": "-1"},
    ):
        with pytest.raises(ValueError, match="HARMONIC_PROMETHEUS"):
            QueryLimits.from_env(bad)


def test_a_stuck_signal_is_degraded_on_readyz_and_aged_on_metrics():
    """The graph's source against a dripping server: the read ends, the signal is marked degraded on
    /readyz?verbose (which still answers 200) and its age and failures are on /metrics."""
    name = "prometheus/dripping"
    with serving("drip body") as server:
        source = PrometheusSource(server.url, name=name, limits=LIMITS)
        try:
            reading = source.read()
        finally:
            source.close()
    assert not reading.ok and reading.reason.startswith("timed out")
    health = HealthServer("127.0.0.1", 0, exposition, {}, {"informers": lambda: None}, notes=FRESHNESS.notes)
    health.start()
    try:
        with socket.create_connection(("127.0.0.1", health.port), timeout=10) as s:
            s.sendall(b"GET /readyz?verbose HTTP/1.0\r\n\r\n")
            answer = b"".join(iter(lambda: s.recv(65536), b"")).decode()
    finally:
        health.stop()
    assert answer.startswith("HTTP/1.0 200")
    assert f"[+]signal {name} degraded: no signal yet for " in answer
    metrics = exposition().decode()
    assert f'harmonic_telemetry_age_seconds{{source="{name}"}}' in metrics
    assert f'harmonic_telemetry_failures_total{{reason="timed out",source="{name}"}} 1.0' in metrics


def test_freshness_ages_from_the_last_signal():
    now = [1000.0]
    f = Freshness(clock=lambda: now[0])
    f.ok("a")
    now[0] += 10
    assert f.notes() == ["[+]signal a ok"]
    f.failed("a", "unreachable: ConnectError")
    now[0] += 5
    assert f.notes() == [
        "[+]signal a degraded: no signal for 15s (unreachable: ConnectError); the plugins reading it "
        "score without it, readiness does not depend on it"
    ]
    f.ok("a")
    now[0] += 301  # its reads stopped: degraded although none failed
    assert "degraded: no signal for 301s (no read completed)" in f.notes()[0]
    ages = {
        s.labels["source"]: s.value for m in f.collect() for s in m.samples if m.name.endswith("age_seconds")
    }
    assert ages == {"a": 301.0}


def test_a_deadline_longer_than_the_read_timeout_keeps_the_read_timeout():
    """The per-read timeout still applies inside the deadline (a silent server fails in ~timeout)."""
    client = PrometheusClient("http://127.0.0.1:9", timeout=0.5, limits=QueryLimits(30.0, 1 << 20))
    started = time.monotonic()
    try:
        answer = client.query("up")
    finally:
        client.close()
    assert isinstance(answer, str) and answer.startswith("unreachable")
    assert time.monotonic() - started < JOIN_SECONDS
