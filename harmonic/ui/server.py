"""uvicorn serving the explorer on loopback: ``run`` in the foreground (the CLI), ``start``/``stop`` on a
thread (tests)."""

from __future__ import annotations

from typing import Any

import uvicorn

from harmonic.serving import ServerThread, listening_socket

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8765


class UIServer(ServerThread):
    thread_name = "ui"

    def __init__(self, app: Any, port: int = DEFAULT_PORT) -> None:
        self._sock = listening_socket(LOOPBACK, port, backlog=128)
        self.port: int = self._sock.getsockname()[1]
        config = uvicorn.Config(app, lifespan="off", access_log=False, log_level="warning", log_config=None)
        self._server = uvicorn.Server(config)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"
