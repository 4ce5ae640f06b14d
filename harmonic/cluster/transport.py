"""HTTP to the Kubernetes API server: the official client's configuration, lean requests, raw JSON.

The official ``kubernetes`` client loads kubeconfig files (contexts, client certificates, exec and
auth-provider credential plugins with refresh) and in-cluster service-account config (token
rotation); ``Transport`` takes from it the server address, the TLS settings and the Authorization
header. Two of its parts are not used, by measurement (``benchmarks/k8s_client_cost.py``):

- its typed models: decoding a pod into them costs 0.25-1.3 ms (vs ~0.05-0.1 ms for the JSON itself),
  a scheduling cycle or more, so
  bodies stay JSON and are compiled straight into Harmonic's views (``harmonic.api``);
- its urllib3 request path: it costs 2-3x the CPU of a plain ``http.client`` request per call (it
  sends headers and body in separate writes, and re-reads the whole configuration to get the token),
  and a scheduler makes one or two calls per pod. Requests go over one persistent connection per
  thread instead (``http1.Connection``: one write per request, about half the CPU of ``http.client``'s
  request path, 91 against 197 us per Event POST to the API-server double), with TLS from the same
  configuration; the Authorization header is re-read every 10 s, and at once after a 401, and the
  header block is written once per content type and token. Watches are opened with ``http.client``
  and their chunked body is then read straight from the connection (``WatchStream``).

Bodies are JSON both ways (msgspec's codec). The protobuf content type kube-scheduler asks for was
not taken up: decoding is a few percent of the live scheduler's CPU (``benchmarks/live_scheduler.py``,
the pod informer's thread is ~6 % of it, decoding only part of that), and the official Python client
has no protobuf support: it would take bindings generated from k8s.io/api's .proto files, kept in
step with every Kubernetes release, for a few percent at most.

``Transport.request`` returns the decoded body or raises ``ApiStatusError`` (a non-2xx answer, with
the server's ``Status`` reason and message) or ``TransportError`` (no answer). Requests pass a
client-side token bucket, as client-go's ``QPS``/``Burst`` (``clientConnection`` in the scheduler
configuration).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import msgspec
import yaml
from kubernetes import client as kclient
from kubernetes import config as kconfig
from kubernetes.config import incluster_config
from kubernetes.config.config_exception import ConfigException

from harmonic import __version__
from harmonic.cluster import http1
from harmonic.cluster.kubeconfig import Kubeconfig, KubeconfigError, check_kubeconfig

log = logging.getLogger(__name__)

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
DEFAULT_TIMEOUT = 30.0
#: msgspec's JSON codec gives the same Python objects as the json module at about half the CPU
#: (watch events and list pages are most of what an informer spends).
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
AUTH_CACHE_SECONDS = 10.0
#: client-go's rest client repeats a request whose answer asks for it (429, or 5xx with a
#: ``Retry-After`` header) at most this many times (``rest.Request``'s default ``maxRetries``).
MAX_RETRIES = 10
#: Harmonic's own bound on one ``Retry-After`` wait (client-go has none): a server asking for an hour
#: must not park a binder or an informer thread that long.
MAX_RETRY_AFTER = 60.0


class ClientConfigError(ValueError):
    """No usable cluster configuration (kubeconfig or in-cluster)."""


class TransportError(ConnectionError):
    """The request got no HTTP answer (connection refused or reset, timeout)."""


class ApiStatusError(Exception):
    """The API server answered with a non-2xx status; fields from its ``Status`` body."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details or {})
        #: Seconds the server asked to wait before retrying (its ``Retry-After`` header), if it did.
        self.retry_after = retry_after

    @classmethod
    def from_body(cls, code: int, body: bytes, retry_after: str | None = None) -> ApiStatusError:
        wait = retry_after_seconds(retry_after)
        try:
            st = json.loads(body)
        except ValueError:
            st = None
        if isinstance(st, dict) and st.get("kind") == "Status":
            return cls(
                int(st.get("code") or code),
                str(st.get("reason") or ""),
                str(st.get("message") or ""),
                st.get("details") if isinstance(st.get("details"), dict) else None,
                wait,
            )
        text = body[:200].decode("utf-8", "replace").strip()
        return cls(code, "", text or f"HTTP {code}", None, wait)

    @property
    def causes(self) -> list[Mapping[str, Any]]:
        causes = self.details.get("causes")
        return [c for c in causes if isinstance(c, Mapping)] if isinstance(causes, list) else []

    @property
    def expired(self) -> bool:
        """410 Gone or reason ``Expired``: the resourceVersion asked for is older than the server keeps
        (client-go's ``isExpiredError``)."""
        return self.code == 410 or self.reason in ("Expired", "Gone")

    @property
    def too_large_resource_version(self) -> bool:
        """The resourceVersion asked for is newer than the server has (its etcd was restored or
        recreated, or its watch cache lags): client-go's ``isTooLargeResourceVersionError``, by the
        ``ResourceVersionTooLarge`` cause or, from servers before 1.18.6, a 504 naming it."""
        if any(c.get("reason") == "ResourceVersionTooLarge" for c in self.causes):
            return True
        if self.code != 504 and self.reason != "Timeout":
            return False
        return "Too large resource version" in self.message or any(
            c.get("message") == "Too large resource version" for c in self.causes
        )

    @property
    def throttled(self) -> bool:
        """A 429, or a 5xx with ``Retry-After``: client-go's ``checkWait`` — the server did not process
        the request and says when to send it again, so even a non-idempotent POST may be repeated."""
        return self.retry_after is not None and (self.code == 429 or self.code >= 500)

    @property
    def retriable(self) -> bool:
        """Worth retrying unchanged: throttled, server errors, timeouts."""
        return self.code == 429 or self.code >= 500


