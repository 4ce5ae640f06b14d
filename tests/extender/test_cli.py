"""`harmonic extender` argument handling (serving itself is covered over HTTP in test_server)."""

from __future__ import annotations

from click.testing import CliRunner

from harmonic.cli import main


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
