"""Where ``harmonic ui`` reads decisions from: a simulation report folder, or a running scheduler.

- ``ReportSource``: the folder ``harmonic simulate --record-decisions --out DIR`` wrote
  (``decisions.msgpack``, ``graph.json``, ``pending.json``, ``metrics.json``, ``report.html``). The
  decisions file is indexed once (byte offset and summary of each record); a decision's whole document
  is read from disk when asked for, so large runs do not sit in memory.
- ``LiveSource``: the ``/debug/decisions`` endpoint of ``harmonic run`` or ``harmonic extender``
  (``--decisions-buffer N``). Each read polls it for the decisions after the last id seen and keeps the
  newest ``keep`` of them, so the explorer remembers more than one poll's worth.

Both give decision summaries (newest last), one decision's document by id, and the pending pods (whose
latest decision did not place them) grouped by reason, with the nodes each plugin rejected.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx
import msgspec

from harmonic.framework.decisions import document
from harmonic.sim.explore import DECISIONS_FILE, GRAPH_FILE, PENDING_FILE, read_records

METRICS_FILE = "metrics.json"
REPORT_FILE = "report.html"
PLACED = ("Scheduled", "Filtered", "Prioritized")
SUMMARY_KEYS = ("id", "time", "wallTime", "source", "profile", "pod", "uid", "result", "node", "message")


class _Summary(msgspec.Struct):
    """The fields of a record the index keeps (decoding only these skips the per-node data)."""

    time: float
    source: str
    profile: str
    pod: str
    uid: str
    result: str
    node: str | None
    message: str
    wallTime: float | None = None


class SourceError(RuntimeError):
    """The source cannot be read (missing folder, malformed file, unreachable scheduler)."""


class Source(Protocol):
    def info(self) -> dict[str, Any]: ...

    def summaries(self) -> list[dict[str, Any]]: ...

    def decision(self, decision_id: int) -> dict[str, Any] | None: ...

    def pending(self) -> list[dict[str, Any]]: ...

    def graph(self) -> dict[str, Any] | None: ...


def summary(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: doc.get(k) for k in SUMMARY_KEYS}


def pending_groups(docs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods grouped by each reason they were rejected for (a pod rejected for two reasons is in both
    groups), most pods first. Per pod: its decision id, message, and per (plugin, reasons) the nodes."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        rejections: OrderedDict[tuple[str, tuple[str, ...]], list[str]] = OrderedDict()
        for row in doc.get("filter") or []:
            rejections.setdefault((row["plugin"], tuple(row["reasons"])), []).append(row["node"])
        pod = {
            "id": doc["id"],
            "pod": doc["pod"],
            "profile": doc["profile"],
            "message": doc["message"],
            "rejections": [
                {"plugin": p, "reasons": list(r), "nodes": nodes} for (p, r), nodes in rejections.items()
            ],
        }
        reasons = {reason for _, rs in rejections for reason in rs}
        pre = doc.get("preFilter")
        if pre:
            reasons.add(pre["message"] or pre["code"])
        if not reasons:
            reasons.add(doc["message"] or doc["result"])
        for reason in sorted(reasons):
            groups.setdefault(reason, []).append(pod)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [{"reason": reason, "pods": pods} for reason, pods in ordered]


@dataclass(frozen=True)
class _Entry:
    offset: int
    length: int
    summary: dict[str, Any]


class ReportSource:
    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise SourceError(f"{self.folder}: no such report folder (harmonic simulate --out writes one)")
        path = self.folder / DECISIONS_FILE
        if not path.is_file():
            raise SourceError(
                f"{path}: not found; run harmonic simulate --record-decisions --out {self.folder} first"
            )
        self._path = path
        self._entries: dict[int, _Entry] = {}
        self._latest: dict[tuple[str, str], int] = {}
        decode = msgspec.msgpack.Decoder(_Summary).decode
        n = 0
        try:
            for offset, payload in read_records(path):
                n += 1
                rec = decode(payload)
                s = {"id": n, **msgspec.structs.asdict(rec)}
                self._entries[n] = _Entry(offset, len(payload), s)
                self._latest[(rec.profile, rec.uid)] = n
        except msgspec.DecodeError as e:
            raise SourceError(f"{path}: record {n}: not a decision record ({e})") from None
        except ValueError as e:
            raise SourceError(f"{path}: {e}") from None
        # Each profile's log numbers its decisions from 1: here a decision is known by its record number,
        # and listed in the order of virtual time.
        self._order = sorted(self._entries, key=lambda i: (self._entries[i].summary["time"], i))
        self._pending = self._load_json(PENDING_FILE) or {}
        self._graph = self._load_json(GRAPH_FILE)
        self._metrics = self._load_json(METRICS_FILE)

    def _load_json(self, name: str) -> Any:
        path = self.folder / name
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text())
        except ValueError as e:
            raise SourceError(f"{path}: not valid JSON ({e})") from None

    def info(self) -> dict[str, Any]:
        profiles = list((self._metrics or {}).get("profiles", {})) or sorted(
            {e.summary["profile"] for e in self._entries.values()}
        )
        return {
            "mode": "report",
            "source": str(self.folder),
            "profiles": profiles,
            "graph": self._graph is not None,
            "report": (self.folder / REPORT_FILE).is_file(),
            "decisions": len(self._entries),
        }

    def summaries(self) -> list[dict[str, Any]]:
        return [self._entries[i].summary for i in self._order]

    def decision(self, decision_id: int) -> dict[str, Any] | None:
        e = self._entries.get(decision_id)
        if e is None:
            return None
        with self._path.open("rb") as f:
            f.seek(e.offset)
            rec: dict[str, Any] = msgspec.msgpack.decode(f.read(e.length))
        rec["id"] = decision_id
        return document(rec)

    def pending(self) -> list[dict[str, Any]]:
        """Pods pending when the simulation ended, by their latest decision."""
        docs = []
        for profile, keys in self._pending.items():
            wanted = set(keys)
            for (p, _), ident in self._latest.items():
                if p == profile and self._entries[ident].summary["pod"] in wanted:
                    doc = self.decision(ident)
                    if doc is not None:
                        docs.append(doc)
        return pending_groups(docs)

    def graph(self) -> dict[str, Any] | None:
        return self._graph

    @property
    def report_html(self) -> Path | None:
        path = self.folder / REPORT_FILE
        return path if path.is_file() else None


class LiveSource:
    def __init__(
        self,
        url: str,
        token: str | None = None,
        keep: int = 5000,
        timeout: float = 10.0,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(headers=headers, timeout=timeout, verify=verify)
        self._keep = keep
        self._docs: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._last = 0
        self._lock = threading.Lock()

    def _poll(self) -> None:
        endpoint = f"{self.url}/debug/decisions"
        with self._lock:
            try:
                r = self._client.get(endpoint, params={"since": self._last})
            except httpx.HTTPError as e:
                raise SourceError(f"{endpoint}: {e}") from None
            if r.status_code == 404:
                raise SourceError(
                    f"{endpoint}: 404; start the scheduler or extender with --decisions-buffer N"
                )
            if r.status_code != 200:
                raise SourceError(f"{endpoint}: HTTP {r.status_code}: {r.text[:200]}")
            try:
                docs = r.json()["decisions"]
            except (ValueError, KeyError, TypeError):
                raise SourceError(f"{endpoint}: the answer is not a decisions document") from None
            if docs and docs[0]["id"] <= self._last:
                # The scheduler restarted: its ids begin again.
                self._docs.clear()
            for doc in docs:
                self._docs[int(doc["id"])] = doc
                self._last = int(doc["id"])
            while len(self._docs) > self._keep:
                self._docs.popitem(last=False)

    def info(self) -> dict[str, Any]:
        self._poll()
        profiles = sorted({d["profile"] for d in self._docs.values()})
        return {
            "mode": "live",
            "source": self.url,
            "profiles": profiles,
            "graph": False,
            "report": False,
            "decisions": len(self._docs),
        }

    def summaries(self) -> list[dict[str, Any]]:
        self._poll()
        return [summary(d) for d in list(self._docs.values())]

    def decision(self, decision_id: int) -> dict[str, Any] | None:
        return self._docs.get(decision_id)

    def pending(self) -> list[dict[str, Any]]:
        """Pods whose latest recorded decision did not place them."""
        self._poll()
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for d in list(self._docs.values()):
            latest[(d["profile"], d["uid"])] = d
        return pending_groups(d for d in latest.values() if d["result"] not in PLACED)

    def graph(self) -> dict[str, Any] | None:
        return None

    def close(self) -> None:
        self._client.close()
