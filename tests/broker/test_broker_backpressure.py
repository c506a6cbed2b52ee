"""Backpressure, not loss (issue 14, "Nothing acknowledged is ever lost"): with the default
``overflow = "block"`` a full session holds back the clients that publish to it instead of
dropping what they were acknowledged for; dropping is an opt-in per listener ("drop-new",
"drop-oldest"). docs/configuration.md "When a session is full", src/relaymq/broker/backpressure.py.

Driven in process: a subscriber that does not acknowledge is simply one whose test does not
send PUBACK, and the broker's deferred calls (a held publisher resuming on its own loop turn)
run in ``received()`` (driver.settle)."""

from __future__ import annotations

import logging

from relaymq.broker.backpressure import STALLED_AFTER
from relaymq.broker.sys_tree import stats_values
from relaymq.mqtt import packets as p
from relaymq.mqtt.reason_codes import QUOTA_EXCEEDED
from relaymq.store.sqlite import SQLiteStore

from .driver import Callbacks, TestClient, make_broker


def _publish(client: TestClient, count: int, topic: str = "a", first: int = 0, qos: int = 1) -> list:
    """Send ``count`` PUBLISH packets without waiting; returns what the broker answered."""
    for i in range(first, first + count):
        client.send(p.Publish(topic, f"m{i:03d}".encode(), qos, False, False, i + 1))
    return client.received()


def _acked(packets: list, kind: type = p.Puback) -> list[int]:
    return [x.packet_id for x in packets if isinstance(x, kind)]


def _drain(client: TestClient, expected: int, also: TestClient | None = None) -> tuple[list[bytes], list]:
    """Acknowledge every PUBLISH as it arrives until ``expected`` came or nothing more does;
    returns the payloads and what ``also`` (the publisher) received meanwhile."""
    got: list[bytes] = []
    other: list = []
    while len(got) < expected:
        batch = client.publishes()
        if also is not None:
            other += also.received()
        if not batch:
            break
        for m in batch:
            got.append(m.payload)
            if m.qos:
                client.send(p.Puback(m.packet_id))
    if also is not None:
        other += also.received()
    return got, other


def _stuck_subscriber(broker, client_id: str = "slow", topic: str = "a", level: int = 4, **connect) -> TestClient:
    s = TestClient(broker, level=level)
    s.connect(client_id, **connect)
    s.subscribe(topic, qos=1)
    return s


def test_full_clean_session_holds_the_publisher_back_and_loses_nothing():
    """Issue 14: a clean session whose queue is full (max_queued_messages) holds back the
    publisher: its next QoS 1 publication is neither routed nor acknowledged, nothing is
    dropped; once the subscriber drains below half the limit, the publisher goes on, and every
    message arrives in order with every PUBACK in order (MQTT 3.1.1 4.6)."""
    broker = make_broker(max_queued_messages=4, max_inflight=1)
    s = _stuck_subscriber(broker)
    pub = TestClient(broker)
    pub.connect("fast")
    answered = _publish(pub, 10)
    session = broker.sessions["slow"]
    # 1 in flight, 4 queued and the one that filled the queue; the 7th waits on its connection
    assert (len(session.inflight), len(session.queue)) == (1, 5)
    assert _acked(answered) == [1, 2, 3, 4, 5, 6]
    assert broker.stats.publish_dropped == 0 and broker.stats.publications_held == 1
    assert session.blocking == [pub.conn] and len(pub.conn.held_back.packets) == 3
    values = stats_values(broker)
    assert (values["clients/blocking"], values["clients/held"], values["publish/messages/held"]) == ("1", "1", "1")
    got, answered = _drain(s, 10, also=pub)
    assert got == [f"m{i:03d}".encode() for i in range(10)]
    assert _acked(answered) == [7, 8, 9, 10]
    assert broker.stats.publish_dropped == 0 and session.dropped == 0
    assert not broker.backpressure.blocking and pub.conn.held_back is None


