"""Certificates and kubeconfigs for a throwaway control plane (trustme's CA; no openssl processes).

kube-apiserver authenticates a client certificate as user CN in groups O, so one CA gives the admin
(``system:masters``), kube-scheduler and kube-controller-manager their identities; RBAC's bootstrap
roles do the rest. Service-account tokens are signed with a separate RSA key.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import trustme

#: Who gets a client certificate: name -> (CN, O). The names are those of the kubeconfig files.
CLIENTS = {
    "admin": ("harmonic-test-admin", "system:masters"),
    "kube-scheduler": ("system:kube-scheduler", None),
    "kube-controller-manager": ("system:kube-controller-manager", None),
}


@dataclass(frozen=True)
class Pki:
    """Paths of the PEM files in one folder."""

    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / "ca.crt"

    @property
    def serving(self) -> tuple[Path, Path]:
        return self.folder / "apiserver.crt", self.folder / "apiserver.key"

    @property
    def sa_key(self) -> Path:
        return self.folder / "sa.key"

    def client(self, name: str) -> tuple[Path, Path]:
        return self.folder / f"{name}.crt", self.folder / f"{name}.key"


def make_pki(folder: Path) -> Pki:
    """A CA, kube-apiserver's serving certificate for loopback, a client certificate per ``CLIENTS``
    entry and the service-account signing key, written to ``folder`` (mode 0600 for keys)."""
    # Imported here: trustme is a test dependency, and harmonic.testing is importable without it.
    import trustme
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    folder.mkdir(parents=True, exist_ok=True)
    pki = Pki(folder)
    ca = trustme.CA(organization_name="harmonic-test")
    ca.cert_pem.write_to_path(str(pki.ca))
    serving = ca.issue_cert(
        "127.0.0.1",
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        common_name="kube-apiserver",
    )
    _write(pki.serving, serving)
    for name, (cn, org) in CLIENTS.items():
        # One SAN entry: Go refuses a certificate whose (critical) SAN extension names nothing.
        leaf = ca.issue_cert(f"{name}.client.harmonic.test", common_name=cn, organization_name=org)
        _write(pki.client(name), leaf)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pki.sa_key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    pki.sa_key.chmod(0o600)
    return pki


def _write(paths: tuple[Path, Path], leaf: trustme.LeafCert) -> None:
    cert, key = paths
    cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    key.write_bytes(leaf.private_key_pem.bytes())
    key.chmod(0o600)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig(path: Path, server: str, ca: Path, user: dict[str, str]) -> Path:
    """Write a one-context kubeconfig for ``server`` (CA embedded) with the ``user`` credentials."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {"server": server, "certificate-authority-data": _b64(ca.read_bytes())},
            }
        ],
        "users": [{"name": "user", "user": user}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "user"}}],
        "current-context": "local",
    }
    path.write_text(json.dumps(doc, indent=1))
    path.chmod(0o600)
    return path


def client_kubeconfig(path: Path, server: str, pki: Pki, name: str) -> Path:
    """A kubeconfig authenticating with ``name``'s client certificate (embedded)."""
    cert, key = pki.client(name)
    user = {"client-certificate-data": _b64(cert.read_bytes()), "client-key-data": _b64(key.read_bytes())}
    return kubeconfig(path, server, pki.ca, user)
