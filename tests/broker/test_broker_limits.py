"""Issue 2, Limits: "max queued messages and bytes per session ... each configurable with a
documented behaviour when reached (count and drop QoS 0, keep QoS 1/2 in the store, disconnect
past a hard limit). A subscriber that stops reading must not make the broker's memory grow
without bound." The behaviour is documented in docs/configuration.md ([limits])."""

from __future__ import annotations

from relaymq.mqtt import packets as p
from relaymq.mqtt.codec import encode
from relaymq.mqtt.reason_codes import QUOTA_EXCEEDED
from relaymq.store.memory import MemoryStore
from relaymq.store.sqlite import SQLiteStore

from .driver import Callbacks, TestClient, make_broker, sqlite_broker, settle


def _publish_many(broker, count: int, topic: str = "a") -> None:
    pub = TestClient(broker)
    pub.connect("publisher")
    for i in range(count):
        pub.publish(topic, f"m{i:03d}".encode(), qos=1, packet_id=i % 65535 + 1)


def _drain(client: TestClient, expected: int) -> list[bytes]:
    """Acknowledge every PUBLISH as it arrives until ``expected`` payloads came, or nothing more."""
    got: list[bytes] = []
    while len(got) < expected:
        batch = client.publishes()
        if not batch:
            break
        for m in batch:
            got.append(m.payload)
            client.send(p.Puback(m.packet_id))
    return got


def test_persistent_session_keeps_overflow_in_the_store_and_delivers_it_in_order(tmp_path):
    """Past max_queued_messages a persistent session's QoS 1 messages stay in the store only
    (memory holds just the queue), none is dropped, and all arrive in publication order.
    Spec: issue 2 Limits ("keep QoS 1/2 in the store"), docs/configuration.md
    max_queued_messages; mqtt.md item 26 (kept until the client reconnects, seed 000
    l.1227-1229)."""
    store = SQLiteStore(str(tmp_path / "s.db"), notify=Callbacks())
    broker = make_broker(store=store, max_queued_messages=3, max_inflight=1)
    s = TestClient(broker)
    s.connect("slow", clean=False)
    s.subscribe("a", qos=1)
    _publish_many(broker, 20)
    session = broker.sessions["slow"]
    assert (len(session.inflight), len(session.queue), len(session.spilled)) == (1, 3, 16)
    assert broker.stats.publish_dropped == 0
    assert _drain(s, 20) == [f"m{i:03d}".encode() for i in range(20)]
    assert not session.spilled and not session.queue and not session.inflight
    store.flush()
    snap = store.load()
    assert snap.deliveries == [] and snap.messages == {}  # acknowledged: nothing left behind
    store.close()


def test_offline_persistent_backlog_survives_restart_and_is_not_all_loaded_into_memory(tmp_path):
    """A backlog larger than max_queued_messages comes back after a restart with only the
    queue's worth in memory, and drains completely in order.
    Spec: mqtt.md item 26 (seed 000 l.1227-1229) and item 6 (stored, l.427/439/743); issue 2
    Limits, docs/configuration.md max_queued_messages."""
    path = str(tmp_path / "r.db")
    store = SQLiteStore(path, notify=Callbacks())
    broker = make_broker(store=store, max_queued_messages=4)
    s = TestClient(broker)
    s.connect("off", clean=False)
    s.subscribe("a", qos=1)
    s.send(p.Disconnect())
    _publish_many(broker, 30)
    store.close()

    broker2, store2 = sqlite_broker(path, max_queued_messages=4, max_inflight=2)
    session = broker2.sessions["off"]
    assert (len(session.queue), len(session.spilled)) == (4, 26)
    back = TestClient(broker2)
    assert back.connect("off", clean=False).session_present
    assert _drain(back, 30) == [f"m{i:03d}".encode() for i in range(30)]
    store2.close()


