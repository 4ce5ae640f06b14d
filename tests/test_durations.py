"""Every flag that takes a duration takes a Go duration, and a bare number of seconds as before."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from harmonic.durations import Duration


@pytest.mark.parametrize(
    "value, seconds",
    [
        ("90s", 90.0),
        ("5m", 300.0),
        ("1m30s", 90.0),
        ("250ms", 0.25),
        ("1h", 3600.0),
        ("90", 90.0),
        ("1.5", 1.5),
    ],
)
def test_duration_values(value: str, seconds: float) -> None:
    assert Duration().convert(value, None, None) == seconds


@pytest.mark.parametrize(
    "value, why", [("ten", "not a duration"), ("5x", "not a duration"), ("500ms", "shorter")]
)
def test_refused(value: str, why: str) -> None:
    @click.command()
    @click.option("--every", type=Duration(minimum=1))
    def cmd(every: float) -> None:
        pass

    r = CliRunner().invoke(cmd, ["--every", value])
    assert r.exit_code == 2 and why in r.output


@pytest.mark.parametrize(
    "command, flag, param, value, seconds",
    [
        ("run", "--sync-timeout", "sync_timeout", "2m", 120.0),
        ("run", "--feedback-interval", "feedback_interval", "90s", 90.0),
        ("run", "--feedback-rightsizing-interval", "feedback_rightsizing_interval", "10m", 600.0),
        ("extender", "--feedback-interval", "feedback_interval", "2m", 120.0),
        ("reschedule", "--cooldown", "cooldown", "15m", 900.0),
        ("reschedule", "--cooldown", "cooldown", "600", 600.0),
    ],
)
def test_commands_take_go_durations(command: str, flag: str, param: str, value: str, seconds: float) -> None:
    from harmonic.cli import main

    cmd = main.commands[command]  # type: ignore[attr-defined]
    required = {"run": ["--config", "x.yaml"], "reschedule": ["--policy", "p.yaml"]}.get(command, [])
    ctx = cmd.make_context(command, [*required, f"{flag}={value}"])
    assert ctx.params[param] == seconds