class RateLimiter:
    """A token bucket: ``qps`` tokens per second, at most ``burst`` saved; ``qps < 0`` disables it."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Take a token, sleeping until one is available; returns the seconds waited."""
        if self.qps < 0:
            return 0.0
        qps = self.qps or 5.0  # client-go's default when unset
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * qps)
            self._last = now
            self._tokens -= 1
            wait = -self._tokens / qps if self._tokens < 0 else 0.0
        if wait > 0:
            time.sleep(wait)
        return wait


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header as client-go reads it (whole seconds; anything else is no header)."""
    if value is None:
        return None
    try:
        seconds = int(value.strip())
    except ValueError:
        return None
    return float(min(max(seconds, 0), MAX_RETRY_AFTER))


def load_client(kubeconfig: str | None = None, context: str | None = None) -> kclient.ApiClient:
    """An ``ApiClient`` from ``kubeconfig`` (a path), else the in-cluster service account, else
    ``$KUBECONFIG``/``~/.kube/config``."""
    cfg = kclient.Configuration()
    try:
        if kubeconfig:
            checked = check_kubeconfig(kubeconfig, context)
            with _library_errors() as errors:
                kconfig.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)  # type: ignore[no-untyped-call]
            _check_exec_credentials(kubeconfig, checked, context, cfg, errors)
        else:
            try:
                kconfig.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
            except ConfigException:
                files = _kubeconfig_paths()
                for f in files:
                    checked = check_kubeconfig(f, context, selected=len(files) == 1)
                with _library_errors() as errors:
                    kconfig.load_kube_config(context=context, client_configuration=cfg)  # type: ignore[no-untyped-call]
                if len(files) == 1:
                    _check_exec_credentials(files[0], checked, context, cfg, errors)
    except KubeconfigError as e:
        raise ClientConfigError(f"cannot load cluster configuration from {e}") from None
    except (ConfigException, OSError, ValueError, yaml.YAMLError) as e:
        where = kubeconfig or "in-cluster config, $KUBECONFIG or ~/.kube/config"
        raise ClientConfigError(f"cannot load cluster configuration from {where}: {e}") from None
    return kclient.ApiClient(configuration=cfg)


@contextlib.contextmanager
def _library_errors() -> Iterator[list[str]]:
    """The error lines the client library logs (on the root logger) while loading: it reports a
    credential plugin that failed that way, then goes on without credentials."""
    lines: list[str] = []

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.ERROR:
                lines.append(" ".join(record.getMessage().split()))

    handler = _Keep()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lines
    finally:
        root.removeHandler(handler)


def _check_exec_credentials(
    path: str, checked: Kubeconfig, context: str | None, cfg: kclient.Configuration, errors: list[str]
) -> None:
    """A user whose exec credential plugin ran but gave no credentials is an error at start (client-go
    fails every request with the plugin's error; the Python client would send them unauthenticated)."""
    name = context or checked.current_context
    user = next((c.context.user for c in checked.contexts or () if c.name == name), "")
    auth = next((u.user for u in checked.users or () if u.name == user), None)
    if auth is None or auth.exec is None:
        return
    if cfg.api_key.get("BearerToken") or cfg.cert_file:
        return
    why = "; ".join(errors) or "no token and no client certificate in its output"
    raise KubeconfigError(
        f"{path}: users[{user!r}].exec: the credential plugin {auth.exec.command} gave no credentials: {why}"
    )


def cluster_config_found() -> bool:
    """Whether ``load_client(None)`` has anything to load: the in-cluster service account (its
    environment variable and mounted token) or a kubeconfig file ($KUBECONFIG's paths, else
    ~/.kube/config). Lets a component that can also work without a cluster tell "no cluster
    configured" from "configured but broken" (which ``load_client`` reports)."""
    if os.environ.get(incluster_config.SERVICE_HOST_ENV_NAME) and os.path.exists(
        incluster_config.SERVICE_TOKEN_FILENAME
    ):
        return True
    return bool(_kubeconfig_paths())


def _kubeconfig_paths() -> list[str]:
    """The kubeconfig files client-go would merge: $KUBECONFIG's that exist, else ~/.kube/config."""
    paths = os.environ.get("KUBECONFIG", "")
    candidates = [p for p in paths.split(os.pathsep) if p] if paths else ["~/.kube/config"]
    return [os.path.expanduser(p) for p in candidates if os.path.isfile(os.path.expanduser(p))]


def _ssl_context(cfg: kclient.Configuration) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None, cadata=cfg.ca_cert_data or None)
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file or None)
    if not cfg.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif cfg.assert_hostname is False:
        ctx.check_hostname = False
    return ctx


