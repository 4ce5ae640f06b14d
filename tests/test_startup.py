"""What run, extender and reschedule refuse before starting, and `config check --for` says the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harmonic.cli import main
from harmonic.framework.config import ConfigError
from harmonic.startup import COMMANDS, prepare

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
OWN_LEASE = "leaderElection: {resourceName: harmonic}\n"
NAMED = "profiles:\n- schedulerName: harmonic\n"
TOPOLOGY = (
    "- schedulerName: harmonic\n  plugins: {multiPoint: {enabled: [{name: CommunicationAffinity}]}}\n"
    "  pluginConfig:\n  - name: CommunicationAffinity\n    args:\n"
    "      telemetry:\n        topologies: [{file: /nonexistent/topology.json}]\n"
)

#: name -> (file text, {command: a fragment of the refusal, or None: accepted}).
CASES: dict[str, tuple[str, dict[str, str | None]]] = {
    "empty file": ("", dict.fromkeys(COMMANDS, "apiVersion: Required value")),
    "no apiVersion/kind": (OWN_LEASE + NAMED, dict.fromkeys(COMMANDS, "apiVersion: Required value")),
    "no kind": (
        "apiVersion: kubescheduler.config.k8s.io/v1\n" + OWN_LEASE + NAMED,
        dict.fromkeys(COMMANDS, "kind: Required value"),
    ),
    "profiles: []": (
        HEADER + OWN_LEASE + "profiles: []\n",
        {"run": "no profile names its schedulerName", "extender": None, "reschedule": None},
    ),
    "no profiles key": (
        HEADER + OWN_LEASE,
        {"run": "no profile names its schedulerName", "extender": None, "reschedule": None},
    ),
    "a profile without schedulerName": (
        HEADER + OWN_LEASE + "profiles:\n- percentageOfNodesToScore: 50\n",
        {"run": "no profile names its schedulerName", "extender": None, "reschedule": None},
    ),
    "default-scheduler named": (
        HEADER + OWN_LEASE + "profiles:\n- schedulerName: default-scheduler\n",
        dict.fromkeys(COMMANDS, None),
    ),
    "kube-scheduler's lease": (
        HEADER + NAMED,
        {"run": "kube-scheduler's own lease", "extender": None, "reschedule": None},
    ),
    "lease elsewhere": (HEADER + OWN_LEASE + NAMED, dict.fromkeys(COMMANDS, None)),
    "missing topology file": (
        HEADER + OWN_LEASE + "profiles:\n" + TOPOLOGY,
        {"run": "/nonexistent/topology.json", "extender": "/nonexistent/topology.json", "reschedule": None},
    ),
    "missing kubeconfig": (
        HEADER + OWN_LEASE + "clientConnection: {kubeconfig: /nonexistent/kubeconfig}\n" + NAMED,
        dict.fromkeys(
            COMMANDS,
            "clientConnection.kubeconfig: cannot load cluster configuration from /nonexistent/kubeconfig: cannot read",
        ),
    ),
}


def _write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "sched.yaml"
    f.write_text(text)
    return f


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("command", COMMANDS)
def test_prepare_refuses_what_the_command_cannot_run(tmp_path, name, command):
    text, expect = CASES[name]
    f = _write(tmp_path, text)
    if expect[command] is None:
        prepare(str(f), command)
        return
    with pytest.raises(ConfigError) as e:
        prepare(str(f), command)
    assert str(e.value).startswith(f"{f}: ") and expect[command] in str(e.value)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("command", COMMANDS)
def test_config_check_says_what_the_command_says(tmp_path, name, command):
    """`config check --for CMD` and `CMD --config` print the same refusal; check accepts what CMD runs."""
    f = _write(tmp_path, CASES[name][0])
    check = CliRunner().invoke(main, ["config", "check", "--for", command, str(f)])
    if CASES[name][1][command] is None:
        assert check.exit_code == 0 and check.stdout.startswith(f"{f}: valid"), check.output
        return
    argv = {
        "run": ["run", "--config", str(f)],
        "extender": ["extender", "--config", str(f)],
        "reschedule": ["reschedule", "--policy", "/nonexistent", "--config", str(f), "--once", "--dry-run"],
    }[command]
    if command == "reschedule":
        argv[2] = str(_write_policy(tmp_path))
    started = CliRunner().invoke(main, argv)
    assert check.exit_code == started.exit_code == 1, (check.output, started.output)
    assert check.stderr.splitlines() == [started.stderr.splitlines()[-1]], (check.stderr, started.stderr)


def _write_policy(tmp_path: Path) -> Path:
    p = tmp_path / "policy.yaml"
    p.write_text("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles: []\n")
    return p


def test_config_check_defaults_to_run(tmp_path):
    f = _write(tmp_path, HEADER + OWN_LEASE)
    r = CliRunner().invoke(main, ["config", "check", str(f)])
    assert r.exit_code == 1 and "no profile names its schedulerName" in r.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_a_credential_plugin_that_fails_is_refused_by_check_and_command_alike(tmp_path, command):
    """clientConnection.kubeconfig's exec plugin runs but gives no credentials (/bin/false)."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:6443"}}],
                "users": [
                    {
                        "name": "u",
                        "user": {
                            "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/false"}
                        },
                    }
                ],
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
            }
        )
    )
    f = _write(tmp_path, HEADER + OWN_LEASE + f"clientConnection: {{kubeconfig: {kubeconfig}}}\n" + NAMED)
    with pytest.raises(ConfigError) as e:
        prepare(str(f), command)
    assert (
        "users['u'].exec: the credential plugin /bin/false gave no credentials: exec: process returned 1"
        in str(e.value)
    )
    check = CliRunner().invoke(main, ["config", "check", "--for", command, str(f)])
    assert check.exit_code == 1 and "gave no credentials" in check.stderr
