"""The probes answer while a verb runs: the chart's probes time out after 1 s, and a prioritize over
thousands of nodes (or a slow plugin) can take longer. On one event loop, /healthz waited for it."""

from __future__ import annotations

import http.client
import threading
from typing import Any

import pytest

from harmonic.extender.server import ExtenderServer
from tests.extender.conftest import Client, running

#: Generous: an answer that is not blocked comes in milliseconds; a blocked one never comes.
PROBE_TIMEOUT = 10.0


@pytest.mark.parametrize("verb", ["filter", "prioritize", "preempt"])
@pytest.mark.parametrize("probe", ["/healthz", "/readyz", "/metrics"])
def test_probes_answer_while_a_verb_is_running(verb: str, probe: str) -> None:
    entered, release = threading.Event(), threading.Event()
    answers: list[tuple[int, Any]] = []

    def slow(body: bytes) -> bytes:
        entered.set()
        release.wait(60)
        return b"{}"

    with running() as server:
        setattr(server.app.extender, verb, slow)
        caller = threading.Thread(target=lambda: answers.append(_post(server, verb)))
        caller.start()
        try:
            assert entered.wait(PROBE_TIMEOUT)
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=PROBE_TIMEOUT)
            conn.request("GET", probe)
            status = conn.getresponse().status
            conn.close()
            assert not release.is_set()  # the verb was still running when the probe was answered
            assert status == 200
        finally:
            release.set()
            caller.join(PROBE_TIMEOUT)
    assert answers == [(200, {})]


def _post(server: ExtenderServer, verb: str) -> tuple[int, Any]:
    client = Client(server)
    try:
        return client.post(verb, {})
    finally:
        client.close()


def test_readyz_verbose_lists_the_cache_and_the_signals() -> None:
    from harmonic.signals.metrics import FRESHNESS

    FRESHNESS.failed("prometheus/probe-test", "timed out: no complete answer within the 1 s deadline")
    with running() as server:
        client = Client(server)
        try:
            status, _, body = client.raw("GET", "/readyz?verbose")
            plain = client.raw("GET", "/readyz")
        finally:
            client.close()
    lines = body.decode().splitlines()
    assert status == 200 and lines[0] == "[+]cache ok" and lines[-1] == "readyz check passed"
    assert any(
        line.startswith("[+]signal prometheus/probe-test degraded: no signal yet for ") for line in lines
    )
    assert plain[0] == 200 and plain[2] == b"ok"
