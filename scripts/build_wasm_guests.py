#!/usr/bin/env python3
"""Build the C and Zig guests of examples/wasm (and the test guests) to WebAssembly with the Zig
toolchain from PyPI (the ``ziglang`` package, a dev dependency): nothing but registry packages.

Outputs are cached by content: ``<out>/<name>-<hash>.wasm``, the hash covering the source, its SDK
file, the flags and the Zig version, so an unchanged guest is never rebuilt. Run it directly
(``python scripts/build_wasm_guests.py [--out DIR]``) or call ``build_all`` (the test suite does).
A C source whose first line says ``target: wasm32-wasi`` is built against WASI's libc; the others are
freestanding.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SDK = ROOT / "examples" / "wasm" / "sdk"
SOURCES = (ROOT / "examples" / "wasm", ROOT / "tests" / "plugins" / "wasm" / "guests")
DEFAULT_OUT = ROOT / "examples" / "wasm" / "build"

FREESTANDING = ["-target", "wasm32-freestanding", "-nostdlib", "-Wl,--no-entry"]
WASI = ["-target", "wasm32-wasi", "-mexec-model=reactor"]
COMMON = ["-O2", "-Wall", "-Werror", "-Wl,--export-memory", "-Wl,-z,stack-size=65536", f"-I{SDK}"]
ZIG = ["-target", "wasm32-freestanding", "-O", "ReleaseSmall", "-fno-entry", "-rdynamic", "--export-memory"]


def _zig() -> list[str]:
    return [sys.executable, "-m", "ziglang"]


def _flags(source: Path) -> list[str]:
    if source.suffix == ".zig":
        return ZIG
    first = source.read_text().splitlines()[0] if source.read_text() else ""
    return [*(WASI if "target: wasm32-wasi" in first else FREESTANDING), *COMMON]


def _sdk(source: Path) -> Path:
    return SDK / ("harmonic.zig" if source.suffix == ".zig" else "harmonic_guest.h")


def _command(source: Path, flags: list[str], output: str) -> list[str]:
    if source.suffix == ".zig":
        modules = ["--dep", "harmonic", f"-Mroot={source}", f"-Mharmonic={_sdk(source)}"]
        return [*_zig(), "build-exe", *flags, *modules, f"-femit-bin={output}"]
    return [*_zig(), "cc", *flags, "-o", output, str(source)]


def _zig_version() -> str:
    return subprocess.run([*_zig(), "version"], check=True, capture_output=True, text=True).stdout.strip()


def build(source: Path, out_dir: Path, zig_version: str) -> Path:
    """The module built from ``source``, compiled unless a build of the same inputs exists."""
    flags = _flags(source)
    h = hashlib.sha256()
    for part in (source.read_bytes(), _sdk(source).read_bytes(), " ".join(flags).encode()):
        h.update(part)
    h.update(zig_version.encode())
    target = out_dir / f"{source.stem}-{h.hexdigest()[:16]}.wasm"
    if not target.exists():
        _compile(source, flags, target)
        for stale in out_dir.glob(f"{source.stem}-*.wasm"):
            if stale != target:
                stale.unlink(missing_ok=True)
    # A stable name for configs to point at (benchmarks/configs/wasm-score.yaml), always the latest build.
    stable = out_dir / f"{source.stem}.wasm"
    if not stable.exists() or stable.read_bytes() != target.read_bytes():
        _atomic_write(stable, target.read_bytes())
    return target


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".wasm.tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _compile(source: Path, flags: list[str], target: Path) -> None:
    out_dir = target.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out_dir, suffix=".wasm.tmp")
    os.close(fd)
    try:
        r = subprocess.run(_command(source, flags, tmp), capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"building {source.relative_to(ROOT)} failed:\n{r.stderr}")
        # Atomic, so parallel test workers building the same guest never see half a file.
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def build_all(out_dir: Path = DEFAULT_OUT) -> dict[str, Path]:
    """Every guest by name (file stem) -> its built module."""
    version = _zig_version()
    sources = sorted(src for d in SOURCES for ext in ("*.c", "*.zig") for src in d.glob(ext))
    return {src.stem: build(src, out_dir, version) for src in sources}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: %(default)s)")
    for name, path in build_all(ap.parse_args().out).items():
        print(f"{name}: {path}")


if __name__ == "__main__":
    main()
