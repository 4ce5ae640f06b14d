"""The scheduler's HTTP endpoints: ``/metrics`` (Prometheus text format), ``/healthz``, ``/livez``,
``/readyz``, and any extra GET routes the caller adds (``/debug/decisions``). Plain HTTP on a thread; each check is a callable returning None (ok) or the reason it fails,
and a failing endpoint answers 500 with ``[-]name failed: reason`` lines, as Kubernetes components do.
``/readyz?verbose`` also lists the caller's notes (degraded optional signals), which never fail it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client.exposition import CONTENT_TYPE_LATEST

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
    ) -> None:
        self._metrics = metrics
        #: Lines added to ``/readyz?verbose`` that never fail it (degraded optional signals).
        self._notes = notes
        self._routes = dict(routes or {})
        self._post_routes = dict(post_routes or {})
        self._checks = {"/healthz": healthz, "/livez": healthz, "/readyz": {**healthz, **readyz}}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server._serve(self)

            def do_POST(self) -> None:
                server._post(self)

            def log_message(self, format: str, *args: object) -> None:
                return None

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
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
