"""A fault-injecting reverse proxy between a client (Harmonic) and a Kubernetes API server.

The API-server double can fail requests itself (``ApiServerDouble.inject``), but a real kube-apiserver
cannot be asked to; this proxy makes the same faults in front of either, so one fault suite runs
against both (``tests/cluster/test_faults_live.py``). It listens on plain HTTP on 127.0.0.1 and
forwards to the upstream over HTTP or HTTPS (``upstream_tls``: the context that trusts the server and,
for client-certificate users, presents the certificate); the client's ``Authorization`` header is
passed through, so a bearer token works unchanged. ``kubeconfig`` writes a kubeconfig pointing at the
proxy.

Faults are ``Rule``s matched in order against each request (method, path regex, watch or not,
User-Agent substring, at most ``times`` hits):

- ``answer``: reply ``status`` without forwarding (429 with ``retry_after``, 403, 410 ``Expired``);
- ``too_large``: reply kube-apiserver's 504 "Too large resource version" (its ``ResourceVersionTooLarge``
  cause) to a list or watch that names a resourceVersion, as a restored etcd or a lagging watch cache does;
- ``hang``: hold the request, unforwarded, for ``seconds`` (or until ``clear``), then cut the connection;
- ``drop_answer``: forward it (the server *does* process it) and cut the connection instead of answering;
- ``stall``: matching watches (open ones too) are forwarded but their events are held back while the
  rule is active.

Beside the rules, ``cut_streams`` cuts every open watch at once (as an apiserver restart or a load
balancer failover does). A server "restarted with fresh state" is the backend's job (the double's
``recreate``; a real control plane's etcd wiped and restarted), with ``cut_streams`` around it.

Every forwarded request and every fault is counted (``stats``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import ssl
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

try:
    from aiohttp import ClientError, ClientSession, ClientTimeout, TCPConnector, web
except ImportError as e:  # an extra, not a runtime dependency of the scheduler
    raise ImportError("harmonic.testing.faultproxy needs aiohttp: pip install 'harmonic[testing]'") from e

T = TypeVar("T")

#: Headers that describe one hop, not the message (RFC 9110 7.6.1), plus the framing aiohttp redoes.
_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length", "host"}


@dataclass
class Rule:
    """One fault: requests matching every given criterion get ``action``."""

    action: str  # "answer", "too_large", "hang", "drop_answer", "stall"
    method: str | None = None
    path: str | None = None  # regex searched in the path
    watch: bool | None = None  # True: watches only; False: everything but watches
    agent: str | None = None  # substring of the User-Agent
    times: int | None = None  # None: until cleared
    status: int = 500  # for "answer"
    body: dict[str, Any] | None = None  # for "answer": the Status body (a generic one by default)
    retry_after: int | None = None  # for "answer": the Retry-After header
    seconds: float | None = None  # for "hang": None holds until the rule is cleared
    hits: int = 0
    active: asyncio.Event = field(default_factory=asyncio.Event)  # set while the rule applies

    def matches(self, method: str, path: str, is_watch: bool, agent: str) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        if self.method is not None and self.method != method:
            return False
        if self.path is not None and re.search(self.path, path) is None:
            return False
        if self.watch is not None and self.watch != is_watch:
            return False
        return self.agent is None or self.agent in agent


def status_body(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def too_large(asked: str, current: str = "1") -> dict[str, Any]:
    """kube-apiserver's 504 for a resourceVersion it has not reached."""
    return status_body(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {asked}, current: {current}",
        {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]},
    )


_REASONS = {403: "Forbidden", 404: "NotFound", 409: "Conflict", 410: "Expired", 429: "TooManyRequests"}