class _HTTPSConnection(http.client.HTTPSConnection):
    """HTTPS with a TLS server name other than the host (kubeconfig ``tls-server-name``)."""

    def __init__(
        self, host: str, port: int | None, timeout: float, context: ssl.SSLContext, sni: str | None
    ) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._sni = sni
        self._ctx = context

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._ctx.wrap_socket(self.sock, server_hostname=self._sni or self.host)


class Transport:
    """Requests to one API server, rate-limited, over per-thread persistent connections."""

    def __init__(
        self,
        api: kclient.ApiClient,
        *,
        qps: float = 50.0,
        burst: int = 100,
        user_agent: str = f"harmonic/{__version__}",
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        cfg = api.configuration
        if cfg.proxy:
            raise ClientConfigError(f"HTTP proxies are not supported (configured: {cfg.proxy})")
        url = urlsplit(cfg.host)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ClientConfigError(f"server address {cfg.host!r} is not an http(s) URL")
        self.api = api
        self.host = cfg.host.rstrip("/")
        self._hostname, self._port = url.hostname, url.port
        self._prefix = url.path.rstrip("/")
        try:
            self._tls = _ssl_context(cfg) if url.scheme == "https" else None
        except (ssl.SSLError, OSError, ValueError) as e:
            raise ClientConfigError(f"TLS settings for {cfg.host} cannot be used: {e}") from None
        self._sni = cfg.tls_server_name or None
        self.limiter = RateLimiter(qps, burst)
        #: How many times an answer asking for a retry is retried (``request``, ``stream``).
        self.max_retries = MAX_RETRIES
        #: Waits out a ``Retry-After`` (tests record the waits instead).
        self.sleep: Callable[[float], None] = time.sleep
        self.user_agent = user_agent
        self.timeout = timeout
        self._local = threading.local()
        self._auth_lock = threading.Lock()
        self._auth_headers: dict[str, str] = {}
        #: Content type -> (the auth headers it was written with, the header block).
        self._blocks: dict[str | None, tuple[dict[str, str], bytes]] = {}
        self._auth_expires = 0.0

    @property
    def tls_context(self) -> ssl.SSLContext | None:
        """The TLS settings of the configuration (server CA, client certificate), None for plain HTTP:
        what a proxy standing in for this client presents to the same server."""
        return self._tls

    def with_limits(self, qps: float, burst: int, user_agent: str | None = None) -> Transport:
        """A transport to the same server with its own rate limit (client-go gives the event recorder
        its own client, so events never starve binds)."""
        other = Transport(
            self.api, qps=qps, burst=burst, user_agent=user_agent or self.user_agent, timeout=self.timeout
        )
        other.max_retries = self.max_retries
        return other

    # ------------------------------------------------------------------ connections and auth
    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection
        if self._tls is not None:
            conn = _HTTPSConnection(self._hostname, self._port, timeout, self._tls, self._sni)
        else:
            conn = http.client.HTTPConnection(self._hostname, self._port, timeout=timeout)
        conn.connect()
        assert conn.sock is not None
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        return conn

    def _auth(self) -> dict[str, str]:
        """The Authorization header, asked of the client at most every ``AUTH_CACHE_SECONDS``: the
        client re-reads its whole configuration on each ask (exec plugins, rotated in-cluster tokens),
        which would cost more than the request itself."""
        now = time.monotonic()
        with self._auth_lock:
            if now >= self._auth_expires:
                headers: dict[str, str] = {}
                self.api.update_params_for_auth(headers, None, ["BearerToken"], "", "GET", None)
                self._auth_headers, self._auth_expires = headers, now + AUTH_CACHE_SECONDS
            return self._auth_headers

    def _forget_auth(self) -> None:
        with self._auth_lock:
            self._auth_expires = 0.0

    def _header_block(self, content_type: str | None) -> bytes:
        """``_headers`` as ``http1`` sends them, written once per content type and token."""
        auth = self._auth()
        cached = self._blocks.get(content_type)
        if cached is None or cached[0] is not auth:
            cached = self._blocks[content_type] = (auth, http1.header_block(self._headers(content_type)))
        return cached[1]

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": JSON, "User-Agent": self.user_agent, **self._auth()}
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def url(self, path: str, query: Mapping[str, Any] | None = None) -> str:
        """The request target (path and query) for ``path`` under the server's base path."""
        target = self._prefix + path
        if not query:
            return target
        q = {k: ("true" if v is True else str(v)) for k, v in query.items() if v is not None and v != ""}
        return f"{target}?{urlencode(q)}" if q else target

    # ------------------------------------------------------------------ calls
    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | None = None,
        decode: bool = True,
        deadline: float | None = None,
    ) -> Any:
        """One API call; the decoded JSON answer (None with ``decode=False``: for writes whose answer
        nobody reads, a Binding's or an Event's). Raises ``ApiStatusError`` or ``TransportError``.

        An answer that asks to be retried (``ApiStatusError.throttled``: 429, or 5xx with
        ``Retry-After``) is sent again after the wait it names, up to ``MAX_RETRIES`` times, whatever the
        verb, as client-go's rest client does, except a "too large resource version" answer: client-go
        waits that one out too (ten times kube-apiserver's 3 s wait and 1 s Retry-After), but a server
        restored to an older state will not catch up, and the caller's relist from scratch (a consistent
        read) does not need it to. ``deadline`` (``time.monotonic()``) bounds the whole call,
        retries included: a wait that would pass it ends the call with the last answer."""
        data = _encode(body) if body is not None else None
        target = self.url(path, query)
        timeout = timeout or self.timeout
        for retry in range(self.max_retries + 1):
            self.limiter.acquire()
            attempt_timeout = timeout
            if deadline is not None:
                attempt_timeout = min(timeout, deadline - time.monotonic())
                if attempt_timeout <= 0:
                    raise TransportError(f"{method} {path}: deadline exceeded")
            status, payload, retry_after = self._send(
                method, path, target, data, content_type, attempt_timeout
            )
            if 200 <= status < 300:
                break
            err = ApiStatusError.from_body(status, payload, retry_after)
            wait = err.retry_after
            if (
                not err.throttled
                or wait is None
                or err.too_large_resource_version
                or retry >= self.max_retries
            ):
                raise err
            if deadline is not None and time.monotonic() + wait >= deadline:
                raise err
            log.debug("%s %s: %s; retrying in %g s", method, path, err, wait)
            self.sleep(wait)
        if not payload or not decode:
            return None
        try:
            return _decode(payload)
        except msgspec.DecodeError:
            raise TransportError(f"{method} {path}: answer is not JSON") from None

    def _send(
        self, method: str, path: str, target: str, data: bytes | None, content_type: str, timeout: float
    ) -> tuple[int, bytes, str | None]:
        """One request on this thread's connection: (status, body, Retry-After)."""
        status, payload, retry_after = 0, b"", None
        auth_retried = False
        for attempt in range(3):
            conn: http1.Connection | None = getattr(self._local, "conn", None)
            reused = conn is not None
            try:
                if conn is None:
                    conn = self._local.conn = http1.Connection(
                        self._hostname, self._port, timeout, self._tls, self._sni
                    )
                else:
                    conn.settimeout(timeout)
                resp = conn.request(
                    method, target, self._header_block(content_type if data is not None else None), data
                )
                payload, status, retry_after = resp.body, resp.status, resp.retry_after
                if resp.will_close:
                    self._drop(conn)
            except (http1.RemoteClosed, ConnectionResetError, BrokenPipeError) as e:
                if conn is not None:
                    self._drop(conn)
                if reused and attempt == 0:
                    continue  # the server closed an idle kept-alive connection: one retry, on a new one
                raise TransportError(f"{method} {path}: {e}") from None
            except (OSError, http1.ProtocolError) as e:
                if conn is not None:
                    self._drop(conn)
                raise TransportError(f"{method} {path}: {e or type(e).__name__}") from None
            if status == 401 and not auth_retried:
                auth_retried = True
                self._forget_auth()  # the cached token may have expired: fetch a fresh one, once
                continue
            break
        return status, payload, retry_after

    def _drop(self, conn: http1.Connection) -> None:
        with contextlib.suppress(OSError):
            conn.close()
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None

    def stream(self, path: str, query: Mapping[str, Any], read_timeout: float) -> WatchStream:
        """Open a watch (GET with ``watch=true``) on a connection of its own; iterate the returned
        stream for decoded events."""
        target = self.url(path, {**query, "watch": "true"})
        auth_retried = False
        retries = 0
        while True:
            self.limiter.acquire()
            try:
                conn = self._connect(read_timeout)
                conn.request("GET", target, headers=self._headers(None))
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                raise TransportError(f"watch {path}: {e or type(e).__name__}") from None
            if resp.status == 200:
                return WatchStream(conn, resp, path)
            try:
                body = resp.read()
            except (OSError, http.client.HTTPException):
                body = b""
            conn.close()
            if resp.status == 401 and not auth_retried:
                auth_retried = True
                self._forget_auth()
                continue
            err = ApiStatusError.from_body(resp.status, body, resp.getheader("Retry-After"))
            if (
                not err.throttled
                or err.retry_after is None
                or err.too_large_resource_version
                or retries >= self.max_retries
            ):
                raise err
            retries += 1  # as a request: wait as asked, then ask again (client-go's Watch)
            self.sleep(err.retry_after)


