"""What Harmonic's uvicorn servers share: a socket bound and listening before uvicorn starts (port 0
gives a free port known at once; early connections wait in the backlog), and running in the foreground
or on a thread."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn


def listening_socket(host: str, port: int, backlog: int = 2048) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    return sock


class ServerThread:
    """``run`` serves on ``_sock`` with ``_server`` until stopped; ``start``/``stop`` do it on a thread."""

    _sock: socket.socket
    _server: uvicorn.Server
    _thread: threading.Thread | None = None
    thread_name = "http"

    def run(self) -> None:
        self._server.run(sockets=[self._sock])

    def start(self) -> None:
        """Serve on a background thread (tests, benchmarks); returns once accepting connections."""
        self._thread = threading.Thread(target=self.run, name=self.thread_name, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{self.thread_name} server did not start")
            time.sleep(0.005)

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._sock.close()
