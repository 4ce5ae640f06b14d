"""The kube-scheduler extender v1 wire format (k8s.io/kube-scheduler/extender/v1), decoded and encoded.

The Go types carry no json tags, so the JSON keys are the Go field names: ``Pod``, ``Nodes``,
``NodeNames``, ``FailedNodes``, ``FailedAndUnresolvableNodes``, ``Error``, ``Host``, ``Score``,
``NodeNameToVictims``, ``NodeNameToMetaVictims``, ``Pods``, ``NumPDBViolations``, ``UID``,
``PodName``, ``PodNamespace``, ``PodUID``, ``Node``. Nil pointers, maps and slices travel as ``null``.

Go's decoder matches keys case-insensitively and ignores unknown ones; so does this module, at every
depth: the protocol's own keys here, and the keys of the Pods and Nodes inside by
``harmonic.api.casefold`` (``Items`` is ``items``, ``Metadata`` is ``metadata``). Anything that is not the protocol's shape raises ``WireError`` naming
the field (the server answers 400 with it).

Node objects are the bulk of a ``nodeCacheCapable: false`` request (thousands of full ``v1.Node``s).
They are kept as raw JSON: only each node's ``metadata`` identity is decoded up front, a full decode
happens only for nodes not seen before (``NodeItem.key``), and the response echoes the raw bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
import numpy as np

from harmonic.api.casefold import canonical

MAX_EXTENDER_PRIORITY = 10


class WireError(ValueError):
    """A request body that is not the extender protocol's shape; the message names the field."""


# ---------------------------------------------------------------- decoding helpers
class _ObjectMeta(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resourceVersion: str = ""


class _NodeHead(msgspec.Struct):
    metadata: _ObjectMeta = msgspec.field(default_factory=_ObjectMeta)


class _NodeList(msgspec.Struct):
    items: list[msgspec.Raw] | None = None


_top = msgspec.json.Decoder(dict[str, msgspec.Raw])
_object = msgspec.json.Decoder(dict[str, Any])
_raw_list = msgspec.json.Decoder(list[msgspec.Raw] | None)
_node_head = msgspec.json.Decoder(_NodeHead)
_names = msgspec.json.Decoder(list[str] | None)
_string = msgspec.json.Decoder(str | None)
_victims_map = msgspec.json.Decoder(dict[str, msgspec.Raw] | None)
_int64 = msgspec.json.Decoder(Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)] | None)
_encoder = msgspec.json.Encoder()


def _fields(body: bytes | msgspec.Raw, known: Sequence[str], field: str = "") -> dict[str, msgspec.Raw]:
    """The object's keys matched to ``known`` as Go's encoding/json does: the exact spelling, else
    case-insensitively (the last such key wins); ``field`` names the object in errors (the body when
    empty)."""
    if not field and not body.strip():
        raise WireError("empty request body: expected a JSON object")
    try:
        top = _top.decode(body)
    except msgspec.DecodeError as e:
        what = f"{field}: expected a JSON object" if field else "request body is not a JSON object"
        raise WireError(f"{what}: {_msg(e)}") from None
    by_lower = {k.lower(): k for k in known}
    out: dict[str, msgspec.Raw] = {}
    for key, raw in top.items():
        name = by_lower.get(key.lower())
        if name is not None and (name == key or name not in top):
            out[name] = raw
    return out


def _msg(e: msgspec.DecodeError) -> str:
    return str(e).replace(" - at `$`", "")


def _decode(dec: msgspec.json.Decoder[Any], raw: msgspec.Raw | None, field: str) -> Any:
    if raw is None:
        return None
    try:
        return dec.decode(raw)
    except msgspec.DecodeError as e:
        text = str(e)
        where = ""
        if " - at `$" in text:
            text, _, path = text.partition(" - at `$")
            where = path.rstrip("`")
        raise WireError(f"{field}{where}: {text}") from None


def _is_null(raw: msgspec.Raw | None) -> bool:
    return raw is None or bytes(raw).strip() == b"null"


# ---------------------------------------------------------------- requests
@dataclass(frozen=True, slots=True)
class NodeItem:
    """One node of ``ExtenderArgs.Nodes.items``: its identity and its raw JSON."""

    name: str
    raw: msgspec.Raw
    #: (uid, resourceVersion): the API server guarantees one content per pair; None when either is unset.
    key: tuple[str, str] | None

    def manifest(self) -> dict[str, Any]:
        node: dict[str, Any] = canonical(_object.decode(self.raw), "V1Node")
        return node


