"""``harmonic run``'s secure-serving, authentication and authorization flags, named and defaulted as
kube-scheduler's (k8s.io/apiserver's SecureServingOptions, DelegatingAuthenticationOptions and
DelegatingAuthorizationOptions with kube-scheduler's overrides), and what they build: the TLS
context and the ``DelegatedAuth`` of the port that serves /metrics, /debug/* and the health checks.

One deliberate difference: without ``--authentication-kubeconfig``/``--authorization-kubeconfig``
kube-scheduler uses the in-cluster service account, and outside a cluster reviews nothing (every
token 401, every path but the always-allowed 403). Harmonic uses the connection it schedules with
(in a cluster that is the same service account), so a scheduler run from a laptop is still
scrapeable with a token its cluster accepts.
"""

from __future__ import annotations

import functools
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from harmonic.cluster.delegated import ALWAYS_ALLOW_PATHS, DelegatedAuth
from harmonic.cluster.servingcert import server_context

if TYPE_CHECKING:
    from harmonic.cluster.transport import Transport

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_PORT = 10259
#: Where kube-apiserver publishes the CA of the client certificates it trusts (``client-ca-file``).
AUTH_CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    from harmonic.framework.config import parse_duration

    try:
        return parse_duration(value)
    except ValueError as e:
        raise click.BadParameter(str(e), param=param) from None


@dataclass(frozen=True)
class SecureServing:
    bind_address: str
    port: int
    cert_dir: str | None
    tls_cert_file: str | None
    tls_private_key_file: str | None
    client_ca_file: str | None
    authentication_kubeconfig: str | None
    authorization_kubeconfig: str | None
    authentication_skip_lookup: bool
    authentication_tolerate_lookup_failure: bool
    always_allow_paths: tuple[str, ...]
    token_ttl: float
    allow_ttl: float
    deny_ttl: float

    def build(self, transport: Transport) -> tuple[ssl.SSLContext, DelegatedAuth]:
        """The TLS context and the authenticator/authorizer; raises ``ValueError`` naming the problem."""
        authn = self._transport(self.authentication_kubeconfig, transport)
        authz = self._transport(self.authorization_kubeconfig, transport)
        client_ca = self._client_ca(authn)
        tls = server_context(self.tls_cert_file, self.tls_private_key_file, self.cert_dir, client_ca)

        def post(t: Transport) -> Callable[[str, dict[str, Any]], Any]:
            return lambda path, body: t.request("POST", path, body=body)

        auth = DelegatedAuth(
            post(authn),
            post(authz),
            always_allow_paths=self.always_allow_paths,
            token_ttl=self.token_ttl,
            allow_ttl=self.allow_ttl,
            deny_ttl=self.deny_ttl,
        )
        return tls, auth

    @staticmethod
    def _transport(kubeconfig: str | None, default: Transport) -> Transport:
        from harmonic.cluster.transport import ClientConfigError, Transport, load_client

        # upstream raises the reviewers' limits well above the scheduler's, so scrapes are not
        # throttled behind scheduling traffic (nor the other way round)
        if kubeconfig is None:
            return default.with_limits(200, 400, f"{default.user_agent} delegated-auth")
        try:
            return Transport(load_client(kubeconfig), qps=200, burst=400, user_agent=default.user_agent)
        except ClientConfigError as e:
            raise ValueError(f"{kubeconfig}: {e}") from None

    def _client_ca(self, authn: Transport) -> str | None:
        """``--client-ca-file``'s PEM, plus, unless ``--authentication-skip-lookup``, the API server's
        client CA from kube-system/extension-apiserver-authentication (a failed lookup is tolerated
        with a warning unless ``--authentication-tolerate-lookup-failure=false``)."""
        pems: list[str] = []
        if self.client_ca_file:
            try:
                with open(self.client_ca_file) as f:
                    pems.append(f.read())
            except OSError as e:
                raise ValueError(f"--client-ca-file {self.client_ca_file}: {e.strerror}") from None
        if not self.authentication_skip_lookup:
            from harmonic.cluster.transport import ApiStatusError

            try:
                data = (authn.request("GET", AUTH_CONFIGMAP) or {}).get("data") or {}
                if data.get("client-ca-file"):
                    pems.append(data["client-ca-file"])
            except ApiStatusError as e:
                if e.code != 404:  # upstream: no ConfigMap is no client CA, silently
                    self._lookup_failed(e)
            except Exception as e:
                self._lookup_failed(e)
        return "\n".join(pems) or None

    def _lookup_failed(self, e: Exception) -> None:
        if not self.authentication_tolerate_lookup_failure:
            raise ValueError(f"cannot read {AUTH_CONFIGMAP}: {e}") from None
        log.warning(
            "cannot read the API server's client CA; client certificates are not accepted "
            "(--authentication-skip-lookup silences this)",
            extra={"configmap": "kube-system/extension-apiserver-authentication", "error": str(e)},
        )


