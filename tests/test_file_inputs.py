"""Every file a command reads goes through the one strict reader (harmonic.safeyaml): a duplicate key,
an alias bomb (in a field nothing reads) or a document nested thousands deep is one error line naming
the file, never a traceback, a hang or gigabytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harmonic.cli import main
from harmonic.cluster.transport import ClientConfigError, load_client

ROOT = Path(__file__).resolve().parents[1]
POLICY = ROOT / "examples" / "rescheduler" / "low-node-utilization.yaml"
CLUSTER = ROOT / "examples" / "rescheduler" / "fragmented-cluster.yaml"


def _bomb(levels: int = 9, fan: int = 9) -> str:
    lines = [f"  l0: &l0 [{', '.join(['x'] * fan)}]"]
    lines += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fan)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _deep(levels: int = 5000) -> str:
    return "[" * levels + "]" * levels


CONFIG = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
SCENARIO = "apiVersion: harmonic.dev/v1alpha1\nkind: Scenario\nname: s\n"

#: What each document adds to a file the command would otherwise read.
SHAPES = {
    "duplicate key": ("kind: KubeSchedulerConfiguration\n", 'key "kind" already set in map'),
    "alias bomb": ("description:\n" + _bomb(), "excessive aliasing"),
    "5,000 levels": (f"description: {_deep()}\n", "nested deeper than"),
}


def _argv(reader: str, f: Path) -> list[str]:
    return {
        "config": ["config", "check", str(f)],
        "scenario": ["simulate", str(f), "--out", str(f.parent / "out")],
        "policy": ["reschedule", "--policy", str(f), "--once", "--dry-run", "--manifests", str(CLUSTER)],
        "manifests": ["reschedule", "--policy", str(POLICY), "--once", "--dry-run", "--manifests", str(f)],
        "appgroup": ["graph", "--appgroup", str(f)],
    }[reader]


BASE = {
    "config": CONFIG,
    "scenario": SCENARIO,
    "policy": POLICY.read_text(),
    "manifests": "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n",
    "appgroup": "apiVersion: appgroup.diktyo.x-k8s.io/v1alpha1\nkind: AppGroup\nmetadata: {name: a}\n",
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("reader", sorted(BASE))
def test_a_hostile_file_is_one_error_line(tmp_path, reader, shape):
    extra, why = SHAPES[shape]
    base = BASE[reader]
    if shape == "duplicate key":
        extra = base.splitlines()[1] + "\n"  # the file's own second key, again
        why = f'key "{extra.split(":")[0]}" already set in map'
    f = tmp_path / "input.yaml"
    f.write_text(base + extra)
    r = CliRunner().invoke(main, _argv(reader, f))
    assert r.exit_code == 1, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(f) in lines[0] and why in lines[0], r.stderr


@pytest.mark.parametrize("shape", ["duplicate key", "5,000 levels"])
def test_a_hostile_topology_is_one_error_line(tmp_path, shape):
    doc = '{"name": "t", "services": [{"name": "a"}], "edges": [], '
    doc += '"name": "u"}' if shape == "duplicate key" else f'"notes": {_deep()}}}'
    f = tmp_path / "t.json"
    f.write_text(doc)
    r = CliRunner().invoke(main, ["graph", "--topology", str(f)])
    assert r.exit_code == 1, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert str(f) in r.stderr and ("already set in map" in r.stderr or "nested deeper" in r.stderr), r.stderr


def test_a_kubeconfig_with_a_duplicate_key_is_refused(tmp_path):
    kc = tmp_path / "kubeconfig"
    kc.write_text(
        json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": []})[:-1] + ', "kind": "Config"}'
    )
    with pytest.raises(ClientConfigError, match='key "kind" already set in map'):
        load_client(str(kc))
