"""A kubeconfig file checked against client-go's ``clientcmd/api/v1`` types before the ``kubernetes``
client's loader reads it (that loader answers many malformed files with a TypeError or KeyError).

As client-go's decoder: unknown fields are ignored, a field of the wrong JSON type is an error, the
``*-data`` fields are base64. Errors name the file and the field path (``users[0].user.token``).
"""

from __future__ import annotations

import base64
import binascii
import os
import shutil
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from harmonic import safeyaml


class KubeconfigError(ValueError):
    """A kubeconfig that client-go would not load; the message names the file and field."""


def _base64(v: str) -> str:
    try:
        base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("is not base64 data") from None
    return v


Base64 = Annotated[StrictStr, AfterValidator(_base64)]


class _K(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class Cluster(_K):
    server: StrictStr = ""
    tls_server_name: StrictStr | None = Field(default=None, alias="tls-server-name")
    insecure_skip_tls_verify: StrictBool | None = Field(default=None, alias="insecure-skip-tls-verify")
    certificate_authority: StrictStr | None = Field(default=None, alias="certificate-authority")
    certificate_authority_data: Base64 | None = Field(default=None, alias="certificate-authority-data")
    proxy_url: StrictStr | None = Field(default=None, alias="proxy-url")
    disable_compression: StrictBool | None = Field(default=None, alias="disable-compression")


class AuthProvider(_K):
    name: StrictStr
    config: dict[StrictStr, StrictStr] | None = None


class ExecEnv(_K):
    name: StrictStr
    value: StrictStr


class ExecConfig(_K):
    command: StrictStr
    args: list[StrictStr] | None = None
    env: list[ExecEnv] | None = None
    api_version: StrictStr | None = Field(default=None, alias="apiVersion")
    install_hint: StrictStr | None = Field(default=None, alias="installHint")
    provide_cluster_info: StrictBool | None = Field(default=None, alias="provideClusterInfo")
    interactive_mode: StrictStr | None = Field(default=None, alias="interactiveMode")


class AuthInfo(_K):
    client_certificate: StrictStr | None = Field(default=None, alias="client-certificate")
    client_certificate_data: Base64 | None = Field(default=None, alias="client-certificate-data")
    client_key: StrictStr | None = Field(default=None, alias="client-key")
    client_key_data: Base64 | None = Field(default=None, alias="client-key-data")
    token: StrictStr | None = None
    token_file: StrictStr | None = Field(default=None, alias="tokenFile")
    impersonate: StrictStr | None = Field(default=None, alias="as")
    impersonate_groups: list[StrictStr] | None = Field(default=None, alias="as-groups")
    username: StrictStr | None = None
    password: StrictStr | None = None
    auth_provider: AuthProvider | None = Field(default=None, alias="auth-provider")
    exec: ExecConfig | None = None


class Context(_K):
    cluster: StrictStr = ""
    user: StrictStr = Field(default="", alias="user")
    namespace: StrictStr | None = None


class NamedCluster(_K):
    name: StrictStr
    cluster: Cluster


class NamedAuthInfo(_K):
    name: StrictStr
    user: AuthInfo


class NamedContext(_K):
    name: StrictStr
    context: Context


class Kubeconfig(_K):
    api_version: StrictStr | None = Field(default=None, alias="apiVersion")
    kind: StrictStr | None = None
    clusters: list[NamedCluster] | None = None
    users: list[NamedAuthInfo] | None = None
    contexts: list[NamedContext] | None = None
    current_context: StrictStr | None = Field(default=None, alias="current-context")


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def check_kubeconfig(path: str | Path, context: str | None = None, selected: bool = True) -> Kubeconfig:
    """Read and check ``path``; when it alone is ``selected`` (not merged with others), ``context``
    (else current-context) must name a context whose cluster and user exist, as clientcmd requires.
    Raises ``KubeconfigError``."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise KubeconfigError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    try:
        data: Any = safeyaml.load(text)
    except yaml.YAMLError as e:
        raise KubeconfigError(f"{path}: not valid YAML: {safeyaml.problem(e)}") from None
    if not isinstance(data, dict):
        raise KubeconfigError(f"{path}: expected a kubeconfig object (apiVersion: v1, kind: Config)")
    try:
        cfg = Kubeconfig.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        more = f" (and {len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
        msg = str(first["msg"]).removeprefix("Value error, ")
        raise KubeconfigError(f"{path}: {_path(first['loc'])}: {msg}{more}") from None
    name = context or cfg.current_context
    if not selected:
        return cfg
    if not name:
        raise KubeconfigError(f"{path}: current-context: no context is selected (set it or pass --context)")
    contexts = {c.name: c.context for c in cfg.contexts or ()}
    if name not in contexts:
        raise KubeconfigError(f"{path}: contexts: no context named {name!r}")
    ctx = contexts[name]
    clusters = {c.name: c.cluster for c in cfg.clusters or ()}
    if ctx.cluster not in clusters:
        raise KubeconfigError(f"{path}: contexts[{name!r}].cluster: no cluster named {ctx.cluster!r}")
    if not clusters[ctx.cluster].server:
        raise KubeconfigError(f"{path}: clusters[{ctx.cluster!r}].server: is required")
    users = {u.name: u.user for u in cfg.users or ()}
    if ctx.user and ctx.user not in users:
        raise KubeconfigError(f"{path}: contexts[{name!r}].user: no user named {ctx.user!r}")
    user = users.get(ctx.user)
    if user is not None and user.exec is not None:
        _check_exec_plugin(path, ctx.user, user.exec)
    return cfg


def _check_exec_plugin(path: str | Path, user: str, plugin: ExecConfig) -> None:
    """The user's exec credential plugin is installed. The Python client, when it cannot run it, logs
    one line and sends requests without credentials (401 on every one); client-go fails each request
    with "exec: executable ... not found" and the plugin's installHint. Found at start instead, with
    the same words. A command with a slash is relative to the kubeconfig's folder, as client-go
    resolves it; one without is looked up on $PATH."""
    command = plugin.command
    if os.sep in command and not os.path.isabs(command):
        command = os.path.join(os.path.dirname(os.path.abspath(path)), command)
    if shutil.which(command) is not None:
        return
    hint = f" {' '.join(plugin.install_hint.split())}" if plugin.install_hint else ""
    raise KubeconfigError(
        f"{path}: users[{user!r}].exec.command: exec: executable {plugin.command} not found: a client-go "
        f"credential plugin that is not installed.{hint}"
    )