def secure_serving_options(f: F) -> F:
    """The flags, gathered into one ``secure_serving: SecureServing`` argument of the command."""
    options = [
        click.option(
            "--bind-address",
            default="0.0.0.0",
            show_default=True,
            help="The IP address on which to listen for the --secure-port port.",
        ),
        click.option(
            "--secure-port",
            type=click.IntRange(0, 65535),
            default=DEFAULT_PORT,
            show_default=True,
            help="HTTPS port of /metrics, /debug/*, /healthz, /livez and /readyz (0: none).",
        ),
        click.option(
            "--metrics-port",
            type=click.IntRange(0, 65535),
            default=None,
            hidden=True,
            help="Deprecated: use --secure-port.",
        ),
        click.option(
            "--cert-dir",
            type=click.Path(file_okay=False),
            default=None,
            help="Directory of the serving certificate (harmonic-scheduler.crt/.key, generated self-signed "
            "if absent). Ignored with --tls-cert-file. Default: a self-signed pair kept in memory.",
        ),
        click.option(
            "--tls-cert-file",
            type=click.Path(dir_okay=False),
            default=None,
            help="Serving certificate (PEM).",
        ),
        click.option(
            "--tls-private-key-file",
            type=click.Path(dir_okay=False),
            default=None,
            help="Its private key (PEM).",
        ),
        click.option(
            "--client-ca-file",
            type=click.Path(dir_okay=False),
            default=None,
            help="CA bundle: a client certificate it signed authenticates as its CN (groups: O).",
        ),
        click.option(
            "--authentication-kubeconfig",
            type=click.Path(dir_okay=False),
            default=None,
            help="kubeconfig allowed to create tokenreviews.authentication.k8s.io (default: the scheduler's "
            "own connection).",
        ),
        click.option(
            "--authorization-kubeconfig",
            type=click.Path(dir_okay=False),
            default=None,
            help="kubeconfig allowed to create subjectaccessreviews.authorization.k8s.io (default: the "
            "scheduler's own connection).",
        ),
        click.option(
            "--authentication-skip-lookup",
            is_flag=True,
            default=False,
            help="Do not read the API server's client CA from kube-system/extension-apiserver-authentication.",
        ),
        click.option(
            "--authentication-tolerate-lookup-failure",
            type=bool,
            default=True,
            show_default=True,
            help="Start even if that lookup fails (client certificates are then not accepted).",
        ),
        click.option(
            "--authorization-always-allow-paths",
            default=",".join(ALWAYS_ALLOW_PATHS),
            show_default=True,
            help="Comma-separated paths served without authorization (a trailing * is a prefix).",
        ),
        click.option(
            "--authentication-token-webhook-cache-ttl",
            default="10s",
            show_default=True,
            callback=_duration,
            help="How long TokenReview answers are cached.",
        ),
        click.option(
            "--authorization-webhook-cache-authorized-ttl",
            default="10s",
            show_default=True,
            callback=_duration,
            help="How long allowing SubjectAccessReview answers are cached.",
        ),
        click.option(
            "--authorization-webhook-cache-unauthorized-ttl",
            default="10s",
            show_default=True,
            callback=_duration,
            help="How long denying SubjectAccessReview answers are cached.",
        ),
    ]

    @functools.wraps(f)
    def wrapper(*args: Any, **kw: Any) -> Any:
        port = kw.pop("secure_port")
        deprecated_port = kw.pop("metrics_port")
        if deprecated_port is not None:
            log.warning("--metrics-port is deprecated: use --secure-port")
            port = deprecated_port
        kw["secure_serving"] = SecureServing(
            bind_address=kw.pop("bind_address"),
            port=port,
            cert_dir=kw.pop("cert_dir"),
            tls_cert_file=kw.pop("tls_cert_file"),
            tls_private_key_file=kw.pop("tls_private_key_file"),
            client_ca_file=kw.pop("client_ca_file"),
            authentication_kubeconfig=kw.pop("authentication_kubeconfig"),
            authorization_kubeconfig=kw.pop("authorization_kubeconfig"),
            authentication_skip_lookup=kw.pop("authentication_skip_lookup"),
            authentication_tolerate_lookup_failure=kw.pop("authentication_tolerate_lookup_failure"),
            always_allow_paths=tuple(p for p in kw.pop("authorization_always_allow_paths").split(",") if p),
            token_ttl=kw.pop("authentication_token_webhook_cache_ttl"),
            allow_ttl=kw.pop("authorization_webhook_cache_authorized_ttl"),
            deny_ttl=kw.pop("authorization_webhook_cache_unauthorized_ttl"),
        )
        return f(*args, **kw)

    out: Any = wrapper
    for option in reversed(options):
        out = option(out)
    return out
