"""benchmarks/real_cluster.py at a toy size: every row binds exactly the pods that fit, and Harmonic's
default profile agrees with kube-scheduler on which those are."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harmonic.testing.kube import AssetsMissing, locate
from tests.benchmark_scripts import BENCHMARKS
from tests.e2e.conftest import DEFAULT_ASSETS

# The benchmark starts its own control plane for each row.
pytestmark = pytest.mark.kube


def test_rows_bind_what_fits_and_agree() -> None:
    try:
        folder = locate(DEFAULT_ASSETS)
    except AssetsMissing as e:
        pytest.skip(str(e))
    env = {**os.environ, "HARMONIC_KUBE_ASSETS": str(folder)}
    size = ["--nodes", "6", "--pods", "50", "--qps", "5000", "--infeasible", "0.1", "--settle", "2"]
    out = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "real_cluster.py"),
            *size,
            "--rows",
            "null,kube-scheduler,harmonic",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    # 50 pods, every tenth asks for 5 CPUs on 4-CPU nodes: 45 fit.
    assert summary["kube-scheduler"]["by_qps"]["5000"]["bound"] == 45
    assert summary["harmonic"]["by_qps"]["5000"]["bound"] == 45
    assert summary["harmonic"]["agrees"] is True
    # The null binder looks at nothing: it binds every pod, misfits too.
    assert summary["null"]["by_qps"]["5000"]["bound"] == 50
