"""Where the control plane's binaries come from: a folder of plain or xz-compressed executables.

``HARMONIC_KUBE_ASSETS`` names the folder (for example the ``server/bin`` of a Kubernetes release with an
``etcd`` beside it); without it the caller's default is used (the test suite passes the repository's
``../shared/kube``). Compressed binaries are unpacked once into a cache keyed by their content, so two
test processes starting at the same time (pytest-xdist) unpack them once between them: a file lock
serialises the work and each binary appears by an atomic rename, never half-written.
"""

from __future__ import annotations

import fcntl
import hashlib
import lzma
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

ENV = "HARMONIC_KUBE_ASSETS"
#: etcd and kube-apiserver are always needed; the others only by the tests that start them.
REQUIRED = ("etcd", "kube-apiserver")
OPTIONAL = ("kube-controller-manager", "kube-scheduler")


class AssetsMissing(LookupError):
    """No usable folder of binaries; the message says where was looked and how to set one."""


@dataclass(frozen=True)
class Assets:
    """Executable paths of the control plane's binaries (``None`` for an optional one not found)."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path | None
    kube_scheduler: Path | None


def _candidates(folder: Path) -> dict[str, Path]:
    """Binary name -> the file holding it, plain or ``.xz``, looked up in ``folder`` and ``folder/bin``."""
    found: dict[str, Path] = {}
    for where in (folder, folder / "bin"):
        for name in (*REQUIRED, *OPTIONAL):
            if name in found:
                continue
            for f in (where / name, where / f"{name}.xz"):
                if f.is_file():
                    found[name] = f
                    break
    return found


def locate(default: Path | None = None) -> Path:
    """The assets folder: ``$HARMONIC_KUBE_ASSETS``, else ``default``. Raises ``AssetsMissing``."""
    configured = os.environ.get(ENV)
    folder = Path(configured) if configured else default
    if folder is None:
        raise AssetsMissing(f"no Kubernetes binaries: set {ENV} to a folder with etcd and kube-apiserver")
    missing = [n for n in REQUIRED if n not in _candidates(folder)]
    if missing:
        source = f"{ENV}={configured}" if configured else f"{folder} (set {ENV} to use others)"
        raise AssetsMissing(f"no Kubernetes binaries ({', '.join(missing)}) in {source}")
    return folder


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "harmonic" / "kube"


def _digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(f.name.encode() + b"\0")
        with f.open("rb") as src:
            while chunk := src.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()[:16]


def _unpack(src: Path, dest: Path) -> None:
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        with lzma.open(src) as data, tmp.open("wb") as out:
            shutil.copyfileobj(data, out, 1 << 20)
        tmp.chmod(0o755)
        os.replace(tmp, dest)  # atomic: a reader sees no binary or the whole one
    finally:
        tmp.unlink(missing_ok=True)


def prepare(folder: Path, cache: Path | None = None) -> Assets:
    """Executables for the binaries in ``folder``: plain ones in place, ``.xz`` ones unpacked (once) into
    ``cache/<digest of the compressed files>``."""
    found = _candidates(folder)
    packed = [f for f in found.values() if f.suffix == ".xz"]
    paths: dict[str, Path] = {n: f for n, f in found.items() if f.suffix != ".xz"}
    if packed:
        target = (cache or cache_root()) / _digest(packed)
        target.mkdir(parents=True, exist_ok=True)
        with (target / ".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the other xdist worker waits here, then finds them unpacked
            for name, f in found.items():
                if f.suffix == ".xz":
                    dest = target / name
                    if not dest.is_file():
                        _unpack(f, dest)
                    paths[name] = dest
    for name in REQUIRED:
        if not os.access(paths[name], os.X_OK):
            raise AssetsMissing(f"{paths[name]} is not executable")
    return Assets(
        etcd=paths["etcd"],
        kube_apiserver=paths["kube-apiserver"],
        kube_controller_manager=paths.get("kube-controller-manager"),
        kube_scheduler=paths.get("kube-scheduler"),
    )
