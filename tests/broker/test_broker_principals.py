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


def test_will_on_a_topic_the_acl_refuses_is_refused_at_connect(tmp_path):
    """Issue 15 finding 5: alice's will on bob/will was accepted and published to bob. A will
    is a publication by its client: MQTT 3.1.4 item 2 / [MQTT-3.1.4-2] (authorization checks
    on CONNECT) refuse a will topic the ACL does not let the user write, CONNACK 0x87 (5.0) /
    5 (3.1.1) / 2 (MQIsdp); nothing is published when the refused connection closes. The
    same will on her own topic is accepted."""
    for level in (3, 4, 5):
        broker = make_broker(passwords=passwords(), acl=acl(tmp_path), allow_anonymous=False)
        w = watcher(broker)
        alice, ack = connect(broker, level, "alice-dev", "alice", will=p.Will("bob/will", b"x", 1))
        assert ack.reason_code == NOT_AUTHORIZED[level] and alice.link.closed
        assert "alice-dev" not in broker.sessions
        alice.drop()
        ok, ack = connect(broker, level, "alice-dev", "alice", will=p.Will("alice/will", b"bye", 1))
        assert ack.reason_code == 0
        ok.drop()  # a socket failure: the will goes out at every level (mqtt.md item 25)
        assert [(m.topic, m.payload) for m in w.publishes()] == [("alice/will", b"bye")]


def test_will_on_sys_is_refused_at_connect():
    """Issue 15 finding 5, $SYS: clients may not publish to $SYS/ (handle_publish,
    reserved_for_broker; MQTT 3.1.1/5 4.7.2: $-topics are the Server's), and neither may their
    wills - even with no ACL at all and for administrators. CONNACK 0x87 / 5."""
    broker = make_broker(administrators=("admin",), sys_interval=10)
    broker.tick()
    version = broker.retained.get("$SYS/broker/version").payload
    for level, user in ((5, None), (4, None), (5, "admin")):
        c, ack = connect(broker, level, f"sys{level}{user}", user,
                         will=p.Will("$SYS/broker/version", b"fake", 0, True))
        assert ack.reason_code == NOT_AUTHORIZED[level] and c.link.closed
    stream, ack = connect(broker, 5, "stream", None, will=p.Will("$SYS/STREAM/s1", b"ok"))
    assert ack.reason_code == 0  # stream topics are left to the ACLs, as for PUBLISH
    assert broker.retained.get("$SYS/broker/version").payload == version


def test_will_no_longer_allowed_when_it_fires_is_not_published(tmp_path, caplog):
    """Issue 15 finding 5, publication time: the ACL may change between CONNECT and the will
    (the [pubsub] topic ACLs reload while the broker runs; a test swaps broker.acl). MQTT 5
    3.1.2.5 ([MQTT-3.1.2-8]: the will is published when the connection closes or its delay
    ends) with 3.1.4 item 2: a will that the ACL no longer allows is not published - on a
    dropped connection, after the MQTT 5 Will Delay Interval, and when its session ends
    first - and each is logged."""
    broker = make_broker(passwords=passwords(), acl=acl(tmp_path), allow_anonymous=False)
    w = watcher(broker)
    now_it, _ = connect(broker, 4, "now", "alice", will=p.Will("alice/now", b"1"))
    later, _ = connect(broker, 5, "later", "alice",
                       will=p.Will("alice/later", b"2", properties={"will_delay_interval": 30}))
    ending = TestClient(broker, 5)
    assert ending.connect("ending", clean=True, properties={"session_expiry_interval": 10},
                          username="alice", password=b"alice-pw",
                          will=p.Will("alice/ending", b"3", properties={"will_delay_interval": 60})
                          ).reason_code == 0
    broker.acl = acl(tmp_path, ACL.replace("topic readwrite alice/#", "topic read alice/#"))
    with caplog.at_level("INFO", logger="relaymq.broker"):
        now_it.drop()
        later.drop()
        ending.drop()
        broker.clock.advance(31)  # the delayed will is due
        broker.tick()
        broker.clock.advance(10)  # the session of "ending" expires before its will delay
        broker.tick()
    assert "ending" not in broker.sessions and broker.wills.pending == {}
    assert w.publishes() == []
    refused = [r.getMessage() for r in caplog.records
               if r.name == "relaymq.broker" and "not published" in r.getMessage()]
    assert len(refused) == 3, refused


