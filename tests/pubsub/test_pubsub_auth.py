"""pubsub.md item 39 (seed 003 l.3161-3272: the seed's sample authentication exchanges; the
product uses TLS, username/password with salted hashes and client certificates): the user a
client authenticates as, by password or by certificate, is the principal of the topic ACLs
(item 38) for MQTT clients, over a TLS listener of a real broker process."""

from __future__ import annotations

import pytest

from harness import BrokerProcess
from interop.certs import make_certificates
from interop.clients import PahoClient, unique
from relaymq.auth.passwords import PasswordFile

ACL = {
    "topic_security": True,
    "acl": [
        {"topic": "", "principal": "PublicGroup", "publish": "deny", "subscribe": "deny", "persistent": "deny"},
        {"topic": "dev/device17", "principal": "device17", "publish": "allow", "subscribe": "allow"},
        {"topic": "ops", "principal": "alice", "publish": "allow", "subscribe": "allow"},
    ],
}


@pytest.fixture
def tls_broker(tmp_path):
    certs = make_certificates(tmp_path / "certs")
    passwords = PasswordFile()
    for user in ("alice", "bob"):
        passwords.set(user, "same-secret", cost=4)
    passwords.save(str(tmp_path / "passwords"))
    config = {
        "access": {"allow_anonymous": False, "password_file": str(tmp_path / "passwords")},
        "listener": [{"name": "tls", "host": "127.0.0.1", "tls_cert": str(certs.server_cert),
                      "tls_key": str(certs.server_key), "tls_ca": str(certs.ca)}],
        "pubsub": ACL,
    }
    broker = BrokerProcess(config=config, workdir=tmp_path, store="memory").start()
    yield broker, certs, tmp_path / "passwords"
    broker.cleanup()


def test_item_39_password_and_certificate_users_are_the_topic_acl_principals(tls_broker):
    """pubsub.md items 38-39: passwords are stored as salted hashes (the same password twice
    gives two different hashes); alice logs in with her password over TLS and gets her topics
    only; a wrong password is refused; a client certificate's common name (device17) is the
    user the topic ACLs see."""
    broker, certs, password_file = tls_broker
    hashes = dict(line.split(":", 1) for line in password_file.read_text().split())
    assert hashes["alice"] != hashes["bob"] and "same-secret" not in password_file.read_text()
    assert PahoClient(broker, "v5", unique("x"), tls=certs.server_only(), username="alice",
                      password="wrong").refused() in ("Not authorized", "Bad user name or password")
    alice = PahoClient(broker, "v5", unique("alice"), tls=certs.server_only(), username="alice",
                       password="same-secret").connect()
    device = PahoClient(broker, "v5", unique("d17"), tls=certs.client("device17")).connect()
    try:
        assert alice.subscribe("ops/#", 1) == [1]
        assert alice.subscribe("dev/device17/#", 1) == [0x87]
        assert device.subscribe("dev/device17/#", 1) == [1]
        assert device.subscribe("ops/#", 1) == [0x87]
        assert device.publish("dev/device17/temp", b"21.5", 1) == 0
        assert device.publish("ops/alarm", b"spoofed", 1) == 0x87
        assert alice.publish("ops/alarm", b"real", 1) == 0
        assert [(m.topic, m.payload) for m in device.inbox.wait_for(1)] == [("dev/device17/temp", b"21.5")]
        assert [(m.topic, m.payload) for m in alice.inbox.wait_for(1)] == [("ops/alarm", b"real")]
    finally:
        alice.disconnect()
        device.disconnect()
