"""``harmonic run --feedback-moves`` end to end over HTTP: a resize the kubelet finds Infeasible on its
node asks for a move, carried out through the Eviction API with the option (its replacement landing on
the node reserved for it) and only reported without it; bad move args are an error naming the file and
field."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

from harmonic.cli import main
from harmonic.testing import node, pod
from harmonic.testing.apiserver import ApiServerDouble

from .conftest import client_flags, harmonic_run, run_config, scrape, wait_until
from .test_feedback_live import DISSONANCE, _free_port, _service_pod, _wait_serving, rightsizing_options


def _outgrowing(api: ApiServerDouble, tmp_path: Path) -> list[str]:
    """api-0 asks 6 of n0's 8 CPUs and reports 5 against an SLO of 2: the right-sizer grows it by half,
    which n0 cannot hold (Infeasible) and n1 can. The arguments of ``harmonic run`` for that."""
    api.create("nodes", node("n0").cap(cpu="8", memory="64Gi", pods=110).obj())
    api.create("nodes", node("n1").cap(cpu="16", memory="64Gi", pods=110).obj())
    slo = {"harmonic.dev/flourish-target": "2", "harmonic.dev/resize": "auto"}
    placed = _service_pod("api-0", "6", slo)
    placed["spec"]["schedulerName"] = "harmonic"  # ours: this scheduler places its replacement
    api.create("pods", placed)
    api.set_status("pods", "api-0", {"phase": "Running"}, namespace="default")
    api.create("metrics.k8s.io/nodes", {"metadata": {"name": "n0"}, "usage": {"cpu": "5", "memory": "2Gi"}})
    usage = {"name": "c", "usage": {"cpu": "5", "memory": "500Mi"}}
    api.create(
        "metrics.k8s.io/pods", {"metadata": {"name": "api-0", "namespace": "default"}, "containers": [usage]}
    )
    return rightsizing_options(tmp_path)


@pytest.mark.parametrize("execute", [True, False])
def test_an_infeasible_resize_moves_the_pod_only_with_the_option(
    api: ApiServerDouble, tmp_path: Path, execute
):
    args = _outgrowing(api, tmp_path)
    port = _free_port()
    proc = harmonic_run(
        run_config(api, tmp_path, DISSONANCE), "a", port, *args, *(["--feedback-moves"] if execute else [])
    )
    url = f"https://127.0.0.1:{port}"

    def answered() -> str | None:
        report = {"namespace": "default", "pod": "api-0", "metric": "latency", "value": 5.0}
        scrape(
            "POST", f"{url}/v1/feedback", json=report, headers={"Authorization": "Bearer s3cret"}, timeout=5
        )
        metrics = scrape("GET", f"{url}/metrics", timeout=5).text
        seen = [line for line in metrics.splitlines() if line.startswith("harmonic_feedback_moves_total{")]
        return "\n".join(seen) or None

    try:
        _wait_serving(url)
        counted = wait_until(answered, timeout=60, what="a move asked for")
        landed = _replace(api, url) if execute else {}
        explained = CliRunner().invoke(
            main, ["model", url, *client_flags(tmp_path), "--explain", "default/api"]
        )
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    finally:
        proc.kill()
    stats = api.stats().requests
    assert stats["patch pods/resize"] >= 1
    assert explained.exit_code == 0 and "Infeasible" in explained.output
    if execute:
        assert 'harmonic_feedback_moves_total{outcome="executed"} 1.0' in counted
        assert stats["create pods/eviction"] == 1 and api.get("pods", "api-0", "default") is None
        assert "moved — default/api-0 evicted from n0 through the Eviction API" in explained.output
        assert "reserved on n1 for its replacement (the what-if's placement)" in explained.output
        # n2 scores higher (the probe went there), yet the replacement took the node reserved for it
        assert landed == {"probe-0": "n2", "api-1": "n1"}
        assert "replacement default/api-1 of default/api-0 bound to n1: landed on the reserved node" in (
            explained.output
        )
        assert "asked of --feedback-moves" in explained.output
        assert "moves are not executed live" not in explained.output
    else:
        assert counted == 'harmonic_feedback_moves_total{outcome="recommended"} 1.0'
        assert stats["create pods/eviction"] == 0 and api.get("pods", "api-0", "default") is not None
        assert "moves are not executed live" in explained.output


def _replace(api: ApiServerDouble, url: str) -> dict[str, str]:
    """Act as api-0's ReplicaSet once it is evicted: after n2 (roomier than n1, where the move reserved)
    joins and a probe pod of another owner shows the scheduler ranks it first, create the replacement.
    Where both were bound, once the reservation's outcome is counted."""
    api.create("nodes", node("n2").cap(cpu="64", memory="256Gi", pods=110).obj())
    # Only once the scheduler has seen n2 does the probe say anything: a pod only n2 admits, bound,
    # shows its informer has the node (else the probe could be placed before n2 is known).
    seen = pod("sees-n2").req(cpu="1m").obj()
    seen["spec"]["schedulerName"] = "harmonic"
    seen["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n2"}
    api.create("pods", seen)
    wait_until(lambda: _node_of(api, "sees-n2"), timeout=30, what="the scheduler seeing n2")
    for name in ("probe-0", "api-1"):
        obj = _service_pod(name, "6", {})
        obj["spec"]["schedulerName"] = "harmonic"
        del obj["spec"]["nodeName"], obj["status"]
        api.create("pods", obj)
        wait_until(lambda n=name: _node_of(api, n), timeout=30, what=f"{name} bound")

    def counted() -> bool:
        return (
            'harmonic_feedback_reservations_total{outcome="landed"} 1.0'
            in scrape("GET", f"{url}/metrics").text
        )

    wait_until(counted, timeout=30, what="the reservation's outcome")
    return {n: _node_of(api, n) for n in ("probe-0", "api-1")}


