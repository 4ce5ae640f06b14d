"""The feedback loop of ``harmonic run`` end to end over HTTP: the API-server double feeds the cache,
applications post to /v1/feedback, the loop stores each report with its pod's placement and learns;
``harmonic model URL`` prints it."""

from __future__ import annotations

import json
import platform
import signal
import socket
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from harmonic.cli import main
from harmonic.testing import node, pod
from harmonic.testing.apiserver import ApiServerDouble

from .conftest import client_flags, harmonic_run, run_config, scrape, wait_until

DISSONANCE = [{"schedulerName": "harmonic", "plugins": {"multiPoint": {"enabled": [{"name": "Dissonance"}]}}}]


def rightsizing_options(tmp_path: Path) -> list[str]:
    """``harmonic run`` options for feedback with bearer token ``s3cret``, reports read every second and
    right-sizing every 2 s with no cool-down."""
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    guardrails = tmp_path / "rightsizing.yaml"
    guardrails.write_text("cooldownSeconds: 0\nminReports: 2\n")
    return [
        "--feedback-token-file",
        str(token),
        "--feedback-interval",
        "1",
        "--feedback-rightsizing",
        "--feedback-rightsizing-interval",
        "2",
        "--feedback-rightsizing-args",
        str(guardrails),
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_serving(url: str) -> None:
    def up() -> bool:
        try:
            return scrape("GET", f"{url}/healthz", timeout=1).status_code == 200
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
    url = f"https://127.0.0.1:{port}"
    auth = {"Authorization": "Bearer s3cret"}
    report = {"namespace": "default", "pod": "web-0", "metric": "p99_ms", "value": 40.0}
    try:
        _wait_serving(url)
        assert scrape("POST", f"{url}/v1/feedback", json=report, timeout=5).status_code == 401
        bad = scrape("POST", f"{url}/v1/feedback", json={**report, "value": "NaN"}, headers=auth, timeout=5)
        assert bad.status_code == 400 and bad.json()["field"] == "value"

        def learnt() -> dict | None:
            # the cache may not hold the pod yet: post until a round has placed one report
            scrape("POST", f"{url}/v1/feedback", json=report, headers=auth, timeout=5)
            doc = scrape("GET", f"{url}/debug/model", timeout=5).json()
            return doc if doc["observations"] else None

        doc = wait_until(learnt, timeout=30, what="a report learnt")
        metrics = scrape("GET", f"{url}/metrics", timeout=5).text
        runner = CliRunner()
        explained = runner.invoke(main, ["model", url, *client_flags(tmp_path), "--explain", "default/web"])
        table = runner.invoke(main, ["model", url, *client_flags(tmp_path)])
        missing = runner.invoke(main, ["model", url, *client_flags(tmp_path), "--explain", "default/nobody"])
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
    assert 'harmonic_dissonance_evidence{aggressor="batch-cpu",victim="latency-critical"}' in metrics
    assert explained.exit_code == 0 and "default/web-0" in explained.output and "n0" in explained.output
    assert table.exit_code == 0 and "latency-critical" in table.output
    assert missing.exit_code == 1 and "no reports from workload 'default/nobody'" in missing.output


def test_without_feedback_options_the_endpoint_is_absent(api: ApiServerDouble, tmp_path: Path):
    port = _free_port()
    proc = harmonic_run(run_config(api, tmp_path, DISSONANCE), "a", port)
    url = f"https://127.0.0.1:{port}"
    try:
        _wait_serving(url)
        assert scrape("POST", f"{url}/v1/feedback", content=json.dumps({}), timeout=5).status_code == 404
        assert scrape("GET", f"{url}/debug/model", timeout=5).status_code == 404
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    finally:
        proc.kill()


def _service_pod(name: str, cpu: str, annotations: dict[str, str]) -> dict:
    obj = (
        pod(name)
        .label("app", name.rsplit("-", 1)[0])
        .label("pod-template-hash", "5d8f7")
        .owner("ReplicaSet", f"{name.rsplit('-', 1)[0]}-5d8f7")
        .req(cpu=cpu, memory="2Gi")
        .node("n0")
        .obj()
    )
    obj["metadata"]["annotations"] = annotations
    obj["status"] = {
        "phase": "Running",
        "containerStatuses": [{"name": obj["spec"]["containers"][0]["name"], "restartCount": 0}],
    }
    return obj


def test_rightsizing_resizes_opted_in_pods_and_annotates_the_others(api: ApiServerDouble, tmp_path: Path):
    slo = {"harmonic.dev/flourish-target": "2"}
    api.create("nodes", node("n0").cap(cpu="16", memory="64Gi", pods=110).obj())
    api.create_many(
        "pods",
        [
            _service_pod("api-0", "6", {**slo, "harmonic.dev/resize": "auto"}),
            _service_pod("api-1", "6", {**slo, "harmonic.dev/resize": "auto"}),
            _service_pod("db-0", "4", slo),
        ],
    )
    api.create("metrics.k8s.io/nodes", {"metadata": {"name": "n0"}, "usage": {"cpu": "3", "memory": "2Gi"}})
    for name in ("api-0", "api-1", "db-0"):
        usage = {"cpu": "1", "memory": "500Mi"}
        api.create("metrics.k8s.io/pods", {"metadata": {"name": name, "namespace": "default"}, "containers": [{"name": "c", "usage": usage}]})  # fmt: skip
    port = _free_port()
    proc = harmonic_run(run_config(api, tmp_path, DISSONANCE), "a", port, *rightsizing_options(tmp_path))
    url = f"https://127.0.0.1:{port}"
    auth = {"Authorization": "Bearer s3cret"}

    def cpu_of(name: str) -> str:
        got = api.get("pods", name, "default")
        assert got is not None
        return str(got["spec"]["containers"][0]["resources"]["requests"]["cpu"])

    def resized() -> bool:
        for name in ("api-0", "api-1", "db-0"):
            report = {"namespace": "default", "pod": name, "metric": "latency", "value": 1.0}
            scrape("POST", f"{url}/v1/feedback", json=report, headers=auth, timeout=5)
        db = api.get("pods", "db-0", "default") or {}
        annotated = "harmonic.dev/recommendation" in (db.get("metadata", {}).get("annotations") or {})
        return cpu_of("api-0") != "6" and cpu_of("api-1") != "6" and annotated

    try:
        _wait_serving(url)
        wait_until(resized, timeout=60, what="a right-sizing round carried out")
        explained = CliRunner().invoke(
            main, ["model", url, *client_flags(tmp_path), "--explain", "default/api"]
        )
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    finally:
        proc.kill()
    # the opted-in pods were resized in place, through the subresource, by the right-sizer's first cut
    assert cpu_of("api-0") == "4200m"
    assert api.stats().requests["patch pods/resize"] >= 2
    got = api.get("pods", "api-0", "default")
    assert (
        got is not None and got["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] == "4200m"
    )
    # the other one only got the recommendation: never both
    db = api.get("pods", "db-0", "default")
    assert db is not None and cpu_of("db-0") == "4"
    rec = json.loads(db["metadata"]["annotations"]["harmonic.dev/recommendation"])
    assert rec["containerRecommendations"][0]["target"]["cpu"]
    assert explained.exit_code == 0 and "cut: P95 cost" in explained.output and "resized" in explained.output


def test_bad_rightsizing_args_name_the_file_and_field(api: ApiServerDouble, tmp_path: Path):
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    bad = tmp_path / "rs.yaml"
    bad.write_text("maxStepDown: 3\n")
    proc = harmonic_run(
        run_config(api, tmp_path, DISSONANCE),
        "a",
        0,
        "--feedback-token-file",
        str(token),
        "--feedback-rightsizing",
        "--feedback-rightsizing-args",
        str(bad),
    )
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert f"{bad}: maxStepDown" in err and "Traceback" not in err


@pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() != "x86_64", reason="tgkill by its x86_64 syscall number"
)
def test_a_sigterm_the_kernel_hands_to_another_thread_still_stops_harmonic_run(
    api: ApiServerDouble, tmp_path: Path
):
    # A process-directed signal may be delivered to any thread; CPython then runs the handler on the
    # main thread only when that thread next runs bytecode. Aim SIGTERM at a non-main thread (tgkill):
    # harmonic run must still stop, as it must when the kernel picks such a thread itself.
    import ctypes
    import os

    port = _free_port()
    proc = harmonic_run(run_config(api, tmp_path, DISSONANCE), "a", port)
    try:
        _wait_serving(url := f"https://127.0.0.1:{port}")
        assert scrape("GET", f"{url}/metrics", timeout=5).status_code == 200
        threads = sorted(int(t) for t in os.listdir(f"/proc/{proc.pid}/task") if int(t) != proc.pid)
        libc = ctypes.CDLL(None, use_errno=True)
        sys_tgkill = 234  # x86_64
        assert libc.syscall(sys_tgkill, proc.pid, threads[0], signal.SIGTERM) == 0
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err[-2000:]
        assert '"msg":"stopped"' in err
    finally:
        proc.kill()