def test_clean_session_overflow_is_dropped_and_counted_when_the_listener_opts_in():
    """With ``overflow = "drop-new"`` on its listener, a clean session that has no room drops
    QoS 1/2 and counts it, so a stuck subscriber cannot grow the broker's memory.
    Spec: issue 2 Limits ("count and drop"); issue 14 (dropping only as an explicit opt-in),
    docs/configuration.md max_queued_messages and [[listener]] overflow; mqtt.md item 20."""
    broker = make_broker(max_queued_messages=3, max_inflight=1, overflow="drop-new")
    s = TestClient(broker)
    s.connect("clean")
    s.subscribe("a", qos=1)
    _publish_many(broker, 10)
    session = broker.sessions["clean"]
    assert (len(session.inflight), len(session.queue), len(session.spilled)) == (1, 3, 0)
    assert broker.stats.publish_dropped == 6 and session.dropped == 6
    assert broker.stats.overflow_dropped == 6 and broker.stats.publications_held == 0


def test_hard_limit_drops_counts_and_disconnects_a_client_that_does_not_keep_up():
    """With ``overflow = "drop-new"`` (issue 14: an explicit opt-in), past max_stored_messages
    the message is dropped and counted and the connected client is disconnected with reason
    0x97 (quota exceeded) at MQTT 5. docs/configuration.md [[listener]] overflow."""
    broker = make_broker(max_queued_messages=2, max_inflight=1, max_stored_messages=5, overflow="drop-new")
    s = TestClient(broker, level=5)
    s.connect("stuck", clean=False, properties={"session_expiry_interval": 3600})
    s.subscribe("a", qos=1)
    _publish_many(broker, 7)
    session = broker.sessions["stuck"]
    assert len(session.inflight) + len(session.queue) + len(session.spilled) == 5
    assert session.dropped == 2 and broker.stats.publish_dropped == 2
    packets = s.received()
    assert isinstance(packets[-1], p.Disconnect) and packets[-1].reason_code == QUOTA_EXCEEDED
    assert s.link.closed
    assert "stuck" in broker.sessions  # the session and its 5 messages stay for a reconnect


def test_ending_a_session_releases_messages_kept_only_in_the_store(tmp_path):
    """mqtt.md item 20: a clean start discards the old session, including what it kept in the
    store only; no message row is left behind."""
    store = SQLiteStore(str(tmp_path / "e.db"), notify=Callbacks())
    broker = make_broker(store=store, max_queued_messages=2)
    s = TestClient(broker)
    s.connect("gone", clean=False)
    s.subscribe("a", qos=1)
    s.send(p.Disconnect())
    _publish_many(broker, 10)
    assert len(broker.sessions["gone"].spilled) == 8
    again = TestClient(broker)
    assert not again.connect("gone", clean=True).session_present
    store.flush()
    snap = store.load()
    assert snap.deliveries == [] and snap.messages == {}
    assert broker.refs.counts == {}
    store.close()


def test_qos2_packet_id_is_durable_before_the_publish_is_sent(tmp_path):
    """mqtt.md item 9 (QoS 2 exactly once) with spec README decision 4: the packet id given to
    an outbound QoS 2 message of a persistent session is in the store before the PUBLISH leaves,
    so a broker restarted after a crash resends it under the same id, never under a new one."""
    path = str(tmp_path / "q2.db")
    notify = Callbacks()
    store = SQLiteStore(path, notify=notify)
    broker = make_broker(store=store)
    s = TestClient(broker)
    s.connect("exact", clean=False)
    s.subscribe("a", qos=2)
    s.received()
    sent_before = len(s.link.data)
    broker.publish("a", b"once", qos=2)
    assert len(s.link.data) == sent_before  # nothing on the wire while the id is not durable
    [m] = s.publishes()  # received() lets the store commit and runs the durable callbacks
    store.flush()
    [row] = store.load().deliveries
    assert (row.packet_id, m.packet_id, m.dup) == (m.packet_id, row.packet_id, False)
    store.close()


