"""on_durable: acknowledgements only after the data is committed, in order; group commit and
coalescing keep the stored state equal to applying every operation."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from store_helpers import Engine, run_now, writer_held

from relaymq.store.base import (
    QUEUED,
    SENT,
    DeliveryRecord,
    InboundRecord,
    SessionRecord,
    Snapshot,
    Store,
    StoredMessage,
    StoreError,
    SubscriptionRecord,
)
from relaymq.store.memory import MemoryStore
from relaymq.store.sqlite import SQLiteStore


def reload(path: str) -> Snapshot:
    """What a restarted broker would load from ``path``."""
    store = SQLiteStore(path, run_now)
    try:
        return store.load()
    finally:
        store.close()


def test_callbacks_fire_in_order_and_only_after_commit(engine: Engine) -> None:
    """Each callback runs after the message submitted before it can be read by another
    connection, and callbacks run in submission order (spec README decision 4; mqtt.md item 6:
    stored before acknowledged)."""
    store = engine.open()
    seen: list[tuple[int, bool]] = []
    for msg_id in range(1, 41):
        store.put_message(StoredMessage(msg_id, "t", b"x" * 100, 1))
        store.on_durable(lambda msg_id=msg_id: seen.append((msg_id, msg_id in engine.committed_msg_ids(store))))
    store.flush()
    assert seen == [(msg_id, True) for msg_id in range(1, 41)]


def test_on_durable_with_nothing_pending_still_calls_back(engine: Engine) -> None:
    """A callback with no write before it is still called (through notify), after the earlier
    ones (spec README decision 4; base.Store.on_durable contract)."""
    store = engine.open()
    calls: list[str] = []
    store.on_durable(lambda: calls.append("first"))
    store.put_retained("t", 1)
    store.on_durable(lambda: calls.append("second"))
    store.flush()
    store.on_durable(lambda: calls.append("third"))
    store.flush()
    assert calls == ["first", "second", "third"]


def test_submitted_counts_every_write_and_no_callback(engine: Engine) -> None:
    """``Store.submitted`` moves with every put/update/delete and not with on_durable: the
    broker sends a PUBACK at once when handling the publication moved it not (nothing the
    acknowledgement promises waits for a commit; spec README decision 4)."""
    store = engine.open()
    start = store.submitted
    store.on_durable(lambda: None)
    assert store.submitted == start
    store.put_message(StoredMessage(1, "t", b"x", 1))
    store.put_delivery(DeliveryRecord("c", 1, 1, 1))
    store.update_delivery("c", 1, 5, SENT)
    store.delete_delivery("c", 1)
    store.delete_message(1)
    store.put_retained("t", 1)
    store.delete_retained("t")
    store.put_session(SessionRecord("c", 4, 60))
    store.put_subscription(SubscriptionRecord("c", "t", 1))
    store.delete_subscription("c", "t")
    store.put_message_and_inbound(StoredMessage(2, "t", b"x", 2), InboundRecord("c", 1, 2))
    store.delete_inbounds([(2, True)])
    store.delete_session("c")
    assert store.submitted == start + 13
    store.flush()


def test_a_batch_of_callbacks_goes_to_notify_in_one_call_and_in_order(tmp_path: Path) -> None:
    """The writer hands every callback of a committed batch to notify in one call (one wake-up
    of the event loop per commit, not one per acknowledgement); they run in registration
    order, and one that raises does not keep the others from running."""
    handed: list = []
    ran: list[int] = []

    def notify(fn) -> None:
        handed.append(fn)
        if len(handed) == 1:
            fn()  # writer_held's blocking callback: it must run on the writer thread

    store = SQLiteStore(str(tmp_path / "b.db"), notify)
    try:
        with writer_held(store):
            store.put_retained("t", 1)
            store.on_durable(lambda: ran.append(1))
            store.on_durable(lambda: 1 / 0)
            store.on_durable(lambda: ran.append(3))
        store.flush()
        assert len(handed) == 2  # the blocking callback of writer_held, then the batch
        handed[1]()
        assert ran == [1, 3]
    finally:
        store.close()


def test_callbacks_go_through_notify(tmp_path: Path) -> None:
    """The engine never runs a callback itself: it hands it to notify, which the server makes
    loop.call_soon_threadsafe (base module docstring; spec README decision 4)."""
    handed: list[object] = []
    done: list[int] = []
    for store in (MemoryStore(handed.append), SQLiteStore(str(tmp_path / "n.db"), handed.append)):
        store.put_retained("t", 1)
        store.on_durable(lambda: done.append(1))
        store.flush()
        assert len(handed) == 1 and done == []
        handed.pop()()
        assert done == [1]
        done.clear()
        store.close()


def test_group_commit_writes_one_batch_and_skips_undone_work(tmp_path: Path) -> None:
    """Everything submitted while a commit is under way goes into one transaction; a delivery
    and a message put and deleted in the same batch (an online QoS 1 subscriber acknowledged
    early) never reach the database; their acknowledgement still waits for the commit (spec
    README decision 4; design guide "Durable before acknowledged, in batches")."""
    store = SQLiteStore(str(tmp_path / "g.db"), run_now)
    fired: list[int] = []
    try:
        with writer_held(store):
            commits, written = store.commit_count, store.written_count
            for i in range(1, 51):
                store.put_message(StoredMessage(i, "t", b"payload", 1))
                store.put_delivery(DeliveryRecord("sub", i, i, 1))
                store.on_durable(lambda i=i: fired.append(i))
                store.update_delivery("sub", i, i, SENT)
                store.delete_delivery("sub", i)
                store.delete_message(i)
            store.put_message(StoredMessage(51, "t", b"kept", 1))
            store.on_durable(lambda: fired.append(51))
            assert fired == []
        store.flush()
        assert fired == list(range(1, 52))
        assert store.commit_count == commits + 1
        # Only message 51 and the two high-water marks were written.
        assert store.written_count == written + 3
        assert store.coalesced_count == 250  # per message: 2 message ops, 2 delivery ops, 1 update
    finally:
        store.close()
    snap = reload(str(tmp_path / "g.db"))
    assert list(snap.messages) == [51] and snap.deliveries == []
    assert (snap.next_msg_id, snap.next_seq) == (52, 51)


def test_coalescing_never_skips_deleting_a_committed_row(tmp_path: Path) -> None:
    """A row committed in an earlier batch, then written again and deleted in one batch, is
    gone after the batch; an update folded into a pending update keeps the last value (spec
    README decision 4: the stored state is what the operations say)."""
    path = str(tmp_path / "c.db")
    store = SQLiteStore(path, run_now)
    store.put_message(StoredMessage(1, "t", b"old", 1))
    store.put_delivery(DeliveryRecord("c", 1, 1, 1))
    store.put_delivery(DeliveryRecord("c", 2, 1, 1))
    store.flush()
    with writer_held(store):
        store.put_message(StoredMessage(1, "t", b"new", 1))
        store.delete_message(1)
        store.put_delivery(DeliveryRecord("c", 1, 1, 2))
        store.delete_delivery("c", 1)
        store.update_delivery("c", 2, 5, SENT)
        store.update_delivery("c", 2, 6, SENT)
    store.close()
    snap = reload(path)
    assert snap.messages == {}
    assert snap.deliveries == [DeliveryRecord("c", 2, 1, 1, False, 6, SENT)]


def test_commit_delay_still_commits_before_calling_back(tmp_path: Path) -> None:
    """With commit_delay the writer waits for more work before a batch, but the callback still
    comes only after the row is readable by another connection (spec README decision 4;
    design guide: "the batch commits ... after a few milliseconds")."""
    path = tmp_path / "d.db"
    store = SQLiteStore(str(path), run_now, commit_delay=0.002)
    seen: list[bool] = []

    def check() -> None:
        conn = sqlite3.connect(str(path))
        seen.append(conn.execute("SELECT count(*) FROM messages").fetchone() == (3,))
        conn.close()

    for msg_id in (1, 2, 3):
        store.put_message(StoredMessage(msg_id, "t", b"", 1))
    store.on_durable(check)
    store.flush()
    store.close()
    assert seen == [True]


def test_flush_from_the_writer_thread_is_refused(tmp_path: Path) -> None:
    """A callback that flushes on the writer thread would wait for itself forever; it gets a
    StoreError instead (base.Store.flush contract; spec README decision 4: a hung writer would
    withhold every acknowledgement)."""
    store = SQLiteStore(str(tmp_path / "f.db"), run_now)
    errors: list[BaseException] = []

    def flush_inside() -> None:
        try:
            store.flush()
        except StoreError as exc:
            errors.append(exc)

    store.on_durable(flush_inside)
    store.flush()
    store.close()
    assert len(errors) == 1 and "writer thread" in str(errors[0])


# -- model test: any sequence of operations cut into any batches gives the memory engine's state

CLIENTS = st.sampled_from(["a", "b"])
IDS = st.integers(1, 3)
# Messages and deliveries are what coalescing rewrites: they get most of the steps.
COALESCED = st.one_of(
    st.tuples(st.just("put_message"), IDS, st.binary(max_size=3)),
    st.tuples(st.just("delete_message"), IDS),
    st.tuples(st.just("put_delivery"), CLIENTS, IDS, IDS),
    st.tuples(st.just("update_delivery"), CLIENTS, IDS, st.none() | IDS, st.integers(0, 2)),
    st.tuples(st.just("delete_delivery"), CLIENTS, IDS),
    st.tuples(st.just("put_message_and_delivery"), IDS, st.binary(max_size=3), CLIENTS, IDS),
    st.tuples(st.just("delete_deliveries"), CLIENTS, st.lists(st.tuples(IDS, st.none() | IDS), max_size=3)),
    st.tuples(st.just("update_deliveries"), CLIENTS,
              st.lists(st.tuples(IDS, st.none() | IDS, st.integers(0, 2)), max_size=3)),
    st.tuples(st.just("mark_released"), CLIENTS, st.lists(IDS, max_size=3)),
    st.tuples(st.just("put_message_and_inbound"), IDS, st.binary(max_size=3), CLIENTS, IDS),
    st.tuples(st.just("delete_inbounds"), st.lists(st.tuples(IDS, st.booleans()), max_size=3)),
)
OTHERS = st.one_of(
    st.tuples(st.just("put_session"), CLIENTS),
    st.tuples(st.just("delete_session"), CLIENTS),
    st.tuples(st.just("put_subscription"), CLIENTS, st.sampled_from(["x", "y"]), st.integers(0, 2)),
    st.tuples(st.just("delete_subscription"), CLIENTS, st.sampled_from(["x", "y"])),
    st.tuples(st.just("put_retained"), st.sampled_from(["r", "s"]), IDS),
    st.tuples(st.just("delete_retained"), st.sampled_from(["r", "s"])),
)
STEPS = st.one_of(COALESCED, COALESCED, COALESCED, OTHERS, st.just(("cut",)))  # a batch boundary one step in five


def apply(store: Store, op: tuple) -> None:  # type: ignore[type-arg]
    name, *args = op
    if name == "put_message":
        store.put_message(StoredMessage(args[0], "t", args[1], 1))
    elif name == "put_session":
        store.put_session(SessionRecord(args[0], 5, 10))
    elif name == "put_subscription":
        store.put_subscription(SubscriptionRecord(*args))
    elif name == "put_delivery":
        store.put_delivery(DeliveryRecord(args[0], args[1], args[2], 1))
    elif name == "put_message_and_delivery":
        msg_id, payload, client_id, seq = args
        store.put_message_and_delivery(StoredMessage(msg_id, "t", payload, 1), DeliveryRecord(client_id, seq, msg_id, 1))
    elif name == "put_message_and_inbound":
        msg_id, payload, client_id, packet_id = args
        store.put_message_and_inbound(StoredMessage(msg_id, "t", payload, 1), InboundRecord(client_id, packet_id, msg_id))
    else:
        getattr(store, name)(*args)


@settings(max_examples=100, deadline=None)
@given(st.lists(STEPS, min_size=4, max_size=40))
@example([("put_message", 1, b""), ("cut",), ("put_message", 1, b""), ("delete_message", 1)])
@example([("put_delivery", "a", 1, 1), ("cut",), ("put_delivery", "a", 1, 2), ("update_delivery", "a", 1, 3, 1),
          ("delete_delivery", "a", 1)])
@example([("put_message", 1, b"a"), ("cut",), ("put_message", 2, b""), ("delete_message", 1),
          ("put_message", 1, b"b")])  # a delete, then a put of the same key: their order decides
@example([("put_message", 1, b"a"), ("put_delivery", "a", 1, 1), ("cut",), ("delete_session", "a"),
          ("put_delivery", "a", 2, 1), ("delete_message", 1)])  # a session's removal between row operations
@example([("put_delivery", "a", 1, 1), ("cut",), ("update_delivery", "a", 1, 3, 1), ("mark_released", "a", [1]),
          ("update_delivery", "a", 1, 2, 1)])  # a RELEASED state between updates of its packet id
@example([("put_message_and_inbound", 1, b"", "a", 1), ("put_message_and_inbound", 2, b"", "a", 2), ("cut",),
          ("delete_inbounds", [(1, True), (2, False)])])  # a read's QoS 2 releases, one with its message
@example([("put_message_and_inbound", 1, b"", "a", 1), ("delete_inbounds", [(1, False)]), ("cut",),
          ("put_message_and_inbound", 2, b"", "a", 1), ("delete_session", "b"), ("delete_inbounds", [(1, False)])])
@example([("put_message_and_inbound", 1, b"", "a", 1), ("cut",), ("delete_session", "a"),
          ("put_message", 2, b""), ("put_message_and_inbound", 3, b"", "b", 1), ("put_message", 3, b"")])
@example([("put_message", 3, b""), ("put_message_and_delivery", 1, b"", "b", 1),
          ("put_message_and_delivery", 2, b"", "b", 2), ("delete_message", 2),
          ("put_session", "b")])  # an orphan beside a delivery whose message is gone: load(1) reads the orphan
@example([("put_session", "a"), ("put_message_and_delivery", 1, b"", "a", 1),
          ("put_message_and_delivery", 2, b"", "a", 2), ("update_delivery", "a", 2, 1, 1),
          ("put_message_and_delivery", 3, b"", "a", 3)])  # in flight after load(1)'s page: read in full
@example([("put_session", "a"), ("put_message_and_delivery", 1, b"", "a", 1),
          ("put_message_and_delivery", 2, b"", "a", 2),
          ("update_delivery", "a", 1, 1, 1)])  # exactly a page queued beside one in flight: no ids left
def test_batches_and_coalescing_match_the_plain_model(ops: list[tuple]) -> None:  # type: ignore[type-arg]
    """Whatever the operations and wherever the batches are cut, a restarted SQLite store holds
    exactly what the memory engine holds after the same operations (spec README decision 4;
    coalescing must never change the stored state)."""
    model = MemoryStore()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "m.db")
        store = SQLiteStore(path, run_now, synchronous="NORMAL")
        held = writer_held(store)
        held.__enter__()
        for op in ops:
            if op[0] == "cut":
                held.__exit__(None, None, None)
                held = writer_held(store)
                held.__enter__()
                continue
            apply(store, op)
            apply(model, op)
        held.__exit__(None, None, None)
        store.close()
        restarted = SQLiteStore(path, run_now, synchronous="NORMAL")
        try:
            full = restarted.load()
            assert full == model.load()
            assert_paged_load_covers(restarted, restarted.load(1), full)
        finally:
            restarted.close()


def assert_paged_load_covers(store: SQLiteStore, paged: Snapshot, full: Snapshot) -> None:
    """``load(page)`` (issue 16, row 9) holds the same state: each delivery in full or in a
    tail left unlisted, which ``store.list_queued`` lists (queued, in seq order, as many as it
    counts, each chunk's ids within its range), and every message but those only a tail may
    refer to (the tail's own, and orphans within a chunk's range: swept once it is listed)."""
    listed: dict[str, list[tuple[int, int]]] = {}
    for client_id, tail in paged.unlisted.items():
        rows = store.list_queued(client_id, tail.after, tail.through, tail.count + 1)
        assert tail.count == len(rows) > 0 and rows == sorted(rows)
        starts = [tail.after] + [end for end, _, _ in tail.chunks]
        for (end, low, high), first in zip(tail.chunks, starts, strict=False):
            ids = [m for seq, m in rows if first < seq <= end]
            assert ids and (low, high) == (min(ids), max(ids))
        assert all(tail.after < seq <= tail.chunks[-1][0] for seq, _ in rows)
        listed[client_id] = rows
    every = sorted([(d.client_id, d.seq, d.msg_id) for d in paged.deliveries]
                   + [(c, seq, m) for c, rows in listed.items() for seq, m in rows])
    assert every == sorted((d.client_id, d.seq, d.msg_id) for d in full.deliveries)
    tail_rows = {(c, seq) for c, rows in listed.items() for seq, _ in rows}
    assert all(d.state == QUEUED for d in full.deliveries if (d.client_id, d.seq) in tail_rows)
    assert [d for d in full.deliveries if d in paged.deliveries] == paged.deliveries
    read = {d.msg_id for d in paged.deliveries} | set(full.retained.values()) | {
        i.msg_id for i in full.inbound} | {s.will_msg_id for s in full.sessions.values()}
    kept = [(low, high) for tail in paged.unlisted.values() for _, low, high in tail.chunks]
    assert paged.messages == {k: v for k, v in full.messages.items()
                              if k in read or not any(low <= k <= high for low, high in kept)}
    assert (paged.sessions, paged.subscriptions, paged.inbound, paged.retained) == (
        full.sessions, full.subscriptions, full.inbound, full.retained)


def test_reading_back_committed_deliveries_does_not_wait_for_other_pending_work(tmp_path: Path) -> None:
    """A backlog whose rows are all committed (restored at start) is read without a flush:
    issue 16, row 9, where waiting for a commit per page stalled the broker's event loop.
    Rows still pending are read after a flush (test_store_records: read_deliveries)."""
    store = SQLiteStore(str(tmp_path / "r.db"), run_now)
    for i in range(1, 4):
        store.put_message(StoredMessage(i, "t", b"m", 1))
        store.put_delivery(DeliveryRecord("c", i, i, 1))
    store.flush()
    fired: list[int] = []
    with writer_held(store):
        store.delete_message(99)  # pending work that does not touch the rows read
        store.on_durable(lambda: fired.append(1))
        page = store.read_deliveries("c", 0, 10)
        assert fired == []  # read while the batch still waits for its commit
    assert [rec.seq for rec, _ in page] == [1, 2, 3]
    store.flush()
    assert fired == [1]
    store.close()


@pytest.mark.parametrize("spread", [1, 2], ids=["backlog-in-one-run", "backlog-between-others"])
def test_a_paged_load_finds_the_orphans_beside_a_backlog(tmp_path: Path, spread: int) -> None:
    """Restore deletes orphan messages (docs/architecture.md, persist_read): a paged load
    (issue 16, row 9) must read those outside the ids its unlisted tail may refer to, whether
    the backlog's messages run in one range of ids or between another session's, and with a
    delivery whose message is gone beside them (those inside wait for the broker's sweep:
    tests/broker/test_broker_restart_backlog.py)."""
    store = SQLiteStore(str(tmp_path / "p.db"), run_now)
    store.put_session(SessionRecord("b", 5, 10))
    store.put_session(SessionRecord("a", 5, 10))
    msg_id = 0
    for seq in range(1, 2_500):
        for client_id in ("b", "a")[:spread]:
            msg_id += 1
            store.put_message_and_delivery(StoredMessage(msg_id, "t", b"m", 1),
                                           DeliveryRecord(client_id, msg_id, msg_id, 1))
        if client_id == "a" and seq > 3:  # a's queue is short: read in full, between b's backlog
            store.delete_deliveries("a", [(msg_id, msg_id)])
    store.delete_message(2_001)  # b's delivery of 2,001, in its backlog, is left without its message
    store.put_message(StoredMessage(msg_id + 1, "t", b"orphan", 1))
    store.close()
    restarted = SQLiteStore(str(tmp_path / "p.db"), run_now)
    try:
        full = restarted.load()
        paged = restarted.load(10)
        assert paged.unlisted["b"], "the backlog was not paged"
        assert msg_id + 1 in paged.messages
        assert_paged_load_covers(restarted, paged, full)
    finally:
        restarted.close()
