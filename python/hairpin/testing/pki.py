"""Throwaway certificate authorities for TLS tests: a CA, and identities it signs (valid,
expired, or signed by another CA), written as PEM files into a test's own directory.

Keys are EC P-256, which Open vSwitch's OpenSSL, Python's ssl module and rustls all take.
Nothing here is ever committed: every key is made fresh by the test that uses it.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Identity:
    """A private key and its certificate, as PEM files."""

    private_key: Path
    certificate: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


class CertificateAuthority:
    """A self-signed CA whose certificate is `self.certificate`."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.name = name
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(f"{name} CA"))
            .issuer_name(_name(f"{name} CA"))
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - DAY)
            .not_valid_after(now + 30 * DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self._cert = cert
        self.certificate = directory / f"{name}-ca.pem"
        self.certificate.write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, common_name: str, expired: bool = False, ip: str | None = None) -> Identity:
        """A key and a certificate signed by this CA for `common_name`, valid now unless
        `expired` (then its validity ended yesterday), naming the address `ip` if given."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        start, end = (now - 10 * DAY, now - DAY) if expired else (now - DAY, now + 30 * DAY)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [x509.ExtendedKeyUsageOID.SERVER_AUTH, x509.ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if ip is not None:
            names = [x509.IPAddress(ipaddress.ip_address(ip))]
            cert = cert.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = cert.sign(self._key, hashes.SHA256())
        stem = f"{self.name}-{common_name}"
        identity = Identity(self.directory / f"{stem}-key.pem", self.directory / f"{stem}.pem")
        _write_key(key, identity.private_key)
        identity.certificate.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return identity
