"""A certificate authority of a test's own, and a real TLS server on loopback.

The http mount verifies an https front door's certificate against the site's name, which it also
sends as SNI; these build what it verifies against: an authority, certificates it signs for
chosen names, and a static server behind TLS that records the names and Host headers it saw.
"""

from __future__ import annotations

import datetime
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tmsite.demo.static_site import StaticHandler, server


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


_CA_KEY_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=True,
    crl_sign=True,
    encipher_only=False,
    decipher_only=False,
)


@dataclass
class Authority:
    """A self-signed certificate authority; ``cert_file`` is what a client trusts."""

    directory: Path
    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )

    def __post_init__(self) -> None:
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name("tmsite test authority"))
            .issuer_name(_name("tmsite test authority"))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_CA_KEY_USAGE, critical=True)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )
        self.cert_file = self.directory / "authority.pem"
        self.cert_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, *names: str) -> tuple[Path, Path]:
        """A server certificate for ``names`` (its SAN): the certificate and key files."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(names[0]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(
                x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False
            )
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                critical=False,
            )
            .sign(self.key, hashes.SHA256())
        )
        stem = self.directory / names[0]
        cert_file, key_file = stem.with_suffix(".crt"), stem.with_suffix(".key")
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(_key_pem(key))
        return cert_file, key_file


@dataclass
class Seen:
    """What a TLS server saw: the SNI names of the handshakes, the Host of the requests."""

    server_names: list[str | None] = field(default_factory=list)
    hosts: list[str | None] = field(default_factory=list)


@contextmanager
def tls_static_server(directory: Path, cert: Path, key: Path) -> Iterator[tuple[str, Seen]]:
    """A static server for ``directory`` behind TLS on a free loopback port: its front door
    (``https://127.0.0.1:<port>``) and what it sees."""
    seen = Seen()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    def note_name(_sock: ssl.SSLObject, name: str | None, _ctx: ssl.SSLContext) -> None:
        seen.server_names.append(name)

    context.sni_callback = note_name

    class Recording(StaticHandler):
        def parse_request(self) -> bool:
            parsed = super().parse_request()
            if parsed:
                seen.hosts.append(self.headers.get("Host"))
            return parsed

    httpd = server(directory)
    httpd.RequestHandlerClass = type("Handler", (Recording,), {"root": directory.resolve()})
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()
