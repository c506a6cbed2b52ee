"""TLS with client certificates through paho: ``require_certificate``, the certificate's common
name as the user name, and no way for a certificate to claim another user.

Spec: mqtt.md item 3 (the protocol has no security of its own; the product adds TLS and
authentication, seed 000 l.685); issue 2 "Listeners and access" (TLS with optional client
certificates, a password file, an ACL file).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import BrokerProcess
from relaymq.auth.passwords import PasswordFile

from .certs import Certificates, make_certificates
from .clients import PahoClient, unique

pytestmark = pytest.mark.interop

ACL = """\
user device17
topic readwrite dev/device17/#

user admin
topic readwrite #
"""


@pytest.fixture
def certs(tmp_path: Path) -> Certificates:
    return make_certificates(tmp_path / "certs")


@pytest.fixture
def cert_broker(broker_factory, certs: Certificates, tmp_path: Path) -> BrokerProcess:
    """One TLS listener that requires a client certificate signed by the test CA; a password
    file with the administrator; an ACL that tells the users apart."""
    passwords = PasswordFile()
    passwords.set("admin", "admin-secret", cost=4)
    passwords.save(str(tmp_path / "passwords"))
    (tmp_path / "acl").write_text(ACL)
    return broker_factory(store="memory", config={
        "access": {"allow_anonymous": False, "password_file": str(tmp_path / "passwords"),
                   "acl_file": str(tmp_path / "acl"), "administrators": ["admin"]},
        "listener": [{"name": "tls", "host": "127.0.0.1", "tls_cert": str(certs.server_cert),
                      "tls_key": str(certs.server_key), "tls_ca": str(certs.ca),
                      "require_certificate": True}],
    })


@pytest.mark.parametrize("level", ["v311", "v5"])
def test_certificate_common_name_is_the_user(cert_broker: BrokerProcess, certs: Certificates,
                                             level: str) -> None:
    """A client with a verified certificate and no user name is the certificate's common name:
    the ACL grants it that user's topics and refuses the others (0x80 / 0x87)."""
    client = PahoClient(cert_broker, level, unique("d17"), tls=certs.client("device17")).connect()
    try:
        assert client.subscribe("dev/device17/#", 1) == [1]
        assert client.subscribe("other/#", 1) == [0x80 if level == "v311" else 0x87]
        client.publish("dev/device17/t", b"21.5", 1)
        [got] = client.inbox.wait_for(1)
        assert (got.topic, got.payload) == ("dev/device17/t", b"21.5")
    finally:
        client.disconnect()


@pytest.mark.parametrize("level", ["v311", "v5"])
def test_certificate_cannot_claim_another_user_without_its_password(
        cert_broker: BrokerProcess, certs: Certificates, level: str) -> None:
    """Audit finding (issue 2, P1): a certificate for device17 plus ``-u admin`` and no password
    was taken as the administrator. It is refused with CONNACK "not authorized"; the same name as
    the certificate's is accepted."""
    wrong = PahoClient(cert_broker, level, unique("d17"), tls=certs.client("device17"), username="admin")
    assert wrong.refused() == "Not authorized"
    bad_password = PahoClient(cert_broker, level, unique("d17"), tls=certs.client("device17"),
                              username="admin", password="guess")
    assert bad_password.refused() == "Not authorized"
    same = PahoClient(cert_broker, level, unique("d17"), tls=certs.client("device17"),
                      username="device17").connect()
    same.disconnect()


def test_another_user_with_its_password_is_that_user(cert_broker: BrokerProcess,
                                                      certs: Certificates) -> None:
    """A user name other than the certificate's is accepted when its password checks, and the
    client is then that user (the administrator's ACL section lets it subscribe anywhere)."""
    admin = PahoClient(cert_broker, "v5", unique("adm"), tls=certs.client("device17"),
                       username="admin", password="admin-secret").connect()
    try:
        assert admin.subscribe("other/#", 1) == [1]
    finally:
        admin.disconnect()


def test_require_certificate_refuses_a_client_without_one(cert_broker: BrokerProcess,
                                                          certs: Certificates) -> None:
    """``require_certificate = true``: the TLS handshake fails without a client certificate, so
    no CONNACK ever comes."""
    client = PahoClient(cert_broker, "v311", unique("nocert"), tls=certs.server_only())
    with pytest.raises((OSError, TimeoutError)):
        client.connect(timeout=3)
    client.client.loop_stop()