def test_qos2_pubrel_waits_until_released_is_durable(tmp_path):
    """mqtt.md item 9 (QoS 2 exactly once), MQTT 3.1.1 4.3.3 (once the sender has sent PUBREL
    it must not resend the PUBLISH) with spec README decision 4: a restarted broker resends what
    its store says, so the PUBREL for a persistent session's delivery leaves only once its
    RELEASED state is committed. A later PUBREL (here for an unknown id) waits behind it, since
    PUBRELs keep the order of their PUBRECs (4.6). After a restart the session gets the PUBREL,
    not the PUBLISH again."""
    path = str(tmp_path / "rel.db")
    broker, store = sqlite_broker(path)
    s = TestClient(broker)
    s.connect("exact", clean=False)
    s.subscribe("a", qos=2)
    s.received()
    broker.publish("a", b"one", qos=2)
    broker.publish("a", b"two", qos=2)
    one, two = s.publishes()
    sent_before = len(s.link.data)
    s.send(p.Pubrec(one.packet_id))
    s.send(p.Pubrec(999))
    assert len(s.link.data) == sent_before    # nothing on the wire while RELEASED is not durable
    rel_one, rel_unknown = s.received()       # received() lets the store commit, runs callbacks
    assert (rel_one.packet_id, rel_unknown.packet_id) == (one.packet_id, 999)
    assert isinstance(rel_one, p.Pubrel) and isinstance(rel_unknown, p.Pubrel)
    assert not s.conn.acks
    store.close()

    broker2, store2 = sqlite_broker(path)
    back = TestClient(broker2)
    assert back.connect("exact", clean=False).session_present
    again = back.received()   # (a PUBREL and a PUBLISH are not ordered against each other)
    assert len(again) == 2 and {(type(x), x.packet_id) for x in again} == {
        (p.Pubrel, one.packet_id), (p.Publish, two.packet_id)}
    [resent] = [x for x in again if isinstance(x, p.Publish)]
    assert resent.payload == b"two" and resent.dup
    store2.close()


def test_congested_link_pauses_reading_holds_acknowledgements_and_flushes_them_on_resume(tmp_path):
    """Issue 2 limits (a publisher that never reads its PUBACKs must not grow the broker's
    memory): past the link's high-water mark the connection stops reading (what arrives waits
    in the reader, undispatched) and keeps what it must still write in one buffer; when the
    link drains it writes that, and handles what waited, in order."""
    store = SQLiteStore(str(tmp_path / "p.db"), notify=Callbacks())
    broker = make_broker(store=store)
    sub = TestClient(broker)
    sub.connect("sub", clean=False)
    sub.subscribe("a", qos=1)  # a persistent subscriber: each publication is stored
    pub = TestClient(broker)
    pub.connect("pub", clean=False)
    for i in (1, 2):  # their PUBACKs wait for the commit
        pub.send(p.Publish("a", b"x", 1, False, False, i))
    pub.conn.pause_writing()  # what the transport calls past its high-water mark
    assert not pub.link.reading
    pub.send(p.Publish("a", b"x", 1, False, False, 3))  # arrives, but is not handled yet
    written = len(pub.link.data)
    settle(broker)  # the commit: PUBACK 1 and 2 are due, but the link is congested
    assert len(pub.link.data) == written and len(pub.conn.held) == 2 * 4
    assert pub.conn.inbound_unacked == 0 and pub.conn.reader.buffered > 0
    pub.conn.resume_writing()
    assert pub.link.reading
    assert [a.packet_id for a in pub.received()] == [1, 2, 3]
    store.close()


