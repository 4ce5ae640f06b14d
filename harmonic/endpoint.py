"""How the commands that read a running scheduler's port (``harmonic ui --url``, ``harmonic model
URL``) reach it: the port is HTTPS with a self-signed certificate by default and needs a bearer token
the cluster accepts (as kube-scheduler's), so they take kubectl's ``--certificate-authority`` and
``--insecure-skip-tls-verify`` and a ``--url-token-file``."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Endpoint:
    token: str | None
    verify: ssl.SSLContext | bool

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


def endpoint_options(f: F) -> F:
    """``--url-token-file``, ``--certificate-authority``, ``--insecure-skip-tls-verify``, gathered into
    one ``endpoint: Endpoint`` argument."""
    import functools

    @functools.wraps(f)
    def wrapper(*args: Any, **kw: Any) -> Any:
        kw["endpoint"] = _endpoint(
            kw.pop("url_token_file"), kw.pop("certificate_authority"), kw.pop("insecure_skip_tls_verify")
        )
        return f(*args, **kw)

    out: Any = click.option(
        "--insecure-skip-tls-verify",
        is_flag=True,
        help="Do not verify the URL's certificate (the scheduler's default one is self-signed).",
    )(wrapper)
    out = click.option(
        "--certificate-authority",
        type=click.Path(exists=True, dir_okay=False),
        default=None,
        help="CA bundle that signed the URL's serving certificate.",
    )(out)
    out = click.option(
        "--url-token-file",
        type=click.Path(exists=True, dir_okay=False),
        default=None,
        help="Bearer token for the URL: a token the cluster accepts, allowed to get the path (a "
        "`harmonic run`), or an extender's --token-file.",
    )(out)
    return out


def _endpoint(token_file: str | None, ca: str | None, insecure: bool) -> Endpoint:
    token = None
    if token_file is not None:
        try:
            token = Path(token_file).read_text().strip() or None
        except (OSError, UnicodeDecodeError) as e:
            raise click.BadParameter(f"{token_file}: cannot read: {e}") from None
        if token is None:
            raise click.BadParameter(f"{token_file}: the token file is empty")
    verify: ssl.SSLContext | bool = not insecure
    if ca is not None:
        try:
            verify = ssl.create_default_context(cafile=ca)
        except (OSError, ssl.SSLError) as e:
            raise click.BadParameter(f"--certificate-authority {ca}: {e}") from None
    return Endpoint(token, verify)