@dataclass(frozen=True, slots=True)
class ExtenderArgs:
    """ExtenderArgs: the pod and its candidate nodes, as full objects or (nodeCacheCapable) names."""

    pod: dict[str, Any]
    nodes: list[NodeItem] | None
    node_names: list[str] | None

    @property
    def names(self) -> list[str]:
        if self.node_names is not None:
            return self.node_names
        return [n.name for n in self.nodes or ()]


class _Args(msgspec.Struct):
    """ExtenderArgs with kube-scheduler's exact key spelling: the one-pass fast path."""

    Pod: msgspec.Raw = msgspec.Raw(b"null")
    Nodes: _NodeList | None = None
    NodeNames: msgspec.Raw = msgspec.Raw(b"null")


_args = msgspec.json.Decoder(_Args)


class _NamesCache:
    """The last ``NodeNames`` decoded, by its raw bytes. kube-scheduler sends the same candidate list
    to filter and then prioritize, and, while the cluster's nodes do not change, for pod after pod:
    comparing the raw bytes (a memcmp) is ~100x cheaper than decoding 5,000 names again, and handing
    back the very same list lets the engine reuse what it derived from it (``Extender._resolve``).
    The list is shared: callers must not change it."""

    def __init__(self) -> None:
        self._last: tuple[bytes, list[str] | None] = (b"", None)

    def decode(self, raw: msgspec.Raw) -> list[str] | None:
        data = bytes(raw)
        last_raw, last = self._last  # one read of the pair: other threads may replace it meanwhile
        if data == last_raw and last is not None:
            return last
        names: list[str] | None = _decode(_names, raw, "NodeNames")
        self._last = (data, names)
        return names


_names_cache = _NamesCache()


class _PodCache:
    """The last ``Pod`` decoded (and case-folded), by its raw bytes. kube-scheduler sends the same pod
    to filter and then to prioritize: folding a pod's keys walks every field of it, which was the
    largest single cost of a names-only pair (``benchmarks/extender.py --in-process``). The manifest
    is shared: callers must not change it."""

    def __init__(self) -> None:
        self._last: tuple[bytes, dict[str, Any] | None] = (b"", None)

    def decode(self, raw: msgspec.Raw) -> dict[str, Any]:
        data = bytes(raw)
        last_raw, last = self._last
        if data == last_raw and last is not None:
            return last
        pod = _pod(raw, "Pod")
        self._last = (data, pod)
        return pod


_pod_cache = _PodCache()


def decode_args(body: bytes) -> ExtenderArgs:
    try:
        fast: _Args | None = _args.decode(body)
    except msgspec.DecodeError:
        fast = None
    if fast is not None and not _is_null(fast.Pod) and (fast.Nodes is None or fast.Nodes.items is not None):
        pod = _pod_cache.decode(fast.Pod)
        names = _names_cache.decode(fast.NodeNames)
        items = None if fast.Nodes is None else fast.Nodes.items or []
    else:
        # Other key spellings, or a body that is not the protocol's shape: slower, with field errors.
        f = _fields(body, ("Pod", "Nodes", "NodeNames"))
        pod = _pod(f.get("Pod"), "Pod")
        names = _decode(_names, f.get("NodeNames"), "NodeNames")
        items = None if _is_null(f.get("Nodes")) else _items(f["Nodes"])
    nodes = None if items is None else _node_items(items)
    if nodes is None and names is None:
        raise WireError("neither Nodes nor NodeNames is set: expected the candidate nodes")
    if nodes is not None and names is not None:
        raise WireError("both Nodes and NodeNames are set: expected exactly one")
    return ExtenderArgs(pod, nodes, names)


def _items(raw: msgspec.Raw) -> list[msgspec.Raw]:
    """``Nodes.items``, its key in any case."""
    f = _fields(raw, ("items",), "Nodes")
    return _decode(_raw_list, f.get("items"), "Nodes.items") or []


