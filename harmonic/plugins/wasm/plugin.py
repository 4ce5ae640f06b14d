"""Wasm — a WebAssembly guest as a scheduler plugin.

Extension points: those the guest exports, and only those (PreFilter, Filter, PreScore, Score with
NormalizeScore, Reserve/Unreserve, Permit, PreBind, Bind, PostBind). Args: ``WasmPluginArgs``
(``guestURL``, ``guestConfig``, ``maxMemoryPages``, ``maxFuelPerCall``, ``callTimeout``,
``cycleBudget``, ``preopens``, ``env``, ``allowRemoteGuest``).

Configured as in kube-scheduler-wasm-extension: a pluginConfig entry whose args carry ``guestURL``
defines a plugin under the entry's name (``Wasm`` or any name not taken), which the profile then
enables like any other. Each configured name gets its own class, made at config load from the guest's
exports, so the framework registers the guest exactly at the points it implements.

Filter and Score see every candidate node in one call (array-at-a-time, as Harmonic's own plugins);
anything a guest does wrong becomes an Error status naming the plugin and the cause.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from harmonic.api.pod import Pod
from harmonic.framework.args import PluginArgs
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.interface import (
    BindPlugin,
    Handle,
    PermitPlugin,
    Plugin,
    PluginError,
    PostBindPlugin,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from harmonic.framework.interface import FilterPlugin as _FilterPlugin
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.plugins.wasm import abi
from harmonic.plugins.wasm.args import WasmPluginArgs
from harmonic.plugins.wasm.guest import GuestError, GuestInstance, GuestModule, load
from harmonic.plugins.wasm.host import CallContext

log = logging.getLogger(__name__)

NAME = "Wasm"
_CYCLE_KEY = "WasmCycle"
_REJECTING = (abi.CODE_UNSCHEDULABLE, abi.CODE_UNRESOLVABLE)


class WasmPlugin(Plugin):
    """Base of every guest plugin class; ``GUEST`` is set on the class made for a configured name."""

    NAME: ClassVar[str] = NAME
    Args: ClassVar[type[WasmPluginArgs]] = WasmPluginArgs
    GUEST: ClassVar[GuestModule]

    def __init__(self, args: WasmPluginArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        try:
            self.instance = GuestInstance(self.NAME, self.GUEST, args, handle)
        except GuestError as e:
            raise PluginError(f'wasm guest "{self.NAME}": {e}') from None

    @classmethod
    def describe(cls) -> str:
        return f"wasm guest {cls.GUEST.source}: {', '.join(cls.GUEST.points)} (exports {', '.join(cls.GUEST.exports)})"

    def _call(self, export: str, state: CycleState | None, ctx: CallContext) -> Any:
        if state is not None:
            ctx.cycle = _cycle_id(state)
        try:
            return self.instance.call(export, ctx, state)
        except GuestError as e:
            raise PluginError(f'wasm guest "{self.NAME}": {e}') from None

    def _status(self, export: str, code: int, ctx: CallContext, allowed: tuple[int, ...]) -> Status | None:
        """The guest's status, or a ``PluginError`` for an Error status or a code ``export`` may not return."""
        if code == abi.CODE_SUCCESS:
            return None
        if code == abi.CODE_ERROR:
            raise PluginError(f'wasm guest "{self.NAME}": {export}: {ctx.reason or "error"}')
        if code not in allowed:
            raise PluginError(f'wasm guest "{self.NAME}": {export}: returned status code {code}')
        return Status(Code(code), *((ctx.reason,) if ctx.reason else ()))

    def _bind_phase(
        self, export: str, state: CycleState, pod: Pod, node_name: str, allowed: tuple[int, ...]
    ) -> Status | None:
        """Reserve, PreBind, Bind: statuses come back as statuses (the framework words the Error)."""
        ctx = CallContext(pod=pod, node_name=node_name)
        try:
            return self._status(export, self._call(export, state, ctx), ctx, allowed)
        except PluginError as e:
            return Status(Code.ERROR, str(e))

    def _notify(self, export: str, state: CycleState, pod: Pod, node_name: str) -> None:
        """Unreserve, PostBind: nothing to return, so failures are logged."""
        try:
            self._call(export, state, CallContext(pod=pod, node_name=node_name))
        except PluginError as e:
            log.error("%s", e)


def _cycle_id(state: CycleState) -> int:
    """A number unique to this scheduling cycle, so a guest can tell its PreScore state is current."""
    cid = state.get(_CYCLE_KEY)
    if cid is None:
        global _next_cycle
        _next_cycle += 1
        cid = _next_cycle
        state.write(_CYCLE_KEY, cid)
    return int(cid)


_next_cycle = 0


class _PreFilter(WasmPlugin, PreFilterPlugin):
    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        ctx = CallContext(pod=pod, snap=snap, slots=snap.order)
        st = self._status("prefilter", self._call("prefilter", state, ctx), ctx, (*_REJECTING, abi.CODE_SKIP))
        names = ctx.node_names
        return (PreFilterResult(frozenset(names)) if names is not None else None), st


class _Filter(WasmPlugin, _FilterPlugin):
    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        ctx = CallContext(pod=pod, snap=snap, slots=slots)
        st = self._status("filter", self._call("filter", state, ctx), ctx, _REJECTING)
        if st is not None:
            return Verdicts.all(len(slots), st.code, *st.reasons)
        codes = ctx.node_codes
        if codes is None or not codes.any():
            return None
        reason = ctx.reason or f"node(s) didn't satisfy plugin {self.NAME}"
        return Verdicts(codes.astype(np.int8), np.zeros(len(codes), dtype=np.int32), [(reason,)])


class _PreScore(WasmPlugin, PreScorePlugin):
    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        ctx = CallContext(pod=pod, snap=snap, slots=slots)
        return self._status("prescore", self._call("prescore", state, ctx), ctx, (abi.CODE_SKIP,))


def _checked_scores(self: WasmPlugin, export: str, ctx: CallContext, code: int) -> np.ndarray:
    self._status(export, code, ctx, ())
    if ctx.result_scores is None:
        raise PluginError(f'wasm guest "{self.NAME}": {export}: returned success without scores')
    return ctx.result_scores


class _Score(WasmPlugin, ScorePlugin):
    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        ctx = CallContext(pod=pod, snap=snap, slots=slots)
        return _checked_scores(self, "score", ctx, self._call("score", state, ctx))


class _Normalize(_Score):
    def normalize_score(
        self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        ctx = CallContext(pod=pod, snap=snap, slots=slots, scores=scores)
        return _checked_scores(self, "normalizescore", ctx, self._call("normalizescore", state, ctx))


class _Reserve(WasmPlugin, ReservePlugin):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self._bind_phase("reserve", state, pod, node_name, _REJECTING)

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        if "unreserve" in self.GUEST.exports:
            self._notify("unreserve", state, pod, node_name)


class _Permit(WasmPlugin, PermitPlugin):
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        ctx = CallContext(pod=pod, node_name=node_name)
        try:
            packed = int(self._call("permit", state, ctx))
            # Low 32 bits: the status code; high 32 bits: the Wait timeout in milliseconds.
            code, timeout_ms = packed & 0xFFFFFFFF, (packed >> 32) & 0xFFFFFFFF
            return self._status("permit", code, ctx, (*_REJECTING, abi.CODE_WAIT)), timeout_ms / 1000.0
        except PluginError as e:
            return Status(Code.ERROR, str(e)), 0.0


class _PreBind(WasmPlugin, PreBindPlugin):
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self._bind_phase("prebind", state, pod, node_name, (*_REJECTING, abi.CODE_SKIP))


class _Bind(WasmPlugin, BindPlugin):
    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self._bind_phase("bind", state, pod, node_name, (*_REJECTING, abi.CODE_SKIP))


class _PostBind(WasmPlugin, PostBindPlugin):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._notify("postbind", state, pod, node_name)


#: The implementation of each guest export (``unreserve`` rides on ``reserve``).
_BY_EXPORT: Mapping[str, type[WasmPlugin]] = {
    "prefilter": _PreFilter,
    "filter": _Filter,
    "prescore": _PreScore,
    "score": _Score,
    "normalizescore": _Normalize,
    "reserve": _Reserve,
    "permit": _Permit,
    "prebind": _PreBind,
    "bind": _Bind,
    "postbind": _PostBind,
}


def plugin_class(name: str, guest: GuestModule) -> type[WasmPlugin]:
    """The class of the guest plugin configured as ``name``: the extension points of its exports."""
    bases = tuple(dict.fromkeys(_BY_EXPORT[e] for e in guest.exports if e in _BY_EXPORT))
    if _Normalize in bases:
        bases = tuple(b for b in bases if b is not _Score)
    return type(name, bases, {"NAME": name, "GUEST": guest, "__module__": __name__})


class WasmTemplate:
    """Makes guest plugin classes from pluginConfig entries that carry ``guestURL``."""

    Args: type[PluginArgs] = WasmPluginArgs
    KIND = "WasmPluginArgs"

    def claims(self, raw_args: Mapping[str, Any]) -> bool:
        return "guestURL" in raw_args

    def make(self, name: str, args: Any) -> type[Plugin]:
        assert isinstance(args, WasmPluginArgs)
        guest = load(args)
        # Imported here: the upstream ABI's plugin classes build on this module's base class.
        from harmonic.plugins.wasm import upstream_plugin

        try:
            # Instantiate once now, so a guest that cannot start (too little memory, a trapping start
            # function, missing WASI grants) is a config error rather than a failure at startup.
            GuestInstance(name, guest, args)
        except GuestError as e:
            raise ValueError(f"guestURL: {guest.source}: {e}") from None
        if guest.kind == abi.UPSTREAM:
            return upstream_plugin.plugin_class(name, guest)
        return plugin_class(name, guest)


TEMPLATE = WasmTemplate()
