"""No plugin, signal, framework or feedback-loop module may import the ground truth (issue 17):
schedulers learn about the world only through signals."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BANNED = "harmonic.sim.truth"
PACKAGES = ("harmonic/plugins", "harmonic/signals", "harmonic/framework", "harmonic/feedback")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def imported_modules(source: str, module: str, is_package: bool) -> set[str]:
    """Every module an ``import`` or ``from ... import`` statement names (relative forms resolved;
    ``from a import b`` yields both ``a`` and ``a.b``, since b may be a submodule)."""
    package = module if is_package else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            out.add(prefix)
            out.update(f"{prefix}.{alias.name}" for alias in node.names)
    return out


def _banned(names: set[str]) -> set[str]:
    return {n for n in names if n == BANNED or n.startswith(BANNED + ".")}


@pytest.mark.parametrize(
    ("source", "module", "is_package", "hit"),
    [
        ("import harmonic.sim.truth", "harmonic.plugins.x", False, True),
        ("import harmonic.sim.truth.config as c", "harmonic.plugins.x", False, True),
        ("from harmonic.sim import truth", "harmonic.plugins.x", False, True),
        ("from harmonic.sim.truth.routing import callee_shares", "harmonic.plugins.x", False, True),
        ("from harmonic import sim", "harmonic.plugins.x", False, False),
        ("from ..sim import truth", "harmonic.plugins.x", False, True),
        ("from ...sim.truth import observer", "harmonic.plugins.pkg.x", False, True),
        ("from ...sim.truth import observer", "harmonic.plugins.pkg", True, True),
        ("from ..sim.truth import observer", "harmonic.plugins.pkg", True, False),
        ("from . import truth", "harmonic.sim.x", False, True),
        ("def f():\n    from harmonic.sim.truth import latency\n", "harmonic.signals.x", False, True),
        ("from harmonic.sim.mesh import MESH_URL", "harmonic.plugins.x", False, False),
        ("import harmonic.sim.truthy", "harmonic.plugins.x", False, False),
    ],
)
def test_the_import_parser_sees_every_form(source, module, is_package, hit):
    assert bool(_banned(imported_modules(source, module, is_package))) is hit


def test_no_banned_package_imports_the_ground_truth():
    sources = _sources()
    assert len(sources) > 20
    offenders = {}
    for path in sources:
        names = imported_modules(path.read_text(), _module_name(path), path.name == "__init__.py")
        if bad := _banned(names):
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert offenders == {}


def test_importing_every_banned_package_module_leaves_the_truth_unloaded():
    modules = [_module_name(p) for p in _sources()]
    script = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'harmonic.sim.truth' "
        "or m.startswith('harmonic.sim.truth.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
