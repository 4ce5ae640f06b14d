"""Shared services a cluster adapter offers plugins through ``handle.service(name)``.

- ``"namespaces"``: ``NamespaceLabels``, a read-only ``Mapping`` namespace name -> its labels (empty
  for a namespace not seen), for namespaceSelector in pod (anti-)affinity terms.
- ``"pdbs"``: ``DisruptionBudgets``; calling it returns every PodDisruptionBudget as a compiled
  ``harmonic.api.pdb.PodDisruptionBudget`` (the contract DefaultPreemption reads, see
  ``framework.preemption.pdbs_from_service``), and ``list()`` the policy/v1 manifests, as upstream's
  PDB lister does for preemption.

Both read an informer's store, so they are always current and safe to use from any thread. Other
adapters (in-memory cluster, simulator) offer the same names with the same interfaces via
``static_services``.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

from harmonic.api.errors import ObjectError
from harmonic.api.pdb import PodDisruptionBudget, parse_pdb

log = logging.getLogger(__name__)

NAMESPACES_SERVICE = "namespaces"
PDBS_SERVICE = "pdbs"

Obj = Mapping[str, Any]


class _Store(Protocol):
    def get(self, key: str) -> Obj | None: ...

    def list(self) -> builtins.list[Obj]: ...

    def keys(self) -> builtins.list[str]: ...


class NamespaceLabels(Mapping[str, Mapping[str, str]]):
    def __init__(self, store: _Store) -> None:
        self._store = store

    def __getitem__(self, namespace: str) -> Mapping[str, str]:
        ns = self._store.get(namespace)
        if ns is None:
            return {}
        labels = (ns.get("metadata") or {}).get("labels") or {}
        return labels if isinstance(labels, Mapping) else {}

    def __iter__(self) -> Iterator[str]:
        return iter(self._store.keys())

    def __len__(self) -> int:
        return len(self._store.keys())

    def __contains__(self, namespace: object) -> bool:
        return isinstance(namespace, str) and self._store.get(namespace) is not None


class DisruptionBudgets:
    def __init__(self, store: _Store) -> None:
        self._store = store
        #: Compiled budgets by (namespace/name, resourceVersion): a budget is parsed once per change.
        self._compiled: dict[tuple[str, str], PodDisruptionBudget] = {}

    def list(self) -> builtins.list[Obj]:
        return self._store.list()

    def __call__(self) -> builtins.list[PodDisruptionBudget]:
        out: builtins.list[PodDisruptionBudget] = []
        fresh: dict[tuple[str, str], PodDisruptionBudget] = {}
        for raw in self._store.list():
            meta = raw.get("metadata") or {}
            key = (f"{meta.get('namespace')}/{meta.get('name')}", str(meta.get("resourceVersion", "")))
            view = self._compiled.get(key)
            if view is None:
                try:
                    view = parse_pdb(raw)
                except ObjectError as e:
                    log.warning("ignoring PodDisruptionBudget: %s", e)
                    continue
            fresh[key] = view
            out.append(view)
        self._compiled = fresh
        return out


class _ListStore:
    """A fixed set of manifests behind the store interface (for ``static_services``)."""

    def __init__(self, objs: Iterable[Obj]) -> None:
        self._objs: dict[str, Obj] = {}
        for o in objs:
            meta = o.get("metadata") or {}
            key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta.get("name"))
            self._objs[key] = o

    def get(self, key: str) -> Obj | None:
        return self._objs.get(key)

    def list(self) -> builtins.list[Obj]:
        return list(self._objs.values())

    def keys(self) -> builtins.list[str]:
        return list(self._objs)


def static_services(namespaces: Iterable[Obj] = (), pdbs: Iterable[Obj] = ()) -> dict[str, Any]:
    """The same services over fixed manifests (tests, the in-memory cluster, the simulator)."""
    return {
        NAMESPACES_SERVICE: NamespaceLabels(_ListStore(namespaces)),
        PDBS_SERVICE: DisruptionBudgets(_ListStore(pdbs)),
    }