def test_a_flood_of_unacknowledged_publications_pauses_reading():
    """MQIsdp/3.1.1 have no Receive Maximum: with MAX_PENDING_ACKS acknowledgements waiting
    for the store the connection stops reading, and reads again once half of them went out
    (docs/configuration.md max_inflight; issue 2 Limits)."""
    from relaymq.broker.connection import MAX_PENDING_ACKS

    notify = Callbacks()
    broker = make_broker(store=MemoryStore(notify))
    sub = TestClient(broker)
    sub.connect("sub", clean=False)
    sub.subscribe("a", qos=1)
    sub.drop()  # a persistent session offline: every publication is stored for it
    pub = TestClient(broker)
    pub.send(p.Connect("MQTT", 4, True, 60, "flood", None, None, None))
    notify.run()
    data = b"".join(encode(p.Publish("a", b"x", 1, False, False, i % 65535 + 1), 4)
                    for i in range(MAX_PENDING_ACKS + 10))
    pub.send_bytes(data)
    assert pub.conn.acks_waiting == MAX_PENDING_ACKS and not pub.link.reading
    assert pub.conn.reader.buffered > 0  # the last ten wait in the reader
    notify.run()  # the acknowledgements go out: reading resumes, the rest is handled
    notify.run()
    assert pub.link.reading and pub.conn.acks_waiting == 0 and pub.conn.reader.buffered == 0
    acks = [x for x in pub.received() if isinstance(x, p.Puback)]
    assert len(acks) == MAX_PENDING_ACKS + 10


def test_past_four_times_max_outbound_buffer_the_client_is_dropped():
    """docs/configuration.md [limits] max_outbound_buffer: past four times it (what the socket
    holds plus what the broker holds for it) the client is disconnected at once, its unsent
    bytes discarded, and its will published, since it did not go away cleanly (mqtt.md item 25)."""
    notify = Callbacks()
    broker = make_broker(store=MemoryStore(notify), max_outbound_buffer=1024)
    watcher = TestClient(broker)
    watcher.connect("watcher")
    watcher.subscribe("will/#", qos=0)
    offline = TestClient(broker)
    offline.connect("offline", clean=False)
    offline.subscribe("a", qos=1)
    offline.drop()  # a persistent session offline: the PUBACKs below wait for the store
    pub = TestClient(broker)
    pub.send(p.Connect("MQTT", 4, True, 60, "pub", p.Will("will/pub", b"gone", 0, False), None, None))
    notify.run()
    pub.send_bytes(b"".join(encode(p.Publish("a", b"x", 1, False, False, i), 4) for i in range(1, 301)))
    pub.conn.pause_writing()
    pub.link.buffered = 3000  # the socket's buffer already holds this much
    notify.run()  # 300 PUBACKs of 4 bytes are due: 3000 + 1200 > 4 x 1024
    assert pub.link.aborted and pub.conn.closed
    assert [m.payload for m in watcher.publishes()] == [b"gone"]


def test_a_socket_that_does_not_connect_in_time_is_closed():
    """Issue 2 limits, limits.connect_timeout: a socket that has not completed CONNECT within
    the timeout of being accepted is closed, however it trickles bytes."""
    broker = make_broker(connect_timeout=5)
    silent = TestClient(broker)
    trickle = TestClient(broker)
    broker.clock.advance(4)
    trickle.send_bytes(b"\x10")  # the start of a CONNECT, never finished
    broker.tick()
    assert not silent.link.closed and not trickle.link.closed
    broker.clock.advance(1.5)
    broker.tick()
    assert silent.link.closed and trickle.link.closed
    ok = TestClient(broker)
    broker.clock.advance(4)
    ok.connect("in-time")
    broker.clock.advance(10)
    broker.tick()
    assert not ok.link.closed


def test_max_connections_counts_every_accepted_socket():
    """docs/configuration.md [limits] max_connections: open sockets count whether or not they
    sent CONNECT; one more is closed at once; when one goes, a new one is accepted."""
    broker = make_broker(max_connections=2)
    idle = TestClient(broker)  # accepted, says nothing
    connected = TestClient(broker)
    connected.connect("c")
    over = TestClient(broker)
    assert over.link.closed and over.link.data == b""
    over.send(p.Connect("MQTT", 4, True, 60, "late", None, None, None))
    assert over.link.data == b"" and "late" not in broker.sessions
    idle.drop()
    again = TestClient(broker)
    assert again.connect("again").reason_code == 0


