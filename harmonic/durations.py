"""The command-line type of every flag that takes a duration: a Go duration (``90s``, ``5m``,
``1m30s``), as kube-scheduler's and descheduler's flags take them, or a bare number of seconds (what
these flags took before, still accepted)."""

from __future__ import annotations

from typing import Any

import click

from harmonic.framework.config import parse_duration


class Duration(click.ParamType[float]):
    """Seconds (float) from ``90s``/``1m30s``/``250ms`` or ``90``; ``minimum`` refuses shorter ones."""

    name = "duration"

    def __init__(self, minimum: float = 0.0) -> None:
        self.minimum = minimum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            seconds = float(value)
        else:
            try:
                seconds = float(value)
            except ValueError:
                try:
                    seconds = parse_duration(str(value))
                except ValueError as e:
                    self.fail(str(e), param, ctx)
        if seconds < self.minimum:
            self.fail(f"{value!r} is shorter than {self.minimum:g}s", param, ctx)
        return seconds
