"""The kube-scheduler extender v1 wire format (k8s.io/kube-scheduler/extender/v1), decoded and encoded.

The Go types carry no json tags, so the JSON keys are the Go field names: ``Pod``, ``Nodes``,
``NodeNames``, ``FailedNodes``, ``FailedAndUnresolvableNodes``, ``Error``, ``Host``, ``Score``,
``NodeNameToVictims``, ``NodeNameToMetaVictims``, ``Pods``, ``NumPDBViolations``, ``UID``,
``PodName``, ``PodNamespace``, ``PodUID``, ``Node``. Nil pointers, maps and slices travel as ``null``.

Go's decoder matches keys case-insensitively and ignores unknown ones; so does this module for the
top-level keys of every request. Anything that is not the protocol's shape raises ``WireError`` naming
the field (the server answers 400 with it).

Node objects are the bulk of a ``nodeCacheCapable: false`` request (thousands of full ``v1.Node``s).
They are kept as raw JSON: only each node's ``metadata`` identity is decoded up front, a full decode
happens only for nodes not seen before (``NodeItem.key``), and the response echoes the raw bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

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


class _MetaPod(msgspec.Struct):
    UID: str = ""


class _MetaVictims(msgspec.Struct):
    Pods: list[_MetaPod] | None = None
    NumPDBViolations: int = 0


class _Victims(msgspec.Struct):
    Pods: list[dict[str, Any]] | None = None
    NumPDBViolations: int = 0


_top = msgspec.json.Decoder(dict[str, msgspec.Raw])
_object = msgspec.json.Decoder(dict[str, Any])
_node_list = msgspec.json.Decoder(_NodeList)
_node_head = msgspec.json.Decoder(_NodeHead)
_names = msgspec.json.Decoder(list[str] | None)
_string = msgspec.json.Decoder(str | None)
_meta_victims = msgspec.json.Decoder(dict[str, _MetaVictims | None] | None)
_victims = msgspec.json.Decoder(dict[str, _Victims | None] | None)
_encoder = msgspec.json.Encoder()


def _fields(body: bytes, known: Sequence[str]) -> dict[str, msgspec.Raw]:
    """Top-level keys matched to ``known`` case-insensitively (Go's encoding/json rule)."""
    if not body.strip():
        raise WireError("empty request body: expected a JSON object")
    try:
        top = _top.decode(body)
    except msgspec.DecodeError as e:
        raise WireError(f"request body is not a JSON object: {_msg(e)}") from None
    by_lower = {k.lower(): k for k in known}
    out: dict[str, msgspec.Raw] = {}
    for key, raw in top.items():
        name = by_lower.get(key.lower())
        if name is not None and name not in out:
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
        return _object.decode(self.raw)


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


def decode_args(body: bytes) -> ExtenderArgs:
    try:
        fast: _Args | None = _args.decode(body)
    except msgspec.DecodeError:
        fast = None
    if fast is not None and not _is_null(fast.Pod):
        pod = _pod(fast.Pod, "Pod")
        names = _names_cache.decode(fast.NodeNames)
        items = None if fast.Nodes is None else fast.Nodes.items or []
    else:
        # Other key spellings, or a body that is not the protocol's shape: slower, with field errors.
        f = _fields(body, ("Pod", "Nodes", "NodeNames"))
        pod = _pod(f.get("Pod"), "Pod")
        names = _decode(_names, f.get("NodeNames"), "NodeNames")
        lst = None if _is_null(f.get("Nodes")) else _decode(_node_list, f.get("Nodes"), "Nodes")
        items = None if lst is None else lst.items or []
    nodes = None if items is None else _node_items(items)
    if nodes is None and names is None:
        raise WireError("neither Nodes nor NodeNames is set: expected the candidate nodes")
    if nodes is not None and names is not None:
        raise WireError("both Nodes and NodeNames are set: expected exactly one")
    return ExtenderArgs(pod, nodes, names)


def _node_items(items: list[msgspec.Raw]) -> list[NodeItem]:
    out = []
    decode = _node_head.decode
    for i, raw in enumerate(items):
        try:
            meta = decode(raw).metadata
        except msgspec.DecodeError:
            _decode(_node_head, raw, f"Nodes.items[{i}]")
            raise
        if not meta.name:
            raise WireError(f"Nodes.items[{i}].metadata.name: is required")
        key = (meta.uid, meta.resourceVersion) if meta.uid and meta.resourceVersion else None
        out.append(NodeItem(meta.name, raw, key))
    return out


def _pod(raw: msgspec.Raw | None, field: str) -> dict[str, Any]:
    if _is_null(raw):
        raise WireError(f"{field}: is required")
    pod = _decode(_object, raw, field)
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
    meta = _decode(_meta_victims, f.get("NodeNameToMetaVictims"), "NodeNameToMetaVictims")
    full = _decode(_victims, f.get("NodeNameToVictims"), "NodeNameToVictims")
    victims: dict[str, Victims] = {}
    if meta is not None:
        for node, v in meta.items():
            pods = v.Pods if v is not None else None
            uids = tuple(p.UID for p in pods or ())
            victims[node] = Victims(uids, v.NumPDBViolations if v is not None else 0)
    elif full is not None:
        for node, fv in full.items():
            uids_list = []
            for j, p in enumerate((fv.Pods if fv is not None else None) or ()):
                uid = (p.get("metadata") or {}).get("uid") if isinstance(p.get("metadata"), Mapping) else None
                if not isinstance(uid, str) or not uid:
                    raise WireError(f"NodeNameToVictims[{node!r}].Pods[{j}].metadata.uid: is required")
                uids_list.append(uid)
            victims[node] = Victims(tuple(uids_list), fv.NumPDBViolations if fv is not None else 0)
    else:
        raise WireError("neither NodeNameToVictims nor NodeNameToMetaVictims is set")
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
    return _encoder.encode(
        {
            "Nodes": nodes,
            "NodeNames": None if passed is None else list(passed),
            "FailedNodes": None if error else dict(failed or {}),
            "FailedAndUnresolvableNodes": None if error else dict(unresolvable or {}),
            "Error": error,
        }
    )


class _HostPriority(msgspec.Struct):
    Host: str
    Score: int


def encode_host_priorities(hosts: Sequence[str], scores: Sequence[int]) -> bytes:
    """HostPriorityList: ``[{"Host": name, "Score": 0..10}, ...]``."""
    return _encoder.encode(list(map(_HostPriority, hosts, scores)))


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
