"""Malformed kubeconfig files are one clear error naming the file and field (hypothesis fuzz and a
table), never a traceback from the client library's loader; a good one still connects."""

from __future__ import annotations

import copy
import os
import tempfile
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from harmonic.cluster.transport import ClientConfigError, Transport, load_client
from harmonic.testing.apiserver import ApiServerDouble
from tests.fuzzing import fuzz_settings, mutated

GOOD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "c",
    "clusters": [
        {"name": "k", "cluster": {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True}}
    ],
    "users": [
        {"name": "u", "user": {"token": "t", "client-certificate-data": "QUFB", "client-key-data": "QUFB"}}
    ],
    "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u", "namespace": "n"}}],
}


def _load(text: str, context: str | None = None) -> Transport:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "kubeconfig")
        with open(path, "w") as f:
            f.write(text)
        return Transport(load_client(path, context))


@fuzz_settings(100)
@given(st.one_of(mutated(GOOD).map(yaml.safe_dump), st.text(max_size=100)), st.sampled_from([None, "c", "x"]))
def test_fuzz_any_kubeconfig_loads_or_fails_with_a_config_error(text, context):
    try:
        _load(text, context)
    except ClientConfigError as e:
        assert "kubeconfig" in str(e) or "TLS" in str(e) or "server address" in str(e), e


def _with(path: tuple[Any, ...], value: Any) -> str:
    doc = copy.deepcopy(GOOD)
    cur = doc
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return yaml.safe_dump(doc)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            "apiVersion: v1\nclusters: [\n",
            "not valid YAML: expected the node content, but found '<stream end>' (line 3",
        ),
        ("- a\n", "expected a kubeconfig object"),
        (_with(("clusters",), "x"), "clusters: Input should be a valid list"),
        (_with(("clusters", 0, "cluster", "server"), 6443), "clusters[0].cluster.server"),
        (_with(("clusters", 0, "cluster", "insecure-skip-tls-verify"), "yes"), "insecure-skip-tls-verify"),
        (_with(("users", 0, "user", "client-key-data"), "%%%"), "client-key-data: is not base64"),
        (_with(("users", 0, "user", "token"), ["t"]), "users[0].user.token"),
        (_with(("contexts", 0), {"context": {}}), "contexts[0].name"),
        (_with(("current-context",), "nope"), "no context named 'nope'"),
        (_with(("contexts", 0, "context", "cluster"), "other"), "no cluster named 'other'"),
        (_with(("clusters", 0, "cluster", "server"), ""), "server: is required"),
        (_with(("clusters", 0, "cluster", "certificate-authority-data"), "QUFB"), "TLS settings"),
    ],
)
def test_malformed_kubeconfig_names_the_file_and_field(text, needle):
    with pytest.raises(ClientConfigError) as info:
        _load(text)
    assert needle in str(info.value), str(info.value)


def test_unknown_fields_are_ignored_as_client_go_does(tmp_path):
    with ApiServerDouble() as api:
        doc = yaml.safe_load(api.kubeconfig(tmp_path / "kc").read_text())
        doc["preferences"] = {"colors": True}
        doc["clusters"][0]["cluster"]["extensions"] = [{"name": "x", "extension": {}}]
        (tmp_path / "kc2").write_text(yaml.safe_dump(doc))
        t = Transport(load_client(str(tmp_path / "kc2")))
        assert t.host.startswith("http")


def _exec_user(command: str, hint: str | None = None) -> str:
    plugin = {"apiVersion": "client.authentication.k8s.io/v1", "command": command}
    if hint is not None:
        plugin["installHint"] = hint
    return _with(("users", 0, "user"), {"exec": plugin})


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            _exec_user("kubelogin-nowhere", "Install it: brew install kubelogin"),
            "users['u'].exec.command: exec: executable kubelogin-nowhere not found: a client-go credential "
            "plugin that is not installed. Install it: brew install kubelogin",
        ),
        (_exec_user("./bin/missing-plugin"), "exec: executable ./bin/missing-plugin not found"),
        (_exec_user("/nonexistent/plugin"), "exec: executable /nonexistent/plugin not found"),
    ],
)
def test_a_missing_exec_credential_plugin_fails_at_start(text, needle):
    """The client library would log one line and send every request without credentials (401s)."""
    with pytest.raises(ClientConfigError) as info:
        _load(text)
    assert needle in str(info.value), str(info.value)


def test_an_installed_exec_plugin_is_accepted(tmp_path):
    (tmp_path / "bin").mkdir()
    plugin = tmp_path / "bin" / "creds"
    plugin.write_text(
        '#!/bin/sh\necho \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t"}}\'\n'
    )
    plugin.chmod(0o755)
    for command in ("./bin/creds", str(plugin)):
        kc = tmp_path / "kubeconfig"
        kc.write_text(_exec_user(command))
        load_client(str(kc))


@pytest.mark.parametrize(
    ("script", "why"),
    [
        ("echo expired >&2; exit 1", "exec: process returned 1. expired"),
        (
            'echo \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}}\'',
            "exec: missing token or clientCertificateData field in plugin output",
        ),
    ],
)
def test_an_exec_plugin_that_gives_no_credentials_fails_at_start(tmp_path, script, why):
    """The client library logs one line and carries on unauthenticated; client-go fails the request."""
    plugin = tmp_path / "creds"
    plugin.write_text(f"#!/bin/sh\n{script}\n")
    plugin.chmod(0o755)
    kc = tmp_path / "kubeconfig"
    kc.write_text(_exec_user(str(plugin)))
    with pytest.raises(ClientConfigError) as info:
        load_client(str(kc))
    assert f"users['u'].exec: the credential plugin {plugin} gave no credentials: {why}" in str(info.value)
