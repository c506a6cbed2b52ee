"""Issue 2, Limits: "max queued messages and bytes per session ... each configurable with a
documented behaviour when reached (count and drop QoS 0, keep QoS 1/2 in the store, disconnect
past a hard limit). A subscriber that stops reading must not make the broker's memory grow
without bound." The behaviour is documented in docs/configuration.md ([limits])."""

from __future__ import annotations

from relaymq.mqtt import packets as p
from relaymq.mqtt.reason_codes import QUOTA_EXCEEDED
from relaymq.store.sqlite import SQLiteStore

from .driver import Callbacks, TestClient, make_broker


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
    (memory holds just the queue), none is dropped, and all arrive in publication order."""
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
    queue's worth in memory, and drains completely in order."""
    path = str(tmp_path / "r.db")
    store = SQLiteStore(path, notify=Callbacks())
    broker = make_broker(store=store, max_queued_messages=4)
    s = TestClient(broker)
    s.connect("off", clean=False)
    s.subscribe("a", qos=1)
    s.send(p.Disconnect())
    _publish_many(broker, 30)
    store.close()

    store2 = SQLiteStore(path, notify=Callbacks())
    broker2 = make_broker(store=store2, max_queued_messages=4, max_inflight=2)
    broker2.restore(store2.load())
    session = broker2.sessions["off"]
    assert (len(session.queue), len(session.spilled)) == (4, 26)
    back = TestClient(broker2)
    assert back.connect("off", clean=False).session_present
    assert _drain(back, 30) == [f"m{i:03d}".encode() for i in range(30)]
    store2.close()


def test_clean_session_overflow_is_dropped_and_counted():
    """A clean session has no store to keep its overflow in: past max_queued_messages QoS 1/2
    are dropped and counted, so a stuck subscriber cannot grow the broker's memory."""
    broker = make_broker(max_queued_messages=3, max_inflight=1)
    s = TestClient(broker)
    s.connect("clean")
    s.subscribe("a", qos=1)
    _publish_many(broker, 10)
    session = broker.sessions["clean"]
    assert (len(session.inflight), len(session.queue), len(session.spilled)) == (1, 3, 0)
    assert broker.stats.publish_dropped == 6 and session.dropped == 6


def test_hard_limit_drops_counts_and_disconnects_a_client_that_does_not_keep_up():
    """Past max_stored_messages the message is dropped and counted and the connected client
    is disconnected with reason 0x97 (quota exceeded) at MQTT 5."""
    broker = make_broker(max_queued_messages=2, max_inflight=1, max_stored_messages=5)
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
