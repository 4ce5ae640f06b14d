"""``harmonic model``: where the model comes from, and the errors that say what is wrong."""

from __future__ import annotations

import socket
from pathlib import Path

from click.testing import CliRunner

from harmonic.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_needs_exactly_one_source():
    r = CliRunner().invoke(main, ["model"])
    assert r.exit_code == 2 and "give a URL or --scenario" in r.output
    both = CliRunner().invoke(
        main, ["model", "http://x", "--scenario", str(ROOT / "examples/feedback/antagonist.yaml")]
    )
    assert both.exit_code == 2


def test_a_scenario_without_feedback_learns_nothing():
    r = CliRunner().invoke(
        main, ["model", "--scenario", str(ROOT / "examples/scenarios/boutique-batch.yaml")]
    )
    assert r.exit_code == 1 and "has no feedback: key" in r.output


def test_an_unknown_profile_is_named():
    r = CliRunner().invoke(
        main,
        ["model", "--scenario", str(ROOT / "examples/feedback/antagonist.yaml"), "--profile", "nope"],
    )
    assert r.exit_code == 1 and "--profile 'nope'" in r.output


def test_an_unreachable_scheduler_is_an_error_not_a_traceback():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = CliRunner().invoke(main, ["model", f"http://127.0.0.1:{port}"])
    assert r.exit_code == 1 and f"http://127.0.0.1:{port}/debug/model" in r.output


def test_explain_lists_the_resizes_with_their_reasons(tmp_path: Path) -> None:
    import yaml

    from tests.sim.test_rightsizing import AUTO, _scenario, _service

    sc = _scenario(_service("api", 2, "12", AUTO))
    sc["duration"] = "30m"
    path = tmp_path / "rs.yaml"
    path.write_text(yaml.safe_dump(sc))
    r = CliRunner().invoke(main, ["model", "--scenario", str(path), "--explain", "svc/api"])
    assert r.exit_code == 0, r.output
    decisions = r.output.split("decisions", 1)[1]
    assert "resize: cpu 12000m -> 8400m" in decisions and "cut: P95 cost" in decisions