def _node_items(items: list[msgspec.Raw]) -> list[NodeItem]:
    out = []
    decode = _node_head.decode
    for i, raw in enumerate(items):
        try:
            meta = decode(raw).metadata
        except msgspec.DecodeError:
            meta = _ObjectMeta()
        if not meta.name:
            # Keys in another case, or wrong types: the slow path, with field errors.
            node = canonical(_decode(_object, raw, f"Nodes.items[{i}]"), "V1Node")
            meta = _decode(_node_head, msgspec.Raw(_encoder.encode(node)), f"Nodes.items[{i}]").metadata
        if not meta.name:
            raise WireError(f"Nodes.items[{i}].metadata.name: is required")
        key = (meta.uid, meta.resourceVersion) if meta.uid and meta.resourceVersion else None
        out.append(NodeItem(meta.name, raw, key))
    return out


def _pod(raw: msgspec.Raw | None, field: str) -> dict[str, Any]:
    if _is_null(raw):
        raise WireError(f"{field}: is required")
    pod = canonical(_decode(_object, raw, field), "V1Pod")
    assert isinstance(pod, dict)
    return pod


@dataclass(frozen=True, slots=True)
class Victims:
    """Victims on one node: pod UIDs (and full pods when the caller sent them) and PDB violations."""

    uids: tuple[str, ...]
    num_pdb_violations: int


@dataclass(frozen=True, slots=True)
class PreemptionArgs:
    pod: dict[str, Any]
    #: node name -> victims, from NodeNameToMetaVictims or NodeNameToVictims, whichever was sent.
    victims: dict[str, Victims]


def decode_preemption_args(body: bytes) -> PreemptionArgs:
    f = _fields(body, ("Pod", "NodeNameToVictims", "NodeNameToMetaVictims"))
    pod = _pod(f.get("Pod"), "Pod")
    meta = _decode(_victims_map, f.get("NodeNameToMetaVictims"), "NodeNameToMetaVictims")
    full = _decode(_victims_map, f.get("NodeNameToVictims"), "NodeNameToVictims")
    field = "NodeNameToMetaVictims" if meta is not None else "NodeNameToVictims"
    given = meta if meta is not None else full
    if given is None:
        raise WireError("neither NodeNameToVictims nor NodeNameToMetaVictims is set")
    victims: dict[str, Victims] = {}
    for node, raw in given.items():
        where = f"{field}[{node!r}]"
        if _is_null(raw):
            victims[node] = Victims((), 0)
            continue
        v = _fields(raw, ("Pods", "NumPDBViolations"), where)
        violations = _decode(_int64, v.get("NumPDBViolations"), f"{where}.NumPDBViolations") or 0
        uids = []
        for j, p in enumerate(_decode(_raw_list, v.get("Pods"), f"{where}.Pods") or ()):
            if meta is not None:
                uid = _decode(
                    _string, _fields(p, ("UID",), f"{where}.Pods[{j}]").get("UID"), f"{where}.Pods[{j}].UID"
                )
            else:
                victim = _pod(p, f"{where}.Pods[{j}]")
                m = victim.get("metadata")
                uid = m.get("uid") if isinstance(m, Mapping) else None
                if not isinstance(uid, str) or not uid:
                    raise WireError(f"{where}.Pods[{j}].metadata.uid: is required")
            uids.append(uid or "")
        victims[node] = Victims(tuple(uids), violations)
    return PreemptionArgs(pod, victims)


@dataclass(frozen=True, slots=True)
class BindingArgs:
    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str


def decode_binding_args(body: bytes) -> BindingArgs:
    f = _fields(body, ("PodName", "PodNamespace", "PodUID", "Node"))
    values = {k: _decode(_string, f.get(k), k) or "" for k in ("PodName", "PodNamespace", "PodUID", "Node")}
    for k in ("PodName", "Node"):
        if not values[k]:
            raise WireError(f"{k}: is required")
    return BindingArgs(
        values["PodName"], values["PodNamespace"] or "default", values["PodUID"], values["Node"]
    )


