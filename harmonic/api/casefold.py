"""Kubernetes objects whose JSON keys are spelled in any case, made canonical the way Go's
``encoding/json`` reads them into the API types: a key matches a field's JSON name exactly or, failing
that, case-insensitively (``Metadata`` is ``metadata``, ``NODENAME`` is ``nodeName``); when two keys
match one field the later wins; keys no field matches are kept as they are (and ignored downstream).

The field names and types come from the ``kubernetes`` client's generated models (the OpenAPI types),
so every field of every type nested in a Pod or a Node is covered. Free-form maps (labels, resource
lists) keep their keys untouched, as Go's maps do.
"""

from __future__ import annotations

import re
import threading
from typing import Any

#: model name -> lower-cased JSON key -> (canonical JSON key, what the value is, its model)
_Table = dict[str, tuple[str, int, str]]
_SCALAR, _MODEL, _LIST_OF, _MAP_OF = range(4)
_tables: dict[str, _Table | None] = {}
_lock = threading.Lock()
_LIST = re.compile(r"^List\[(.+)\]$")
_DICT = re.compile(r"^Dict\[str, (.+)\]$")


def _models() -> Any:
    from kubernetes.client import models  # the generated models are slow to import: only when needed

    return models


def _child(models: Any, t: str) -> tuple[int, str]:
    for kind, pattern in ((_LIST_OF, _LIST), (_MAP_OF, _DICT)):
        m = pattern.match(t)
        if m is not None:
            inner = m.group(1)
            return (kind, inner) if hasattr(getattr(models, inner, None), "openapi_types") else (_SCALAR, "")
    return (_MODEL, t) if hasattr(getattr(models, t, None), "openapi_types") else (_SCALAR, "")


def _table(model: str) -> _Table | None:
    if model in _tables:
        return _tables[model]
    models = _models()
    cls = getattr(models, model, None)
    built: _Table | None = None
    if cls is not None and hasattr(cls, "openapi_types"):
        built = {}
        for attr, t in cls.openapi_types.items():
            name = cls.attribute_map[attr]
            # Under the exact spelling too: most keys already are, and then need no lower().
            built[name.lower()] = built[name] = (name, *_child(models, t))
    with _lock:
        _tables[model] = built
    return built


def canonical(obj: Any, model: str) -> Any:
    """``obj`` (decoded JSON of type ``model``, e.g. ``V1Pod``) with its keys in canonical spelling at
    every depth. Values of the wrong JSON type are left for the parsers to report."""
    table = _table(model)
    if table is None or not isinstance(obj, dict):
        return obj
    out: dict[Any, Any] = {}
    for key, value in obj.items():
        entry = table.get(key) or (table.get(key.lower()) if isinstance(key, str) else None)
        if entry is None:
            out.setdefault(key, value)
            continue
        name, kind, inner = entry
        if name != key and name in obj:
            continue  # the exact spelling is there: Go reads that one
        if kind == _MODEL:
            value = canonical(value, inner)
        elif kind == _LIST_OF and isinstance(value, list):
            value = [canonical(v, inner) for v in value]
        elif kind == _MAP_OF and isinstance(value, dict):
            value = {k: canonical(v, inner) for k, v in value.items()}
        out[name] = value
    return out


def prepare(*models: str) -> None:
    """Build the tables of ``models`` and every type nested in them now (a server calls this at
    start-up so its first request does not pay for importing the generated models)."""
    todo = list(models)
    while todo:
        table = _table(todo.pop())
        for _, kind, inner in (table or {}).values():
            if kind != _SCALAR and inner not in _tables:
                todo.append(inner)
