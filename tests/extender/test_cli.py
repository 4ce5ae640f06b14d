"""`harmonic extender` argument handling (serving itself is covered over HTTP in test_server)."""

from __future__ import annotations

import pytest
import trustme
from click.testing import CliRunner

from harmonic.cli import main
from harmonic.extender.server import TLSSettings


def test_tls_flags_go_together(tmp_path):
    cert = tmp_path / "tls.crt"
    cert.write_text("x")
    r = CliRunner().invoke(main, ["extender", "--tls-cert", str(cert)])
    assert r.exit_code == 2 and "--tls-cert and --tls-key go together" in r.output


def test_unknown_profile_is_one_clear_error():
    r = CliRunner().invoke(main, ["extender", "--profile", "nope", "--port", "0"])
    assert r.exit_code == 1
    assert "--profile 'nope': no such profile" in r.output


def test_empty_token_file_is_refused(tmp_path):
    token = tmp_path / "token"
    token.write_text("\n")
    r = CliRunner().invoke(main, ["extender", "--token-file", str(token), "--port", "0"])
    assert r.exit_code == 1 and "token file is empty" in r.output


def test_bad_config_names_the_field(tmp_path):
    cfg = tmp_path / "sched.yaml"
    cfg.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nbogus: 1\n")
    r = CliRunner().invoke(main, ["extender", "--config", str(cfg), "--port", "0"])
    assert r.exit_code == 1 and "bogus: unknown field" in r.output


@pytest.fixture(scope="module")
def pem(tmp_path_factory):
    ca = trustme.CA()
    d = tmp_path_factory.mktemp("pem")
    cert = ca.issue_cert("127.0.0.1")
    cert.private_key_pem.write_to_path(str(d / "tls.key"))
    cert.cert_chain_pems[0].write_to_path(str(d / "tls.crt"))
    ca.cert_pem.write_to_path(str(d / "ca.crt"))
    ca.issue_cert("other").private_key_pem.write_to_path(str(d / "other.key"))
    (d / "junk").write_text("not PEM at all\n")
    return d


#: Which file is bad -> the flag the error names. Each used to end in a raw ssl.SSLError traceback.
BAD_TLS = {
    "cert": ("--tls-cert", {"--tls-cert": "junk"}),
    "key": ("--tls-key", {"--tls-key": "junk"}),
    "key of another cert": ("--tls-key", {"--tls-key": "other.key"}),
    "a key as cert": ("--tls-cert", {"--tls-cert": "tls.key"}),
    "client CA": ("--tls-client-ca", {"--tls-client-ca": "junk"}),
}


@pytest.mark.parametrize("name", sorted(BAD_TLS))
def test_a_bad_tls_file_is_one_error_naming_its_flag(pem, name):
    flag, bad = BAD_TLS[name]
    files = {"--tls-cert": "tls.crt", "--tls-key": "tls.key", "--tls-client-ca": "ca.crt", **bad}
    argv = [a for f, n in files.items() for a in (f, str(pem / n))]
    r = CliRunner().invoke(main, ["extender", *argv, "--port", "0"])
    assert r.exit_code == 1, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {flag} {pem / files[flag]}: "), r.stderr


def test_good_tls_files_pass_the_check(pem):
    TLSSettings(str(pem / "tls.crt"), str(pem / "tls.key"), str(pem / "ca.crt")).check()
