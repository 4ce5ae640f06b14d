"""The lean HTTP/1.1 connection under Transport: answers framed every way a server may frame them,
against a scripted server over real sockets (plain and TLS), and the failures that matter."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trustme

from harmonic.cluster import http1
from harmonic.cluster.transport import ApiStatusError, Transport, TransportError, load_client

Reply = Callable[[bytes], bytes | None]  # the request received -> raw answer (None: close at once)


class ScriptedServer:
    """Answers the n-th request on any connection with ``replies[n]``; records requests and
    connections. A reply ending in ``CLOSE`` closes the connection after it is sent."""

    CLOSE = b"<close>"

    def __init__(self, replies: list[bytes | None], tls: ssl.SSLContext | None = None) -> None:
        self.replies = replies
        self.requests: list[bytes] = []
        self.connections = 0
        self._tls = tls
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        if self._tls is not None:
            conn = self._tls.wrap_socket(conn, server_side=True)
        with conn:
            reader = conn.makefile("rb")
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = next(
                    (
                        int(h.split(b":")[1])
                        for h in head.split(b"\r\n")
                        if h.lower().startswith(b"content-length")
                    ),
                    0,
                )
                self.requests.append(head + reader.read(length))
                reply = self.replies[len(self.requests) - 1]
                if reply is None:
                    return
                close = reply.endswith(self.CLOSE)
                conn.sendall(reply.removesuffix(self.CLOSE))
                if close:
                    return

    def close(self) -> None:
        self._sock.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def start(replies: list[bytes | None], tls: ssl.SSLContext | None = None) -> ScriptedServer:
        servers.append(ScriptedServer(replies, tls))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def _ok(body: bytes, *headers: str) -> bytes:
    head = "\r\n".join(["HTTP/1.1 200 OK", f"Content-Length: {len(body)}", *headers])
    return head.encode() + b"\r\n\r\n" + body


CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b'5;ext=1\r\n{"a":\r\n3\r\n 1}\r\n0\r\nX-Trailer: t\r\n\r\n'
)


@pytest.mark.parametrize(
    ("reply", "status", "body", "will_close"),
    [
        (_ok(b'{"a": 1}'), 200, b'{"a": 1}', False),
        (CHUNKED, 200, b'{"a": 1}', False),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{}" + ScriptedServer.CLOSE, 200, b"{}", True),
        (b"HTTP/1.1 204 No Content\r\n\r\n", 204, b"", False),
        (b"HTTP/1.1 100 Continue\r\n\r\n" + _ok(b"[]"), 200, b"[]", False),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", 200, b"{}", True),
        (_ok(b"{}", "Connection: close"), 200, b"{}", True),
        (b"HTTP/1.1 409 Conflict\r\nContent-Length: 2\r\n\r\n{}", 409, b"{}", False),
    ],
    ids=["length", "chunked", "until-close", "no-content", "continue", "http10", "connection-close", "409"],
)
def test_answer_framing(serve, reply, status, body, will_close):
    server = serve([reply])
    conn = http1.Connection("127.0.0.1", server.port, timeout=5)
    resp = conn.request("POST", "/api/v1/x?y=1", {"Accept": "application/json"}, b'{"k":"v"}')
    conn.close()
    assert (resp.status, resp.body, resp.will_close) == (status, body, will_close)
    (req,) = server.requests
    assert req.startswith(b"POST /api/v1/x?y=1 HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{server.port}\r\n".encode() in req
    assert b"Content-Length: 9\r\n" in req and req.endswith(b'\r\n\r\n{"k":"v"}')


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (None, http1.RemoteClosed),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}" + ScriptedServer.CLOSE, http1.RemoteClosed),
        (b"SSH-2.0-OpenSSH\r\n\r\n", http1.ProtocolError),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", http1.ProtocolError),
        (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", http1.ProtocolError),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", http1.ProtocolError),
    ],
    ids=["closed", "cut-short", "not-http", "bad-header", "bad-length", "bad-chunk"],
)
def test_broken_answers(serve, reply, error):
    server = serve([reply])
    conn = http1.Connection("127.0.0.1", server.port, timeout=5)
    with pytest.raises(error):
        conn.request("GET", "/", {}, None)
    conn.close()


def _transport(tmp_path: Path, server: str, ca: trustme.CA | None = None) -> Transport:
    cluster: dict[str, str] = {"server": server}
    if ca is not None:
        ca_file = tmp_path / "ca.pem"
        ca.cert_pem.write_to_path(str(ca_file))
        cluster["certificate-authority"] = str(ca_file)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": {"token": "t0k"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    return Transport(load_client(str(kubeconfig)), qps=-1, burst=1, timeout=5)


def test_transport_retries_once_when_the_server_closed_an_idle_connection(serve, tmp_path):
    # The first answer keeps the connection alive, then the server drops it without a word (as an
    # idle timeout does): the next request finds it dead and is sent again on a new connection.
    server = serve([_ok(b'{"n":1}') + ScriptedServer.CLOSE, _ok(b'{"n":2}')])
    t = _transport(tmp_path, f"http://127.0.0.1:{server.port}")
    assert t.request("GET", "/a") == {"n": 1}
    assert t.request("POST", "/b", body={"x": 1}) == {"n": 2}
    assert server.connections == 2
    assert b"authorization: bearer t0k\r\n" in server.requests[1].lower()


def test_transport_maps_failures(serve, tmp_path):
    status = b'{"kind":"Status","code":409,"reason":"Conflict","message":"already bound"}'
    conflict = b"HTTP/1.1 409 Conflict\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
    server = serve([conflict % (len(status), status) + ScriptedServer.CLOSE, None])
    t = _transport(tmp_path, f"http://127.0.0.1:{server.port}")
    with pytest.raises(ApiStatusError) as e:
        t.request("POST", "/binding", body={})
    assert (e.value.code, e.value.reason, e.value.message) == (409, "Conflict", "already bound")
    with pytest.raises(TransportError, match="GET /x"):
        t.request("GET", "/x")  # a fresh connection closed unanswered: no retry


def test_transport_over_tls(serve, tmp_path):
    ca = trustme.CA()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_ctx)
    server = serve([_ok(b'{"tls":true}'), CHUNKED], tls=server_ctx)
    t = _transport(tmp_path, f"https://127.0.0.1:{server.port}", ca)
    assert t.request("GET", "/version") == {"tls": True}
    assert t.request("GET", "/chunked") == {"a": 1}
    assert server.connections == 1


def _chunks(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts)


WATCH_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
ADDED = b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n'
MODIFIED = b'{"type":"MODIFIED","object":{"metadata":{"name":"b"}}}\n'


@pytest.mark.parametrize(
    "body",
    [
        _chunks(ADDED, MODIFIED) + b"0\r\n\r\n",
        _chunks(ADDED + MODIFIED) + b"0\r\n\r\n",  # two events in one chunk
        _chunks(ADDED[:7], ADDED[7:30], ADDED[30:] + MODIFIED[:3], MODIFIED[3:]) + b"0\r\n\r\n",
        b"%x;ext=1\r\n%s\r\n" % (len(ADDED), ADDED) + _chunks(b"\n", MODIFIED) + b"0\r\nX-T: 1\r\n\r\n",
        _chunks(ADDED, MODIFIED.rstrip(b"\n")) + b"0\r\n\r\n",  # the last event without its newline
    ],
    ids=[
        "chunk-per-event",
        "events-in-one-chunk",
        "events-split-over-chunks",
        "extension-blank-trailer",
        "no-final-newline",
    ],
)
def test_watch_stream_events_whatever_the_chunking(serve, tmp_path, body):
    server = serve([WATCH_HEAD + body + ScriptedServer.CLOSE])
    t = _transport(tmp_path, f"http://127.0.0.1:{server.port}")
    events = list(t.stream("/api/v1/pods", {}, read_timeout=5))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("MODIFIED", "b"),
    ]


@pytest.mark.parametrize(
    "body",
    [
        _chunks(ADDED) + b"%x\r\n%s" % (len(MODIFIED), MODIFIED[:10]),  # cut inside a chunk
        _chunks(ADDED),  # cut before the last chunk
        _chunks(ADDED) + b"zz\r\n",  # not chunked framing
    ],
    ids=["cut-in-chunk", "no-last-chunk", "bad-size"],
)
def test_watch_stream_broken_after_an_event(serve, tmp_path, body):
    server = serve([WATCH_HEAD + body + ScriptedServer.CLOSE])
    t = _transport(tmp_path, f"http://127.0.0.1:{server.port}")
    seen = []
    with pytest.raises(TransportError, match="watch /api/v1/pods broke"):
        for ev in t.stream("/api/v1/pods", {}, read_timeout=5):
            seen.append(ev["object"]["metadata"]["name"])
    assert seen == ["a"]


@pytest.mark.parametrize(
    "parts",
    [
        [b"HTTP/1.1 200 OK\r\n", b"Content-Length: 8\r\n\r\n", b'{"a": 1}'],
        [b"HTTP/1.1 200 OK\r\nContent-Len", b"gth: 8\r\n\r\n{", b'"a": 1}'],
        [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n", b"\r\n8\r\n", b'{"a": 1}\r\n0\r\n\r\n'],
    ],
    ids=["head-then-body", "head-split-mid-line", "chunked-split"],
)
def test_answer_arriving_in_pieces(parts):
    """An answer whose head is not whole in the first segment is read line by line, same result."""
    server = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            for part in parts:
                conn.sendall(part)
                time.sleep(0.05)
            conn.recv(1)

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    conn = http1.Connection("127.0.0.1", server.getsockname()[1], timeout=5)
    resp = conn.request("GET", "/", {}, None)
    conn.close()
    server.close()
    assert (resp.status, resp.body, resp.will_close) == (200, b'{"a": 1}', False)


def test_more_headers_than_allowed_is_a_protocol_error(serve):
    many = "".join(f"X-H{i}: v\r\n" for i in range(http1.MAX_HEADERS + 1))
    server = serve([f"HTTP/1.1 200 OK\r\n{many}Content-Length: 0\r\n\r\n".encode()])
    conn = http1.Connection("127.0.0.1", server.port, timeout=5)
    with pytest.raises(http1.ProtocolError, match="more than"):
        conn.request("GET", "/", {}, None)
    conn.close()