def test_max_queued_bytes_holds_for_a_persistent_session_live_and_after_restart(tmp_path):
    """docs/configuration.md [limits] max_queued_bytes: past it a persistent session keeps QoS
    1/2 messages in the store only; read back as the queue drains, and at restart, no more
    than the byte limit comes into memory; all arrive, in order."""
    path = str(tmp_path / "b.db")
    store = SQLiteStore(path, notify=Callbacks())
    broker = make_broker(store=store, max_queued_bytes=350, max_inflight=1)
    s = TestClient(broker)
    s.connect("bytes", clean=False)
    s.subscribe("a", qos=1)
    s.send(p.Disconnect())
    pub = TestClient(broker)
    pub.connect("publisher")
    for i in range(10):
        pub.publish("a", bytes([65 + i]) * 100, qos=1, packet_id=i + 1)
    session = broker.sessions["bytes"]
    assert (len(session.queue), len(session.spilled), session.queued_bytes) == (3, 7, 300)
    store.close()

    broker2, store2 = sqlite_broker(path, max_queued_bytes=350, max_inflight=1)
    session = broker2.sessions["bytes"]
    assert (len(session.queue), len(session.spilled), session.queued_bytes) == (3, 7, 300)
    back = TestClient(broker2)
    back.connect("bytes", clean=False)
    got = []
    while len(got) < 10:
        [m] = back.publishes()
        assert session.queued_bytes <= 350
        got.append(m.payload[:1])
        back.send(p.Puback(m.packet_id))
    assert got == [bytes([65 + i]) for i in range(10)]
    store2.close()


def test_max_queued_bytes_drops_and_counts_for_a_clean_session():
    """docs/configuration.md [limits] max_queued_bytes and [[listener]] overflow = "drop-new"
    (issue 14: dropping is an opt-in): past the byte limit a clean session's QoS 1/2 messages
    are dropped and counted."""
    broker = make_broker(max_queued_bytes=250, max_inflight=1, overflow="drop-new")
    s = TestClient(broker)
    s.connect("clean")
    s.subscribe("a", qos=1)
    s.received()
    s.link.buffered = 10 ** 9  # congested: nothing leaves the queue
    s.conn.paused = True
    pub = TestClient(broker)
    pub.connect("publisher")
    for i in range(5):
        pub.publish("a", b"x" * 100, qos=1, packet_id=i + 1)
    session = broker.sessions["clean"]
    assert session.queued_bytes == 200 and broker.stats.publish_dropped == 3


def test_unreleased_inbound_qos2_is_capped_by_max_queued_bytes():
    """docs/configuration.md max_queued_bytes (issue 2 P1: 65,535 held QoS 2 messages at
    levels 3/4): QoS 2 messages held between PUBREC and PUBREL count against the session's
    byte limit; the PUBLISH that would pass it closes the connection at every level (MQTT 5:
    DISCONNECT 0x97 quota exceeded); it was not acknowledged, so nothing acknowledged is lost.
    At MQIsdp/3.1.1 held messages below the limit may outnumber max_inflight (paho resends
    its whole backlog at once after a reconnect; cutting it off there would loop); MQTT 5 has
    its Receive Maximum for that (0x93)."""
    for level in (3, 4, 5):
        broker = make_broker(max_inflight=5 if level < 5 else 20, max_queued_bytes=1000)
        c = TestClient(broker, level)
        c.connect(f"q2-{level}")
        for pid in range(1, 10):  # nine of 100 bytes: more than max_inflight, within 1000 bytes
            [rec] = c.publish("a", b"x" * 100, qos=2, packet_id=pid)
            assert isinstance(rec, p.Pubrec)
        assert broker.sessions[f"q2-{level}"].inbound_bytes == 900
        packets = c.publish("a", b"y" * 101, qos=2, packet_id=10)
        assert c.link.closed
        assert [type(x) for x in packets] == ([p.Disconnect] if level == 5 else [])
        if level == 5:
            assert packets[0].reason_code == 0x97