def test_a_held_client_still_handles_the_acknowledgements_of_what_it_receives():
    """Issue 14 (no deadlock): a client that publishes to a topic it subscribes to fills its
    own session and is held back; its PUBACKs for what the broker sent it are still handled,
    so its own session drains and it goes on. Everything arrives, in order."""
    broker = make_broker(max_queued_messages=3, max_inflight=2)
    me = _stuck_subscriber(broker, "loop", "loop")
    packets = _publish(me, 12, topic="loop")
    assert me.conn.held_back is not None and broker.sessions["loop"].blocking == [me.conn]
    got: list[bytes] = []
    acked: list[int] = []
    for _ in range(100):
        packets += me.received()
        acked += _acked(packets)
        batch = [x for x in packets if isinstance(x, p.Publish)]
        if not batch:
            break
        for m in batch:
            got.append(m.payload)
            me.send(p.Puback(m.packet_id))
        packets = []
    assert got == [f"m{i:03d}".encode() for i in range(12)]
    assert acked == list(range(1, 13))
    assert me.conn.held_back is None and broker.stats.publish_dropped == 0


def test_two_clients_that_feed_each_other_both_get_through():
    """Issue 14 (no deadlock): A publishes to B's topic and B to A's; both sessions fill and
    both clients are held back by the other; each still acknowledges what it receives, so
    both drain and every message arrives."""
    broker = make_broker(max_queued_messages=2, max_inflight=1)
    a = _stuck_subscriber(broker, "a", "to-a")
    b = _stuck_subscriber(broker, "b", "to-b")
    pending = {"a": _publish(a, 8, topic="to-b")}
    pending["b"] = _publish(b, 8, topic="to-a")
    assert a.conn.held_back is not None and b.conn.held_back is not None
    got = {"a": [], "b": []}
    for _ in range(100):
        progress = False
        for name, client in (("a", a), ("b", b)):
            packets, pending[name] = pending.get(name, []) + client.received(), []
            for m in [x for x in packets if isinstance(x, p.Publish)]:
                progress = True
                got[name].append(m.payload)
                client.send(p.Puback(m.packet_id))
        if not progress:
            break
    assert got["a"] == got["b"] == [f"m{i:03d}".encode() for i in range(8)]
    assert a.conn.held_back is None and b.conn.held_back is None


def test_acknowledgements_keep_their_order_behind_a_held_publication():
    """MQTT 3.1.1 4.6 with issue 14: the packets a held client sends after the held
    publication wait behind it (QoS 2 PUBLISH, SUBSCRIBE), so their acknowledgements follow
    its PUBACK; QoS 0 is never held (ordering is per topic and QoS) and PINGREQ is answered."""
    broker = make_broker(max_queued_messages=1, max_inflight=1)
    s = _stuck_subscriber(broker)
    other = TestClient(broker)
    other.connect("other")
    other.subscribe("b", qos=0)
    pub = TestClient(broker)
    pub.connect("fast")
    # 1 in flight, 2 queued, 3 finds the queue full (still taken), 4 is held
    assert _acked(_publish(pub, 4)) == [1, 2, 3]
    pub.send(p.Publish("a", b"q2", 2, False, False, 5))
    pub.send(p.Subscribe(6, [p.Subscription("c", 1)]))
    pub.send(p.Publish("b", b"zero", 0))
    pub.send(p.Pingreq())
    answered = pub.received()
    assert [type(x) for x in answered] == [p.Pingresp]
    assert [m.payload for m in other.publishes()] == [b"zero"]
    got, answered = _drain(s, 4, also=pub)
    assert got == [b"m000", b"m001", b"m002", b"m003"]  # q2 is routed at its PUBREL
    answers = [(type(x).__name__, x.packet_id) for x in answered]
    # the held PUBACK first; SUBACK is not ordered with the publish acknowledgements (4.6 is
    # about those), it leaves at the store's commit, here at once
    assert answers[0] == ("Puback", 4) and sorted(answers[1:]) == [("Pubrec", 5), ("Suback", 6)]


