"""A lean HTTP/1.1 client connection for API calls: one write per request, one read per small answer.

``http.client`` writes a request's head and body in two ``sendall`` calls (two TCP segments, two
wake-ups of the server) and parses every answer's head with the ``email`` package; for the two
small calls a scheduler makes per pod (a Binding, an Event) that cost about as much CPU as the rest
of the request path together (``benchmarks/live_scheduler.py --profile``). ``Connection`` sends the
head and body in one ``sendall`` and reads the status line, the few headers it needs
(``Content-Length``, ``Transfer-Encoding``, ``Connection``) and the body from one buffered reader.

Only what talking to an API server needs: persistent connections, ``Content-Length``, chunked and
read-until-close bodies, no ``Expect: 100-continue``, no proxies (``Transport`` refuses them), no
response to HEAD. Watches, which stream for minutes, keep using ``http.client``.

Errors: ``RemoteClosed`` when the server closed the connection before answering (a kept-alive
connection it timed out: worth one retry on a new connection), ``ProtocolError`` for an answer that
is not HTTP/1.x, and ``OSError`` (timeouts, resets) from the socket itself.
"""

from __future__ import annotations

import io
import socket
import ssl
from collections.abc import Mapping

#: Longest status or header line accepted (http.client's _MAXLINE).
MAX_LINE = 65536
MAX_HEADERS = 100


def header_block(headers: Mapping[str, str]) -> bytes:
    """Header fields as sent: ``Name: value\\r\\n`` each."""
    return "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode("latin-1")


class RemoteClosed(ConnectionError):
    """The server closed the connection without answering."""


class ProtocolError(ValueError):
    """The answer is not a well-formed HTTP/1.x response."""


class Response:
    __slots__ = ("body", "retry_after", "status", "will_close")

    def __init__(self, status: int, body: bytes, will_close: bool, retry_after: str | None = None) -> None:
        self.status = status
        self.body = body
        self.will_close = will_close
        #: The ``Retry-After`` header of a 429 or 5xx answer (read only on those), else None.
        self.retry_after = retry_after


