"""A real Prometheus server (Debian package ``prometheus``) scraping the mesh exporter on loopback."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.signals.mesh_exporter import MeshExporter

#: (reporter, src, src_ns, dst, dst_ns) -> requests/s
ISTIO_REQUESTS = {
    ("source", "frontend", "shop", "cartservice", "shop"): 20.0,
    ("source", "frontend", "shop", "productcatalog", "shop"): 60.0,
    ("source", "checkout", "shop", "cartservice", "shop"): 4.0,
    ("destination", "frontend", "shop", "cartservice", "shop"): 20.0,  # same calls seen by the server
    ("source", "unknown", "unknown", "cartservice", "shop"): 7.0,  # unattributed traffic
}
ISTIO_BYTES = {("source", "frontend", "shop", "productcatalog", "shop"): 4096.0}
LINKERD_REQUESTS = {
    ("outbound", "emojivoto", "web", "emojivoto", "emoji"): 12.0,
    ("outbound", "emojivoto", "web", "emojivoto", "voting"): 3.0,
    ("inbound", "emojivoto", "emoji", "", ""): 12.0,
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail(
            "the prometheus binary is not installed; `make test` installs it (Debian package prometheus)"
        )
    exporter = MeshExporter(ISTIO_REQUESTS, ISTIO_BYTES, LINKERD_REQUESTS)
    work: Path = tmp_path_factory.mktemp("prometheus")
    cfg = work / "prometheus.yml"
    cfg.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n- job_name: mesh\n  static_configs:\n"
        f"  - targets: ['127.0.0.1:{exporter.port}']\n"
    )
    port = _free_port()
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={cfg}",
            f"--storage.tsdb.path={work / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(work / "stderr.log").open("w"),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"prometheus exited: {(work / 'stderr.log').read_text()[-2000:]}")
            try:
                r = httpx.get(
                    f"{url}/api/v1/query",
                    params={"query": "min(count_over_time(istio_requests_total[6s])) >= 6"},
                    timeout=2,
                )
                if r.status_code == 200 and r.json()["data"]["result"]:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("prometheus did not scrape the mesh exporter within 60 s")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        exporter.close()
