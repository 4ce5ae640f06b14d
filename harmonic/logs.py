"""Structured logs: one JSON object per line, in the shape of Kubernetes components' JSON logs.

Fields: ``ts`` (Unix seconds), ``level``, ``logger``, ``msg`` (the formatted message), every key passed
as ``extra={...}`` to the logging call, and ``err`` with the traceback for exceptions.
"""

from __future__ import annotations

import json
import logging
from typing import Any

#: Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for k, v in vars(record).items():
            if k not in _STANDARD and k not in out:
                out[k] = v
        if record.exc_info:
            out["err"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, separators=(",", ":"))


def configure(level: int, json_format: bool) -> None:
    """Root logging to stderr: JSON lines, or the plain text format for terminals."""
    handler = logging.StreamHandler()
    if json_format:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
