"""Issue 16, row 9: a restart reads a session's long queue only as far as the first drain
needs (``Broker.restore_stored``, ``Snapshot.unlisted``); the rest stays in the store, not even
listed, and comes back as the session drains (broker/unlisted.py). Nothing stored may be lost on the way (spec README decision
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
    assert (len(session.queue), len(session.spilled), session.in_store_only()) == (4, 0, 26)
    assert sum(broker.refs.counts.values()) == 4  # the tail's references wait for its listing
    assert broker.refs.pins.ranges() == sorted((low, high) for _, low, high in session.unlisted.chunks)
    assert len(session.unlisted.chunks) == 7  # about a page each
    back = TestClient(broker)
    assert back.connect("off", clean=False).session_present
    assert _drain(back, 30) == [f"m{i:03d}".encode() for i in range(30)]
    store.flush()
    snap = store.load()
    assert snap.deliveries == [] and snap.messages == {}  # acknowledged: nothing left behind
    store.close()


def test_a_tail_drained_in_order_deletes_each_body_with_its_row_not_at_the_end(tmp_path):
    """A tail is kept by chunks of about a page (``QueueTail.chunks``): as a backlog drains in
    order, the messages acknowledged lie below the chunks still unlisted, so each goes with
    its delivery, while most of the tail is still unlisted (kept until the whole tail was
    listed, a 100,000-message drain after a restart took 30% more CPU, issue 16 row 9)."""
    path = str(tmp_path / "d.db")
    _offline_backlog(path, 30, "off")
    broker, store, log = _logged_broker(path, page=4, max_inflight=2, max_queued_messages=4)
    back = TestClient(broker)
    assert back.connect("off", clean=False).session_present
    assert _drain(back, 12) == [f"m{i:03d}".encode() for i in range(12)]
    tail = broker.sessions["off"].unlisted
    assert tail is not None and tail.count > 10
    left = _stored(store)
    assert len(log.deleted) >= 10 and not set(log.deleted) & set(left.messages)
    assert len(left.messages) == 30 - len(log.deleted) == len(left.deliveries)
    store.close()


def test_the_store_leaves_the_rest_of_a_long_queue_unlisted_and_reads_only_messages_in_use(tmp_path):
    """``load(page)``: the first ``page`` queued deliveries of each session in full, the rest
    counted (``QueueTail``) and listed later (``list_queued``); a message is read when a record
    read refers to it (here the retained message, and one a short queue also holds), whatever
    the tail does."""
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
    assert full.unlisted == {}
    tail = paged.unlisted["long"]
    rows = [(d.seq, d.msg_id) for d in full.deliveries if d.client_id == "long"]
    assert (tail.after, tail.count) == (rows[2][0], 9)
    assert [end for end, _, _ in tail.chunks] == sorted(end for end, _, _ in tail.chunks)
    for (end, low, high), first in zip(tail.chunks, [tail.after] + [end for end, _, _ in tail.chunks], strict=False):
        ids = [m for seq, m in rows[3:] if first < seq <= end]
        assert (low, high) == (min(ids), max(ids))
    assert tail.chunks[-1][0] == tail.through
    assert [d.client_id for d in paged.deliveries] == ["long"] * 3 + ["short"]
    retained_id, shared_id = full.retained["a"], paged.deliveries[-1].msg_id
    assert {retained_id, shared_id} <= {msg_id for _, msg_id in rows[3:]}
    assert set(paged.messages) == {d.msg_id for d in paged.deliveries} | {retained_id}
    assert paged.messages[shared_id].payload == b"both"
    store = SQLiteStore(path, notify=Callbacks())
    assert store.list_queued("long", tail.after, tail.through, 4) + store.list_queued(
        "long", rows[6][0], tail.through, 100) == rows[3:]
    store.close()


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
    assert sum(broker.refs.counts.values()) == 3  # the page; the tail is counted as listed
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


class _DeleteLog:
    """The broker's store, noting the id of each message whose deletion is submitted (the
    three ways a body goes), so a test can tell a body deleted twice from once."""

    def __init__(self, inner: SQLiteStore) -> None:
        self.inner = inner
        self.deleted: list[int] = []

    def delete_message(self, msg_id: int) -> None:
        self.deleted.append(msg_id)
        self.inner.delete_message(msg_id)

    def delete_deliveries(self, client_id: str, rows: list[tuple[int, int | None]]) -> None:
        self.deleted.extend(msg_id for _, msg_id in rows if msg_id is not None)
        self.inner.delete_deliveries(client_id, rows)

    def delete_inbounds(self, rows: list[tuple[int, bool]]) -> None:
        self.deleted.extend(msg_id for msg_id, last in rows if last)
        self.inner.delete_inbounds(rows)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def _another_subscriber(path: str, client_id: str, topic: str) -> tuple[SQLiteStore, TestClient]:
    """The broker at ``path`` restarted, ``client_id`` subscribed to ``topic`` at QoS 1 with a
    persistent session and gone; the store (the caller closes it) and a publisher connected."""
    store = SQLiteStore(path, notify=Callbacks())
    broker = make_broker(store=store)
    broker.restore(store.load())
    subscriber = TestClient(broker)
    subscriber.connect(client_id, clean=False)
    subscriber.subscribe(topic, qos=1)
    subscriber.send(p.Disconnect())
    pub = TestClient(broker)
    pub.connect("publisher")
    return store, pub


def _logged_broker(path: str, page: int, **settings):
    store = SQLiteStore(path, notify=Callbacks())
    log = _DeleteLog(store)
    broker = make_broker(store=log, **settings)
    broker.restore_stored(page)
    return broker, store, log


def _stored(store: SQLiteStore):
    """What the store holds once everything submitted is committed; no delivery may refer to
    a message that is gone (a body deleted too early)."""
    store.flush()
    snap = store.load()
    assert {d.msg_id for d in snap.deliveries} <= set(snap.messages), "a delivery lost its message"
    return snap


def test_a_tail_sharing_its_messages_releases_each_body_once_after_every_reference_went(tmp_path):
    """Issue 16, row 9 (spec README decision 4: stored until every delivery is done): the
    unlisted tails of two sessions ("long", "other") refer to the messages a short queue
    loaded in full ("short") and the retained slot refer to as well. Draining the short queue
    and then the other tail (listed three at a time) deletes no body that "long"'s unlisted
    tail still needs; as it is listed, a chunk at a time, the bodies nothing else needs go
    (before the whole tail is), and once it is drained too, every body but the retained one
    is deleted, each exactly once, and nothing is left behind."""
    path = str(tmp_path / "shared.db")
    _offline_backlog(path, 30, "long", "other")
    store, pub = _another_subscriber(path, "short", "a")
    pub.publish("a", b"kept", qos=1, retain=True, packet_id=1)
    for i in range(30, 32):
        pub.publish("a", f"m{i:03d}".encode(), qos=1, packet_id=i)
    store.close()

    broker, store, log = _logged_broker(path, page=4, max_queued_messages=3, max_inflight=2)
    assert {c for c, s in broker.sessions.items() if s.unlisted is not None} == {"long", "other"}
    before = _stored(store)
    expected = [f"m{i:03d}".encode() for i in range(30)] + [b"kept", b"m030", b"m031"]
    for client_id, wanted in (("short", expected[-3:]), ("other", expected)):
        client = TestClient(broker)
        assert client.connect(client_id, clean=False).session_present
        assert _drain(client, len(wanted)) == wanted
        client.send(p.Disconnect())
        assert log.deleted == []  # "long" still refers to all of them, listed or not
        assert set(_stored(store).messages) == set(before.messages)
    assert broker.sessions["long"].unlisted is not None
    client = TestClient(broker)
    assert client.connect("long", clean=False).session_present
    assert _drain(client, 12) == expected[:12]
    # each chunk of "long"'s tail listed: the releases deferred in its range are done
    assert broker.sessions["long"].unlisted is not None and len(log.deleted) >= 8
    assert not set(log.deleted) & set(_stored(store).messages)
    assert _drain(client, len(expected) - 12) == expected[12:]
    after = _stored(store)
    retained_id = before.retained["a"]
    assert after.deliveries == [] and set(after.messages) == {retained_id}
    assert sorted(log.deleted) == sorted(set(before.messages) - {retained_id})  # each once
    assert broker.refs.pins.ranges() == []
    store.close()


def _orphans_in_a_tail(path: str) -> list[int]:
    """"long" (topic "a") holds 20 messages, "other" (topic "b") 5 published among them; then
    two rows of "other" go without their messages, as a crash between two writes could leave
    them: the orphans returned have ids inside "long"'s tail when a restart reads 6 a queue."""
    _offline_backlog(path, 0, "long")
    store, pub = _another_subscriber(path, "other", "b")
    for i in range(20):
        pub.publish("a", f"m{i:03d}".encode(), qos=1, packet_id=2 * i + 1)
        if 5 <= i < 10:
            pub.publish("b", f"o{i:03d}".encode(), qos=1, packet_id=2 * i + 2)
    store.flush()
    rows = [d for d in store.load().deliveries if d.client_id == "other"][1:3]
    for d in rows:
        store.delete_delivery("other", d.seq)
    store.close()
    return [d.msg_id for d in rows]


