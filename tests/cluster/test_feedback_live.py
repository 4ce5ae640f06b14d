"""The feedback loop of ``harmonic run`` end to end over HTTP: the API-server double feeds the cache,
applications post to /v1/feedback, the loop stores each report with its pod's placement and learns;
``harmonic model URL`` prints it."""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path

import httpx
from click.testing import CliRunner

from harmonic.cli import main
from harmonic.testing import node, pod
from harmonic.testing.apiserver import ApiServerDouble

from .conftest import harmonic_run, run_config, wait_until

DISSONANCE = [{"schedulerName": "harmonic", "plugins": {"multiPoint": {"enabled": [{"name": "Dissonance"}]}}}]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_serving(url: str) -> None:
    def up() -> bool:
        try:
            return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(up, timeout=30, what="harmonic run serving")


def test_posted_feedback_is_learnt_with_its_placement(api: ApiServerDouble, tmp_path: Path):
    api.create_many("nodes", [node(f"n{i}").cap(cpu="4", memory="16Gi", pods=110).obj() for i in range(2)])
    web = (
        pod("web-0")
        .label("app", "web")
        .label("pod-template-hash", "5d8f7")
        .owner("ReplicaSet", "web-5d8f7")
        .req(cpu="1")
        .node("n0")
    )
    batch = pod("crunch-0").owner("Job", "crunch").req(cpu="2").node("n0")
    api.create_many(
        "pods", [web.obj(), batch.obj(), pod("web-1").label("app", "web").req(cpu="1").node("n1").obj()]
    )
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    port = _free_port()
    config = run_config(api, tmp_path, DISSONANCE)
    proc = harmonic_run(config, "a", port, "--feedback-token-file", str(token), "--feedback-interval", "1")
    url = f"http://127.0.0.1:{port}"
    auth = {"Authorization": "Bearer s3cret"}
    report = {"namespace": "default", "pod": "web-0", "metric": "p99_ms", "value": 40.0}
    try:
        _wait_serving(url)
        assert httpx.post(f"{url}/v1/feedback", json=report, timeout=5).status_code == 401
        bad = httpx.post(f"{url}/v1/feedback", json={**report, "value": "NaN"}, headers=auth, timeout=5)
        assert bad.status_code == 400 and bad.json()["field"] == "value"

        def learnt() -> dict | None:
            # the cache may not hold the pod yet: post until a round has placed one report
            httpx.post(f"{url}/v1/feedback", json=report, headers=auth, timeout=5)
            doc = httpx.get(f"{url}/debug/model", timeout=5).json()
            return doc if doc["observations"] else None

        doc = wait_until(learnt, timeout=30, what="a report learnt")
        metrics = httpx.get(f"{url}/metrics", timeout=5).text
        runner = CliRunner()
        explained = runner.invoke(main, ["model", url, "--explain", "default/web"])
        table = runner.invoke(main, ["model", url])
        missing = runner.invoke(main, ["model", url, "--explain", "default/nobody"])
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    finally:
        proc.kill()
    w = doc["workloads"]["default/web"]
    assert w["class"] == "latency-critical"
    [first, *_] = w["recent"]
    # stored with the placement in force: web-0 on n0 beside 2 of the node's 4 CPUs of batch-cpu
    assert (first["pod"], first["node"], first["value"]) == ("default/web-0", "n0", 40.0)
    assert first["neighbours"][1] == 0.5 and sum(first["neighbours"]) == 0.5
    assert 'harmonic_dissonance_learned{aggressor="batch-cpu",victim="latency-critical"}' in metrics
    assert explained.exit_code == 0 and "default/web-0" in explained.output and "n0" in explained.output
    assert table.exit_code == 0 and "latency-critical" in table.output
    assert missing.exit_code == 1 and "no reports from workload 'default/nobody'" in missing.output


def test_without_feedback_options_the_endpoint_is_absent(api: ApiServerDouble, tmp_path: Path):
    port = _free_port()
    proc = harmonic_run(run_config(api, tmp_path, DISSONANCE), "a", port)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_serving(url)
        assert httpx.post(f"{url}/v1/feedback", content=json.dumps({}), timeout=5).status_code == 404
        assert httpx.get(f"{url}/debug/model", timeout=5).status_code == 404
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    finally:
        proc.kill()
