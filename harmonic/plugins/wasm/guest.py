"""Loading guests and running them inside their limits.

A ``GuestModule`` is a compiled, checked module (shared by every profile that names the same file);
a ``GuestInstance`` is one plugin instance's sandbox: its own store, memory and WASI context. Each call
gets fresh fuel and an epoch deadline (the smaller of ``callTimeout`` and what is left of the cycle's
``cycleBudget``); a call that traps, runs out of fuel or time, or breaks the ABI raises ``GuestError``
and the instance is rebuilt, so the next call starts from a clean sandbox.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import wasmtime

from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import Handle
from harmonic.plugins.wasm import abi, ffi, host, upstream_host
from harmonic.plugins.wasm.args import WasmPluginArgs
from harmonic.plugins.wasm.output import GuestOutput

#: Epoch ticks: call deadlines are rounded up to this many seconds.
TICK_SECONDS = 0.005
MAX_GUEST_BYTES = 64 << 20


class GuestError(Exception):
    """A guest call failed; the message names the export and the cause."""


_engine: wasmtime.Engine | None = None
_engine_lock = threading.Lock()


def engine() -> wasmtime.Engine:
    """The process's engine (fuel and epoch interruption on), with its epoch ticker thread."""
    global _engine
    with _engine_lock:
        if _engine is None:
            cfg = wasmtime.Config()
            cfg.consume_fuel = True
            cfg.epoch_interruption = True
            _engine = wasmtime.Engine(cfg)
            threading.Thread(target=_tick, args=(_engine,), name="wasm-epoch", daemon=True).start()
        return _engine


