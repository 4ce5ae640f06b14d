"""A stand-in for mesh proxies: publishes Istio- and Linkerd-shaped counters at known rates."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, start_http_server

ISTIO_LABELS = (
    "reporter",
    "source_workload",
    "source_workload_namespace",
    "destination_workload",
    "destination_workload_namespace",
)
LINKERD_LABELS = ("direction", "namespace", "deployment", "dst_namespace", "dst_deployment")


class MeshExporter:
    """Counters that grow at the given per-second rates, served on 127.0.0.1:<port>/metrics."""

    def __init__(
        self,
        istio_requests: Mapping[tuple[str, ...], float],
        istio_bytes: Mapping[tuple[str, ...], float],
        linkerd_requests: Mapping[tuple[str, ...], float],
        tick: float = 0.25,
    ) -> None:
        self.registry = CollectorRegistry()
        req = Counter("istio_requests", "Istio requests", ISTIO_LABELS, registry=self.registry)
        tcp = Counter("istio_tcp_sent_bytes", "Istio TCP bytes sent", ISTIO_LABELS, registry=self.registry)
        lk = Counter("request", "Linkerd requests", LINKERD_LABELS, registry=self.registry)
        self._series = [
            *((req.labels(*k), v) for k, v in istio_requests.items()),
            *((tcp.labels(*k), v) for k, v in istio_bytes.items()),
            *((lk.labels(*k), v) for k, v in linkerd_requests.items()),
        ]
        self._tick = tick
        self._stop = threading.Event()
        self.server, self.thread = start_http_server(0, addr="127.0.0.1", registry=self.registry)
        self.port = self.server.server_address[1]
        self._ticker = threading.Thread(target=self._run, daemon=True)
        self._ticker.start()

    def _run(self) -> None:
        while not self._stop.wait(self._tick):
            for counter, rate in self._series:
                counter.inc(rate * self._tick)

    def close(self) -> None:
        self._stop.set()
        self.server.shutdown()