class Connection:
    """One persistent connection to ``host:port`` (TLS when ``tls`` is given)."""

    def __init__(
        self,
        host: str,
        port: int | None,
        timeout: float,
        tls: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
    ) -> None:
        self.host = host
        self.port = port or (443 if tls is not None else 80)
        sock = socket.create_connection((host, self.port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            if tls is not None:
                sock = tls.wrap_socket(sock, server_hostname=server_hostname or host)
        except BaseException:
            sock.close()
            raise
        self.sock: socket.socket = sock
        self._reader: io.BufferedReader = sock.makefile("rb")
        default_port = 443 if tls is not None else 80
        self._host_header = host if self.port == default_port else f"{host}:{self.port}"
        if ":" in host and not host.startswith("["):  # an IPv6 literal
            self._host_header = f"[{host}]" if self.port == default_port else f"[{host}]:{self.port}"

    def settimeout(self, timeout: float) -> None:
        self.sock.settimeout(timeout)

    def request(
        self, method: str, target: str, headers: Mapping[str, str] | bytes, body: bytes | None
    ) -> Response:
        """Send one request and read its whole answer. ``headers`` may come already written as
        ``header_block`` writes them (a caller sending the same headers on every request)."""
        fields = headers if isinstance(headers, bytes) else header_block(headers)
        head = f"{method} {target} HTTP/1.1\r\nHost: {self._host_header}\r\n".encode("latin-1") + fields
        if body is not None or method in ("POST", "PUT", "PATCH"):
            head += b"Content-Length: %d\r\n" % len(body or b"")
        head += b"\r\n"
        self.sock.sendall(head + body if body else head)
        return self._read_response(method)

    def close(self) -> None:
        try:
            self._reader.close()
        finally:
            self.sock.close()

    # ------------------------------------------------------------------ answer
    def _line(self) -> bytes:
        line = self._reader.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise ProtocolError("header line too long")
        return line

    def _read_response(self, method: str) -> Response:
        while True:
            head = self._buffered_head()
            line = head[0] if head else self._line()
            if not line:
                raise RemoteClosed("server closed the connection without an answer")
            parts = line.split(None, 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
                raise ProtocolError(f"bad status line {line[:80]!r}")
            status = int(parts[1])
            http10 = parts[0] == b"HTTP/1.0"
            lines = head[1:] if head else self._head_lines()
            length, chunked, close = self._fields(lines, http10)
            if status != 100:
                break  # 1xx Continue (unasked) precedes the real answer: skip it
        # Only a throttled or failed answer is searched for Retry-After: the common 2xx path pays nothing.
        retry_after = _retry_after(lines) if status == 429 or status >= 500 else None
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return Response(status, b"", close, retry_after)
        if chunked:
            body = self._chunked()
        elif length is not None:
            body = self._reader.read(length)
            if len(body) < length:
                raise RemoteClosed(f"answer cut short ({len(body)} of {length} bytes)")
        else:
            body, close = self._reader.read(), True  # delimited by the end of the connection
        return Response(status, body, close, retry_after)

    def _buffered_head(self) -> list[bytes]:
        """The status and header lines of the answer when the reader already holds all of them (one
        segment carries a small answer whole): taken in one read instead of a readline per line.
        Empty when they are not all there yet; the caller then reads line by line."""
        buf = self._reader.peek(MAX_LINE)
        end = buf.find(b"\r\n\r\n")
        if end <= 0 or end > MAX_LINE or buf.count(b"\r\n", 0, end) > MAX_HEADERS:
            return []
        return self._reader.read(end + 4)[:end].split(b"\r\n")

    def _fields(self, lines: list[bytes], http10: bool) -> tuple[int | None, bool, bool]:
        framing: tuple[int | None, bool, bool] = (None, False, http10)
        for line in lines:
            if line[:1] in b"cCtT":  # Content-Length, Connection, Transfer-Encoding (line is never empty)
                framing = _field(line, *framing)
            elif b":" not in line:
                raise ProtocolError(f"bad header line {line[:80]!r}")
        return framing

    def _head_lines(self) -> list[bytes]:
        lines: list[bytes] = []
        for _ in range(MAX_HEADERS + 1):
            line = self._line()
            if line in (b"\r\n", b"\n", b""):
                return lines
            lines.append(line.rstrip(b"\r\n"))
        raise ProtocolError(f"more than {MAX_HEADERS} headers")

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size_line = self._line()
            if not size_line:
                raise RemoteClosed("answer cut short inside a chunked body")
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size {size_line[:40]!r}") from None
            if size == 0:
                while self._line() not in (b"\r\n", b"\n", b""):
                    pass  # trailers: none of them matter here
                return b"".join(parts)
            chunk = self._reader.read(size + 2)
            if len(chunk) < size + 2:
                raise RemoteClosed("answer cut short inside a chunked body")
            parts.append(chunk[:size])


def _retry_after(lines: list[bytes]) -> str | None:
    for line in lines:
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == b"retry-after":
            return value.strip().decode("latin-1")
    return None


def _field(line: bytes, length: int | None, chunked: bool, close: bool) -> tuple[int | None, bool, bool]:
    """(Content-Length, chunked, close) after one header line."""
    name, sep, value = line.partition(b":")
    if not sep:
        raise ProtocolError(f"bad header line {line[:80]!r}")
    key = name.strip().lower()
    if key == b"content-length":
        try:
            length = int(value.strip())
        except ValueError:
            raise ProtocolError(f"bad Content-Length {value.strip()[:40]!r}") from None
        if length < 0:
            raise ProtocolError("negative Content-Length")
    elif key == b"transfer-encoding":
        chunked = value.strip().lower().endswith(b"chunked")
    elif key == b"connection":
        tokens = {t.strip() for t in value.lower().split(b",")}
        if b"close" in tokens:
            close = True
        elif b"keep-alive" in tokens:
            close = False
    return length, chunked, close
