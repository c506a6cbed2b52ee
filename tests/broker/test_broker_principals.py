"""Sessions belong to the user who made them; wills are authorised like publications (issue 15
"Nobody gets in where they don't belong", findings 4 and 5), in the broker core with the byte
driver. The same behaviour through paho is in tests/interop/test_session_and_will_access.py.

MQTT 3.1.1 3.1.4 item 2 and MQTT 5 3.1.4 [MQTT-3.1.4-2]: the Server performs authentication
and authorization checks on CONNECT and refuses it with CONNACK 0x05 / 0x87 (3.2.2.3, 3.2.2.2)
when they fail - before item 3, the take-over of a connected client id.
"""

from __future__ import annotations

from relaymq.auth.acl import Acl
from relaymq.auth.passwords import PasswordFile
from relaymq.mqtt import packets as p

from .driver import TestClient, make_broker, sqlite_broker

ACL = """\
topic readwrite public/#

user alice
topic readwrite alice/#

user bob
topic readwrite bob/#

user watcher
topic read #
"""

#: The refusal "not authorized" per protocol level: MQTT 5 0x87, 3.1.1 return code 5, and
#: MQIsdp v3 2 (it knows only 0-3: reason_codes.connack_code_for_level, seed 000 l.1111-1144).
NOT_AUTHORIZED = {5: 0x87, 4: 5, 3: 2}


def passwords() -> PasswordFile:
    pw = PasswordFile()
    for user in ("alice", "bob", "watcher"):
        pw.set(user, f"{user}-pw", cost=4)
    return pw


def acl(tmp_path, text: str = ACL) -> Acl:
    path = tmp_path / "acl"
    path.write_text(text)
    return Acl.load(str(path))


def connect(broker, level: int, client_id: str, user: str | None, clean: bool = False,
            will: p.Will | None = None) -> tuple[TestClient, p.Connack]:
    client = TestClient(broker, level)
    props = {"session_expiry_interval": 3600} if level == 5 and not clean else {}
    ack = client.connect(client_id, clean=clean, will=will, properties=props, username=user,
                         password=f"{user}-pw".encode() if user else None)
    return client, ack


def watcher(broker, topic_filter: str = "#") -> TestClient:
    w, ack = connect(broker, 4, "watcher", "watcher", clean=True)
    assert ack.reason_code == 0
    w.subscribe(topic_filter, qos=1)
    return w


def test_another_user_is_refused_a_session_and_its_queued_message(tmp_path):
    """Issue 15 finding 4: bob connected with alice's persistent client id and was handed her
    session with its queued QoS 1 message. MQTT 3.1.4 item 2 / [MQTT-3.1.4-2] (authorization
    checks before the session is taken over): bob's CONNECT is refused with "not authorized"
    at every level (clean or not, alice connected or not), alice's connection stays open,
    and alice - the owner - still gets her session and its message."""
    for level in (3, 4, 5):
        broker = make_broker(passwords=passwords(), acl=acl(tmp_path), allow_anonymous=False)
        alice, ack = connect(broker, level, "alice-dev", "alice")
        assert ack.reason_code == 0
        alice.subscribe("alice/inbox", qos=1)
        for clean in (False, True):  # while alice is connected: she must not be kicked off
            bob, ack = connect(broker, level, "alice-dev", "bob", clean=clean)
            assert ack.reason_code == NOT_AUTHORIZED[level] and bob.link.closed
            assert not alice.link.closed and broker.sessions["alice-dev"].connection is alice.conn
        alice.send(p.Disconnect())
        feeder, _ = connect(broker, 4, "feeder", "alice", clean=True)
        feeder.publish("alice/inbox", b"for alice only", qos=1, packet_id=5)
        for clean in (False, True):  # disconnected: neither handed over nor discarded
            bob, ack = connect(broker, level, "alice-dev", "bob", clean=clean)
            assert ack.reason_code == NOT_AUTHORIZED[level] and bob.link.closed
            assert bob.publishes() == []
        assert broker.sessions["alice-dev"].username == "alice"
        back, ack = connect(broker, level, "alice-dev", "alice")
        assert ack.reason_code == 0 and (ack.session_present or level == 3)
        assert [m.payload for m in back.publishes()] == [b"for alice only"]


def test_anonymous_and_authenticated_sessions_are_different_principals(tmp_path):
    """Issue 15 finding 4, anonymous side: with a password file and anonymous access allowed,
    an anonymous client may not take an authenticated user's session, nor a user an anonymous
    one (MQTT 3.1.4 item 2 / [MQTT-3.1.4-2]); anonymous clients are one principal among
    themselves, and a user still takes over their own connected session (MQTT 3.1.4 item 3,
    [MQTT-3.1.4-3] in 5.0: the old connection gets DISCONNECT 0x8E)."""
    broker = make_broker(passwords=passwords(), allow_anonymous=True)
    alice, _ = connect(broker, 5, "owned", "alice")
    _, ack = connect(broker, 5, "owned", None)
    assert ack.reason_code == 0x87 and not alice.link.closed
    nobody, ack = connect(broker, 4, "anon-dev", None)
    assert ack.reason_code == 0
    grab, ack = connect(broker, 4, "anon-dev", "alice")
    assert ack.reason_code == 5 and not nobody.link.closed
    other_anon, ack = connect(broker, 4, "anon-dev", None)
    assert ack.reason_code == 0 and ack.session_present and nobody.link.closed
    again, ack = connect(broker, 5, "owned", "alice")  # her own session, still connected
    assert ack.reason_code == 0 and ack.session_present
    [taken] = alice.received()
    assert isinstance(taken, p.Disconnect) and taken.reason_code == 0x8E and alice.link.closed


def test_an_expired_session_belongs_to_nobody(tmp_path):
    """Issue 15 finding 4, edge: a session past its expiry interval (MQTT 5 3.1.2.11.2) is
    gone even if the periodic tick has not removed it yet, so another user may use the client
    id - and gets a new, empty session."""
    broker = make_broker(passwords=passwords())
    alice = TestClient(broker, 5)
    alice.connect("dev", clean=False, properties={"session_expiry_interval": 10},
                  username="alice", password=b"alice-pw")
    alice.subscribe("alice/x", qos=1)
    alice.send(p.Disconnect())
    broker.clock.advance(11)
    _, ack = connect(broker, 5, "dev", "bob")
    assert ack.reason_code == 0 and not ack.session_present
    assert broker.sessions["dev"].username == "bob" and broker.sessions["dev"].subscriptions == {}


def test_without_a_password_file_user_names_do_not_own_sessions():
    """Issue 15 finding 4, the documented exception (docs/security.md): without a password
    file (and without a client certificate required on every listener) a user name is an
    unverified claim, so it cannot tell principals apart: take-over works as before."""
    broker = make_broker()
    alice, _ = connect(broker, 4, "dev", "alice")
    bob, ack = connect(broker, 4, "dev", "bob")
    assert ack.reason_code == 0 and ack.session_present and alice.link.closed
    assert broker.sessions["dev"].username == "bob"
