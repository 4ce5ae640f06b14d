"""Guests of kube-scheduler-wasm-extension's ABI, run with its semantics.

Filter and Score call the guest once per node (``currentNodeName``), each verdict with its own reason;
``score`` returns the score in the high 32 bits and the status in the low; ``permit`` the status high
and the timeout (ms) low; ``postfilter`` the nominating mode high and the status low. ``enqueue``
is asked once for the cluster events to register. Upstream's guest SDKs keep the pod and cycle state
in guest memory from ``prefilter`` (which they always export) to the end of the pod's binding, so as
upstream's host, instances are pooled: the one that ran a pod's scheduling cycle stays with it through
binding, and the next pod's cycle takes another (``_Pool``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harmonic.api.pod import Pod
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.diagnosis import Diagnosis
from harmonic.framework.events import ALL_EVENTS, Action, ClusterEvent, EventWithHint, Resource
from harmonic.framework.interface import (
    BindPlugin,
    FilterPlugin,
    Handle,
    PermitPlugin,
    PluginError,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.framework.verdicts import Verdicts
from harmonic.plugins.wasm import abi
from harmonic.plugins.wasm.args import WasmPluginArgs
from harmonic.plugins.wasm.guest import GuestError, GuestInstance, GuestModule
from harmonic.plugins.wasm.host import CallContext
from harmonic.plugins.wasm.plugin import WasmPlugin

log = logging.getLogger(__name__)

_REJECTING = (abi.CODE_UNSCHEDULABLE, abi.CODE_UNRESOLVABLE)
#: Upstream's NominatingMode: Override means "nominate the node the guest named".
_MODE_OVERRIDE = 1
#: Upstream's resource numbering of ``result.cluster_events`` (its gvk constants), mapped to
#: Harmonic's; resources Harmonic has no events for requeue on any event, as is safe.
_RESOURCES = (
    Resource.POD,
    Resource.NODE,
    Resource.PERSISTENT_VOLUME,
    Resource.PERSISTENT_VOLUME_CLAIM,
    Resource.WILDCARD,  # PodSchedulingContext
    Resource.WILDCARD,  # ResourceClaim
    Resource.STORAGE_CLASS,
    Resource.CSI_NODE,
    Resource.CSI_DRIVER,
    Resource.CSI_STORAGE_CAPACITY,
    Resource.WILDCARD,
)


def _i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


class _Pool:
    """Instances by role: the one running scheduling cycles, those holding a pod through binding,
    and spares (upstream's ``guestPool``)."""

    def __init__(self, first: GuestInstance, make: Any) -> None:
        self.scheduling: GuestInstance | None = first
        self.binding: dict[str, GuestInstance] = {}
        self.free: list[GuestInstance] = []
        self._make = make

    def for_scheduling(self) -> GuestInstance:
        if self.scheduling is None:
            self.scheduling = self.free.pop() if self.free else self._make()
        return self.scheduling

    def for_binding(self, uid: str) -> GuestInstance:
        inst = self.binding.get(uid)
        if inst is None:
            inst = self.for_scheduling()
            self.scheduling = None
            self.binding[uid] = inst
        return inst

    def release(self, uid: str) -> None:
        inst = self.binding.pop(uid, None)
        if inst is not None:
            self.free.append(inst)


class UpstreamPlugin(WasmPlugin):
    """Base of the classes made for upstream-ABI guests."""

    def __init__(self, args: WasmPluginArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.pool = _Pool(self.instance, self._new_instance)
        self._events: Sequence[EventWithHint] | None = None

    def _new_instance(self) -> GuestInstance:
        try:
            return GuestInstance(self.NAME, self.GUEST, self.args, self.handle)
        except GuestError as e:
            raise PluginError(f'wasm guest "{self.NAME}": {e}') from None

    def _on(self, inst: GuestInstance, export: str, state: CycleState | None, ctx: CallContext) -> Any:
        try:
            return inst.call(export, ctx, state)
        except GuestError as e:
            raise PluginError(f'wasm guest "{self.NAME}": {e}') from None

    def _run(self, export: str, state: CycleState | None, ctx: CallContext) -> Any:
        return self._on(self.pool.for_scheduling(), export, state, ctx)

    def _bound(self, export: str, state: CycleState, pod: Pod, node_name: str) -> tuple[Any, CallContext]:
        ctx = CallContext(pod=pod, node_name=node_name)
        return self._on(self.pool.for_binding(pod.uid), export, state, ctx), ctx

    def events_to_register(self) -> Sequence[EventWithHint]:
        if "enqueue" not in self.GUEST.exports:
            return ALL_EVENTS
        if self._events is None:
            ctx = CallContext(pod=_NO_POD)
            try:
                self._run("enqueue", None, ctx)
                got = ctx.events or []
            except PluginError as e:
                log.error("%s (registering for every cluster event)", e)
                got = []
            self._events = tuple(_event(r, a) for r, a in got) or ALL_EVENTS
        return self._events

    def _code_status(self, export: str, code: int, reason: str, allowed: tuple[int, ...]) -> Status | None:
        if code == abi.CODE_SUCCESS:
            return None
        if code == abi.CODE_ERROR:
            raise PluginError(f'wasm guest "{self.NAME}": {export}: {reason or "error"}')
        if code not in allowed:
            raise PluginError(f'wasm guest "{self.NAME}": {export}: returned status code {code}')
        return Status(Code(code), *((reason,) if reason else ()))

    def _bound_status(self, export: str, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        try:
            code, ctx = self._bound(export, state, pod, node_name)
            allowed = (*_REJECTING, abi.CODE_SKIP) if export in ("prebind", "bind") else _REJECTING
            return self._code_status(export, int(code), ctx.reason, allowed)
        except PluginError as e:
            return Status(Code.ERROR, str(e))

    def _finish(self, export: str, state: CycleState, pod: Pod, node_name: str) -> None:
        """Unreserve, PostBind: nothing to return, so failures are logged; the pod's instance is freed."""
        try:
            if export in self.GUEST.exports:
                self._bound(export, state, pod, node_name)
        except PluginError as e:
            log.error("%s", e)
        finally:
            self.pool.release(pod.uid)


def _event(resource: int, action: int) -> EventWithHint:
    res = _RESOURCES[resource] if resource < len(_RESOURCES) else Resource.WILDCARD
    act = Action(action & Action.ALL) or Action.ALL
    return EventWithHint(ClusterEvent(res, act))


class _NoPod:
    raw: Mapping[str, Any] = {}
    uid = ""


_NO_POD: Any = _NoPod()


class _PreFilter(UpstreamPlugin, PreFilterPlugin):
    def pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        ctx = CallContext(pod=pod, snap=snap)
        code = int(self._run("prefilter", state, ctx))
        st = self._code_status("prefilter", code, ctx.reason, (*_REJECTING, abi.CODE_SKIP))
        names = ctx.node_names
        return (PreFilterResult(frozenset(names)) if names is not None else None), st

    @property
    def has_extensions(self) -> bool:
        return "addpod" in self.GUEST.exports or "removepod" in self.GUEST.exports

    def _extension(self, export: str, state: CycleState, pod: Pod, other: Pod, slot: int) -> Status | None:
        if export not in self.GUEST.exports:
            return None
        snap = self.handle.snapshot if self.handle is not None else None
        ctx = CallContext(pod=pod, snap=snap, node_name=snap.node(slot).name if snap is not None else "")
        ctx.target = other
        code = int(self._run(export, state, ctx))
        return self._code_status(export, code, ctx.reason, _REJECTING)

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, slot: int) -> Status | None:
        return self._extension("addpod", state, pod, added, slot)

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, slot: int) -> Status | None:
        return self._extension("removepod", state, pod, removed, slot)


class _Filter(UpstreamPlugin, FilterPlugin):
    def filter(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Verdicts | None:
        names = snap.names()
        codes = np.zeros(len(slots), dtype=np.int8)
        reason_ids = np.zeros(len(slots), dtype=np.int32)
        reasons: dict[tuple[str, ...], int] = {}
        inst = self.pool.for_scheduling()
        for i, slot in enumerate(slots):
            ctx = CallContext(pod=pod, snap=snap, node_name=str(names[slot]))
            code = int(self._on(inst, "filter", state, ctx))
            st = self._code_status("filter", code, ctx.reason, _REJECTING)
            if st is not None:
                codes[i] = code
                reason_ids[i] = reasons.setdefault(st.reasons, len(reasons))
        if not codes.any():
            return None
        return Verdicts(codes, reason_ids, list(reasons))


class _PostFilter(UpstreamPlugin, PostFilterPlugin):
    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        statuses: dict[str, int] = {}
        snap = self.handle.snapshot if self.handle is not None else None
        for out in diagnosis.outcomes:
            rejected = out.codes != 0
            if snap is not None and rejected.any():
                for slot, code in zip(out.slots[rejected], out.codes[rejected], strict=True):
                    statuses[snap.node(int(slot)).name] = int(code)
        ctx = CallContext(pod=pod, snap=snap)
        ctx.statuses = statuses
        packed = int(self._run("postfilter", state, ctx))
        code, mode = _i32(packed), _i32(packed >> 32)
        st = self._code_status("postfilter", code, ctx.reason, _REJECTING)
        result = PostFilterResult(ctx.nominated) if mode == _MODE_OVERRIDE and ctx.nominated else None
        return result, st


class _PreScore(UpstreamPlugin, PreScorePlugin):
    def pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        ctx = CallContext(pod=pod, snap=snap, slots=slots)
        code = int(self._run("prescore", state, ctx))
        return self._code_status("prescore", code, ctx.reason, (abi.CODE_SKIP,))


class _Score(UpstreamPlugin, ScorePlugin):
    def score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> np.ndarray:
        names = snap.names()
        out = np.zeros(len(slots), dtype=np.int64)
        inst = self.pool.for_scheduling()
        for i, slot in enumerate(slots):
            ctx = CallContext(pod=pod, snap=snap, node_name=str(names[slot]))
            packed = int(self._on(inst, "score", state, ctx))
            self._code_status("score", _i32(packed), ctx.reason, ())
            out[i] = _i32(packed >> 32)
        return out


class _Normalize(_Score):
    def normalize_score(
        self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        names = [str(n) for n in snap.names()[slots]]
        ctx = CallContext(pod=pod, snap=snap, slots=slots)
        ctx.score_map = {n: int(s) for n, s in zip(names, scores, strict=True)}
        code = int(self._run("normalizescore", state, ctx))
        self._code_status("normalizescore", code, ctx.reason, ())
        got = ctx.result_map
        if not got:
            # As upstream: a guest that sets no list leaves the scores as they were.
            return scores
        missing = [n for n in names if n not in got]
        if missing or len(got) != len(names):
            raise PluginError(
                f'wasm guest "{self.NAME}": normalizescore: returned {len(got)} scores for {len(names)} nodes'
            )
        return np.array([got[n] for n in names], dtype=np.int64)


class _Reserve(UpstreamPlugin, ReservePlugin):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if "reserve" not in self.GUEST.exports:
            return None
        ctx = CallContext(pod=pod, node_name=node_name)
        try:
            code = int(self._run("reserve", state, ctx))
            return self._code_status("reserve", code, ctx.reason, _REJECTING)
        except PluginError as e:
            return Status(Code.ERROR, str(e))

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._finish("unreserve", state, pod, node_name)


class _Permit(UpstreamPlugin, PermitPlugin):
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        try:
            packed, ctx = self._bound("permit", state, pod, node_name)
            code, timeout_ms = _i32(int(packed) >> 32), int(packed) & 0xFFFFFFFF
            st = self._code_status("permit", code, ctx.reason, (*_REJECTING, abi.CODE_WAIT))
            return st, timeout_ms / 1000.0
        except PluginError as e:
            return Status(Code.ERROR, str(e)), 0.0


class _PreBind(UpstreamPlugin, PreBindPlugin):
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self._bound_status("prebind", state, pod, node_name)


class _Bind(UpstreamPlugin, BindPlugin):
    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self._bound_status("bind", state, pod, node_name)


class _PostBind(UpstreamPlugin, PostBindPlugin):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._finish("postbind", state, pod, node_name)


_BY_EXPORT: Mapping[str, type[UpstreamPlugin]] = {
    "prefilter": _PreFilter,
    "filter": _Filter,
    "postfilter": _PostFilter,
    "prescore": _PreScore,
    "score": _Score,
    "normalizescore": _Normalize,
    "reserve": _Reserve,
    "unreserve": _Reserve,
    "permit": _Permit,
    "prebind": _PreBind,
    "bind": _Bind,
    "postbind": _PostBind,
}


def plugin_class(name: str, guest: GuestModule) -> type[UpstreamPlugin]:
    """The class of an upstream-ABI guest configured as ``name``."""
    bases = tuple(dict.fromkeys(_BY_EXPORT[e] for e in guest.exports if e in _BY_EXPORT))
    if {"permit", "prebind", "bind"} & set(guest.exports):
        # The instance holding a pod through binding is freed at Unreserve or PostBind, so both run
        # even when the guest exports neither.
        bases = tuple(dict.fromkeys((*bases, _Reserve, _PostBind)))
    if _Normalize in bases:
        bases = tuple(b for b in bases if b is not _Score)
    if not bases:
        bases = (UpstreamPlugin,)
    return type(name, bases, {"NAME": name, "GUEST": guest, "__module__": __name__})
