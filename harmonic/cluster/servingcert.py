"""The secure port's TLS context, as kube-scheduler builds it (k8s.io/apiserver's
``SecureServingOptions``): ``--tls-cert-file``/``--tls-private-key-file`` when given; else the pair
``<cert-dir>/<pair>.crt|.key``, generated self-signed on first start and reused; with no cert dir, a
self-signed pair generated at start and kept in memory (upstream's default for kube-scheduler). The
self-signed certificate names ``localhost`` and ``127.0.0.1`` and is valid for a year, as upstream's.
A client CA (``--client-ca-file``, or the API server's from the ``extension-apiserver-authentication``
ConfigMap) makes client certificates optional credentials.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
from pathlib import Path

PAIR_NAME = "harmonic-scheduler"


def self_signed(host: str = "localhost", ips: tuple[str, ...] = ("127.0.0.1",)) -> tuple[bytes, bytes]:
    """A self-signed serving certificate and its key (PEM)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{int(now.timestamp())}")])
    sans: list[x509.GeneralName] = [x509.DNSName(host)]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def _load_pem_pair(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """``load_cert_chain`` only reads files: the pair goes through a private temporary directory that
    is removed at once, so the key stays in memory only."""
    with tempfile.TemporaryDirectory(prefix="harmonic-tls-") as d:
        cert_path, key_path = Path(d, "tls.crt"), Path(d, "tls.key")
        cert_path.write_bytes(cert)
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        ctx.load_cert_chain(cert_path, key_path)


def server_context(
    cert_file: str | None,
    key_file: str | None,
    cert_dir: str | None,
    client_ca: str | None = None,
    pair_name: str = PAIR_NAME,
) -> ssl.SSLContext:
    """The serving context; raises ``ValueError`` naming the problem (one of the pair missing, an
    unreadable file). ``client_ca`` is PEM text: client certificates it signed are accepted."""
    if bool(cert_file) != bool(key_file):
        raise ValueError("--tls-cert-file and --tls-private-key-file are given together or not at all")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        if cert_file and key_file:
            ctx.load_cert_chain(cert_file, key_file)
        elif cert_dir:
            crt, key = Path(cert_dir, f"{pair_name}.crt"), Path(cert_dir, f"{pair_name}.key")
            if not (crt.exists() and key.exists()):
                Path(cert_dir).mkdir(parents=True, exist_ok=True)
                cert_pem, key_pem = self_signed()
                crt.write_bytes(cert_pem)
                fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(key_pem)
            ctx.load_cert_chain(crt, key)
        else:
            _load_pem_pair(ctx, *self_signed())
    except (OSError, ssl.SSLError) as e:
        raise ValueError(f"serving certificate: {getattr(e, 'strerror', None) or e}") from None
    if client_ca:
        try:
            ctx.load_verify_locations(cadata=client_ca)
        except ssl.SSLError as e:
            raise ValueError(f"client CA: {e}") from None
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx
