"""``harmonic ui``: the decision explorer, a Starlette app over a ``Source``.

Routes (all GET):

- ``/``: the single-page app (``static/index.html``; its script ``static/app.js`` draws the views with
  the vendored cytoscape.js and tablesort, no network needed);
- ``/api/info``: what is being explored (report folder or scheduler URL, profiles, which views apply);
- ``/api/decisions``: decision summaries, newest first (``?q=`` keeps pods whose name contains it,
  ``?profile=`` one profile's);
- ``/api/decisions/{id}``: one decision's whole document;
- ``/api/pending``: pending pods grouped by reason, with the nodes each plugin rejected;
- ``/api/graph``: the affinity graph over time (simulation reports only);
- ``/report/``: the simulation's own ``report.html`` (metrics plots, profiles side by side).

With a token, every route needs ``Authorization: Bearer <token>`` or the cookie set by visiting
``/?token=<token>`` once (the URL the command prints); anything else is 401.
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from harmonic.ui.sources import ReportSource, Source, SourceError

STATIC = Path(__file__).resolve().parent / "static"
COOKIE = "harmonic_ui_token"


class _TokenAuth(BaseHTTPMiddleware):
    def __init__(self, app: Any, token: str) -> None:
        super().__init__(app)
        self._token = token.encode()

    def _ok(self, value: str | None) -> bool:
        return value is not None and hmac.compare_digest(value.encode(), self._token)

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        offered = request.query_params.get("token")
        if request.url.path == "/" and offered is not None and self._ok(offered):
            # Trade the token in the URL for a cookie, and drop it from the address bar.
            r = RedirectResponse("/", status_code=303)
            r.set_cookie(COOKIE, offered, httponly=True, samesite="strict")
            return r
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if (scheme.lower() == "bearer" and self._ok(value.strip())) or self._ok(request.cookies.get(COOKIE)):
            return await call_next(request)
        return JSONResponse(
            {"error": "missing or wrong token: open the URL harmonic ui printed (/?token=...)"},
            status_code=401,
            headers={"www-authenticate": "Bearer"},
        )


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def create_app(source: Source, token: str | None = None) -> Starlette:
    def guarded(fn: Any) -> Any:
        """Source failures (unreachable scheduler, unreadable file) are a 502 naming the cause."""

        def endpoint(request: Request) -> Response:
            try:
                result: Response = fn(request)
            except SourceError as e:
                return _error(502, str(e))
            return result

        return endpoint

    def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})

    def info(request: Request) -> Response:
        return JSONResponse(source.info())

    def decisions(request: Request) -> Response:
        q = request.query_params.get("q", "")
        profile = request.query_params.get("profile", "")
        rows = [
            s
            for s in source.summaries()
            if (not q or q in s["pod"]) and (not profile or s["profile"] == profile)
        ]
        rows.reverse()
        return JSONResponse(rows)

    def decision(request: Request) -> Response:
        raw = request.path_params["id"]
        try:
            ident = int(raw)
        except ValueError:
            return _error(400, f"decision id {raw!r} is not an integer")
        doc = source.decision(ident)
        if doc is None:
            return _error(404, f"no decision {ident} (the ring buffer may have dropped it)")
        return JSONResponse(doc)

    def pending(request: Request) -> Response:
        return JSONResponse(source.pending())

    def graph(request: Request) -> Response:
        doc = source.graph()
        if doc is None:
            return _error(404, "no affinity graph: run harmonic simulate --record-decisions on a scenario")
        return JSONResponse(doc)

    def report(request: Request) -> Response:
        path = source.report_html if isinstance(source, ReportSource) else None
        if path is None:
            return _error(404, "no simulation report here (harmonic ui --report DIR)")
        return FileResponse(path)

    routes = [
        Route("/", index),
        Route("/api/info", guarded(info)),
        Route("/api/decisions", guarded(decisions)),
        Route("/api/decisions/{id}", guarded(decision)),
        Route("/api/pending", guarded(pending)),
        Route("/api/graph", guarded(graph)),
        Route("/report/", report),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = [Middleware(_TokenAuth, token=token)] if token else []
    return Starlette(routes=routes, middleware=middleware)