def test_released_qos2_no_longer_counts():
    """The held bytes go down as PUBRELs release the messages (mqtt.md item 9)."""
    broker = make_broker(max_queued_bytes=250)
    c = TestClient(broker, 4)
    c.connect("rel")
    for pid in range(1, 20):
        c.publish("a", b"x" * 100, qos=2, packet_id=pid)
        c.send(p.Pubrel(pid))
        assert isinstance(c.received()[0], p.Pubcomp)
    assert broker.sessions["rel"].inbound_bytes == 0 and not c.link.closed


def test_idle_sessions_and_connections_hold_no_empty_queues():
    """Issue 8 scenario 6 (idle connections: broker memory; measured in bench/compare, not
    here): a session's queue and spill list and a connection's acknowledgement queue are one
    shared empty placeholder until something waits in them (an empty deque costs about 760
    bytes), and a connection keeps no per-instance __dict__. Queueing, draining and ending the
    session work the same through the placeholder."""
    from relaymq.broker.session import NOTHING_QUEUED

    broker = make_broker()
    s = TestClient(broker)
    s.connect("idle", clean=False)
    s.subscribe("a", qos=1)
    session = broker.sessions["idle"]
    assert session.queue is NOTHING_QUEUED and session.spilled is NOTHING_QUEUED
    assert s.conn.acks is NOTHING_QUEUED and not hasattr(s.conn, "__dict__")
    s.send(p.Disconnect())
    broker.publish("a", b"one", qos=1)
    broker.publish("a", b"two", qos=1)
    assert [d.message.payload for d in session.queue] == [b"one", b"two"]
    back = TestClient(broker)
    assert back.connect("idle", clean=False).session_present
    got = back.publishes()
    assert [m.payload for m in got] == [b"one", b"two"]
    for m in got:
        back.send(p.Puback(m.packet_id))
    assert not session.queue and not session.inflight
    back.send(p.Disconnect())
    assert TestClient(broker).connect("idle", clean=True).session_present is False
    assert "idle" not in broker.sessions or broker.sessions["idle"].queue is NOTHING_QUEUED


def test_idle_connections_hold_no_empty_dicts_or_buffers():
    """Issue 8 scenario 6, as above: a session's subscriptions, in-flight window and inbound
    QoS 2 ids and a connection's topic aliases are the shared NO_ENTRIES until their first
    entry, and the byte buffers (reader, held while paused) shared empty bytes while empty.
    Each is made on first use, and the shared one stays empty: adding to it raises."""
    import pytest

    from relaymq.broker.connection import NOTHING_HELD
    from relaymq.broker.no_entries import NO_ENTRIES
    from relaymq.mqtt.reader import NOTHING_BUFFERED

    broker = make_broker(topic_alias_maximum=5)
    sub, pub = TestClient(broker, level=5), TestClient(broker, level=5)
    sub.connect("sub", properties={"topic_alias_maximum": 5})
    pub.connect("pub")
    for client in (sub, pub):
        session = broker.sessions[client.conn.client_id or ""]
        assert session.subscriptions is session.inflight is session.inbound is NO_ENTRIES
        assert client.conn.aliases_in is client.conn.aliases_out is NO_ENTRIES
        assert client.conn.held is NOTHING_HELD and client.conn.reader._buf is NOTHING_BUFFERED
    sub.subscribe("t", qos=2)
    pub.publish("t", b"one", qos=1, properties={"topic_alias": 1})
    pub.publish("t", b"two", qos=2, packet_id=2)  # kept in pub's session until its PUBREL
    got = sub.publishes()
    assert [m.payload for m in got] == [b"one"] and got[0].properties["topic_alias"] == 1
    assert list(broker.sessions["sub"].subscriptions) == ["t"] and len(broker.sessions["sub"].inflight) == 1
    assert list(broker.sessions["pub"].inbound) == [2] and pub.conn.aliases_in == {1: "t"}
    assert sub.conn.aliases_out == {"t": 1}
    assert len(NO_ENTRIES) == 0
    with pytest.raises(TypeError):
        NO_ENTRIES["x"] = 1
    assert NO_ENTRIES.pop("x", None) is None  # reading and removing work as on any empty dict