def test_orphans_among_a_tails_ids_are_deleted_once_it_is_listed(tmp_path):
    """Restore deletes the orphans a crash left (docs/architecture.md); those whose ids a
    tail left unlisted may refer to wait until it is listed (they cannot be told from the
    tail's own messages without listing it), then go: none stays for good."""
    path = str(tmp_path / "orphans.db")
    orphans = _orphans_in_a_tail(path)
    broker, store, log = _logged_broker(path, page=6, max_inflight=2, max_queued_messages=4)
    tail = broker.sessions["long"].unlisted
    assert tail is not None and broker.sessions["other"].unlisted is None
    assert all(any(low < msg_id < high for _, low, high in tail.chunks) for msg_id in orphans)
    before = _stored(store)
    assert set(orphans) <= set(before.messages)  # not at start: kept for the tail
    client = TestClient(broker)
    assert client.connect("long", clean=False).session_present
    assert _drain(client, 20) == [f"m{i:03d}".encode() for i in range(20)]
    left = _stored(store)
    assert set(left.messages) == {d.msg_id for d in left.deliveries} and len(left.deliveries) == 3
    assert sorted(log.deleted) == sorted(set(before.messages) - set(left.messages))  # each once
    client = TestClient(broker)
    assert client.connect("other", clean=False).session_present  # its messages all stayed
    assert _drain(client, 3) == [b"o005", b"o008", b"o009"]
    store.close()