def test_a_held_qos2_release_completes_once_the_session_has_room():
    """Issue 14: a QoS 2 message was acknowledged by PUBREC; if its PUBREL finds the session
    full, the release waits (no PUBCOMP, the message kept) and completes once there is room."""
    broker = make_broker(max_queued_messages=1, max_inflight=1)
    s = _stuck_subscriber(broker)
    pub = TestClient(broker)
    pub.connect("fast")
    _publish(pub, 3)  # the session is full
    [rec] = pub.publish("a", b"two", qos=2, packet_id=9)
    assert isinstance(rec, p.Pubrec)
    pub.send(p.Pubrel(9))
    assert pub.received() == []
    assert 9 in broker.sessions["fast"].inbound
    got, answered = _drain(s, 4, also=pub)
    assert got == [b"m000", b"m001", b"m002", b"two"]
    assert _acked(answered, p.Pubcomp) == [9] and not broker.sessions["fast"].inbound


def test_topic_aliases_of_waiting_publications_resolve_in_arrival_order():
    """MQTT 5 3.3.2.3.4 with issue 14: a PUBLISH that waits behind a held one has its topic
    alias resolved when it arrives, so a QoS 0 PUBLISH (handled at once) that maps the alias
    to another topic afterwards does not change where the waiting one goes."""
    broker = make_broker(max_queued_messages=1, max_inflight=1, topic_alias_maximum=5)
    s = _stuck_subscriber(broker)
    other = TestClient(broker)
    other.connect("other")
    other.subscribe("b", qos=0)
    pub = TestClient(broker, level=5)
    pub.connect("fast5")
    _publish(pub, 4)  # the fourth is held
    pub.send(p.Publish("a", b"aliased", 1, False, False, 10, {"topic_alias": 1}))
    pub.send(p.Publish("", b"by alias", 1, False, False, 11, {"topic_alias": 1}))
    pub.send(p.Publish("b", b"remapped", 0, False, False, None, {"topic_alias": 1}))
    assert [m.payload for m in other.publishes()] == [b"remapped"]
    got, answered = _drain(s, 6, also=pub)
    assert got == [b"m000", b"m001", b"m002", b"m003", b"aliased", b"by alias"]
    assert _acked(answered) == [4, 10, 11]


def test_persistent_session_past_max_stored_messages_holds_back_without_disconnecting(tmp_path):
    """Issue 14: a persistent session whose backlog reaches max_stored_messages holds its
    publishers back; its MQTT 5 client is not disconnected (before: dropped, DISCONNECT 0x97)
    and gets everything in order; the store is empty afterwards."""
    store = SQLiteStore(str(tmp_path / "b.db"), notify=Callbacks())
    broker = make_broker(store=store, max_queued_messages=2, max_inflight=1, max_stored_messages=5)
    s = _stuck_subscriber(broker, "stuck", level=5, clean=False, properties={"session_expiry_interval": 3600})
    pub = TestClient(broker)
    pub.connect("fast")
    assert _acked(_publish(pub, 12)) == [1, 2, 3, 4, 5, 6]
    session = broker.sessions["stuck"]
    assert len(session.inflight) + len(session.queue) + len(session.spilled) == 6
    assert not s.link.closed and broker.stats.publish_dropped == 0
    got, answered = _drain(s, 12, also=pub)
    assert got == [f"m{i:03d}".encode() for i in range(12)]
    assert _acked(answered) == list(range(7, 13))
    assert not any(isinstance(x, p.Disconnect) for x in answered)
    store.flush()
    snap = store.load()
    assert snap.deliveries == [] and snap.messages == {}
    store.close()


def test_an_offline_persistent_session_holds_publishers_until_it_comes_back():
    """Issue 14: a persistent session with no client fills up too; publishers wait (they are
    not lied to) until its client reconnects and drains it."""
    broker = make_broker(max_queued_messages=2, max_inflight=1, max_stored_messages=4)
    s = _stuck_subscriber(broker, "away", clean=False)
    s.send(p.Disconnect())
    pub = TestClient(broker)
    pub.connect("fast")
    assert _acked(_publish(pub, 8)) == [1, 2, 3, 4, 5]
    back = TestClient(broker)
    assert back.connect("away", clean=False).session_present
    got, answered = _drain(back, 8, also=pub)
    assert got == [f"m{i:03d}".encode() for i in range(8)]
    assert _acked(answered) == [6, 7, 8]


