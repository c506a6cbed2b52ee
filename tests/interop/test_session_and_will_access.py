"""Sessions and wills under a password file and an ACL, through paho at 3.1.1 and 5.0 (issue 15
"Nobody gets in where they don't belong", findings 4 and 5; docs/security.md).

The attack campaign ran a broker with a password file, ``allow_anonymous = false`` and an ACL:
bob connected with alice's persistent client id and received her queued QoS 1 message
(finding 4), and alice's will was published on ``bob/will`` (finding 5). Mosquitto does
neither. The broker core's side of both, with more cases, is tests/broker/test_broker_principals.py.

MQTT 3.1.1 3.1.4 item 2 and MQTT 5 3.1.4 [MQTT-3.1.4-2]: the Server performs authentication
and authorization checks on CONNECT and, when they fail, refuses it - CONNACK return code 5
"not authorized" (3.1.1 3.2.2.3) / reason 0x87 (MQTT 5 3.2.2.2) - and closes the connection;
these checks come before item 3, the take-over of a client id already connected.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness import BrokerProcess
from relaymq.auth.passwords import PasswordFile
from relaymq.cli.main import main as relaymq_main

from .clients import WAIT, PahoClient, paho_client, unique

pytestmark = pytest.mark.interop

USERS = ("alice", "bob", "ops", "watcher")

ACL = """\
user alice
topic readwrite alice/#

user bob
topic readwrite bob/#

# may write $SYS/... as far as the ACL goes: $SYS is still the broker's
user ops
topic readwrite $SYS/#

