"""Who may use the AMQP listener: SASL PLAIN against the broker's password file (the users
MQTT and REST check), ANONYMOUS only when allowed, queue authorities (setmqaut style) and the
topic ACL, for AMQP as for the other entrances. Clients: python-qpid-proton.

Spec: issue 20 ("SASL PLAIN/ANONYMOUS against the same users as MQTT and REST"; "respect queue
authorities and topic ACLs"); issue 15 (the one authority model for every entrance).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from proton import ConnectionException, Message
from proton.utils import BlockingConnection, LinkDetached, SendException

from harness import BrokerProcess

from .broker import amqp_broker, url

WAIT = 15.0
ACL = """\
user alice
topic readwrite allowed/#
"""


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, int]]:
    from relaymq.auth.passwords import PasswordFile

    tmp: Path = tmp_path_factory.mktemp("amqp-security")
    passwords = PasswordFile()
    passwords.set("alice", "alicepw", cost=4)
    passwords.set("bob", "bobpw", cost=4)
    passwords.save(str(tmp / "passwd"))
    (tmp / "acl").write_text(ACL)
    (tmp / "authorities.json").write_text(json.dumps({"authorities": [
        {"type": "queue", "profile": "ORDERS", "principal": "alice", "authorities": ["put", "get", "browse"]},
        {"type": "queue", "profile": "ORDERS", "principal": "bob", "authorities": ["put"]}]}))
    extra = {"access": {"allow_anonymous": False, "password_file": str(tmp / "passwd"), "acl_file": str(tmp / "acl"),
                        "authorities_file": str(tmp / "authorities.json")},
             "amqp": {"allow_anonymous": False}}
    with amqp_broker(extra, workdir=tmp / "broker") as started:
        yield started


def test_plain_with_the_right_password_is_served(secured: tuple[BrokerProcess, int]) -> None:
    """SASL PLAIN with a password-file user works end to end (issue 20)."""
    _, port = secured
    conn = BlockingConnection(url(port, "alice", "alicepw"), timeout=WAIT, allowed_mechs="PLAIN",
                              allow_insecure_mechs=True)
    try:
        conn.create_sender("queue://ORDERS").send(Message(body="from alice"))
        receiver = conn.create_receiver("queue://ORDERS")
        assert receiver.receive(timeout=WAIT).body == "from alice"
        receiver.accept()
    finally:
        conn.close()


@pytest.mark.parametrize(("user", "password", "mechs"), [("alice", "wrong", "PLAIN"), ("nobody", "x", "PLAIN"),
                                                          (None, None, "ANONYMOUS")])
def test_wrong_password_and_anonymous_are_refused(secured: tuple[BrokerProcess, int], user: str | None,
                                                  password: str | None, mechs: str) -> None:
    """A wrong password, an unknown user, and ANONYMOUS when not allowed: SASL outcome auth,
    no connection (issue 20)."""
    _, port = secured
    with pytest.raises(ConnectionException):
        conn = BlockingConnection(url(port, user, password), timeout=WAIT, allowed_mechs=mechs,
                                  allow_insecure_mechs=True)
        conn.close()


def test_queue_authorities_apply(secured: tuple[BrokerProcess, int]) -> None:
    """bob holds put on ORDERS but not get: his receiver is refused with
    amqp:unauthorized-access, his sender works (issue 15's authorities, issue 20)."""
    _, port = secured
    conn = BlockingConnection(url(port, "bob", "bobpw"), timeout=WAIT, allowed_mechs="PLAIN",
                              allow_insecure_mechs=True)
    try:
        conn.create_sender("queue://ORDERS").send(Message(body="from bob"))
        with pytest.raises(LinkDetached) as refused:
            conn.create_receiver("queue://ORDERS")
        assert "unauthorized-access" in str(refused.value)
    finally:
        conn.close()
    alice = BlockingConnection(url(port, "alice", "alicepw"), timeout=WAIT, allowed_mechs="PLAIN",
                               allow_insecure_mechs=True)
    try:
        receiver = alice.create_receiver("queue://ORDERS")
        assert receiver.receive(timeout=WAIT).body == "from bob"
        receiver.accept()
    finally:
        alice.close()


def test_topic_acl_applies(secured: tuple[BrokerProcess, int]) -> None:
    """The topic ACL of MQTT clients applies to AMQP topic links: alice may subscribe to and
    publish on allowed/#, a publication elsewhere is rejected (issue 20)."""
    _, port = secured
    conn = BlockingConnection(url(port, "alice", "alicepw"), timeout=WAIT, allowed_mechs="PLAIN",
                              allow_insecure_mechs=True)
    try:
        receiver = conn.create_receiver("topic://allowed/#")
        conn.create_sender("topic://allowed/x").send(Message(body="fine"))
        assert receiver.receive(timeout=WAIT).body == "fine"
        receiver.accept()
        with pytest.raises(SendException):
            conn.create_sender("topic://forbidden/x").send(Message(body="no"))
    finally:
        conn.close()
