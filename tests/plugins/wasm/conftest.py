"""Guests for the wasm tests: the C examples built with the project's own build script (cached), and
small hand-written WAT modules for the misbehaving ones."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harmonic.framework.config import load_config
from harmonic.plugins.registry import default_registry

ROOT = Path(__file__).resolve().parents[3]


def _build_script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "build_wasm_guests", ROOT / "scripts" / "build_wasm_guests.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def guests() -> dict[str, Path]:
    """Built guests by name: nodenumber, nodenumber_zig, labelfilter, nodeunschedulable, tainttoleration,
    wasiprobe."""
    return _build_script().build_all()


@pytest.fixture
def wat(tmp_path: Path) -> Callable[[str], str]:
    """Writes a WAT module to a file and returns its path."""
    n = 0

    def write(text: str) -> str:
        nonlocal n
        n += 1
        p = tmp_path / f"guest{n}.wat"
        p.write_text(text)
        return str(p)

    return write


def guest_config(name: str, args: dict[str, Any], enable: str = "multiPoint") -> dict[str, Any]:
    """A one-profile config enabling guest ``name`` at ``enable`` with ``args``."""
    return {
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {enable: {"enabled": [{"name": name}]}},
                "pluginConfig": [{"name": name, "args": args}],
            }
        ]
    }


def load_guest(name: str, args: dict[str, Any], enable: str = "multiPoint") -> Any:
    return load_config(guest_config(name, args, enable), default_registry(), source="sched.yaml")