def test_ending_or_unsubscribing_the_full_session_releases_its_publishers():
    """Issue 14: a held publisher does not wait for a session that no longer wants its
    message: an UNSUBSCRIBE lets it go on, and so does the end of the session."""
    broker = make_broker(max_queued_messages=1, max_inflight=1)
    s = _stuck_subscriber(broker)
    pub = TestClient(broker)
    pub.connect("fast")
    assert _acked(_publish(pub, 4)) == [1, 2, 3]
    s.send(p.Unsubscribe(2, ["a"]))
    assert _acked(pub.received()) == [4]
    s2 = _stuck_subscriber(broker, "slow2")
    assert _acked(_publish(pub, 4, first=4)) == [5, 6, 7]
    s2.drop()  # a clean session ends with its connection
    assert _acked(pub.received()) == [8]
    assert list(broker.backpressure.blocking) == [broker.sessions["slow"]]  # still full, holding nobody
    assert broker.sessions["slow"].blocking == []


def test_a_held_publisher_that_goes_away_is_forgotten():
    """Issue 14: a held client that disconnects leaves nothing behind; what it held was never
    acknowledged (its client resends it after reconnecting)."""
    broker = make_broker(max_queued_messages=1, max_inflight=1)
    s = _stuck_subscriber(broker)
    pub = TestClient(broker)
    pub.connect("fast")
    _publish(pub, 4)
    session = broker.sessions["slow"]
    assert session.blocking == [pub.conn]
    pub.drop()
    assert session.blocking == [] and pub.conn.held_back is None
    got, _ = _drain(s, 4)
    assert got == [b"m000", b"m001", b"m002"]


def test_a_held_subscriber_that_floods_past_max_outbound_buffer_is_disconnected():
    """Issue 14, bounded memory: what a held client sends meanwhile waits only up to
    max_outbound_buffer bytes; past it a client that also subscribes (not reading it could
    close a cycle of held connections) is disconnected (MQTT 5: 0x97), none of it having been
    acknowledged."""
    broker = make_broker(max_queued_messages=1, max_inflight=1, max_outbound_buffer=1024)
    _stuck_subscriber(broker)
    pub = TestClient(broker, level=5)
    pub.connect("flood")
    pub.subscribe("replies", qos=1)
    _publish(pub, 4)
    for i in range(4):
        pub.send(p.Publish("a", b"x" * 400, 1, False, False, 20 + i))
    packets = pub.received()
    assert isinstance(packets[-1], p.Disconnect) and packets[-1].reason_code == QUOTA_EXCEEDED
    assert pub.link.closed and not any(isinstance(x, p.Puback) and x.packet_id >= 4 for x in packets)


def test_a_held_publisher_that_floods_past_max_outbound_buffer_is_read_no_further():
    """Issue 14, "the publisher is slowed, not lied to": a held client that subscribes to
    nothing is not disconnected past max_outbound_buffer (as a 1 MB stream with 100 in flight
    reaches it); the broker stops reading it, TCP holds it back, and once the subscriber drains
    it goes on: every publication delivered once, in order, every PUBACK given."""
    broker = make_broker(max_queued_messages=1, max_inflight=1, max_outbound_buffer=1024)
    s = _stuck_subscriber(broker)
    pub = TestClient(broker, level=5)
    pub.connect("big")
    bodies = [b"%03d" % i + b"x" * 400 for i in range(12)]
    for i, body in enumerate(bodies):
        pub.send(p.Publish("a", body, 1, False, False, i + 1))
    answered = pub.received()
    assert not any(isinstance(x, p.Disconnect) for x in answered) and not pub.link.closed
    assert "held" in pub.conn.read_paused_for and not pub.link.reading
    got, later = _drain(s, len(bodies), also=pub)
    assert got == bodies
    assert _acked(answered + later) == list(range(1, 13))
    assert not pub.conn.read_paused_for and pub.conn.held_back is None
    assert broker.stats.publish_dropped == 0 and broker.stats.overflow_dropped == 0