user watcher
topic read #
"""


def start_broker(broker_factory, tmp_path: Path, **pubsub: object) -> BrokerProcess:
    """relaymq with a password file (every user's password is ``<user>-pw``), no anonymous
    access, and the ACL above; ``pubsub`` goes to the [pubsub] section."""
    passwords = PasswordFile()
    for user in USERS:
        passwords.set(user, f"{user}-pw", cost=4)
    passwords.save(str(tmp_path / "passwords"))
    (tmp_path / "acl").write_text(ACL)
    config: dict = {"access": {"allow_anonymous": False, "password_file": str(tmp_path / "passwords"),
                               "acl_file": str(tmp_path / "acl")}}
    if pubsub:
        config["pubsub"] = pubsub
    return broker_factory(kind="relaymq", store="memory", config=config)


def client(broker: BrokerProcess, level: str, user: str, client_id: str | None = None,
           **options: object) -> PahoClient:
    return PahoClient(broker, level, client_id, username=user, password=f"{user}-pw", **options)  # type: ignore[arg-type]


def log_text(broker: BrokerProcess) -> str:
    return broker.log_path.read_text(errors="replace")


def wait_for_log(broker: BrokerProcess, text: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while text not in log_text(broker):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{text!r} not in the broker log within {timeout:g}s\n{broker.describe_log()}")
        time.sleep(0.1)


@pytest.mark.parametrize("level", ["v311", "v5"])
def test_bob_cannot_take_alices_session_and_alice_still_can(broker_factory, tmp_path: Path,
                                                            level: str) -> None:
    """Issue 15 finding 4: bob, with his own valid password, connected with alice's persistent
    client id and was handed her queued QoS 1 message. MQTT 3.1.4 item 2 / [MQTT-3.1.4-2]: his
    CONNECT is refused "Not authorized" (3.1.1 return code 5, MQTT 5 0x87) - while alice is
    connected (she is not disconnected) and while she is away (her message stays queued,
    clean session or not). Alice herself resumes the session and gets the message, and still
    takes it over from a second connection while the first is connected (3.1.4 item 3)."""
    broker = start_broker(broker_factory, tmp_path)
    cid = unique("alice")
    alice = client(broker, level, "alice", cid, clean=False).connect()
    feeder = paho_client(broker, "v311", username="alice", password="alice-pw")
    try:
        alice.subscribe("alice/inbox", 1)
        assert client(broker, level, "bob", cid, clean=False).refused() == "Not authorized"
        feeder.publish("alice/inbox", b"while connected", 1)
        assert [m.payload for m in alice.inbox.wait_for(1)] == [b"while connected"]
        assert not alice.disconnected.is_set()
        alice.disconnect()

        feeder.publish("alice/inbox", b"queued for alice", 1)
        for clean in (False, True):
            bob = client(broker, level, "bob", cid, clean=clean)
            assert bob.refused() == "Not authorized"
            assert bob.inbox.messages == []

        back = client(broker, level, "alice", cid, clean=False).connect()
        assert back.session_present
        assert [m.payload for m in back.inbox.wait_for(1)] == [b"queued for alice"]
        back.client.reconnect_delay_set(60, 60)  # taken over below: paho must not come back
        again = client(broker, level, "alice", cid, clean=False).connect()
        assert again.session_present
        assert back.disconnected.wait(WAIT), "the first connection was not taken over"
        back.client.loop_stop()
        again.disconnect()
    finally:
        feeder.disconnect()


@pytest.mark.parametrize("level", ["v311", "v5"])
def test_will_on_a_forbidden_topic_is_refused_at_connect(broker_factory, tmp_path: Path,
                                                         level: str) -> None:
    """Issue 15 finding 5: alice's will on bob/will was accepted and published to bob. MQTT
    3.1.4 item 2 / [MQTT-3.1.4-2]: a will topic the ACL does not let the user write is refused
    at CONNECT "Not authorized" (5 / 0x87), and so is a will on $SYS/ even for a user whose
    ACL grants $SYS/# (4.7.2: $-topics are the Server's; the rule handle_publish applies to
    PUBLISH). Nothing reaches bob; a will on alice's own topic is accepted and published
    when her connection drops."""
    broker = start_broker(broker_factory, tmp_path)
    bob = client(broker, level, "bob").connect()
    watcher = client(broker, "v311", "watcher").connect()
    try:
        bob.subscribe("bob/#", 1)
        watcher.subscribe("alice/#", 1)
        forged = client(broker, level, "alice", will=("bob/will", b"from alice", 1, False))
        assert forged.refused() == "Not authorized"
        sys_will = client(broker, level, "ops", will=("$SYS/broker/version", b"fake", 0, True))
        assert sys_will.refused() == "Not authorized"
        own = client(broker, level, "alice", will=("alice/will", b"alice gone", 1, False)).connect()
        own.drop()
        assert [(m.topic, m.payload) for m in watcher.inbox.wait_for(1)] == [("alice/will", b"alice gone")]
        assert bob.inbox.wait_quiet(1.0) == []
    finally:
        bob.disconnect()
        watcher.disconnect()


@pytest.mark.parametrize("level", ["v311", "v5"])
def test_will_forbidden_by_the_time_it_fires_is_not_published(broker_factory, tmp_path: Path,
                                                              level: str) -> None:
    """Issue 15 finding 5, publication time: the ACL may change after the CONNECT. With
    ``[pubsub] topic_security`` the topic ACLs apply to MQTT clients and a running broker
    takes in a changed ACL file (``relaymq acl set``) within five seconds. Alice's will on
    alice/status, allowed at CONNECT, is denied to her meanwhile: when her connection drops
    (3.1.1 [MQTT-3.1.2-8] / MQTT 5 3.1.2.5: the will is published then) it is not published,
    and the broker says so in its log."""
    broker = start_broker(broker_factory, tmp_path, topic_security=True)
    watcher = client(broker, "v311", "watcher").connect()
    alice = client(broker, level, "alice", will=("alice/status", b"offline", 1, False)).connect()
    try:
        watcher.subscribe("alice/#", 1)
        alice.publish("alice/status", b"online", 1)
        assert [m.payload for m in watcher.inbox.wait_for(1)] == [b"online"]
        assert relaymq_main(["acl", "set", "alice/status", "alice", "--publish", "deny",
                             "--data-dir", str(broker.data_dir)]) == 0
        wait_for_log(broker, "topic ACLs reloaded")
        alice.drop()
        deadline = time.monotonic() + WAIT  # until the broker decided, either way
        while "not published" not in log_text(broker) and len(watcher.inbox.messages) < 2:
            assert time.monotonic() < deadline, f"no decision on the will\n{broker.describe_log()}"
            time.sleep(0.1)
        assert [m.payload for m in watcher.inbox.wait_quiet(0.5)] == [b"online"]
        assert "will of client" in log_text(broker)
    finally:
        watcher.disconnect()