def test_a_session_ending_with_its_tail_unlisted_releases_it_and_sweeps_the_orphans(tmp_path):
    """A session that ends (here a clean start; expiry is the same path) lists its tail first:
    its messages go unless another session still needs them, and the orphans among its ids
    go too."""
    path = str(tmp_path / "end.db")
    orphans = _orphans_in_a_tail(path)
    broker, store, log = _logged_broker(path, page=6)
    client = TestClient(broker)
    assert not client.connect("long", clean=True).session_present
    left = _stored(store)
    assert [d.client_id for d in left.deliveries] == ["other"] * 3
    assert set(left.messages) == {d.msg_id for d in left.deliveries}
    assert set(orphans) <= set(log.deleted)
    assert len(log.deleted) == len(set(log.deleted)) == 22  # long's 20 and the 2 orphans, each once
    assert broker.refs.pins.ranges() == []
    store.close()


def test_a_crash_part_way_through_listed_and_unlisted_tails_loses_nothing_and_leaves_nothing(tmp_path):
    """Spec README decision 4 (durable before acknowledged) across a crash while tails are
    partly listed: "long" drains part of its backlog (its releases deferred: "other"'s tail
    still pins the ids), and the broker stops at that point with whatever is committed (a
    SIGKILL after the last commit: no shutdown, nothing more written). The restart delivers
    every message not acknowledged, in order, no delivery is left without its message at any
    point, and once both drain every body but the retained one is gone: the deferred releases
    and the messages they left are swept, not kept for good."""
    for acked in (1, 9, 25):
        path = str(tmp_path / f"crash{acked}.db")
        _offline_backlog(path, 30, "long", "other")
        broker, store, _ = _logged_broker(path, page=4, max_queued_messages=3, max_inflight=1)
        client = TestClient(broker)
        assert client.connect("long", clean=False).session_present
        assert _drain(client, acked) == [f"m{i:03d}".encode() for i in range(acked)]
        _stored(store)  # committed: the crash comes after this
        store.engine.close()  # the process dies: no session records, no shutdown

        broker, store, log = _logged_broker(path, page=4, max_queued_messages=3, max_inflight=2)
        _stored(store)
        for client_id, first in (("long", acked), ("other", 0)):
            client = TestClient(broker)
            assert client.connect(client_id, clean=False).session_present
            got = _drain(client, 30 - first)
            assert got[-(30 - acked if client_id == "long" else 30):] == [
                f"m{i:03d}".encode() for i in range(first, 30)], client_id
        left = _stored(store)
        assert left.deliveries == [] and left.messages == {}, acked
        assert len(log.deleted) == len(set(log.deleted))
        store.close()


