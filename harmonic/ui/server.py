"""uvicorn serving the explorer on loopback: ``run`` in the foreground (the CLI), ``start``/``stop`` on a
thread (tests). The socket is bound before uvicorn starts, so port 0 gives a free port known at once."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8765


class UIServer:
    def __init__(self, app: Any, port: int = DEFAULT_PORT) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((LOOPBACK, port))
        self._sock.listen(128)
        self.port: int = self._sock.getsockname()[1]
        config = uvicorn.Config(app, lifespan="off", access_log=False, log_level="warning", log_config=None)
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def run(self) -> None:
        """Serve until SIGINT/SIGTERM."""
        self._server.run(sockets=[self._sock])

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="ui-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the ui server did not start")
            time.sleep(0.005)

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._sock.close()
