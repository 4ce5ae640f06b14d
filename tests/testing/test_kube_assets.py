"""Where the control-plane fixture finds its binaries, and unpacking them once under concurrency."""

from __future__ import annotations

import lzma
import multiprocessing
from pathlib import Path

import pytest

from harmonic.testing.kube.assets import ENV, AssetsMissing, locate, prepare

SCRIPT = b"#!/bin/sh\necho %s\n"


def _folder(root: Path, packed: dict[str, bool]) -> Path:
    """Fake binaries: name -> whether it is xz-compressed."""
    root.mkdir(parents=True, exist_ok=True)
    for name, xz in packed.items():
        body = SCRIPT % name.encode()
        if xz:
            (root / f"{name}.xz").write_bytes(lzma.compress(body, format=lzma.FORMAT_XZ))
        else:
            (root / name).write_bytes(body)
            (root / name).chmod(0o755)
    return root


@pytest.mark.parametrize(
    ("env", "default", "found"),
    [
        ("env", "default", "env"),  # the variable wins over the default
        (None, "default", "default"),
    ],
)
def test_locate_prefers_the_variable(tmp_path: Path, monkeypatch, env, default, found):
    for name in ("env", "default"):
        _folder(tmp_path / name / "bin", {"etcd": True, "kube-apiserver": True})
    if env:
        monkeypatch.setenv(ENV, str(tmp_path / env))
    else:
        monkeypatch.delenv(ENV, raising=False)
    assert locate(tmp_path / default) == tmp_path / found


@pytest.mark.parametrize(
    ("env", "present", "message"),
    [
        (False, {}, "no Kubernetes binaries (etcd, kube-apiserver) in {d} (set HARMONIC_KUBE_ASSETS"),
        (False, {"etcd": False}, "no Kubernetes binaries (kube-apiserver) in {d} (set HARMONIC_KUBE_ASSETS"),
        (True, {"kube-apiserver": True}, "no Kubernetes binaries (etcd) in HARMONIC_KUBE_ASSETS={d}"),
    ],
)
def test_locate_names_what_is_missing_and_where(tmp_path: Path, monkeypatch, env, present, message):
    folder = _folder(tmp_path / "k", present)
    monkeypatch.delenv(ENV, raising=False)
    if env:
        monkeypatch.setenv(ENV, str(folder))
    with pytest.raises(AssetsMissing) as e:
        locate(folder)
    assert str(e.value).startswith(message.format(d=folder))


def test_prepare_unpacks_compressed_binaries_into_the_cache_and_keeps_plain_ones(tmp_path: Path):
    folder = _folder(tmp_path / "k", {"etcd": False, "kube-apiserver": True, "kube-scheduler": True})
    assets = prepare(folder, tmp_path / "cache")
    assert assets.etcd == folder / "etcd"
    assert assets.kube_apiserver.parent.parent == tmp_path / "cache"
    assert assets.kube_apiserver.read_bytes() == SCRIPT % b"kube-apiserver"
    assert assets.kube_scheduler is not None and assets.kube_scheduler.stat().st_mode & 0o111
    assert assets.kube_controller_manager is None
    # Changed binaries unpack elsewhere: the cache is keyed by their content.
    (folder / "kube-scheduler.xz").write_bytes(lzma.compress(b"#!/bin/sh\n", format=lzma.FORMAT_XZ))
    again = prepare(folder, tmp_path / "cache")
    assert again.kube_scheduler is not None and again.kube_scheduler.parent != assets.kube_scheduler.parent


def _prepare(folder: str, cache: str) -> str:
    return str(prepare(Path(folder), Path(cache)).kube_apiserver)


def test_concurrent_prepares_agree_on_one_copy_and_leave_no_partial_file(tmp_path: Path):
    folder = _folder(tmp_path / "k", {"etcd": True, "kube-apiserver": True})
    cache = tmp_path / "cache"
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        paths = pool.starmap(_prepare, [(str(folder), str(cache))] * 4)
    assert len(set(paths)) == 1
    (digest,) = cache.iterdir()
    assert sorted(p.name for p in digest.iterdir()) == [".lock", "etcd", "kube-apiserver"]
