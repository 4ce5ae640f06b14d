"""The extender's HTTP(S) server: kube-scheduler's extender v1 verbs over ``Extender``, plus probes and
metrics.

Routes (``prefix`` defaults to ``/scheduler``, so kube-scheduler's ``urlPrefix`` is
``http(s)://HOST:PORT/scheduler`` and its verbs ``filter``, ``prioritize``, ``preempt``, ``bind``):

- ``POST {prefix}/filter|prioritize|preempt|bind``: 200 with the verb's result; 400 for a body that is
  not the protocol's shape (the message names the field); 401 without the bearer token when one is
  configured; 405 for another method; 413 for a body over ``max_body_bytes``; 500 when a verb without
  an ``Error`` field (prioritize, preempt) cannot answer. Error bodies are ``{"Error": "..."}``.
- ``GET /healthz`` (the process serves), ``GET /readyz`` (the cluster cache, if any, has synced and its
  informers can list and watch; ``?verbose`` also lists each signal, ok or degraded, which never fails it),
  ``GET /metrics`` (Prometheus text). These are never behind the token, so probes and scrapes work.

The server is uvicorn (httptools parser, uvloop event loop) driving a bare ASGI callable: no web
framework in the request path. Filter, prioritize and preempt run on one worker thread, one at a time
(they are CPU-bound and kube-scheduler sends them one at a time), so the event loop answers the probes
while a slow one runs; bind waits on the API server, so it runs on threads of its own. kube-scheduler cannot send bearer tokens to extenders; to authenticate it, serve TLS
with ``client_ca`` so that only clients with a certificate from that CA (kube-scheduler's
``tlsConfig.certFile``/``keyFile``) get through.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import signal
import ssl
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import FrameType
from typing import Any

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from harmonic.extender import wire
from harmonic.extender.engine import Extender, ExtenderError
from harmonic.extender.wire import WireError
from harmonic.feedback import MODEL_PATH
from harmonic.framework.decisions import endpoint as decisions_endpoint
from harmonic.serving import ServerThread, listening_socket
from harmonic.signals.feedback.intake import PATH as FEEDBACK_PATH
from harmonic.signals.feedback.intake import FeedbackIntake
from harmonic.signals.metrics import FRESHNESS
from harmonic.signals.metrics import exposition as signals_exposition

log = logging.getLogger(__name__)

DEFAULT_PORT = 8888
DEFAULT_PREFIX = "/scheduler"
#: 5,000 realistic nodes (labels, conditions, 20 images each) marshal to about 29 MiB in a
#: nodeCacheCapable: false request; 64 MiB leaves room for larger nodes at Kubernetes' 5,000-node limit.
DEFAULT_MAX_BODY_BYTES = 64 << 20
VERBS = ("filter", "prioritize", "preempt", "bind")
#: Recorded decisions, served when the extender records them (``--decisions-buffer``).
DECISIONS_PATH = "/debug/decisions"


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


@dataclass(frozen=True)
class ServerSettings:
    prefix: str = DEFAULT_PREFIX
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: Bearer token required on the verbs; None disables the check.
    token: str | None = None


class _TooLarge(Exception):
    pass


class _Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "harmonic_extender_requests",
            "Extender requests by verb and HTTP status code.",
            ("verb", "code"),
            registry=self.registry,
        )
        self.duration = Histogram(
            "harmonic_extender_request_duration_seconds",
            "Time to answer an extender request (body read to response built), by verb.",
            ("verb",),
            buckets=tuple(0.0005 * 2**i for i in range(15)),  # 0.5 ms .. 8 s
            registry=self.registry,
        )

    def render(self) -> bytes:
        # The signals' metrics (telemetry health, affinity graph) beside the extender's own.
        return generate_latest(self.registry) + signals_exposition()


class ExtenderApp:
    """The ASGI application."""

    def __init__(
        self,
        extender: Extender,
        settings: ServerSettings | None = None,
        feedback: FeedbackIntake | None = None,
        model: Callable[[str], tuple[int, bytes, str]] | None = None,
    ) -> None:
        self.extender = extender
        #: ``POST /v1/feedback`` goes here when set, and ``GET /debug/model`` to ``model`` (docs/feedback.md).
        self.feedback = feedback
        self.model = model
        self.settings = settings or ServerSettings()
        prefix = "/" + self.settings.prefix.strip("/") if self.settings.prefix.strip("/") else ""
        self._routes = {f"{prefix}/{verb}": verb for verb in VERBS}
        self._token = self.settings.token.encode() if self.settings.token else None
        self.metrics = _Metrics()
        #: Filter, prioritize and preempt run here, one at a time as kube-scheduler sends them, so the
        #: event loop stays free to answer /healthz and /readyz while a slow one runs (probes time out
        #: after 1 s, a verb over thousands of nodes can take longer).
        self._verbs = ThreadPoolExecutor(max_workers=1, thread_name_prefix="extender-verb")

    def close(self) -> None:
        """Stop the verbs' thread (after the server has stopped taking requests)."""
        self._verbs.shutdown(wait=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        verb = self._routes.get(path)
        if path == FEEDBACK_PATH and self.feedback is not None:
            await self._feedback(self.feedback, scope, receive, send, method)
            return
        if verb is None:
            await self._simple(scope, send, path, method)
            return
        if method != "POST":
            await _respond(send, 405, wire.encode_error(f"{path} takes POST"), [(b"allow", b"POST")])
            return
        start = time.perf_counter()
        code, body, extra = await self._verb(verb, scope, receive)
        await _respond(send, code, body, extra)
        self.metrics.requests.labels(verb, str(code)).inc()
        if code == 200:
            self.metrics.duration.labels(verb).observe(time.perf_counter() - start)

    async def _verb(
        self, verb: str, scope: Scope, receive: Receive
    ) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
        headers = dict(scope["headers"])
        if self._token is not None and not self._authorized(headers.get(b"authorization", b"")):
            return 401, wire.encode_error("missing or wrong bearer token"), [(b"www-authenticate", b"Bearer")]
        limit = self.settings.max_body_bytes
        try:
            declared = int(headers.get(b"content-length", b"-1"))
        except ValueError:
            return 400, wire.encode_error("Content-Length is not a number"), []
        too_large = wire.encode_error(f"request body is larger than the limit of {limit} bytes")
        if declared > limit:
            return 413, too_large, [(b"connection", b"close")]
        try:
            body = await _read_body(receive, limit)
        except _TooLarge:
            return 413, too_large, [(b"connection", b"close")]
        try:
            if verb == "bind":
                out = await asyncio.to_thread(self.extender.bind, body)
            else:
                run = getattr(self.extender, verb)
                out = await asyncio.get_running_loop().run_in_executor(self._verbs, run, body)
        except WireError as e:
            return 400, wire.encode_error(f"{verb}: {e}"), []
        except ExtenderError as e:
            return 500, wire.encode_error(f"{verb}: {e}"), []
        except Exception as e:  # a bug must answer 500, not drop the connection
            log.exception("extender %s failed", verb)
            return 500, wire.encode_error(f"{verb}: internal error: {type(e).__name__}: {e}"), []
        return 200, out, []

    async def _feedback(
        self, intake: FeedbackIntake, scope: Scope, receive: Receive, send: Send, method: str
    ) -> None:
        if method != "POST":
            await _respond(send, 405, b'{"error": "takes POST"}', [(b"allow", b"POST")])
            return
        try:
            body = await _read_body(receive, intake.max_body_bytes)
        except _TooLarge:
            body = b"x" * (intake.max_body_bytes + 1)  # the intake answers 413 (after authenticating)
        auth = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        code, doc, headers = intake.handle(auth, body)
        extra = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        await _respond(send, code, json.dumps(doc).encode(), extra)

    def _authorized(self, header: bytes) -> bool:
        assert self._token is not None
        scheme, _, value = header.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(value.strip(), self._token)

    async def _simple(self, scope: Scope, send: Send, path: str, method: str) -> None:
        if path == DECISIONS_PATH and self.extender.decisions is not None:
            await self._decisions(scope, send, method)
            return
        if path == MODEL_PATH and self.model is not None and method in ("GET", "HEAD"):
            code, body, ctype = self.model(scope.get("query_string", b"").decode())
            await _respond(send, code, body, content_type=ctype.encode())
            return
        if path not in ("/healthz", "/readyz", "/metrics"):
            await _respond(send, 404, wire.encode_error(f"no route {path}"))
            return
        if method not in ("GET", "HEAD"):
            await _respond(send, 405, wire.encode_error(f"{path} takes GET"), [(b"allow", b"GET, HEAD")])
            return
        if path == "/healthz":
            await _respond(send, 200, b"ok", content_type=b"text/plain")
        elif path == "/readyz":
            ready = self.extender.ready
            msg = "ok" if ready else "cluster cache not synced"
            if b"verbose" in scope.get("query_string", b""):
                cache = "[+]cache ok" if ready else "[-]cache failed: not synced"
                lines = [cache, *FRESHNESS.notes(), f"readyz check {'passed' if ready else 'failed'}"]
                msg = "\n".join(lines) + "\n"
            await _respond(send, 200 if ready else 503, msg.encode(), content_type=b"text/plain")
        else:
            await _respond(send, 200, self.metrics.render(), content_type=CONTENT_TYPE_LATEST.encode())

    async def _decisions(self, scope: Scope, send: Send, method: str) -> None:
        """The recorded filter / prioritize calls; behind the bearer token when one is configured."""
        if method not in ("GET", "HEAD"):
            await _respond(
                send, 405, wire.encode_error(f"{DECISIONS_PATH} takes GET"), [(b"allow", b"GET, HEAD")]
            )
            return
        if self._token is not None and not self._authorized(
            dict(scope["headers"]).get(b"authorization", b"")
        ):
            await _respond(
                send,
                401,
                wire.encode_error("missing or wrong bearer token"),
                [(b"www-authenticate", b"Bearer")],
            )
            return
        assert self.extender.decisions is not None
        code, body = decisions_endpoint(self.extender.decisions, scope.get("query_string", b"").decode())
        await _respond(send, code, body)


async def _read_body(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


async def _respond(
    send: Send,
    status: int,
    body: bytes,
    headers: list[tuple[bytes, bytes]] | None = None,
    content_type: bytes = b"application/json",
) -> None:
    hs = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": hs})
    await send({"type": "http.response.body", "body": body})


@dataclass(frozen=True)
class TLSSettings:
    cert_file: str
    key_file: str
    #: Require client certificates signed by this CA (mutual TLS); None accepts any client.
    client_ca_file: str | None = None

    def check(self) -> None:
        """Load the files as the server will, one at a time, so a bad one is named with its flag
        (uvicorn would fail later, at start, with a bare ``ssl.SSLError``). Raises ValueError."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        for flag, path in (("--tls-cert", self.cert_file), ("--tls-client-ca", self.client_ca_file)):
            if path is None:
                continue
            try:
                # A certificate file loads as verify locations iff it holds PEM certificates.
                ctx.load_verify_locations(cafile=path)
            except (ssl.SSLError, OSError) as e:
                raise ValueError(f"{flag} {path}: no PEM certificate in it ({_ssl_reason(e)})") from None
        try:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        except (ssl.SSLError, OSError) as e:
            raise ValueError(
                f"--tls-key {self.key_file}: not a PEM private key matching --tls-cert {self.cert_file} "
                f"({_ssl_reason(e)})"
            ) from None


def _ssl_reason(e: ssl.SSLError | OSError) -> str:
    return str(getattr(e, "reason", None) or e.strerror or e)


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _ignore_signal(signum: int, frame: FrameType | None) -> None:
    return None


class ExtenderServer(ServerThread):
    """uvicorn serving an ``ExtenderApp`` on ``bind:port`` (0 picks a free port)."""

    thread_name = "extender-http"

    def __init__(
        self,
        app: ExtenderApp,
        bind: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        tls: TLSSettings | None = None,
        log_level: str = "warning",
    ) -> None:
        self.app = app
        self.tls = tls
        self._sock = listening_socket(bind, port)
        self.host = bind
        self.port: int = self._sock.getsockname()[1]
        config = uvicorn.Config(
            app,
            loop="uvloop",
            http="httptools",
            lifespan="off",
            access_log=False,
            log_level=log_level,
            # uvicorn's few lines go through the process's own logging setup (JSON for the CLI).
            log_config=None,
            # kube-scheduler keeps connections to extenders alive (Go's 90 s idle timeout).
            timeout_keep_alive=90,
            ssl_certfile=tls.cert_file if tls else None,
            ssl_keyfile=tls.key_file if tls else None,
            ssl_ca_certs=tls.client_ca_file if tls else None,
            ssl_cert_reqs=ssl.CERT_REQUIRED if tls and tls.client_ca_file else ssl.CERT_NONE,
        )
        self._server = uvicorn.Server(config)

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    def run(self) -> None:
        """Serve until SIGINT/SIGTERM (uvicorn's handlers), finish in-flight requests, and return.

        After its graceful shutdown uvicorn raises the signal again for the handler that was installed
        before; on the main thread that is a no-op one during ``run``, so the caller gets to clean up
        (stop informers, log) and exit 0 instead of the process dying of the re-raised signal.
        """
        main = threading.current_thread() is threading.main_thread()
        previous = {sig: signal.signal(sig, _ignore_signal) for sig in _STOP_SIGNALS} if main else {}
        try:
            self._server.run(sockets=[self._sock])
        finally:
            self.app.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
