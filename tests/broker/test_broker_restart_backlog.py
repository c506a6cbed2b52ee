"""Issue 16, row 9: a restart reads a session's long queue only as far as the first drain
needs (``Broker.restore_stored``, ``Snapshot.stored_only``); the rest stays in the store and
comes back as the session drains. Nothing stored may be lost on the way (spec README decision
4; mqtt.md item 26: kept until the client reconnects, seed 000 l.1227-1229; item 6, stored)."""

from __future__ import annotations

from relaymq.mqtt import packets as p
from relaymq.mqtt.codec import encode
from relaymq.store.base import QUEUED, SENT, StoredMessage
from relaymq.store.sqlite import SQLiteStore

from .driver import Callbacks, TestClient, make_broker, sqlite_broker
from .test_broker_limits import _drain, _publish_many


def _offline_backlog(path: str, count: int, *clients: str) -> None:
    """``clients`` subscribe to "a" at QoS 1 with persistent sessions and go away; then
    ``count`` QoS 1 messages are published to "a" and the broker stops."""
    store = SQLiteStore(path, notify=Callbacks())
    broker = make_broker(store=store)
    for client_id in clients:
        s = TestClient(broker)
        s.connect(client_id, clean=False)
        s.subscribe("a", qos=1)
        s.send(p.Disconnect())
    _publish_many(broker, count)
    store.close()


def test_a_long_backlog_is_read_a_page_at_start_and_drains_complete_and_in_order(tmp_path):
    path = str(tmp_path / "b.db")
    _offline_backlog(path, 30, "off")
    broker, store = sqlite_broker(path, page=4, max_inflight=3)
    session = broker.sessions["off"]
    assert (len(session.queue), len(session.spilled)) == (4, 26)
    assert sum(broker.refs.counts.values()) == 30  # every stored message is counted
    back = TestClient(broker)
    assert back.connect("off", clean=False).session_present
    assert _drain(back, 30) == [f"m{i:03d}".encode() for i in range(30)]
    store.flush()
    snap = store.load()
    assert snap.deliveries == [] and snap.messages == {}  # acknowledged: nothing left behind
    store.close()


def test_the_store_lists_the_rest_of_a_long_queue_by_id_and_reads_only_messages_in_use(tmp_path):
    """``load(page)``: the first ``page`` queued deliveries of each session in full, the rest as
    (seq, msg_id); a message is skipped only when nothing but those refers to it (here the
    retained message, and one a short queue also holds, must be read)."""
    path = str(tmp_path / "s.db")
    _offline_backlog(path, 10, "long")
    store = SQLiteStore(path, notify=Callbacks())
    broker = make_broker(store=store)
    broker.restore(store.load())
    pub = TestClient(broker)
    pub.connect("publisher")
    pub.publish("a", b"kept", qos=1, retain=True, packet_id=1)
    short = TestClient(broker, level=5)
    short.connect("short", clean=False, properties={"session_expiry_interval": 3600})
    short.subscribe("a", qos=1, retain_handling=2)  # not the retained message (MQTT 5 3.8.3.1)
    short.send(p.Disconnect(0, {}))
    pub.publish("a", b"both", qos=1, packet_id=2)
    store.close()

    store = SQLiteStore(path, notify=Callbacks())
    full, paged = store.load(), store.load(3)
    store.close()
    assert full.stored_only == {}
    tail = paged.stored_only["long"]
    assert tail == [(d.seq, d.msg_id) for d in full.deliveries if d.client_id == "long"][3:]
    assert len(tail) == 9
    assert [d.client_id for d in paged.deliveries] == ["long"] * 3 + ["short"]
    retained_id, shared_id = full.retained["a"], paged.deliveries[-1].msg_id
    assert {retained_id, shared_id} <= {msg_id for _, msg_id in tail}
    assert set(paged.messages) == {d.msg_id for d in paged.deliveries} | {retained_id}
    assert paged.messages[shared_id].payload == b"both"


def test_a_paged_load_still_reads_the_orphans_a_crash_left_and_the_restore_deletes_them(tmp_path):
    """With a backlog left in the store, the messages table is not listed in full unless its
    COUNT(*) says it holds more than the records refer to: an orphan (a message row no
    record refers to) is then read, and the restore deletes it."""
    path = str(tmp_path / "o.db")
    _offline_backlog(path, 10, "long")
    store = SQLiteStore(path, notify=Callbacks())
    marks = store.load()
    orphan = StoredMessage(max(marks.messages) + 1, "gone", b"orphan", 1)
    store.put_message(orphan)
    store.close()
    store = SQLiteStore(path, notify=Callbacks())
    paged = store.load(3)
    assert paged.messages[orphan.msg_id] == orphan
    assert list(paged.messages) == sorted(paged.messages)
    store.close()
    broker, store = sqlite_broker(path, page=3)
    store.flush()
    assert orphan.msg_id not in store.load().messages
    assert sum(broker.refs.counts.values()) == 10
    store.close()


def test_sessions_sharing_messages_all_receive_them_after_a_paged_restart(tmp_path):
    """Two sessions hold the same messages; one drains first: the messages the other still
    needs stay in the store (reference counts include the unread part of each queue)."""
    path = str(tmp_path / "two.db")
    _offline_backlog(path, 12, "one", "two")
    broker, store = sqlite_broker(path, page=2, max_inflight=2)
    expected = [f"m{i:03d}".encode() for i in range(12)]
    first = TestClient(broker)
    first.connect("one", clean=False)
    assert _drain(first, 12) == expected
    broker.shutdown()
    store.close()

    broker, store = sqlite_broker(path, page=2, max_inflight=2)
    second = TestClient(broker)
    assert second.connect("two", clean=False).session_present
    assert _drain(second, 12) == expected
    store.close()


def test_a_reads_pubacks_are_settled_at_its_end_even_when_it_breaks_off(tmp_path):
    """Row 8: the PUBACKs of one read release their deliveries in one store call and refill the
    window once, at the read's end, inside its unit of work (``delivery.settle_acknowledged``);
    a read that ends in a protocol error still settles what it acknowledged (and refills
    nothing: its connection closed before the end, so m004 stays queued). After a restart
    the acknowledged are gone from the store, and the one in flight unacknowledged comes back
    first, with DUP=1 and its packet id."""
    path = str(tmp_path / "r.db")
    _offline_backlog(path, 6, "sub")
    broker, store = sqlite_broker(path, max_inflight=2)
    sub = TestClient(broker)
    sub.connect("sub", clean=False)
    first = sub.publishes()
    assert [m.payload for m in first] == [b"m000", b"m001"]
    sub.send_bytes(b"".join(encode(p.Puback(m.packet_id), 4) for m in first))  # one read
    second = sub.publishes()
    assert [m.payload for m in second] == [b"m002", b"m003"]
    # a PUBACK, then a CONNACK (a client may not send one) in the same read
    sub.send_bytes(encode(p.Puback(second[0].packet_id), 4) + encode(p.Connack(False, 0), 4))
    assert sub.conn.closed
    store.flush()
    snap = store.load()
    left = {snap.messages[d.msg_id].payload: (d.packet_id, d.state) for d in snap.deliveries}
    assert left == {b"m003": (second[1].packet_id, SENT), b"m004": (None, QUEUED), b"m005": (None, QUEUED)}
    store.close()

    broker, store = sqlite_broker(path, max_inflight=2)
    back = TestClient(broker)
    assert back.connect("sub", clean=False).session_present
    again = back.publishes()
    assert [(m.payload, m.dup) for m in again] == [(b"m003", True), (b"m004", False)]
    assert again[0].packet_id == second[1].packet_id
    store.close()