def test_keep_alive_does_not_expire_while_the_broker_is_not_reading_the_client():
    """mqtt.md item 21 (1.5 x keep alive) with issue 14's held publisher: a client the broker
    stopped reading cannot be heard, its PINGREQs wait in the socket; it is not disconnected
    for that silence, and its keep-alive runs again from the moment reading resumes."""
    broker = make_broker(max_queued_messages=1, max_inflight=1, max_outbound_buffer=1024)
    s = _stuck_subscriber(broker)
    pub = TestClient(broker, level=5)
    pub.connect("quiet", keep_alive=10)
    for i in range(12):
        pub.send(p.Publish("a", b"%03d" % i + b"x" * 400, 1, False, False, i + 1))
    assert "held" in pub.conn.read_paused_for
    broker.clock.advance(60)
    broker.tick()
    assert not pub.link.closed  # six keep-alive periods unread, not expired
    got, _ = _drain(s, 12, also=pub)
    assert len(got) == 12 and not pub.conn.read_paused_for
    broker.clock.advance(14)
    broker.tick()
    assert not pub.link.closed  # 14 s since reading resumed: within 1.5 x 10 s
    broker.clock.advance(2)
    broker.tick()
    assert pub.link.closed  # silent for 16 s of reading: expired as before


def test_publications_from_inside_the_broker_are_taken_up_to_twice_the_limit():
    """Issue 14: a publication no client waits for (a flow, the REST interface) cannot be held
    back; a full session takes it up to twice its limit, then drops and counts it."""
    broker = make_broker(max_queued_messages=3, max_inflight=1)
    _stuck_subscriber(broker)
    for i in range(10):
        broker.publish("a", b"inside %d" % i, qos=1)
    session = broker.sessions["slow"]
    assert (len(session.inflight), len(session.queue)) == (1, 6)
    assert broker.stats.overflow_dropped == 3 == session.dropped


def test_a_stalled_session_is_logged_and_counted(caplog):
    """Issue 14: a subscriber that never reads must not hold publishers forever unseen: after
    STALLED_AFTER seconds its session is logged (WARNING, rate-limited) and counted in $SYS."""
    broker = make_broker(max_queued_messages=1, max_inflight=1)
    _stuck_subscriber(broker)
    pub = TestClient(broker)
    pub.connect("fast")
    _publish(pub, 4)
    with caplog.at_level(logging.WARNING, logger="relaymq.backpressure"):
        broker.tick()
        assert stats_values(broker)["clients/stalled"] == "0"
        broker.clock.advance(STALLED_AFTER + 1)
        broker.tick()
        broker.clock.advance(5)
        broker.tick()  # within the minute: not logged again
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "slow" in warnings[0] and "held 1 publishers back" in warnings[0]
    values = stats_values(broker)
    assert (values["clients/stalled"], values["clients/stalled/total"]) == ("1", "1")


def test_drop_oldest_makes_room_for_the_newest():
    """Issue 14 opt-in: with ``overflow = "drop-oldest"`` a full clean session drops its oldest
    queued messages (not the one in flight) for the new ones, counted; nobody is held back."""
    broker = make_broker(max_queued_messages=3, max_inflight=1, overflow="drop-oldest")
    s = _stuck_subscriber(broker)
    pub = TestClient(broker)
    pub.connect("fast")
    assert _acked(_publish(pub, 10)) == list(range(1, 11))
    got, _ = _drain(s, 10)
    assert got == [b"m000", b"m007", b"m008", b"m009"]
    assert broker.stats.overflow_dropped == 6 == broker.stats.publish_dropped
    assert broker.stats.publications_held == 0


