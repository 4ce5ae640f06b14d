"""Shared pieces of rescheduler plugin args (descheduler's ``api.Namespaces``, label selectors, durations)."""

from __future__ import annotations

from typing import Any

from pydantic import field_validator, model_validator

from harmonic.api.errors import ObjectError
from harmonic.api.selectors import MATCH_EVERYTHING, LabelSelector, label_selector
from harmonic.framework.args import PluginArgs
from harmonic.framework.config import parse_duration

__all__ = ["FilteredArgs", "Namespaces", "check_selector", "compile_selector", "parse_duration"]


class Namespaces(PluginArgs):
    """``namespaces: {include: [...], exclude: [...]}``: only one of the two may be set."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _one_of(self) -> Namespaces:
        if self.include and self.exclude:
            raise ValueError("only one of Include/Exclude namespaces can be set")
        return self

    def admits(self, namespace: str) -> bool:
        if self.include:
            return namespace in self.include
        return namespace not in self.exclude


def compile_selector(raw: dict[str, Any] | None) -> LabelSelector:
    """A policy's optional ``labelSelector``: unset selects every pod (descheduler skips the filter)."""
    if raw is None:
        return MATCH_EVERYTHING
    return label_selector("labelSelector", "", raw)


def check_selector(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    try:
        compile_selector(raw)
    except ObjectError as e:
        raise ValueError(f"invalid label selector: {e.message}") from None
    return raw


class FilteredArgs(PluginArgs):
    """Args of the plugins that pick pods by namespace and label selector."""

    namespaces: Namespaces | None = None
    label_selector: dict[str, Any] | None = None

    @field_validator("label_selector")
    @classmethod
    def _selector(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_selector(v)