def _node_of(api: ApiServerDouble, name: str) -> str:
    return str(((api.get("pods", name, "default") or {}).get("spec") or {}).get("nodeName") or "")


def test_bad_move_args_name_the_file_and_field(api: ApiServerDouble, tmp_path: Path):
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    bad = tmp_path / "moves.yaml"
    bad.write_text("maxPerRound: 0\n")
    config = run_config(api, tmp_path, DISSONANCE)
    proc = harmonic_run(
        config,
        "a",
        0,
        "--feedback-token-file",
        str(token),
        "--feedback-moves",
        "--feedback-moves-args",
        str(bad),
    )
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert f"{bad}: maxPerRound: Input should be greater than or equal to 1" in err and "Traceback" not in err
    alone = harmonic_run(config, "a", 0, "--feedback-moves")
    _, err = alone.communicate(timeout=60)
    assert alone.returncode == 1 and "--feedback-moves needs reports" in err


def test_a_reservation_outlives_the_process_that_made_it(api: ApiServerDouble, tmp_path: Path):
    """The first ``harmonic run`` moves api-0 (reserving n1) and is killed before the controller creates
    the replacement; a second one, started afterwards without any feedback option, takes the lease,
    restores the reservation from the ConfigMap and places the replacement on n1 though n2 scores
    higher."""
    args = _outgrowing(api, tmp_path)
    config = run_config(api, tmp_path, DISSONANCE)
    port = _free_port()
    first = harmonic_run(config, "a", port, *args, "--feedback-moves")
    url = f"https://127.0.0.1:{port}"

    def moved() -> bool:
        report = {"namespace": "default", "pod": "api-0", "metric": "latency", "value": 5.0}
        scrape(
            "POST", f"{url}/v1/feedback", json=report, headers={"Authorization": "Bearer s3cret"}, timeout=5
        )
        return api.get("pods", "api-0", "default") is None

    try:
        _wait_serving(url)
        wait_until(moved, timeout=60, what="api-0 moved")
        kept = api.get("configmaps", "harmonic-reservations", "kube-system")
        assert kept is not None and [json.loads(v)["node"] for v in kept["data"].values()] == ["n1"]
    finally:
        first.kill()  # no SIGTERM: nothing is released or written on the way out
        first.communicate(timeout=20)
    second = harmonic_run(config, "b", 0)
    try:
        api.create("nodes", node("n2").cap(cpu="64", memory="256Gi", pods=110).obj())
        placed = {}
        for name in ("probe-0", "api-1"):
            obj = _service_pod(name, "6", {})
            obj["spec"]["schedulerName"] = "harmonic"
            del obj["spec"]["nodeName"], obj["status"]
            api.create("pods", obj)
            placed[name] = wait_until(lambda n=name: _node_of(api, n), timeout=30, what=f"{name} bound")
        wait_until(
            lambda: not (api.get("configmaps", "harmonic-reservations", "kube-system") or {}).get("data"),
            what="the consumed reservation written away",
        )
        second.send_signal(signal.SIGTERM)
        _, err = second.communicate(timeout=20)
    finally:
        second.kill()
    assert placed == {"probe-0": "n2", "api-1": "n1"}
    assert "reservations: 1 of 1 restored from configmap kube-system/harmonic-reservations" in err
    assert second.returncode == 0
