"""The explorer's JSON API and its errors over real HTTP (the views' tests are in test_browser.py)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from click.testing import CliRunner

from harmonic.cli import main
from harmonic.extender.server import ServerSettings
from harmonic.framework.decisions import DecisionLog
from harmonic.sim.explore import read_records
from harmonic.testing.harness import Harness
from harmonic.ui.sources import LiveSource, ReportSource, SourceError, pending_groups
from tests.extender.conftest import Client, fixture, running
from tests.extender.test_server import CONFIG


def _get(url: str, **kwargs: Any) -> httpx.Response:
    # Generous: the machine running the suite may be busy.
    return httpx.get(url, timeout=30, **kwargs)


def test_report_api(report_dir: Path, explorer: Callable[..., str]):
    url = explorer(ReportSource(report_dir))
    info = _get(f"{url}/api/info").json()
    assert info["mode"] == "report" and info["profiles"] == ["default-scheduler", "bin-packing"]
    assert info["graph"] is True and info["report"] is True
    records = list(read_records(report_dir / "decisions.msgpack"))
    assert info["decisions"] == len(records)
    rows = _get(f"{url}/api/decisions", params={"q": "huge", "profile": "bin-packing"}).json()
    assert [(r["profile"], r["result"]) for r in rows] == [("bin-packing", "Unschedulable")]
    doc = _get(f"{url}/api/decisions/{rows[0]['id']}").json()
    assert doc["pod"] == rows[0]["pod"] and len(doc["filter"]) == 3
    everything = _get(f"{url}/api/decisions").json()
    times = [r["time"] for r in everything]
    assert times == sorted(times, reverse=True)  # newest first
    assert _get(f"{url}/api/decisions/x").status_code == 400
    missing = _get(f"{url}/api/decisions/{len(records) + 1}")
    assert missing.status_code == 404 and "no decision" in missing.json()["error"]
    assert "<title>Harmonic simulation: test</title>" in _get(f"{url}/report/").text


def test_live_api_polls_and_keeps_what_it_saw(
    live_scheduler: tuple[Harness, str], explorer: Callable[..., str]
):
    h, scheduler_url = live_scheduler
    url = explorer(LiveSource(scheduler_url, keep=3))
    assert [r["pod"] for r in _get(f"{url}/api/decisions").json()] == ["default/huge", "default/web"]
    from harmonic.testing import pod

    h.add_pods([pod(f"more{i}").req(cpu="10m").obj() for i in range(2)])
    h.schedule()
    pods = [r["pod"] for r in _get(f"{url}/api/decisions").json()]
    assert pods == ["default/more1", "default/more0", "default/huge"]  # the newest 3
    pending = _get(f"{url}/api/pending").json()
    assert [p["pod"] for g in pending for p in g["pods"]] == ["default/huge", "default/huge"]
    assert _get(f"{url}/api/graph").status_code == 404
    assert _get(f"{url}/report/").status_code == 404


def test_unreachable_scheduler_is_a_502_naming_it(explorer: Callable[..., str]):
    url = explorer(LiveSource("http://127.0.0.1:9", timeout=2))
    r = _get(f"{url}/api/decisions")
    assert r.status_code == 502
    assert r.json()["error"].startswith("http://127.0.0.1:9/debug/decisions:")


def test_extender_behind_its_token():
    with running(config=CONFIG, settings=ServerSettings(token="ext")) as server:
        server.app.extender.decisions = DecisionLog(5)
        c = Client(server)
        assert c.post("filter", fixture("filter-nodes.json"), {"Authorization": "Bearer ext"})[0] == 200
        c.close()
        with pytest.raises(SourceError, match="HTTP 401"):
            LiveSource(server.url).summaries()
        rows = LiveSource(server.url, token="ext").summaries()
    assert [(r["source"], r["result"]) for r in rows] == [("extender/filter", "Filtered")]


def test_token(report_dir: Path, explorer: Callable[..., str]):
    url = explorer(ReportSource(report_dir), token="s3cret")
    assert _get(f"{url}/api/info").status_code == 401
    assert _get(f"{url}/api/info", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert _get(f"{url}/static/app.js").status_code == 401
    assert _get(f"{url}/api/info", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    login = _get(f"{url}/?token=s3cret")
    assert login.status_code == 303 and login.headers["location"] == "/"
    assert _get(f"{url}/api/info", cookies=login.cookies).status_code == 200
    assert _get(f"{url}/?token=wrong").status_code == 401


def test_report_source_errors_name_the_file(tmp_path: Path):
    with pytest.raises(SourceError, match="no such report folder"):
        ReportSource(tmp_path / "nope")
    with pytest.raises(
        SourceError, match=r"decisions.msgpack: not found; run harmonic simulate --record-decisions"
    ):
        ReportSource(tmp_path)
    good = msgspec.msgpack.encode(
        {
            "time": 0.0,
            "source": "scheduler",
            "profile": "p",
            "pod": "ns/p",
            "uid": "u",
            "result": "Scheduled",
            "node": "n",
            "message": "",
        }
    )
    bad = msgspec.msgpack.encode({"uid": "u"})
    path = tmp_path / "decisions.msgpack"
    path.write_bytes(struct.pack("<I", len(good)) + good + struct.pack("<I", len(bad)) + bad)
    with pytest.raises(
        SourceError,
        match=r"decisions.msgpack: record 2: not a decision record \(Object missing required field `time`\)",
    ):
        ReportSource(tmp_path)
    path.write_bytes(struct.pack("<I", len(good)) + good + struct.pack("<I", 100) + b"xx")
    with pytest.raises(
        SourceError, match=r"decisions.msgpack: record at byte \d+ is cut short \(2 of 100 bytes\)"
    ):
        ReportSource(tmp_path)


def test_pending_groups_by_each_reason():
    doc = {
        "id": 7,
        "pod": "ns/p",
        "profile": "default-scheduler",
        "message": "0/3 nodes are available: ...",
        "result": "Unschedulable",
        "preFilter": None,
        "filter": [
            {
                "node": "n1",
                "code": "Unschedulable",
                "plugin": "NodeResourcesFit",
                "reasons": ["Insufficient cpu"],
            },
            {
                "node": "n2",
                "code": "Unschedulable",
                "plugin": "NodeResourcesFit",
                "reasons": ["Insufficient cpu", "Insufficient memory"],
            },
            {
                "node": "n3",
                "code": "Unschedulable",
                "plugin": "NodeResourcesFit",
                "reasons": ["Insufficient cpu"],
            },
        ],
    }
    groups = pending_groups([doc])
    assert [(g["reason"], len(g["pods"])) for g in groups] == [
        ("Insufficient cpu", 1),
        ("Insufficient memory", 1),
    ]
    assert groups[0]["pods"][0]["rejections"] == [
        {"plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu"], "nodes": ["n1", "n3"]},
        {
            "plugin": "NodeResourcesFit",
            "reasons": ["Insufficient cpu", "Insufficient memory"],
            "nodes": ["n2"],
        },
    ]


def test_cli_needs_one_source_and_names_a_bad_one(tmp_path: Path):
    r = CliRunner().invoke(main, ["ui"])
    assert r.exit_code == 2 and "give exactly one of --report DIR and --url URL" in r.output
    r = CliRunner().invoke(main, ["ui", "--report", str(tmp_path), "--url", "http://127.0.0.1:1"])
    assert r.exit_code == 2
    r = CliRunner().invoke(main, ["ui", "--report", str(tmp_path)])
    assert r.exit_code == 1
    assert (
        r.output
        == f"error: {tmp_path / 'decisions.msgpack'}: not found; run harmonic simulate --record-decisions --out {tmp_path} first\n"
    )
    r = CliRunner().invoke(main, ["ui", "--url", "http://127.0.0.1:9"])
    assert r.exit_code == 1 and r.output.startswith("error: http://127.0.0.1:9/debug/decisions:")


def test_ui_command_serves_on_loopback_and_prints_its_url(report_dir: Path, tmp_path: Path):
    import subprocess
    import sys

    token = tmp_path / "token"
    token.write_text("t0k3n\n")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harmonic",
            "ui",
            "--report",
            str(report_dir),
            "--port",
            "0",
            "--token-file",
            str(token),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("decision explorer: http://127.0.0.1:") and line.rstrip().endswith(
            "/?token=t0k3n"
        )
        base = line.split(": ", 1)[1].split("/?", 1)[0]
        assert _get(f"{base}/api/info", headers={"Authorization": "Bearer t0k3n"}).json()["mode"] == "report"
        assert _get(f"{base}/api/info").status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=20)
