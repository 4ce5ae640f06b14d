"""The scheduler's HTTP endpoints: ``/metrics`` (Prometheus text format), ``/healthz``, ``/livez``,
``/readyz``, and any extra GET routes the caller adds (``/debug/decisions``), on a thread. With a TLS
context and a ``DelegatedAuth`` it is kube-scheduler's secure port: HTTPS, every request authenticated
and authorized through the API server (``harmonic.cluster.delegated``) except the POST routes, which
check their own credentials (the feedback intake's token). Each check is a callable returning None (ok) or the reason it fails,
and a failing endpoint answers 500 with ``[-]name failed: reason`` lines, as Kubernetes components do.
``/readyz?verbose`` also lists the caller's notes (degraded optional signals), which never fail it.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client.exposition import CONTENT_TYPE_LATEST

from harmonic.cluster.delegated import AUTHENTICATED, DelegatedAuth, User

log = logging.getLogger(__name__)

Check = Callable[[], str | None]
#: Another GET endpoint: the query string -> (status, body, content type).
Route = Callable[[str], tuple[int, bytes, str]]
#: A POST endpoint: (Authorization header, body) -> (status, body, content type, extra headers).
PostRoute = Callable[[str, bytes], tuple[int, bytes, str, Mapping[str, str]]]
#: Bodies of POST routes are refused past this size before they are read.
MAX_POST_BYTES = 1 << 20


class HealthServer:
    def __init__(
        self,
        host: str,
        port: int,
        metrics: Callable[[], bytes],
        healthz: Mapping[str, Check],
        readyz: Mapping[str, Check],
        routes: Mapping[str, Route] | None = None,
        post_routes: Mapping[str, PostRoute] | None = None,
        notes: Callable[[], list[str]] | None = None,
        tls: ssl.SSLContext | None = None,
        auth: DelegatedAuth | None = None,
    ) -> None:
        self._metrics = metrics
        self._auth = auth
        #: Lines added to ``/readyz?verbose`` that never fail it (degraded optional signals).
        self._notes = notes
        self._routes = dict(routes or {})
        self._post_routes = dict(post_routes or {})
        self._checks = {"/healthz": healthz, "/livez": healthz, "/readyz": {**healthz, **readyz}}
        server = self

        class Handler(BaseHTTPRequestHandler):
            # a client that stalls (or never finishes its TLS handshake) holds one thread, not forever
            timeout = 60

            def do_GET(self) -> None:
                if server._admitted(self):
                    server._serve(self)

            def do_POST(self) -> None:
                if self.path.partition("?")[0] in server._post_routes or server._admitted(self):
                    server._post(self)

            def log_message(self, format: str, *args: object) -> None:
                return None

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: object, client_address: object) -> None:
                # failed TLS handshakes and clients gone mid-answer are the client's business
                log.debug("request failed", extra={"client": str(client_address)}, exc_info=True)

        self.httpd = Server((host, port), Handler)
        if tls is not None:
            # the handshake happens on the handler's thread (first read), not in the accept loop
            self.httpd.socket = tls.wrap_socket(
                self.httpd.socket, server_side=True, do_handshake_on_connect=False
            )
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def start(self) -> None:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="health", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _admitted(self, req: BaseHTTPRequestHandler) -> bool:
        """Whether delegated authentication and authorization let the request through; if not, the
        401/403 is answered here with kube-apiserver's Status body."""
        if self._auth is None:
            return True
        denial = self._auth.check(
            req.command,
            req.path.partition("?")[0],
            req.headers.get("Authorization") or "",
            _cert_user(req),
        )
        if denial is None:
            return True
        reason = {401: "Unauthorized", 403: "Forbidden"}.get(denial.code, "InternalError")
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": denial.message,
            "reason": reason,
            "details": {},
            "code": denial.code,
        }
        self._reply(req, denial.code, json.dumps(status).encode(), "application/json")
        return False

    def _serve(self, req: BaseHTTPRequestHandler) -> None:
        path, _, query = req.path.partition("?")
        route = self._routes.get(path)
        if route is not None:
            self._reply(req, *route(query))
            return
        if path == "/metrics":
            self._reply(req, 200, self._metrics(), CONTENT_TYPE_LATEST)
            return
        checks = self._checks.get(path)
        if checks is None:
            self._reply(req, 404, b"404 page not found\n", "text/plain; charset=utf-8")
            return
        lines, ok = [], True
        for name, check in checks.items():
            try:
                why = check()
            except Exception as e:  # a broken check is a failing check, not a broken endpoint
                why = f"check raised {e!r}"
            if why is None:
                lines.append(f"[+]{name} ok")
            else:
                ok = False
                lines.append(f"[-]{name} failed: {why}")
        verbose = "verbose" in req.path
        if path == "/readyz" and self._notes is not None:
            lines += self._notes()
        if ok:
            body = ("\n".join(lines) + f"\n{path[1:]} check passed\n") if verbose else "ok"
            self._reply(req, 200, body.encode(), "text/plain; charset=utf-8")
        else:
            self._reply(
                req,
                500,
                ("\n".join(lines) + f"\n{path[1:]} check failed\n").encode(),
                "text/plain; charset=utf-8",
            )

    def _post(self, req: BaseHTTPRequestHandler) -> None:
        route = self._post_routes.get(req.path.partition("?")[0])
        if route is None:
            self._reply(req, 404 if req.path not in self._routes else 405, b"", "text/plain; charset=utf-8")
            return
        try:
            length = int(req.headers.get("Content-Length") or "0")
        except ValueError:
            length = -1
        if length < 0 or length > MAX_POST_BYTES:
            req.close_connection = True
            self._reply(req, 413 if length > 0 else 400, b"bad Content-Length\n", "text/plain; charset=utf-8")
            return
        body = req.rfile.read(length)
        code, out, ctype, headers = route(req.headers.get("Authorization") or "", body)
        self._reply(req, code, out, ctype, headers)

    @staticmethod
    def _reply(
        req: BaseHTTPRequestHandler,
        code: int,
        body: bytes,
        ctype: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        req.send_response(code)
        for k, v in (headers or {}).items():
            req.send_header(k, v)
        req.send_header("Content-Type", ctype)
        req.send_header("Content-Length", str(len(body)))
        req.end_headers()
        req.wfile.write(body)


def _cert_user(req: BaseHTTPRequestHandler) -> User | None:
    """The user a verified client certificate names (CN; O as groups), as upstream's x509
    authenticator; None without one (no client CA configured, or no certificate sent)."""
    conn = req.connection
    if not isinstance(conn, ssl.SSLSocket):
        return None
    cert = conn.getpeercert()
    if not cert:
        return None
    name, groups = "", []
    subject: Any = cert.get("subject", ())  # ((("commonName", "alice"),), (("organizationName", "ops"),))
    for rdn in subject:
        for key, value in rdn:
            if key == "commonName":
                name = value
            elif key == "organizationName":
                groups.append(value)
    if not name:
        return None
    return User(name, (*groups, AUTHENTICATED))
