"""Guests in KubeSchedulerConfiguration: a pluginConfig entry with guestURL defines the plugin, which
is registered only at the extension points its exports implement; every bad guest or bad arg is one
config error naming the field and the guest."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.framework.config import ConfigError, load_config
from harmonic.plugins.registry import default_registry
from tests.plugins.wasm.conftest import guest_config, load_guest

ARGS = "sched.yaml: profiles[0].pluginConfig[0].args"


def test_guest_is_registered_at_its_exports_only(guests: dict[str, Path]) -> None:
    p = load_guest("NodeNumber", {"guestURL": str(guests["nodenumber"])}).profiles[0]
    at = {point for point, names in p.points.items() if "NodeNumber" in names}
    assert at == {"preScore", "score"}
    assert p.weights["NodeNumber"] == 1
    assert p.args["NodeNumber"].guest_url == str(guests["nodenumber"])


def test_guest_named_wasm_as_upstream_configures_it(guests: dict[str, Path]) -> None:
    p = load_guest("Wasm", {"guestURL": str(guests["labelfilter"]), "guestConfig": "a=b"}).profiles[0]
    assert "Wasm" in p.plugins_at("filter") and "Wasm" not in p.plugins_at("score")


def test_guest_at_a_point_it_does_not_export_is_an_error(guests: dict[str, Path]) -> None:
    with pytest.raises(ConfigError, match=r'plugins.score.enabled\[0\]: plugin "LF" does not extend score'):
        load_guest("LF", {"guestURL": str(guests["labelfilter"])}, enable="score")


def test_two_guests_in_one_profile_and_kind(guests: dict[str, Path]) -> None:
    cfg: dict[str, Any] = {
        "profiles": [
            {
                "plugins": {"multiPoint": {"enabled": [{"name": "A"}, {"name": "B", "weight": 3}]}},
                "pluginConfig": [
                    {"name": "A", "args": {"kind": "WasmPluginArgs", "guestURL": str(guests["labelfilter"])}},
                    {"name": "B", "args": {"guestURL": str(guests["nodenumber"])}},
                ],
            }
        ]
    }
    p = load_config(cfg, default_registry()).profiles[0]
    assert "A" in p.plugins_at("filter") and p.weights["B"] == 3


WAT_MEM = '(memory (export "memory") 1)'
BAD_GUESTS = [
    ("not wasm", "this is not a module", "not a valid WebAssembly module"),
    ("no exports", f"(module {WAT_MEM})", "the guest exports no plugin function (one of prefilter, filter"),
    (
        "no memory",
        '(module (func (export "filter") (result i32) (i32.const 0)))',
        "does not export its memory as 'memory'",
    ),
    (
        "wrong signature",
        f'(module {WAT_MEM} (func (export "filter") (result i64) (i64.const 0)))',
        "export 'filter' has the wrong signature, want () -> (i32)",
    ),
    (
        # score () -> i64 is kube-scheduler-wasm-extension's: the guest is held to that ABI.
        "upstream's score, the wrong filter",
        f'(module {WAT_MEM} (func (export "score") (result i64) (i64.const 0))'
        ' (func (export "filter") (result i64) (i64.const 0)))',
        "export 'filter' has the wrong signature, want () -> (i32)",
    ),
    (
        "both ABIs",
        f'(module (import "harmonic.io/nodes" "count" (func (result i32)))'
        ' (import "k8s.io/scheduler" "currentPod" (func (param i32 i32) (result i32))) '
        f'{WAT_MEM} (func (export "filter") (result i32) (i32.const 0)))',
        "imports harmonic.io/nodes.count (Harmonic's batched ABI) and k8s.io/scheduler.currentPod",
    ),
    (
        "unknown import",
        f'(module (import "env" "open" (func)) {WAT_MEM} (func (export "filter") (result i32) (i32.const 0)))',
        "imports env.open, which the host does not provide",
    ),
    (
        "unreserve without reserve",
        f'(module {WAT_MEM} (func (export "unreserve")))',
        "export 'unreserve' needs 'reserve'",
    ),
    (
        "start function traps",
        f'(module {WAT_MEM} (func $s unreachable) (start $s) (func (export "filter") (result i32) (i32.const 0)))',
        "instantiating: trapped: wasm trap: wasm `unreachable` instruction executed",
    ),
    (
        "needs more memory than allowed",
        '(module (memory (export "memory") 300) (func (export "filter") (result i32) (i32.const 0)))',
        "instantiating: memory minimum size of 300 pages exceeds memory limits",
    ),
]


@pytest.mark.parametrize(("name", "text", "error"), BAD_GUESTS, ids=[b[0] for b in BAD_GUESTS])
def test_bad_guest_is_a_config_error_naming_it(
    wat: Callable[[str], str], name: str, text: str, error: str
) -> None:
    path = wat(text)
    with pytest.raises(ConfigError) as e:
        load_guest("G", {"guestURL": path})
    assert str(e.value).startswith(f"{ARGS}.guestURL: {path}: ")
    assert error in str(e.value)


BAD_ARGS = [
    (
        {"guestURL": "/nonexistent/g.wasm"},
        "guestURL: /nonexistent/g.wasm: cannot read: No such file or directory",
    ),
    (
        {"guestURL": "ftp://host/g.wasm"},
        "guestURL: ftp://host/g.wasm: only file paths, file:// and http(s)://",
    ),
    ({"guestURL": "http://127.0.0.1:1/g.wasm"}, "remote guests need allowRemoteGuest: true"),
    (
        {"guestURL": "g.wasm", "maxMemoryPages": 0},
        "maxMemoryPages: Input should be greater than or equal to 1",
    ),
    ({"guestURL": "g.wasm", "callTimeout": "soon"}, "callTimeout: Value error, 'soon' is not a duration"),
    (
        {"guestURL": "g.wasm", "cycleBudget": "0s"},
        "cycleBudget: Value error, '0s' must be a positive duration",
    ),
    ({"guestURL": "g.wasm", "fuel": 1}, "fuel: unknown field"),
    ({"guestURL": "g.wasm", "kind": "NodeNumberArgs"}, "kind: expected WasmPluginArgs"),
    (
        {"guestURL": "g.wasm", "preopens": [{"hostPath": "/tmp", "guestPath": "data"}]},
        "preopens[0].guestPath: Value error, 'data' must be an absolute path inside the guest",
    ),
]


@pytest.mark.parametrize(("args", "error"), BAD_ARGS, ids=[str(i) for i in range(len(BAD_ARGS))])
def test_bad_args_are_one_line_naming_the_field(args: dict[str, Any], error: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_guest("G", args)
    assert str(e.value).startswith(f"{ARGS}.")
    assert error in str(e.value)


@pytest.fixture
def http_guest(guests: dict[str, Path]) -> Iterator[str]:
    body = guests["labelfilter"].read_bytes()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: Any) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/labelfilter.wasm"
    srv.shutdown()
    srv.server_close()


def test_remote_guest_where_the_operator_allows_it(http_guest: str) -> None:
    p = load_guest("Remote", {"guestURL": http_guest, "allowRemoteGuest": True}).profiles[0]
    assert "Remote" in p.plugins_at("filter")
    with pytest.raises(ConfigError, match="remote guests need allowRemoteGuest: true"):
        load_guest("Remote", {"guestURL": http_guest})


def test_unclaimed_plugin_config_is_still_an_unknown_plugin() -> None:
    cfg = guest_config("Nope", {"guestPath": "x.wasm"})
    with pytest.raises(ConfigError, match='unknown plugin "Nope"'):
        load_config(cfg, default_registry(), source="sched.yaml")


@settings(max_examples=50, deadline=None)
@given(body=st.binary(max_size=64), header=st.booleans())
def test_any_bytes_load_or_fail_with_a_clear_config_error(
    tmp_path_factory: Any, body: bytes, header: bool
) -> None:
    """Whatever the file holds, loading gives a plugin or one config error naming the guest, never
    a traceback."""
    path = tmp_path_factory.mktemp("fuzz") / "g.wasm"
    path.write_bytes((b"\0asm\x01\0\0\0" if header else b"") + body)
    try:
        load_guest("G", {"guestURL": str(path)})
    except ConfigError as e:
        assert str(e).startswith(f"{ARGS}.guestURL: {path}: ")
