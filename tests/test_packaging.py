"""A plain wheel install (no extras) imports every module it ships and runs the CLI.

The wheel is built from this checkout and unpacked into a fresh virtual environment, as pip installs
one. Its runtime dependencies come from the test environment's site-packages, with every package that
only an extra or the dev tools bring made unimportable, so a module that needs an extra at import time
fails here as it would for a user who installed plain ``harmonic``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Top-level packages that come with an extra (sim, testing, rescheduler, dask, ray, profile) or the
#: dev tools, not with a plain install.
NOT_INSTALLED = (
    "plotly",
    "aiohttp",
    "ortools",
    "dask",
    "distributed",
    "ray",
    "pytest",
    "hypothesis",
    "trustme",
    "jsonschema",
    "playwright",
    "ziglang",
)
#: Modules that belong to an extra: importing them without it must fail with an error naming it.
NEEDS_EXTRA = {
    "harmonic.testing.apiserver": "harmonic[testing]",
    "harmonic.testing.faultproxy": "harmonic[testing]",
}

BLOCK = f"""
import importlib.abc, sys
class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {NOT_INSTALLED!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, _Block())
"""

IMPORT_ALL = """
import importlib, json, pathlib, sys
root = pathlib.Path(sys.argv[1])
failed = {}
for f in sorted(root.rglob("*.py")):
    mod = ".".join(f.relative_to(root.parent).with_suffix("").parts)
    mod = mod.removesuffix(".__init__")
    if mod.endswith(".__main__"):  # runs the CLI when imported; the console-script tests cover it
        continue
    try:
        importlib.import_module(mod)
    except Exception as e:
        failed[mod] = f"{type(e).__name__}: {e}"
print(json.dumps({"count": len(list(root.rglob("*.py"))), "failed": failed}))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(the wheel built from this checkout, what the build printed on stderr)."""
    tmp = tmp_path_factory.mktemp("wheel")
    # Build from a copy: setuptools builds in the source tree's build/, which another process (an xdist
    # worker, `make lock`) may be using at the same moment.
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "harmonic", src / "harmonic", ignore=shutil.ignore_patterns("__pycache__"))
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(tmp), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = tmp.glob("harmonic-*.whl")
    return wheel, build.stderr


@pytest.fixture(scope="module")
def plain(built: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the environment's python, its harmonic package directory)."""
    wheel, _ = built
    env = tmp_path_factory.mktemp("plain") / "env"
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    (site / "_harmonic_test_block.py").write_text(BLOCK)
    # Lines of a .pth file: a path is appended to sys.path (after the environment's own packages, so the
    # wheel's harmonic wins); a line starting with "import" runs.
    (site / "zz_runtime_deps.pth").write_text(
        f"{sysconfig.get_paths()['purelib']}\nimport _harmonic_test_block\n"
    )
    return python, site / "harmonic"


def _run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_the_build_warns_of_nothing_and_declares_the_license(built: tuple[Path, str]) -> None:
    # setuptools prints its deprecations (a 12-line box each, e.g. for a TOML-table license) on every
    # build, so on every `make setup` and editable reinstall.
    wheel, stderr = built
    assert "Warning" not in stderr, stderr[-2000:]
    with zipfile.ZipFile(wheel) as z:
        (metadata,) = (n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        headers = z.read(metadata).decode().split("\n\n", 1)[0].splitlines()
    assert "License-Expression: Apache-2.0" in headers


def test_the_wheel_holds_the_package_data(plain: tuple[Path, Path]) -> None:
    _, pkg = plain
    assert (pkg / "py.typed").exists()
    assert any((pkg / "data" / "profiles").iterdir())
    assert (pkg / "ui" / "static").is_dir()


def test_every_shipped_module_imports_without_extras(plain: tuple[Path, Path], tmp_path: Path) -> None:
    python, pkg = plain
    out = _run(python, "-c", IMPORT_ALL, str(pkg), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["count"] > 200
    # Every module imports, but those of an extra, which fail naming it.
    assert set(result["failed"]) == set(NEEDS_EXTRA), result["failed"]
    for mod, extra in NEEDS_EXTRA.items():
        assert extra in result["failed"][mod]


def test_the_imported_harmonic_is_the_wheels(plain: tuple[Path, Path], tmp_path: Path) -> None:
    python, pkg = plain
    out = _run(python, "-c", "import harmonic; print(harmonic.__file__)", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).parent == pkg


@pytest.mark.parametrize(
    "args", [(), ("run",), ("extender",), ("simulate",)], ids=["main", "run", "extender", "simulate"]
)
def test_the_console_script_answers_help(
    plain: tuple[Path, Path], tmp_path: Path, args: tuple[str, ...]
) -> None:
    python, _ = plain
    script = (
        "import sys\n"
        "from importlib.metadata import entry_points\n"
        "ep = next(iter(entry_points(group='console_scripts', name='harmonic')))\n"
        f"sys.argv = ['harmonic', *{list(args)!r}, '--help']\n"
        "ep.load()()\n"
    )
    out = _run(python, "-c", script, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("Usage: harmonic")
