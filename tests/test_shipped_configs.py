"""Every KubeSchedulerConfiguration Harmonic ships starts the command it is documented for.

Each file goes through ``harmonic.startup.prepare``, the path ``harmonic run`` (``extender``,
``reschedule``) takes before it starts and ``harmonic config check --for`` reports. The files are
found, not listed, so a new one is covered the day it lands.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harmonic.startup import Command, prepare

ROOT = Path(__file__).resolve().parents[1]
KIND = "kind: KubeSchedulerConfiguration"

#: The plain manifests (rendered from the chart) and the command their Deployment runs.
DEPLOY: dict[str, Command] = {
    "harmonic-scheduler.yaml": "run",
    "harmonic-extender.yaml": "extender",
    "harmonic-rescheduler.yaml": "reschedule",
}


def _config_files() -> list[Path]:
    found = [*ROOT.glob("examples/**/*.yaml"), *(ROOT / "harmonic" / "data" / "profiles").glob("*.yaml")]
    return sorted(p for p in found if KIND in p.read_text())


def test_the_shipped_files_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in _config_files()}
    assert {"examples/harmonic-scheduler.yaml", "harmonic/data/profiles/batch.yaml"} <= names


@pytest.mark.parametrize("path", _config_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_shipped_config_starts_harmonic_run(path):
    prepare(str(path), "run")


@pytest.mark.parametrize("name", sorted(DEPLOY))
def test_every_deploy_manifest_config_starts_its_command(tmp_path, name):
    docs = list(yaml.safe_load_all((ROOT / "deploy" / name).read_text()))
    configs = [
        d["data"]["config.yaml"]
        for d in docs
        if d and d.get("kind") == "ConfigMap" and "config.yaml" in d["data"]
    ]
    assert configs, f"deploy/{name} mounts no config.yaml"
    for i, text in enumerate(configs):
        f = tmp_path / f"{i}.yaml"
        f.write_text(text)
        prepare(str(f), DEPLOY[name])
