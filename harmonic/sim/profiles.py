"""Which scheduler profiles a simulation runs, each on its own cluster copy.

Without ``--config``: kube-scheduler's default profile (``default-scheduler``) and every profile of the
KubeSchedulerConfiguration files bundled in ``harmonic/data/profiles/``. With ``--config`` files: their
profiles, plus the default profile as the baseline unless one of them is named ``default-scheduler``.
Each run keeps its file's scheduler-wide settings (percentageOfNodesToScore, backoff). A profile name
defined twice differently is an error; defined twice identically it runs once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harmonic.framework.config import (
    DEFAULT_SCHEDULER_NAME,
    ConfigError,
    Profile,
    SchedulerConfiguration,
    load_config,
    load_config_file,
)
from harmonic.framework.registry import Registry

BUNDLED_PROFILES_DIR = Path(__file__).resolve().parent.parent / "data" / "profiles"


@dataclass(frozen=True)
class ProfileRun:
    """One profile and the single-profile configuration its scheduler runs with."""

    name: str
    config: SchedulerConfiguration
    source: str

    @property
    def profile(self) -> Profile:
        return self.config.profiles[0]


def _runs_of(cfg: SchedulerConfiguration) -> list[ProfileRun]:
    return [
        ProfileRun(p.scheduler_name, dataclasses.replace(cfg, profiles=(p,)), cfg.source)
        for p in cfg.profiles
    ]


def _same(a: ProfileRun, b: ProfileRun) -> bool:
    ca, cb = a.config, b.config
    return (
        a.profile == b.profile
        and ca.percentage_of_nodes_to_score == cb.percentage_of_nodes_to_score
        and ca.pod_initial_backoff_seconds == cb.pod_initial_backoff_seconds
        and ca.pod_max_backoff_seconds == cb.pod_max_backoff_seconds
    )


def bundled_profile_files() -> list[Path]:
    return sorted(BUNDLED_PROFILES_DIR.glob("*.yaml"))


def profile_runs(config_files: Sequence[str | Path], registry: Registry) -> list[ProfileRun]:
    """The runs, default profile first, then in file and profile order. Raises ``ConfigError``."""
    default = _runs_of(load_config(None, registry, source="<kube-scheduler default profile>"))
    files = list(config_files) if config_files else bundled_profile_files()
    runs: list[ProfileRun] = []
    for f in files:
        runs.extend(_runs_of(load_config_file(f, registry)))
    if not config_files or all(r.name != DEFAULT_SCHEDULER_NAME for r in runs):
        runs = default + runs
    out: dict[str, ProfileRun] = {}
    for r in runs:
        seen = out.get(r.name)
        if seen is None:
            out[r.name] = r
        elif not _same(seen, r):
            if not config_files and r.name == DEFAULT_SCHEDULER_NAME:
                raise ConfigError(
                    f"{r.source}: profile {r.name!r} differs from kube-scheduler's default profile; "
                    "bundled files must not redefine it"
                )
            raise ConfigError(
                f"{r.source}: profile {r.name!r} is also defined, differently, in {seen.source}"
            )
    return list(out.values())
