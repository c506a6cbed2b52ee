"""Throw-away certificates made with the openssl command line: a CA, a server certificate for
127.0.0.1/localhost and client certificates with a chosen common name (the user name a broker
with ``require_certificate`` takes from them)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

_EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@dataclass(frozen=True)
class Certificates:
    directory: Path
    ca: Path
    server_cert: Path
    server_key: Path

    def client(self, common_name: str) -> dict[str, str]:
        """A client certificate signed by the CA for ``common_name``: paho ``tls_set`` keywords."""
        key = self.directory / f"client-{common_name}.key"
        cert = self.directory / f"client-{common_name}.pem"
        if not cert.exists():
            csr = self.directory / f"client-{common_name}.csr"
            _openssl("req", *_EC, "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={common_name}")
            _openssl("x509", "-req", "-in", str(csr), "-CA", str(self.ca), "-CAkey",
                     str(self.directory / "ca.key"), "-CAcreateserial", "-out", str(cert), "-days", "2",
                     "-extfile", str(self.directory / "client.ext"))
        return {"ca_certs": str(self.ca), "certfile": str(cert), "keyfile": str(key)}

    def server_only(self) -> dict[str, str]:
        """paho ``tls_set`` keywords for a client without a certificate of its own."""
        return {"ca_certs": str(self.ca)}


def make_certificates(directory: Path) -> Certificates:
    """A CA and a server certificate valid for 127.0.0.1 and localhost (skips without openssl)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = directory / "ca.pem", directory / "ca.key"
    key, cert, csr = directory / "server.key", directory / "server.pem", directory / "server.csr"
    # X.509 v3 with the extensions a strict verifier wants (Python >= 3.13 sets
    # VERIFY_X509_STRICT: key usage on the CA, an authority key identifier on the leaves).
    leaf = ("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
            "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
    (directory / "san.ext").write_text(leaf + "extendedKeyUsage=serverAuth\n"
                                       "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    (directory / "client.ext").write_text(leaf + "extendedKeyUsage=clientAuth\n")
    _openssl("req", "-x509", *_EC, "-keyout", str(ca_key), "-out", str(ca), "-subj", "/CN=relaymq test CA",
             "-days", "2", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    _openssl("req", *_EC, "-keyout", str(key), "-out", str(csr), "-subj", "/CN=localhost")
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
             "-out", str(cert), "-days", "2", "-extfile", str(directory / "san.ext"))
    return Certificates(directory, ca, cert, key)