class EpochClock:
    """Turns wall-clock time into epoch ticks. A sleeping ticker wakes late on a loaded machine (the
    issue measured a 1s ``callTimeout`` firing after 1.55s with one tick per wakeup), so each wakeup
    adds every tick that is due since the start rather than one."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.ticks = 0

    def due(self, now: float) -> int:
        """How many ticks to add at ``now`` to catch up."""
        total = int((now - self.start) / TICK_SECONDS)
        added, self.ticks = max(0, total - self.ticks), max(total, self.ticks)
        return added


def _tick(e: wasmtime.Engine) -> None:
    clock = EpochClock(time.monotonic())
    while True:
        time.sleep(TICK_SECONDS)
        for _ in range(clock.due(time.monotonic())):
            e.increment_epoch()


@dataclass(frozen=True)
class GuestModule:
    """A compiled guest and the extension points its exports implement."""

    source: str
    module: wasmtime.Module
    exports: tuple[str, ...]
    needs_wasi: bool
    digest: str
    #: ``abi.HARMONIC`` (batched) or ``abi.UPSTREAM`` (kube-scheduler-wasm-extension's, per node).
    kind: str = abi.HARMONIC

    @property
    def table(self) -> dict[str, abi.Export]:
        return abi.UPSTREAM_EXPORTS if self.kind == abi.UPSTREAM else abi.EXPORTS

    @property
    def points(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for name in self.exports:
            if self.table[name].point:
                seen.setdefault(self.table[name].point)
        return tuple(seen)


_modules: dict[tuple[str, str, str], GuestModule] = {}


def load(args: WasmPluginArgs) -> GuestModule:
    """Fetch, compile and check the guest of ``args``. Raises ``ValueError("guestURL: ...")``."""
    source, data = _fetch(args)
    digest = hashlib.sha256(data).hexdigest()
    cached = _modules.get((source, digest, args.abi))
    if cached is not None:
        return cached
    if not data.strip():
        raise ValueError(f"guestURL: {source}: the file is empty")
    try:
        module = (
            wasmtime.Module(engine(), data)
            if data.startswith(b"\0asm")
            else wasmtime.Module(engine(), data.decode())
        )
    except (wasmtime.WasmtimeError, UnicodeDecodeError, TypeError, ValueError) as e:
        raise ValueError(f"guestURL: {source}: not a valid WebAssembly module: {_first_line(e)}") from None
    kind = _abi_of(source, module) if args.abi == "auto" else args.abi
    table = abi.UPSTREAM_EXPORTS if kind == abi.UPSTREAM else abi.EXPORTS
    guest = GuestModule(
        source, module, _exports(source, module, table), _check_imports(source, module, kind), digest, kind
    )
    _modules[source, digest, args.abi] = guest
    return guest


def _fetch(args: WasmPluginArgs) -> tuple[str, bytes]:
    url = args.guest_url
    if url.startswith(("http://", "https://")):
        if not args.allow_remote_guest:
            raise ValueError(f"guestURL: {url}: remote guests need allowRemoteGuest: true")
        try:
            r = httpx.get(url, timeout=10.0, follow_redirects=False)
            r.raise_for_status()
        except httpx.HTTPError as e:
            raise ValueError(f"guestURL: {url}: cannot fetch: {e}") from None
        if len(r.content) > MAX_GUEST_BYTES:
            raise ValueError(f"guestURL: {url}: larger than {MAX_GUEST_BYTES} bytes")
        return url, r.content
    if "://" in url and not url.startswith("file://"):
        raise ValueError(f"guestURL: {url}: only file paths, file:// and http(s):// URLs are supported")
    path = Path(url.removeprefix("file://"))
    try:
        if path.stat().st_size > MAX_GUEST_BYTES:
            raise ValueError(f"guestURL: {path}: larger than {MAX_GUEST_BYTES} bytes")
        return str(path), path.read_bytes()
    except OSError as e:
        raise ValueError(f"guestURL: {path}: cannot read: {e.strerror}") from None


def _abi_of(source: str, module: wasmtime.Module) -> str:
    """Which ABI a guest speaks, from what it imports (and failing that, what it exports)."""
    ours = upstream_only = ""
    harmonic_names = host.provided()
    for im in module.imports:
        key = (im.module, im.name or "")
        if key in abi.HARMONIC_IMPORTS or im.module in abi.HARMONIC_MODULES:
            ours = ours or f"{im.module}.{im.name}"
        elif key not in harmonic_names and key in upstream_host.provided():
            upstream_only = upstream_only or f"{im.module}.{im.name}"
    if ours and upstream_only:
        raise ValueError(
            f"guestURL: {source}: imports {ours} (Harmonic's batched ABI) and {upstream_only} "
            "(kube-scheduler-wasm-extension's): a guest speaks one"
        )
    if ours or upstream_only:
        return abi.HARMONIC if ours else abi.UPSTREAM
    # Neither: upstream's SDKs build commands (``_start`` registers the plugin) and its score and
    # enqueue have signatures of their own.
    for ex in module.exports:
        if ex.name in ("_start", "enqueue", "postfilter", "addpod", "removepod"):
            return abi.UPSTREAM
        ty = ex.type
        if (
            ex.name == "score"
            and isinstance(ty, wasmtime.FuncType)
            and [str(r) for r in ty.results] == ["i64"]
        ):
            return abi.UPSTREAM
    return abi.HARMONIC


def _exports(source: str, module: wasmtime.Module, table: dict[str, abi.Export]) -> tuple[str, ...]:
    found: list[str] = []
    has_memory = False
    for ex in module.exports:
        if ex.name == abi.MEMORY_EXPORT and isinstance(ex.type, wasmtime.MemoryType):
            has_memory = True
        spec = table.get(ex.name)
        if spec is None or not isinstance(ex.type, wasmtime.FuncType):
            continue
        params = tuple(str(p) for p in ex.type.params)
        results = tuple(str(r) for r in ex.type.results)
        if (params, results) != (spec.params, spec.results):
            want = f"({', '.join(spec.params)}) -> ({', '.join(spec.results)})"
            raise ValueError(f"guestURL: {source}: export {ex.name!r} has the wrong signature, want {want}")
        found.append(ex.name)
    if not has_memory:
        raise ValueError(f"guestURL: {source}: the guest does not export its memory as {abi.MEMORY_EXPORT!r}")
    if not found:
        names = ", ".join(table)
        raise ValueError(f"guestURL: {source}: the guest exports no plugin function (one of {names})")
    for needs, on in (("unreserve", "reserve"), ("normalizescore", "score")):
        if needs in found and on not in found:
            raise ValueError(f"guestURL: {source}: export {needs!r} needs {on!r}")
    return tuple(found)


def _check_imports(source: str, module: wasmtime.Module, kind: str) -> bool:
    provided = upstream_host.provided() if kind == abi.UPSTREAM else host.provided()
    wasi = False
    for im in module.imports:
        if im.module == abi.MOD_WASI:
            wasi = True
        elif (im.module, im.name or "") not in provided:
            what = "kube-scheduler-wasm-extension's" if kind == abi.UPSTREAM else "Harmonic's batched"
            raise ValueError(
                f"guestURL: {source}: imports {im.module}.{im.name}, which the host does not provide "
                f"(the guest was taken for {what} ABI)"
            )
    return wasi


def _run_entry(store: wasmtime.Store, f: wasmtime.Func) -> None:
    """Run a start function; a guest exiting with status 0 (WASI ``proc_exit(0)``) succeeded."""
    try:
        f(store)
    except wasmtime.ExitTrap as e:
        if e.code != 0:
            raise


def _first_line(e: BaseException) -> str:
    """The cause of a wasmtime error on one line (its "Caused by:" part, not the backtrace)."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    if "Caused by:" in lines and lines[-1] != "Caused by:":
        return lines[lines.index("Caused by:") + 1]
    return lines[0] if lines else type(e).__name__


