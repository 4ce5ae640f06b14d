"""Host functions of kube-scheduler-wasm-extension's ABI, for guests written against its SDKs.

Names, signatures and encodings are upstream's (``scheduler/plugin/host.go``): the pod and nodes are
protobuf ``k8s.io/api`` messages, node lists, score lists and status maps are JSON, node names are
NUL-separated. The node a per-node call is about is ``currentNodeName``; the guest fetches the node
itself with ``k8s.io/api.node``. Encoded pods and nodes are kept while the object is unchanged, so a
guest asking for the same node in every cycle pays the encoding once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from harmonic.api.node import Node
from harmonic.api.pod import Pod
from harmonic.framework.snapshot import Snapshot
from harmonic.plugins.wasm import abi, proto
from harmonic.plugins.wasm.host import I32, Access, CallContext, Functions, GuestFault

if TYPE_CHECKING:
    from harmonic.plugins.wasm.guest import GuestInstance

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])

#: klog severities as upstream's guests pass them.
SEVERITY_INFO, SEVERITY_WARNING, SEVERITY_ERROR, SEVERITY_FATAL = 0, 1, 2, 3
_LOG_LEVEL = {
    SEVERITY_INFO: logging.INFO,
    SEVERITY_WARNING: logging.WARNING,
    SEVERITY_ERROR: logging.ERROR,
    SEVERITY_FATAL: logging.CRITICAL,
}


def provided() -> frozenset[tuple[str, str]]:
    return frozenset(functions(None))


def functions(inst: GuestInstance | None) -> Functions:
    """Upstream's host functions bound to ``inst`` (``None``: only to list them)."""
    acc = Access(inst)
    ctx, read, give, cached = acc.ctx, acc.read, acc.give, acc.cached
    nodes: dict[str, tuple[Node, bytes]] = {}
    pods: dict[str, tuple[Pod, bytes]] = {}
    fns: Functions = {}

    def fn(module: str, name: str, params: list[str], results: list[str]) -> Callable[[F], F]:
        def register(f: F) -> F:
            fns[module, name] = (params, results, f)
            return f

        return register

    def snapshot(c: CallContext) -> Snapshot | None:
        if c.snap is not None:
            return c.snap
        handle = inst.handle if inst is not None else None
        return handle.snapshot if handle is not None else None

    def node_bytes(node: Node) -> bytes:
        hit = nodes.get(node.name)
        if hit is None or hit[0] is not node:
            hit = nodes[node.name] = (node, proto.encode(proto.NODE, node.raw))
        return hit[1]

    def pod_bytes(pod: Pod | None) -> bytes:
        if pod is None:
            return b""
        # By uid, as a pod object is replaced when it changes.
        hit = pods.get(pod.uid)
        if hit is None or hit[0] is not pod:
            if len(pods) > 64:
                pods.clear()
            hit = pods[pod.uid] = (pod, proto.encode(proto.POD, pod.raw))
        return hit[1]

    def text(ptr: int, length: int, what: str) -> str:
        return read(ptr, length, what).decode(errors="replace")

    # -- k8s.io/api
    @fn(abi.MOD_API, "node", [I32, I32, I32, I32], [I32])
    def node(name: int, name_len: int, buf: int, limit: int) -> int:
        c = ctx()
        n = text(name, name_len, "node name")
        snap = snapshot(c)
        data = b""
        if snap is not None and snap.has_node(n):
            data = node_bytes(snap.node(snap.slot(n)))
        return give(data, buf, limit, "node")

    @fn(abi.MOD_API, "nodeList", [I32, I32], [I32])
    def node_list(buf: int, limit: int) -> int:
        c = ctx()

        def make() -> bytes:
            snap = snapshot(c)
            if snap is None:
                return b""
            return proto.node_list([node_bytes(snap.node(int(s))) for s in snap.order])

        return give(cached("nodeList", make), buf, limit, "nodeList")

    # -- k8s.io/klog
    def severity_level() -> int:
        return inst.args.log_severity if inst is not None else 0

    def wanted(severity: int) -> bool:
        # Upstream drops lines below the configured severity, and logs only info and error lines.
        if severity < severity_level() or severity not in (SEVERITY_INFO, SEVERITY_ERROR):
            return False
        return log.isEnabledFor(_LOG_LEVEL[severity])

    def emit(severity: int, msg: str, kvs: list[str]) -> None:
        who = inst.name if inst is not None else "?"
        pairs = " ".join(f"{kvs[i]}={kvs[i + 1]!r}" for i in range(0, len(kvs) - 1, 2))
        log.log(_LOG_LEVEL[severity], "wasm guest %s: %s%s", who, msg, f" {pairs}" if pairs else "")

    @fn(abi.MOD_KLOG, "log", [I32, I32, I32], [])
    def klog_log(severity: int, msg: int, length: int) -> None:
        if wanted(severity):
            # A Go guest's klog.Info ends its line with a newline; the logger adds its own.
            emit(severity, text(msg, min(length, abi.MAX_REASON_BYTES), "log").rstrip(), [])

    @fn(abi.MOD_KLOG, "logs", [I32, I32, I32, I32, I32], [])
    def klog_logs(severity: int, msg: int, length: int, kvs: int, kvs_len: int) -> None:
        if wanted(severity):
            pairs = [s.decode(errors="replace") for s in read(kvs, kvs_len, "logs").split(b"\0") if s]
            emit(severity, text(msg, min(length, abi.MAX_REASON_BYTES), "logs"), pairs)

    @fn(abi.MOD_KLOG, "severity", [], [I32])
    def klog_severity() -> int:
        return severity_level()

    # -- k8s.io/scheduler: inputs
    @fn(abi.MOD_SCHEDULER, "get_config", [I32, I32], [I32])
    def get_config(buf: int, limit: int) -> int:
        assert inst is not None
        return give(inst.config, buf, limit, "get_config")

    @fn(abi.MOD_SCHEDULER, "currentPod", [I32, I32], [I32])
    def current_pod(buf: int, limit: int) -> int:
        return give(pod_bytes(ctx().pod), buf, limit, "currentPod")

    @fn(abi.MOD_SCHEDULER, "targetPod", [I32, I32], [I32])
    def target_pod(buf: int, limit: int) -> int:
        return give(pod_bytes(ctx().target), buf, limit, "targetPod")

    @fn(abi.MOD_SCHEDULER, "currentNodeName", [I32, I32], [I32])
    def current_node_name(buf: int, limit: int) -> int:
        return give(ctx().node_name.encode(), buf, limit, "currentNodeName")

    @fn(abi.MOD_SCHEDULER, "filteredNodeList", [I32, I32], [I32])
    def filtered_node_list(buf: int, limit: int) -> int:
        c = ctx()

        def make() -> bytes:
            snap = c.snap
            names = [] if snap is None else [str(n) for n in snap.names()[c.slots]]
            return json.dumps(names, separators=(",", ":")).encode()

        return give(cached("filteredNodeList", make), buf, limit, "filteredNodeList")

    @fn(abi.MOD_SCHEDULER, "nodeImageStates", [I32, I32, I32, I32], [I32])
    def node_image_states(name: int, name_len: int, buf: int, limit: int) -> int:
        c = ctx()
        n = text(name, name_len, "node name")
        snap = snapshot(c)
        states: dict[str, dict[str, int]] = {}
        if snap is not None and snap.has_node(n):
            for image, size in snap.node(snap.slot(n)).images.items():
                spread = snap.image(image)[1]
                states[image] = {"Size": size, "NumNodes": spread}
        return give(json.dumps(states, separators=(",", ":")).encode(), buf, limit, "nodeImageStates")

    @fn(abi.MOD_SCHEDULER, "nodeToStatusMap", [I32, I32], [I32])
    def node_to_status_map(buf: int, limit: int) -> int:
        data = json.dumps(ctx().statuses or {}, separators=(",", ":")).encode()
        return give(data, buf, limit, "nodeToStatusMap")

    @fn(abi.MOD_SCHEDULER, "nodeScoreList", [I32, I32], [I32])
    def node_score_list(buf: int, limit: int) -> int:
        data = json.dumps(ctx().score_map or {}, separators=(",", ":")).encode()
        return give(data, buf, limit, "nodeScoreList")

    # -- k8s.io/scheduler: results
    @fn(abi.MOD_SCHEDULER, "result.status_reason", [I32, I32], [])
    def status_reason(buf: int, length: int) -> None:
        if length > abi.MAX_REASON_BYTES:
            raise GuestFault(f"result.status_reason: {length} bytes (at most {abi.MAX_REASON_BYTES})")
        ctx().reason = text(buf, length, "result.status_reason")

    @fn(abi.MOD_SCHEDULER, "result.node_names", [I32, I32], [])
    def node_names(buf: int, length: int) -> None:
        raw = read(buf, length, "result.node_names")
        ctx().node_names = [s.decode(errors="replace") for s in raw.split(b"\0") if s]

    @fn(abi.MOD_SCHEDULER, "result.nominated_node_name", [I32, I32], [])
    def nominated_node_name(buf: int, length: int) -> None:
        ctx().nominated = text(buf, length, "result.nominated_node_name")

    @fn(abi.MOD_SCHEDULER, "result.normalized_score_list", [I32, I32], [])
    def normalized_score_list(buf: int, length: int) -> None:
        try:
            got = json.loads(read(buf, length, "result.normalized_score_list"))
        except ValueError as e:
            raise GuestFault(f"result.normalized_score_list: not JSON: {e}") from None
        if not isinstance(got, dict) or not all(isinstance(v, int) for v in got.values()):
            raise GuestFault("result.normalized_score_list: want a JSON object of node name -> integer")
        ctx().result_map = {str(k): int(v) for k, v in got.items()}

    @fn(abi.MOD_SCHEDULER, "result.cluster_events", [I32, I32], [])
    def cluster_events(buf: int, length: int) -> None:
        raw = read(buf, length, "result.cluster_events")
        # Each event: u32 resource (upstream's gvk index), u32 action type, little-endian.
        ctx().events = [
            (int.from_bytes(raw[i : i + 4], "little"), int.from_bytes(raw[i + 4 : i + 8], "little"))
            for i in range(0, len(raw) - 7, 8)
        ]

    # -- k8s.io/scheduler: the framework handle
    @fn(abi.MOD_SCHEDULER, "handle.eventrecorder.eventf", [I32, I32], [])
    def eventf(buf: int, length: int) -> None:
        try:
            msg = json.loads(read(buf, length, "handle.eventrecorder.eventf"))
        except ValueError as e:
            raise GuestFault(f"handle.eventrecorder.eventf: not JSON: {e}") from None
        ref = msg.get("RegardingReference") or {}
        who = inst.name if inst is not None else "?"
        # Harmonic's framework has no event recorder for plugins: the event is logged.
        log.info(
            "wasm guest %s: event %s %s/%s: %s %s %s",
            who,
            msg.get("Eventtype", ""),
            ref.get("Namespace", ""),
            ref.get("Name", ""),
            msg.get("Reason", ""),
            msg.get("Action", ""),
            msg.get("Note", ""),
        )

    def waiting(uid: str) -> Any:
        handle = inst.handle if inst is not None else None
        return handle.waiting_pod(uid) if handle is not None else None

    @fn(abi.MOD_SCHEDULER, "handle.reject_waiting_pod", [I32, I32, I32, I32], [])
    def reject_waiting_pod(uid: int, uid_len: int, out: int, out_limit: int) -> None:
        wp = waiting(text(uid, uid_len, "handle.reject_waiting_pod"))
        if wp is not None:
            # As framework.Handle.RejectWaitingPod: no plugin named, message "removed".
            wp.reject("", "removed")
        acc.write((1 if wp is not None else 0).to_bytes(8, "little"), out, "handle.reject_waiting_pod")

    @fn(abi.MOD_SCHEDULER, "handle.get_waiting_pod", [I32, I32, I32, I32], [])
    def get_waiting_pod(uid: int, uid_len: int, out: int, out_limit: int) -> None:
        wp = waiting(text(uid, uid_len, "handle.get_waiting_pod"))
        if wp is None:
            acc.write((0).to_bytes(8, "little"), out, "handle.get_waiting_pod")
            return
        pod = getattr(wp, "pod", None)
        data = pod_bytes(pod if isinstance(pod, Pod) else None)
        if len(data) > out_limit:
            raise GuestFault(f"handle.get_waiting_pod: the pod takes {len(data)} bytes, over {out_limit}")
        acc.write(data, out, "handle.get_waiting_pod")

    return fns
