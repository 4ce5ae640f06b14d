"""The scheduler's secure port end to end against the API-server double: HTTPS with the self-signed
certificate, delegated authentication/authorization through TokenReview/SubjectAccessReview, client
certificates, and the POST routes that check their own token."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import trustme

from harmonic.cluster.health import HealthServer
from harmonic.cluster.secureport import SecureServing
from harmonic.cluster.transport import Transport
from harmonic.testing.apiserver import ApiServerDouble

OK = b"# metrics\n"


def serving(**kw: object) -> SecureServing:
    base: dict[str, object] = {
        "bind_address": "127.0.0.1",
        "port": 0,
        "cert_dir": None,
        "tls_cert_file": None,
        "tls_private_key_file": None,
        "client_ca_file": None,
        "authentication_kubeconfig": None,
        "authorization_kubeconfig": None,
        "authentication_skip_lookup": True,
        "authentication_tolerate_lookup_failure": True,
        "always_allow_paths": ("/healthz", "/readyz", "/livez"),
        "token_ttl": 10.0,
        "allow_ttl": 10.0,
        "deny_ttl": 10.0,
    }
    return SecureServing(**{**base, **kw})  # type: ignore[arg-type]


@pytest.fixture
def start(transport: Transport) -> Iterator[Callable[..., str]]:
    servers: list[HealthServer] = []

    def run(settings: SecureServing | None = None) -> str:
        tls, auth = (settings or serving()).build(transport)
        server = HealthServer(
            "127.0.0.1",
            0,
            lambda: OK,
            {"ping": lambda: None},
            {},
            routes={"/debug/decisions": lambda q: (200, b"[]", "application/json")},
            post_routes={
                "/v1/feedback": lambda auth, body: (
                    202 if auth == "Bearer app" else 401,
                    b"",
                    "text/plain",
                    {},
                )
            },
            tls=tls,
            auth=auth,
        )
        server.start()
        servers.append(server)
        return f"https://127.0.0.1:{server.port}"

    yield run
    for s in servers:
        s.stop()


@pytest.mark.parametrize(
    "method, path, token, code",
    [
        ("GET", "/metrics", "allowed", 200),
        ("GET", "/metrics", "not-allowed", 403),
        ("GET", "/metrics", None, 403),  # anonymous, as kube-scheduler: forbidden, not 401
        ("GET", "/metrics", "unknown", 401),
        ("GET", "/healthz", None, 200),
        ("GET", "/livez", None, 200),
        ("GET", "/readyz", None, 200),
        ("GET", "/debug/decisions", None, 403),
        ("GET", "/debug/decisions", "allowed", 200),
        ("GET", "/nowhere", "allowed", 403),  # authorization comes before routing, as upstream
        # the feedback intake keeps its own token: delegated auth does not apply to it
        ("POST", "/v1/feedback", "app", 202),
        ("POST", "/v1/feedback", "allowed", 401),
    ],
)
def test_requests(
    api: ApiServerDouble, start: Callable[..., str], method: str, path: str, token: str | None, code: int
) -> None:
    api.add_user("allowed", "system:serviceaccount:monitoring:prometheus")
    api.add_user("not-allowed", "system:serviceaccount:default:default")
    api.grant("system:serviceaccount:monitoring:prometheus", "/metrics")
    api.grant("system:serviceaccount:monitoring:prometheus", "/debug/decisions")
    url = start()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    resp = httpx.request(
        method, url + path, headers=headers, verify=False, content=b"{}" if method == "POST" else None
    )
    assert resp.status_code == code, resp.text
    if code == 403 and token is None:
        assert resp.json()["message"] == f'forbidden: User "system:anonymous" cannot get path "{path}"'


def test_plain_http_is_not_served(start: Callable[..., str]) -> None:
    url = start().replace("https://", "http://")
    with pytest.raises(httpx.HTTPError):
        httpx.get(url + "/healthz", timeout=5).raise_for_status()


def test_the_default_certificate_is_self_signed_for_localhost(start: Callable[..., str]) -> None:
    url = start()
    host, port = url.removeprefix("https://").split(":")
    pem = ssl.get_server_certificate((host, int(port)))
    ctx = ssl.create_default_context(cadata=pem)
    with httpx.Client(verify=ctx) as client:
        assert client.get(f"https://localhost:{port}/healthz").text == "ok"


def test_a_supplied_certificate_is_served(tmp_path: Path, start: Callable[..., str]) -> None:
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1")
    leaf.cert_chain_pems[0].write_to_path(tmp_path / "tls.crt")
    leaf.private_key_pem.write_to_path(tmp_path / "tls.key")
    url = start(
        serving(tls_cert_file=str(tmp_path / "tls.crt"), tls_private_key_file=str(tmp_path / "tls.key"))
    )
    trust = ssl.create_default_context()
    ca.configure_trust(trust)
    with httpx.Client(verify=trust) as client:
        assert client.get(url + "/healthz").text == "ok"


def test_the_cert_dir_pair_is_generated_once_and_reused(tmp_path: Path, start: Callable[..., str]) -> None:
    start(serving(cert_dir=str(tmp_path / "certs")))
    first = (tmp_path / "certs" / "harmonic-scheduler.crt").read_bytes()
    assert (tmp_path / "certs" / "harmonic-scheduler.key").stat().st_mode & 0o077 == 0
    start(serving(cert_dir=str(tmp_path / "certs")))
    assert (tmp_path / "certs" / "harmonic-scheduler.crt").read_bytes() == first


@pytest.mark.parametrize("source", ["file", "lookup"])
def test_a_client_certificate_signed_by_the_client_ca_authenticates(
    api: ApiServerDouble, tmp_path: Path, start: Callable[..., str], source: str
) -> None:
    client_ca = trustme.CA()
    api.grant("alice", "/metrics")
    if source == "file":
        client_ca.cert_pem.write_to_path(tmp_path / "client-ca.crt")
        settings = serving(client_ca_file=str(tmp_path / "client-ca.crt"))
    else:  # kube-scheduler's default: the API server's client CA from its ConfigMap
        api.create(
            "configmaps",
            {
                "metadata": {"name": "extension-apiserver-authentication", "namespace": "kube-system"},
                "data": {"client-ca-file": client_ca.cert_pem.bytes().decode()},
            },
        )
        settings = serving(authentication_skip_lookup=False)
    url = start(settings)
    alice = client_ca.issue_cert("alice.example", common_name="alice", organization_name="ops")
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    alice.configure_cert(ctx)
    with httpx.Client(verify=ctx) as client:
        assert client.get(url + "/metrics").status_code == 200
    assert httpx.get(url + "/metrics", verify=False).status_code == 403  # without it: anonymous


def test_reviews_are_cached(api: ApiServerDouble, start: Callable[..., str]) -> None:
    api.add_user("allowed", "prometheus")
    api.grant("prometheus", "/metrics")
    url = start()
    api.reset_stats()
    for _ in range(3):
        assert (
            httpx.get(url + "/metrics", headers={"Authorization": "Bearer allowed"}, verify=False).status_code
            == 200
        )
    requests = api.stats().requests
    assert (requests["create tokenreviews"], requests["create subjectaccessreviews"]) == (1, 1)


@pytest.mark.parametrize(
    "argv, expected",
    [
        (
            [],
            {
                "port": 10259,
                "bind_address": "0.0.0.0",
                "token_ttl": 10.0,
                "allow_ttl": 10.0,
                "deny_ttl": 10.0,
            },
        ),
        (["--secure-port=1234"], {"port": 1234}),
        # the old flag stays as a deprecated alias
        (["--metrics-port=4321"], {"port": 4321}),
        (["--metrics-port=0"], {"port": 0}),
        (["--authentication-token-webhook-cache-ttl=1m30s"], {"token_ttl": 90.0}),
        (["--authorization-webhook-cache-unauthorized-ttl=250ms"], {"deny_ttl": 0.25}),
        (
            ["--authorization-always-allow-paths=/healthz,/metrics"],
            {"always_allow_paths": ("/healthz", "/metrics")},
        ),
        (["--authorization-always-allow-paths="], {"always_allow_paths": ()}),
        (["--authentication-skip-lookup"], {"authentication_skip_lookup": True}),
        (
            ["--authentication-tolerate-lookup-failure=false"],
            {"authentication_tolerate_lookup_failure": False},
        ),
    ],
)
def test_flags(argv: list[str], expected: dict[str, object]) -> None:
    import click
    from click.testing import CliRunner

    from harmonic.cluster.secureport import secure_serving_options

    got: list[SecureServing] = []

    @click.command()
    @secure_serving_options
    def cmd(secure_serving: SecureServing) -> None:
        got.append(secure_serving)

    result = CliRunner().invoke(cmd, argv)
    assert result.exit_code == 0, result.output
    assert {k: getattr(got[0], k) for k in expected} == expected


def test_a_duration_that_is_not_one_is_refused() -> None:
    import click
    from click.testing import CliRunner

    from harmonic.cluster.secureport import secure_serving_options

    @click.command()
    @secure_serving_options
    def cmd(secure_serving: SecureServing) -> None:
        pass

    result = CliRunner().invoke(cmd, ["--authentication-token-webhook-cache-ttl=ten"])
    assert result.exit_code == 2 and "is not a duration" in result.output


@pytest.mark.parametrize(
    "tolerate, fault, outcome",
    [
        (True, None, "started"),  # no ConfigMap (404): no client CA, silently, as upstream
        (False, None, "started"),
        (True, 403, "started"),  # forbidden: a warning, and no client certificates
        (False, 403, "refused"),
    ],
)
def test_client_ca_lookup(
    api: ApiServerDouble, transport: Transport, tolerate: bool, fault: int | None, outcome: str
) -> None:
    if fault is not None:
        api.inject(status=fault, path="extension-apiserver-authentication")
    settings = serving(authentication_skip_lookup=False, authentication_tolerate_lookup_failure=tolerate)
    try:
        settings.build(transport)
        got = "started"
    except ValueError:
        got = "refused"
    assert got == outcome