class GuestInstance:
    """One plugin's sandboxed instance of a guest."""

    def __init__(
        self, name: str, guest: GuestModule, args: WasmPluginArgs, handle: Handle | None = None
    ) -> None:
        self.name = name
        self.guest = guest
        self.args = args
        #: The framework handle, for upstream's ``handle.*`` imports and node lookups.
        self.handle = handle
        self.config = args.guest_config.encode()
        self._timeout = args.call_timeout_seconds
        self._budget = args.cycle_budget_seconds
        self.ctx: host.CallContext | None = None
        self._lock = threading.Lock()
        self._budget_key = f"WasmBudget/{name}"
        self._linker = wasmtime.Linker(engine())
        fns = upstream_host.functions(self) if guest.kind == abi.UPSTREAM else host.functions(self)
        self._keep = host.define(self._linker, fns)
        #: The guest's stdout and stderr (WASI guests only).
        self.output: GuestOutput | None = None
        if guest.needs_wasi:
            self._linker.define_wasi()
        self._funcs: dict[str, wasmtime.Func] = {}
        self._instantiate()

    def _instantiate(self) -> None:
        store = wasmtime.Store(engine())
        store.set_limits(memory_size=self.args.max_memory_pages * 65536)
        store.set_fuel(self.args.max_fuel_per_call)
        store.set_epoch_deadline(self._ticks(self._timeout))
        if self.guest.needs_wasi:
            wasi = wasmtime.WasiConfig()
            if self.args.env:
                wasi.env = list(self.args.env.items())
            if self.args.args:
                wasi.argv = list(self.args.args)
            # Kept for error messages, as upstream appends a failed call's output to its error.
            self.output = GuestOutput(wasi)
            for p in self.args.preopens:
                wasi.preopen_dir(p.host_path, p.guest_path, fs_mutable=not p.read_only)
            store.set_wasi(wasi)
        self.store = store
        if self.output is not None:
            self.output.mark()
        try:
            instance = self._linker.instantiate(store, self.guest.module)
            exports = instance.exports(store)
            memory = exports.get(abi.MEMORY_EXPORT)
            assert isinstance(memory, wasmtime.Memory)
            self.memory = memory
            # A reactor's initializer; upstream's guests are commands whose main registers the plugin
            # (upstream's host runs ``_start`` at instantiation, and so does this one for them).
            for entry in ("_initialize", "_start") if self.guest.kind == abi.UPSTREAM else ("_initialize",):
                init = exports.get(entry)
                if isinstance(init, wasmtime.Func):
                    _run_entry(store, init)
        except (wasmtime.WasmtimeError, wasmtime.Trap) as e:
            cause = self._cause(e, with_memory=False)
            raise GuestError(f"instantiating: {cause}{self._output_tail()}") from None
        self._funcs = {}
        for name in self.guest.exports:
            f = exports.get(name)
            assert isinstance(f, wasmtime.Func)
            self._funcs[name] = f

    @staticmethod
    def _ticks(seconds: float) -> int:
        return max(1, math.ceil(seconds / TICK_SECONDS)) + 1

    def call(self, export: str, ctx: host.CallContext, state: CycleState | None) -> Any:
        """Call ``export`` with ``ctx`` inside the limits; its raw return value."""
        with self._lock:
            spent = float(state.get(self._budget_key, 0.0)) if state is not None else 0.0
            left = self._budget - spent
            if left <= 0:
                raise GuestError(f"{export}: cycle budget of {self.args.cycle_budget} used up")
            timeout = min(self._timeout, left)
            self.ctx = ctx
            if self.output is not None:
                self.output.mark()
            self.store.set_fuel(self.args.max_fuel_per_call)
            self.store.set_epoch_deadline(self._ticks(timeout))
            t0 = time.perf_counter()
            try:
                return self._invoke(export)
            except Exception as e:
                # Traps, exhausted limits, ABI breaches, and anything a host function raised: all
                # end this call only.
                failure: BaseException = e
            finally:
                self.ctx = None
                if state is not None:
                    state.write(self._budget_key, spent + time.perf_counter() - t0)
            cause = self._cause(failure, timeout) + self._output_tail()
            # A trapped instance may hold half-updated state: the next call gets a fresh one.
            self._instantiate()
            raise GuestError(f"{export}: {cause}")

    def _output_tail(self) -> str:
        """The guest's output, to append to an error (a Go guest's panic message is there)."""
        text = self.output.since_mark() if self.output is not None else ""
        return f"\n{text}" if text else ""

    def _invoke(self, export: str) -> int | None:
        results = self.guest.table[export].results
        return ffi.invoke(self.store, self._funcs[export], results[0] if results else None)

    def _cause(self, e: BaseException, timeout: float | None = None, with_memory: bool = True) -> str:
        if isinstance(e, host.GuestFault):
            return f"broke the ABI: {e}"
        if not isinstance(e, (wasmtime.WasmtimeError, wasmtime.Trap)):
            return f"host function failed: {type(e).__name__}: {e}"
        code = e.trap_code if isinstance(e, wasmtime.Trap) else None
        if code == wasmtime.TrapCode.OUT_OF_FUEL:
            return f"ran out of fuel (maxFuelPerCall {self.args.max_fuel_per_call})"
        if code == wasmtime.TrapCode.INTERRUPT:
            return f"timed out after {timeout if timeout is not None else self._timeout:g}s"
        msg = _first_line(e)
        if not isinstance(e, wasmtime.Trap):
            return msg
        if with_memory and self.memory.size(self.store) >= self.args.max_memory_pages:
            msg += f" (memory at its limit of {self.args.max_memory_pages} pages)"
        return f"trapped: {msg}"