def test_a_release_kept_for_a_chunk_is_done_once_that_chunk_is_listed(tmp_path):
    """A message only a loaded queue refers to ("other"'s), its id among a tail's ("long"'s),
    is kept when that queue drains (the tail might refer to it), and deleted as soon as the
    chunk of the tail around its id is listed, not when the whole tail is."""
    path = str(tmp_path / "kept.db")
    _orphans_in_a_tail(path)
    broker, store, log = _logged_broker(path, page=6, max_inflight=2, max_queued_messages=4)
    before = _stored(store)
    ids = {d.msg_id for d in before.deliveries if d.client_id == "other"}
    kept = {msg_id for msg_id in ids if broker.refs.pinned(msg_id)}
    assert kept and max(ids) < max(high for _, _, high in broker.sessions["long"].unlisted.chunks[:3])
    client = TestClient(broker)
    assert client.connect("other", clean=False).session_present
    assert _drain(client, 3) == [b"o005", b"o008", b"o009"]
    assert sorted(log.deleted) == sorted(ids - kept)  # outside every chunk: at once
    assert broker.refs.deferred == kept
    client = TestClient(broker)
    assert client.connect("long", clean=False).session_present
    got = _drain(client, 13)
    assert got == [f"m{i:03d}".encode() for i in range(len(got))] and len(got) >= 13
    assert broker.sessions["long"].unlisted is not None
    assert kept <= set(log.deleted) and not kept & broker.refs.deferred
    assert len(log.deleted) == len(set(log.deleted))
    store.close()


def test_drop_oldest_reaches_into_an_unlisted_tail_in_order(tmp_path):
    """Issue 14 "drop-oldest" on a restored session at ``max_stored_messages``: once its
    in-memory queue is dropped, the oldest are the tail's, listed for it (``_drop_oldest``):
    the drain then gets the rest in order, and the dropped ones' bodies are gone."""
    path = str(tmp_path / "drop.db")
    _offline_backlog(path, 30, "off")
    broker, store, log = _logged_broker(path, page=4, max_stored_messages=30, overflow="drop-oldest")
    session = broker.sessions["off"]
    assert (len(session.queue), session.in_store_only()) == (4, 26)
    pub = TestClient(broker)
    pub.connect("publisher")
    for i in range(6):
        pub.publish("a", f"n{i:03d}".encode(), qos=1, packet_id=i + 1)
    assert session.dropped == 6 and session.in_store_only() == 30 and not session.queue
    back = TestClient(broker)
    assert back.connect("off", clean=False).session_present
    expected = [f"m{i:03d}".encode() for i in range(6, 30)] + [f"n{i:03d}".encode() for i in range(6)]
    assert _drain(back, 30) == expected
    left = _stored(store)
    assert left.deliveries == [] and left.messages == {}
    assert len(log.deleted) == len(set(log.deleted)) == 36
    store.close()
