"""Out-of-tree plugins: a distribution installed beside Harmonic that declares a ``harmonic.plugins``
entry point is found by ``default_registry`` and can be named in a KubeSchedulerConfiguration.

The distribution is installed the way pip lays one out (a package and its ``.dist-info`` with
``entry_points.txt``) into a temporary site directory, and Harmonic runs in a fresh interpreter that
has that directory on its path: no network, no wheel build, and the test process's registry (cached)
is left alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGIN = """
from harmonic.framework.interface import NodeScorePlugin


class PreferNodeA(NodeScorePlugin):
    NAME = "PreferNodeA"

    def score_node(self, state, pod, node):
        return 100 if node.name == "a" else 0
"""

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    plugins:
      score:
        disabled: [{name: "*"}]
        enabled: [{name: PreferNodeA, weight: 1}]
"""

SCHEDULE = """
import json, sys
from harmonic.testing import node, pod
from harmonic.testing.harness import Harness
import yaml
h = Harness(yaml.safe_load(open(sys.argv[1])))
h.add_nodes([node(n).cap(cpu="8", memory="8Gi", pods=110).obj() for n in ("b", "a", "c")])
h.add_pods([pod(f"p{i}").req(cpu="100m").obj() for i in range(3)])
h.schedule()
print(json.dumps(h.placement()))
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A site directory holding the ``harmonic-demo-plugin`` distribution, as pip would install it."""
    site = tmp_path / "site"
    pkg = site / "harmonic_demo_plugin"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    info = site / "harmonic_demo_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: harmonic-demo-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[harmonic.plugins]\nPreferNodeA = harmonic_demo_plugin:PreferNodeA\n"
    )
    (info / "RECORD").write_text("")
    return site


def _run(site: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120)


def test_an_installed_entry_point_plugin_is_named_in_a_config_and_decides(site: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG)
    checked = _run(site, "-m", "harmonic", "config", "check", "--for", "extender", str(cfg))
    assert checked.returncode == 0, checked.stderr
    scheduled = _run(site, "-c", SCHEDULE, str(cfg))
    assert scheduled.returncode == 0, scheduled.stderr
    assert json.loads(scheduled.stdout) == {f"default/p{i}": "a" for i in range(3)}


def test_without_the_distribution_the_name_is_an_unknown_plugin(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG)
    checked = _run(None, "-m", "harmonic", "config", "check", "--for", "extender", str(cfg))
    assert checked.returncode == 1
    assert "PreferNodeA" in checked.stderr + checked.stdout
    assert "Traceback" not in checked.stderr