class WatchStream:
    """The events of one watch response, decoded line by line; ``close()`` unblocks a pending read."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, path: str) -> None:
        self._conn = conn
        self._resp = resp
        self._path = path
        self._closed = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        lines = self._chunked_lines() if self._resp.chunked else self._plain_lines()
        try:
            while True:
                try:
                    line = next(lines, b"")
                except (OSError, http.client.HTTPException, ValueError, AttributeError) as e:
                    if self._closed:
                        return
                    raise TransportError(f"watch {self._path} broke: {e or type(e).__name__}") from None
                if not line:
                    return  # the server ended the watch
                if line.strip():
                    yield _decode_event(line, self._path)
        finally:
            self.close()

    def _plain_lines(self) -> Iterator[bytes]:
        while line := self._resp.readline():
            yield line

    def _chunked_lines(self) -> Iterator[bytes]:
        """The lines of a chunked body, read straight from the connection: ``http.client`` decodes
        chunks in Python a few calls at a time, a quarter of the pod informer's time when a watch
        carries hundreds of events a second. The API server flushes one event per chunk, so a chunk
        is mostly one line; lines split across chunks are joined."""
        fp = self._resp.fp
        if fp is None:
            raise ValueError("the watch response is closed")
        pending = b""
        while True:
            size_line = fp.readline(http1.MAX_LINE + 1)
            if not size_line or len(size_line) > http1.MAX_LINE:
                raise http.client.IncompleteRead(pending)
            size = int(size_line.split(b";", 1)[0].strip(), 16)  # ValueError: not chunked framing
            if size == 0:
                while fp.readline(http1.MAX_LINE + 1) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                if pending:
                    yield pending
                return
            data = fp.read(size + 2)
            if len(data) < size + 2:
                raise http.client.IncompleteRead(data)
            data = pending + data[:size] if pending else data[:size]
            start = 0
            while (end := data.find(b"\n", start) + 1) > 0:
                yield data[start:end]
                start = end
            pending = data[start:]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Shut the socket first: a thread blocked reading it returns at once.
        sock = self._conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._conn.close()


def _decode_event(line: bytes, path: str) -> dict[str, Any]:
    try:
        ev = _decode(line)
    except msgspec.DecodeError:
        raise TransportError(f"watch {path}: undecodable event {line[:80]!r}") from None
    if (
        not isinstance(ev, dict)
        or not isinstance(ev.get("type"), str)
        or not isinstance(ev.get("object"), dict)
    ):
        raise TransportError(f"watch {path}: malformed event {line[:80]!r}")
    return ev


#: What ``quote`` leaves as it is: every valid Kubernetes name and namespace (DNS labels and subdomains).
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~-]+")


def _segment(text: str) -> str:
    return text if _UNQUOTED.fullmatch(text) else quote(text, safe="")


def object_path(api_version: str, plural: str, namespace: str | None = None, name: str | None = None) -> str:
    """``/api/v1/namespaces/ns/pods/name`` or ``/apis/group/version/...``."""
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    if namespace:
        base += f"/namespaces/{_segment(namespace)}"
    base += f"/{plural}"
    if name:
        base += f"/{_segment(name)}"
    return base