class FaultProxy:
    """The proxy, served from a background thread: ``with FaultProxy(upstream) as proxy: ...``."""

    def __init__(self, upstream: str, *, upstream_tls: ssl.SSLContext | None = None) -> None:
        self.upstream = upstream.rstrip("/")
        self.upstream_tls = upstream_tls
        self.url = ""
        self.stats: Counter[str] = Counter()
        self._rules: list[Rule] = []
        self._streams: set[asyncio.Transport] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._session: ClientSession | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FaultProxy:
        started: Future[None] = Future()

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._serve(started))
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=main, name="fault-proxy", daemon=True)
        self._thread.start()
        started.result(timeout=10)
        return self

    async def _serve(self, started: Future[None]) -> None:
        try:
            ssl_arg: ssl.SSLContext | bool = self.upstream_tls if self.upstream_tls is not None else False
            self._session = ClientSession(
                connector=TCPConnector(ssl=ssl_arg, limit=0),
                timeout=ClientTimeout(total=None, sock_read=None),
                auto_decompress=False,
            )
            app = web.Application(client_max_size=256 * 1024 * 1024)
            app.router.add_route("*", "/{tail:.*}", self._handle)
            self._runner = web.AppRunner(
                app, access_log=None, shutdown_timeout=0.5, handler_cancellation=True
            )
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            server = site._server
            assert server is not None
            port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
            self.url = f"http://127.0.0.1:{port}"
            started.set_result(None)
        except BaseException as e:
            started.set_exception(e)
            raise

    def stop(self) -> None:
        loop = self._loop
        if loop is None or self._thread is None:
            return

        async def shutdown() -> None:
            for rule in self._rules:
                rule.active.clear()
            for t in list(self._streams):
                t.abort()
            assert self._runner is not None and self._session is not None
            await self._runner.cleanup()
            await self._session.close()

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=10)
        self._loop = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def kubeconfig(self, path: str | Path, token: str | None) -> Path:
        """A kubeconfig pointing at the proxy, authenticating with ``token`` (passed through)."""
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "proxy", "cluster": {"server": self.url}}],
            "users": [{"name": "u", "user": {"token": token} if token else {}}],
            "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "u"}}],
            "current-context": "proxy",
        }
        p = Path(path)
        p.write_text(json.dumps(doc))
        return p

    # ------------------------------------------------------------------ faults (from any thread)
    def _call(self, fn: Callable[[], T]) -> T:
        loop = self._loop
        if loop is None:
            raise RuntimeError("the fault proxy is not running")

        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), loop).result(timeout=10)

    def add(self, rule: Rule) -> Rule:
        """Start applying ``rule`` (after the ones already there); returns it so a test can read ``hits``."""

        def run() -> Rule:
            rule.active = asyncio.Event()
            rule.active.set()
            self._rules.append(rule)
            return rule

        return self._call(run)

    def answer(
        self, status: int, *, retry_after: int | None = None, body: dict[str, Any] | None = None, **match: Any
    ) -> Rule:
        return self.add(Rule("answer", status=status, retry_after=retry_after, body=body, **match))

    def too_large(self, **match: Any) -> Rule:
        return self.add(Rule("too_large", status=504, **match))

    def hang(self, seconds: float | None = None, **match: Any) -> Rule:
        return self.add(Rule("hang", seconds=seconds, **match))

    def drop_answer(self, **match: Any) -> Rule:
        return self.add(Rule("drop_answer", **match))

    def stall(self, **match: Any) -> Rule:
        return self.add(Rule("stall", watch=True, **match))

    def clear(self, rule: Rule | None = None) -> None:
        """Stop applying ``rule`` (every rule when None): held requests and stalled watches resume."""

        def run() -> None:
            for r in [rule] if rule is not None else list(self._rules):
                r.active.clear()
                with contextlib.suppress(ValueError):
                    self._rules.remove(r)

        self._call(run)

    def cut_streams(self) -> int:
        """Cut every open watch connection (no final chunk: the client sees a broken stream)."""

        def run() -> int:
            streams = list(self._streams)
            for t in streams:
                t.abort()
            return len(streams)

        return self._call(run)

    # ------------------------------------------------------------------ serving
    def _match(self, request: web.Request, is_watch: bool) -> Rule | None:
        agent = request.headers.get("User-Agent", "")
        for rule in self._rules:
            if rule.action == "stall":
                continue  # applied while streaming (_stalled)
            if rule.action == "too_large" and request.query.get("resourceVersion") in (None, "", "0"):
                continue
            if rule.matches(request.method, request.path, is_watch, agent):
                rule.hits += 1
                self.stats[rule.action] += 1
                return rule
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        is_watch = request.method == "GET" and request.query.get("watch") in ("1", "true")
        rule = self._match(request, is_watch)
        if rule is not None and rule.action == "too_large":
            return web.json_response(too_large(request.query["resourceVersion"]), status=504)
        if rule is not None and rule.action == "answer":
            body = rule.body or status_body(
                rule.status, _REASONS.get(rule.status, "InternalError"), "injected fault"
            )
            headers = {"Retry-After": str(rule.retry_after)} if rule.retry_after is not None else None
            return web.json_response(body, status=rule.status, headers=headers)
        if rule is not None and rule.action == "hang":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(_cleared(rule), rule.seconds)
            _abort(request)
            return web.Response(status=499)
        self.stats["forwarded"] += 1
        data = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        try:
            return await self._forward(request, rule, is_watch, headers, data)
        except ClientError:
            _abort(request)  # the server cannot be reached: the client's connection fails too
            return web.Response(status=502)

    async def _forward(
        self, request: web.Request, rule: Rule | None, is_watch: bool, headers: dict[str, str], data: bytes
    ) -> web.StreamResponse:
        assert self._session is not None
        async with self._session.request(
            request.method, self.upstream + request.path_qs, headers=headers, data=data or None
        ) as up:
            out_headers = {k: v for k, v in up.headers.items() if k.lower() not in _HOP}
            if rule is not None and rule.action == "drop_answer":
                await up.read()  # the server has processed it; the client never hears back
                _abort(request)
                return web.Response(status=499)
            if not is_watch or up.status != 200:
                return web.Response(body=await up.read(), status=up.status, headers=out_headers)
            resp = web.StreamResponse(status=up.status, headers=out_headers)
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            transport = request.transport
            if transport is not None:
                self._streams.add(transport)
            try:
                async for chunk in up.content.iter_any():
                    while (stall := self._stalled(request)) is not None:
                        await _cleared(stall)
                    await resp.write(chunk)
                await resp.write_eof()
            except ClientError:
                _abort(request)  # the server's side broke: so does the client's, not a clean end
            except ConnectionResetError:
                pass
            finally:
                if transport is not None:
                    self._streams.discard(transport)
            return resp

    def _stalled(self, request: web.Request) -> Rule | None:
        agent = request.headers.get("User-Agent", "")
        for rule in self._rules:
            stalls = rule.action == "stall" and rule.active.is_set()
            if stalls and rule.matches(request.method, request.path, True, agent):
                self.stats["stalled chunks"] += 1
                return rule
        return None


async def _cleared(rule: Rule) -> None:
    while rule.active.is_set():
        await asyncio.sleep(0.05)


def _abort(request: web.Request) -> None:
    if request.transport is not None:
        request.transport.abort()