# ---------------------------------------------------------------- responses
def encode_filter_result(
    *,
    passed: Sequence[str] | None = None,
    passed_nodes: Sequence[msgspec.Raw] | None = None,
    failed: Mapping[str, str] | None = None,
    unresolvable: Mapping[str, str] | None = None,
    error: str = "",
) -> bytes:
    """ExtenderFilterResult. ``passed`` answers a NodeNames request, ``passed_nodes`` (raw node JSON,
    echoed) a Nodes request; on error only ``Error`` is set, as the caller ignores the rest."""
    nodes = None if passed_nodes is None else {"metadata": {}, "items": list(passed_nodes)}
    names = b"null" if passed is None else _names_json.encode(passed)
    return b"".join(
        (
            b'{"Nodes":',
            _encoder.encode(nodes),
            b',"NodeNames":',
            names,
            b',"FailedNodes":',
            _encoder.encode(None if error else dict(failed or {})),
            b',"FailedAndUnresolvableNodes":',
            _encoder.encode(None if error else dict(unresolvable or {})),
            b',"Error":',
            _encoder.encode(error),
            b"}",
        )
    )


class _NamesJSON:
    """The JSON array of the last name list encoded, by the list's identity: a filter that passes
    every candidate answers with the very list ``_NamesCache`` handed out, pod after pod."""

    def __init__(self) -> None:
        self._last: tuple[Sequence[str] | None, int, bytes] = (None, -1, b"")

    def encode(self, names: Sequence[str]) -> bytes:
        last, size, data = self._last
        if names is last and len(names) == size:
            return data
        data = _encoder.encode(list(names))
        self._last = (names, len(names), data)
        return data


_names_json = _NamesJSON()


class _HostPriority(msgspec.Struct):
    Host: str
    Score: int


class _HostTemplate:
    """The HostPriorityList of the last host list with a two-byte gap for each score, by the list's
    identity: prioritize answers for the same candidate list pod after pod, and writing 5,000 scores
    into a copy of the template is a few array operations where building and encoding 5,000 objects
    took most of the verb's own time. A score below 10 is written with a leading space
    (``"Score": 7``), which is still JSON and decodes to the same number."""

    def __init__(self) -> None:
        self._last: tuple[Sequence[str] | None, int, np.ndarray, np.ndarray] = (
            None,
            -1,
            np.zeros(0, np.uint8),
            np.zeros(0, np.int64),
        )

    def get(self, hosts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(template bytes as an array, offset of each host's score gap)."""
        last, size, template, gaps = self._last
        if hosts is last and len(hosts) == size:
            return template, gaps
        parts = [b"["]
        offsets = []
        at = 1
        for i, h in enumerate(hosts):
            head = (b"," if i else b"") + b'{"Host":' + _encoder.encode(h) + b',"Score":'
            offsets.append(at + len(head))
            parts.append(head + b"  }")
            at += len(head) + 3
        parts.append(b"]")
        template = np.frombuffer(b"".join(parts), dtype=np.uint8)
        gaps = np.asarray(offsets, dtype=np.int64)
        self._last = (hosts, len(hosts), template, gaps)
        return template, gaps


_host_template = _HostTemplate()
_SPACE, _ONE, _ZERO = ord(" "), ord("1"), ord("0")


def encode_host_priorities(hosts: Sequence[str], scores: Sequence[int] | np.ndarray) -> bytes:
    """HostPriorityList: ``[{"Host": name, "Score": 0..10}, ...]``."""
    values = np.asarray(scores)
    if (
        len(hosts) != len(values)
        or values.dtype.kind not in "iu"
        or (len(values) and not 0 <= int(values.min()) <= int(values.max()) <= MAX_EXTENDER_PRIORITY)
    ):
        return _encoder.encode(list(map(_HostPriority, hosts, values.tolist())))
    template, gaps = _host_template.get(hosts)
    out = template.copy()
    out[gaps] = np.where(values >= 10, _ONE, _SPACE)
    out[gaps + 1] = _ZERO + values % 10
    return out.tobytes()


def encode_preemption_result(victims: Mapping[str, Victims]) -> bytes:
    """ExtenderPreemptionResult: always meta victims (pod UIDs), as kube-scheduler expects back."""
    return _encoder.encode(
        {
            "NodeNameToMetaVictims": {
                node: {"Pods": [{"UID": u} for u in v.uids], "NumPDBViolations": v.num_pdb_violations}
                for node, v in victims.items()
            }
        }
    )


def encode_binding_result(error: str = "") -> bytes:
    return _encoder.encode({"Error": error})


def encode_error(message: str) -> bytes:
    """The body of a non-200 answer (kube-scheduler only reads the status code; people read this)."""
    return _encoder.encode({"Error": message})