def test_drop_oldest_in_a_persistent_session_drops_from_the_store_too(tmp_path):
    """Issue 14 opt-in: "drop-oldest" on a persistent session at max_stored_messages drops the
    oldest waiting messages, including those kept in the store only, and leaves no rows."""
    store = SQLiteStore(str(tmp_path / "d.db"), notify=Callbacks())
    broker = make_broker(store=store, max_queued_messages=2, max_inflight=1, max_stored_messages=4,
                         overflow="drop-oldest")
    s = _stuck_subscriber(broker, "p", clean=False)
    pub = TestClient(broker)
    pub.connect("fast")
    assert _acked(_publish(pub, 10)) == list(range(1, 11))
    got, _ = _drain(s, 10)
    assert got[0] == b"m000" and got[-3:] == [b"m007", b"m008", b"m009"] and got == sorted(got)
    assert len(got) == 4 and broker.stats.overflow_dropped == 6
    store.flush()
    snap = store.load()
    assert snap.deliveries == [] and snap.messages == {}
    store.close()


def test_the_subscribers_listener_decides(tmp_path):
    """Issue 14: ``overflow`` belongs to the listener the *subscriber* connected through: a
    publisher on a "drop-new" listener is still held back by a subscriber of a "block" one."""
    broker = make_broker(max_queued_messages=1, max_inflight=1)
    broker.backpressure.policies["lossy"] = "drop-new"
    s = _stuck_subscriber(broker)
    pub = TestClient(broker)
    pub.conn.listener = "lossy"
    pub.connect("fast")
    assert _acked(_publish(pub, 4)) == [1, 2, 3]
    lossy = TestClient(broker)
    lossy.conn.listener = "lossy"
    lossy.connect("lossy-sub")
    lossy.subscribe("b", qos=1)
    assert broker.sessions["lossy-sub"].overflow == "drop-new"
    assert _acked(_publish(lossy, 3, topic="b", first=10)) == [11, 12, 13]
    assert broker.sessions["lossy-sub"].dropped == 1
    got, answered = _drain(s, 4, also=pub)
    assert got == [b"m000", b"m001", b"m002", b"m003"] and _acked(answered) == [4]


def test_a_retained_qos0_publication_waits_behind_a_held_one():
    """MQTT 3.1.1 3.3.1.3 with issue 14: a retained QoS 0 PUBLISH sent after a held retained
    QoS 1 one on the same topic waits behind it, so the retained message is the newer one."""
    broker = make_broker(max_queued_messages=1, max_inflight=1)
    s = _stuck_subscriber(broker)
    pub = TestClient(broker)
    pub.connect("fast")
    _publish(pub, 3)
    pub.send(p.Publish("a", b"older", 1, True, False, 4))  # held
    pub.send(p.Publish("a", b"newer", 0, True))
    assert broker.retained.get("a") is None
    got, _ = _drain(s, 5)
    # (live, QoS 0 bypasses the subscriber's QoS 1 queue, as it always does: ordering is per QoS)
    assert sorted(got) == [b"m000", b"m001", b"m002", b"newer", b"older"]
    assert broker.retained.get("a").payload == b"newer"


def test_a_publication_larger_than_max_queued_bytes_is_delivered_not_dropped():
    """Issue 14 with docs/configuration.md max_queued_bytes: a client's QoS 1 publication that
    alone exceeds a clean session's byte limit fills the session (its publisher's next one is
    held back) but is delivered, not dropped after its PUBACK (before: dropped and counted)."""
    broker = make_broker(max_queued_bytes=100, max_inflight=1)
    s = _stuck_subscriber(broker)
    pub = TestClient(broker)
    pub.connect("fast")
    assert _acked(pub.publish("a", b"x" * 300, qos=1, packet_id=1)) == [1]
    assert _acked(pub.publish("a", b"small", qos=1, packet_id=2)) == []  # held: the session is full
    got, answered = _drain(s, 2, also=pub)
    assert got == [b"x" * 300, b"small"] and _acked(answered) == [2]
    assert broker.stats.publish_dropped == 0
