"""A real extender server per test, and a keep-alive HTTP client shaped like kube-scheduler's."""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from harmonic.extender.cache import ClusterCache
from harmonic.extender.engine import Extender
from harmonic.extender.server import ExtenderApp, ExtenderServer, ServerSettings, TLSSettings
from harmonic.framework.config import load_config
from harmonic.framework.interface import ClusterClient
from harmonic.plugins.registry import default_registry

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def compact(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class Client:
    """POSTs as Go's http.Client does for HTTPExtender.send: JSON body, Content-Type, keep-alive."""

    def __init__(self, server: ExtenderServer, context: ssl.SSLContext | None = None) -> None:
        self.prefix = "/scheduler"
        if context is not None:
            self.conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                "127.0.0.1", server.port, context=context, timeout=10
            )
        else:
            self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)

    def raw(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        self.conn.request(method, path, body, headers or {})
        r = self.conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data

    def post(self, verb: str, args: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        body = args if isinstance(args, bytes) else compact(args)
        status, _, data = self.raw(
            "POST", f"{self.prefix}/{verb}", body, {"Content-Type": "application/json", **(headers or {})}
        )
        return status, json.loads(data)

    def close(self) -> None:
        self.conn.close()


@contextmanager
def running(
    *,
    config: dict[str, Any] | None = None,
    cache: ClusterCache | None = None,
    client: ClusterClient | None = None,
    settings: ServerSettings | None = None,
    tls: TLSSettings | None = None,
    registry: Any = None,
    services: dict[str, Any] | None = None,
) -> Iterator[ExtenderServer]:
    reg = registry or default_registry()
    ext = Extender(
        load_config(config, reg, source="<test>"), reg, cache=cache, client=client, services=services
    )
    server = ExtenderServer(ExtenderApp(ext, settings), port=0, tls=tls)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def serve() -> Iterator[Callable[..., Client]]:
    """``client = serve(cache=..., client=..., settings=...)``: a started server and a client for it."""
    stack: list[tuple[Any, Client]] = []

    def start(**kwargs: Any) -> Client:
        ctx = running(**kwargs)
        server = ctx.__enter__()
        c = Client(server)
        stack.append((ctx, c))
        return c

    yield start
    for ctx, c in reversed(stack):
        c.close()
        ctx.__exit__(None, None, None)
