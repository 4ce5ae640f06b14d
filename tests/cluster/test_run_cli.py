"""``harmonic run`` as a process: schedules, serves its endpoints, logs JSON, stops cleanly on SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path
from urllib.request import urlopen

from click.testing import CliRunner

from harmonic.cli import main
from harmonic.testing import node, pod
from harmonic.testing.apiserver import ApiServerDouble

from .conftest import harmonic_run, run_config, wait_until


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_run_schedules_and_stops_cleanly_on_sigterm(api: ApiServerDouble, tmp_path: Path):
    config = run_config(api, tmp_path, [{"schedulerName": "harmonic"}])
    api.create("nodes", node("n").obj())
    api.create("pods", pod("p").scheduler("harmonic").obj())
    port = _free_port()
    proc = harmonic_run(config, "cli", port, "--decisions-buffer", "5")
    try:
        wait_until(lambda: api.pod_placement() == {"default/p": "n"}, timeout=30)
        assert urlopen(f"http://127.0.0.1:{port}/readyz").read() == b"ok"
        assert b"scheduler_schedule_attempts_total" in urlopen(f"http://127.0.0.1:{port}/metrics").read()
        recorded = json.loads(urlopen(f"http://127.0.0.1:{port}/debug/decisions?pod=default/p").read())
        assert recorded["capacity"] == 5
        assert [(d["pod"], d["result"], d["node"]) for d in recorded["decisions"]] == [
            ("default/p", "Scheduled", "n")
        ]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0
    logs = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert any(rec["msg"] == "became leader" and rec["identity"] == "cli" for rec in logs)
    assert api.get("leases", "harmonic", "kube-system")["spec"]["holderIdentity"] == ""  # released


def test_run_refuses_kube_schedulers_own_lease(tmp_path: Path):
    config = tmp_path / "sched.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    result = CliRunner().invoke(main, ["run", "--config", str(config)])
    assert result.exit_code == 1
    assert "leaderElection.resourceName: 'kube-scheduler' is kube-scheduler's own lease" in result.output


def test_run_reports_a_missing_kubeconfig(tmp_path: Path):
    config = tmp_path / "sched.yaml"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": "harmonic"}],
            }
        )
    )
    result = CliRunner().invoke(
        main, ["run", "--config", str(config), "--kubeconfig", str(tmp_path / "nope")]
    )
    assert result.exit_code == 1
    assert result.output.startswith(f"error: cannot load cluster configuration from {tmp_path / 'nope'}")


BOUTIQUE = Path(__file__).resolve().parents[2] / "harmonic" / "data" / "topologies" / "online-boutique.json"


def test_run_feeds_communication_affinity_the_configured_telemetry(api: ApiServerDouble, tmp_path: Path):
    """The harmonic plugins on a live cluster: the affinity graph is built from the profile's
    telemetry args at start-up, refreshed in the background and reported on /metrics."""
    config = tmp_path / "sched.yaml"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
                "clientConnection": {"kubeconfig": str(api.kubeconfig(tmp_path / "kubeconfig"))},
                "profiles": [
                    {
                        "schedulerName": "harmonic",
                        "plugins": {
                            "multiPoint": {
                                "enabled": [{"name": "CommunicationAffinity"}, {"name": "Dissonance"}]
                            }
                        },
                        "pluginConfig": [
                            {
                                "name": "CommunicationAffinity",
                                "args": {
                                    "telemetry": {
                                        "topologies": [{"file": str(BOUTIQUE), "namespace": "shop"}]
                                    }
                                },
                            }
                        ],
                    }
                ],
            }
        )
    )
    for n in ("a", "b"):
        api.create("nodes", node(n).obj())
    api.create("pods", pod("frontend-1").ns("shop").label("app", "frontend").scheduler("harmonic").obj())
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "harmonic", "run", "--config", str(config), "--metrics-port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: "shop/frontend-1" in api.pod_placement(), timeout=30)
        metrics = urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
        edges = [line for line in metrics.splitlines() if line.startswith("harmonic_affinity_graph_edges ")]
        assert edges and float(edges[0].split()[1]) > 0, metrics[-2000:]
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0


def test_run_reports_a_missing_topology_file(tmp_path: Path):
    config = tmp_path / "sched.yaml"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
                "profiles": [
                    {
                        "schedulerName": "harmonic",
                        "plugins": {"multiPoint": {"enabled": [{"name": "CommunicationAffinity"}]}},
                        "pluginConfig": [
                            {
                                "name": "CommunicationAffinity",
                                "args": {
                                    "telemetry": {"topologies": [{"file": str(tmp_path / "gone.json")}]}
                                },
                            }
                        ],
                    }
                ],
            }
        )
    )
    result = CliRunner().invoke(main, ["run", "--config", str(config)])
    assert result.exit_code == 1
    assert result.output.startswith("error: ") and "gone.json" in result.output


def test_run_survives_a_pod_it_cannot_compile(api: ApiServerDouble, tmp_path: Path):
    """Issue 33: a pod kube-apiserver accepts with a request beyond 64 bits made `harmonic run` exit 1
    (and again at every restart). Now: a FailedScheduling event, one log line, scheduling goes on."""
    config = run_config(api, tmp_path, [{"schedulerName": "harmonic"}])
    api.create("nodes", node("n").obj())
    api.create("pods", pod("huge").scheduler("harmonic").req(cpu="1e100").obj())
    proc = harmonic_run(config, "cli", _free_port())
    try:
        wait_until(lambda: api.events("FailedScheduling"), timeout=30, what="the FailedScheduling event")
        api.create("pods", pod("p").scheduler("harmonic").obj())
        wait_until(lambda: api.pod_placement() == {"default/p": "n"}, timeout=30)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0
    (event,) = api.events("FailedScheduling")
    assert event["regarding"]["name"] == "huge"
    assert "spec.containers[0].resources.requests.cpu" in event["note"]
    logs = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert [rec["level"] for rec in logs if "default/huge" in json.dumps(rec)] == ["error"]