def test_stored_will_checked_against_the_acl_after_a_restart(tmp_path):
    """Issue 15 finding 5, publication time across a restart: a delayed will kept with its
    persistent session (MQTT 5 3.1.3.2.2) is checked against the ACL of the broker that
    publishes it, with the user stored in the session; it is dropped from the store."""
    path = str(tmp_path / "b.db")
    broker, store = sqlite_broker(path, passwords=passwords(), acl=acl(tmp_path))
    c, ack = connect(broker, 5, "dev", "alice",
                     will=p.Will("alice/will", b"x", 1, False, {"will_delay_interval": 5}))
    assert ack.reason_code == 0
    c.drop()
    store.close()
    narrower = acl(tmp_path, ACL.replace("topic readwrite alice/#", "topic read alice/#"))
    broker2, store2 = sqlite_broker(path, passwords=passwords(), acl=narrower)
    assert set(broker2.wills.pending) == {"dev"}
    w = watcher(broker2)
    broker2.clock.advance(6)
    broker2.tick()
    assert w.publishes() == [] and broker2.wills.pending == {}
    store2.flush()
    assert all(r.will_msg_id is None for r in store2.load().sessions.values())
    store2.close()


def test_the_will_of_a_connection_never_accepted_is_not_published():
    """Issue 15 finding 5, found on the way: a client that sent CONNECT with a will and a user
    name, then closed the socket while its password was being checked, had its will published
    - unauthenticated, as nobody. MQTT 3.1.1 [MQTT-3.1.2-8] / MQTT 5 3.1.2.5: the will is
    stored only "if the Connect request is accepted"."""
    pw = passwords()
    broker = make_broker(passwords=pw, allow_anonymous=False)
    w = watcher(broker)
    pending = []
    broker.authenticator = lambda user, password, peer, done: pending.append(done)
    c = TestClient(broker)
    c.send(p.Connect("MQTT", 4, True, 60, "guess", p.Will("alice/status", b"forged"), "alice", b"wrong"))
    c.drop()
    pending[0](False)
    assert w.publishes() == []


def test_a_telemetry_will_carries_its_own_device_user():
    """Issue 15 finding 5, knock-on: a telemetry endpoint (flows/scada.py) notes who publishes
    from the ACL's ``can_publish`` call right before the message is made; the will check now
    calls it too, so the will message is made right after its check. Each device's will reaches
    the flow as that device's (flows-http.md item 3: MQMD UserIdentifier), not as the last
    device whose will was checked on the same topic, nor as nobody."""
    from types import SimpleNamespace

    from relaymq.clock import ManualClock
    from relaymq.flows.scada import _Access, _ScadaBroker
    from relaymq.store.memory import MemoryStore

    from .driver import make_config

    endpoint = SimpleNamespace(broker=None, main_broker=None)
    broker = _ScadaBroker(make_config(), MemoryStore(), ManualClock(), acl=_Access(endpoint))
    endpoint.broker = broker
    senders: list[tuple[str, str]] = []
    broker.publication_taps.append(
        lambda m: senders.append((m.topic, broker.origins.pop(m.msg_id, ("", True))[0])))
    first, _ = connect(broker, 4, "dev-a", "meter-a", clean=True, will=p.Will("meters/lost", b"a"))
    second, _ = connect(broker, 4, "dev-b", "meter-b", clean=True, will=p.Will("meters/lost", b"b"))
    second.drop()
    first.drop()
    assert senders == [("meters/lost", "meter-b"), ("meters/lost", "meter-a")]
