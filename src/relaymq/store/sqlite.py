"""The SQLite engine: WAL, one fsync per batch, acknowledgements only after the commit.

Why this shape (spec README decision 4; mqtt.md item 6; design guide "Durable before
acknowledged, in batches"):

* ``put_*``/``delete_*`` run in the broker's thread and only append an operation (a prepared
  statement and a row of plain values built by :mod:`.serialize`) to the pending batch: no SQL,
  no I/O, so the event loop never waits for the disk.
* One writer thread owns the connection. It sleeps on a ``threading.Condition`` until something
  is pending, takes *everything* pending, applies it in submission order in one transaction,
  commits (one fsync with ``synchronous=FULL``), then hands every ``on_durable`` callback that was
  registered before it took the batch to ``notify`` in one call (the server passes
  ``loop.call_soon_threadsafe``: one wake-up of the event loop per commit). While it commits,
  the next batch fills up: the more load, the more work each fsync covers (group commit).
* Work that is undone before its batch is taken never reaches the database: a QoS 1 subscriber
  online usually acknowledges before the batch commits, so the message and delivery rows it
  created and deleted are dropped from the batch (see :class:`_Batch`).
* ``synchronous="FULL"`` (default) fsyncs the WAL on every commit: an acknowledged message
  survives a power cut. ``"NORMAL"`` fsyncs only at checkpoints: an acknowledged message still
  survives the *process* dying (the WAL write happened before the callback), but the last batches
  may be lost if the machine loses power. Choose it only if that is acceptable. ``"OFF"`` is
  refused: it may corrupt the file on power loss.
* A failed commit (disk full, I/O error) is logged on logger ``relaymq.store``; the store then
  refuses every call with StoreError and never runs another ``on_durable`` callback, so no
  acknowledgement is ever sent for data that was not stored. ``failed`` holds the cause.

The schema is versioned with ``PRAGMA user_version`` and marked with ``PRAGMA application_id``;
a file written by a newer relaymq, or a database that is not a relaymq store, is refused.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from functools import partial
from typing import Any, Callable

from . import serialize as ser
from .sqlite_file import SYNCHRONOUS_MODES, DatabaseFileError, open_database
from .base import (
    DeliveryRecord,
    InboundRecord,
    SessionRecord,
    Snapshot,
    Store,
    StoredMessage,
    StoreError,
    SubscriptionRecord,
)

Notify = Callable[[Callable[[], None]], None]

log = logging.getLogger("relaymq.store")

SCHEMA_VERSION = 2
APPLICATION_ID = 0x524D5131  # "RMQ1": tells a relaymq store from any other SQLite file

# Statements applied by version; a file at version N gets the steps N+1..SCHEMA_VERSION.
_MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE TABLE messages (msg_id INTEGER PRIMARY KEY, topic TEXT, payload BLOB, qos INTEGER,"
        " retain INTEGER, properties TEXT, expiry_at REAL, created_at REAL)",
        "CREATE TABLE sessions (client_id TEXT PRIMARY KEY, protocol_level INTEGER,"
        " expiry_interval INTEGER, disconnected_at REAL, username TEXT) WITHOUT ROWID",
        "CREATE TABLE subscriptions (client_id TEXT, topic_filter TEXT, qos INTEGER, no_local INTEGER,"
        " retain_as_published INTEGER, retain_handling INTEGER, subscription_id INTEGER,"
        " PRIMARY KEY (client_id, topic_filter)) WITHOUT ROWID",
        "CREATE TABLE deliveries (client_id TEXT, seq INTEGER, msg_id INTEGER, qos INTEGER,"
        " retain INTEGER, packet_id INTEGER, state INTEGER, subscription_ids TEXT,"
        " PRIMARY KEY (client_id, seq)) WITHOUT ROWID",
        "CREATE TABLE inbound (client_id TEXT, packet_id INTEGER, msg_id INTEGER,"
        " PRIMARY KEY (client_id, packet_id)) WITHOUT ROWID",
        "CREATE TABLE retained (topic TEXT PRIMARY KEY, msg_id INTEGER) WITHOUT ROWID",
        # High-water marks of ids ever submitted, written in the same transaction as the rows,
        # so numbering never goes back even when every row with a high id has been deleted.
        "CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER) WITHOUT ROWID",
    ),
    # 2: a subscription's content filter (relaymq-filter); a delayed will waiting with its session.
    2: (
        "ALTER TABLE subscriptions ADD COLUMN content_filter TEXT",
        "ALTER TABLE sessions ADD COLUMN will_msg_id INTEGER",
        "ALTER TABLE sessions ADD COLUMN will_at REAL",
    ),
}

_PUT_MESSAGE = "INSERT OR REPLACE INTO messages VALUES (?,?,?,?,?,?,?,?)"
_DELETE_MESSAGE = "DELETE FROM messages WHERE msg_id = ?"
_PUT_SESSION = "INSERT OR REPLACE INTO sessions VALUES (?,?,?,?,?,?,?)"
_DELETE_SESSION = "DELETE FROM sessions WHERE client_id = ?"
_PUT_SUBSCRIPTION = "INSERT OR REPLACE INTO subscriptions VALUES (?,?,?,?,?,?,?,?)"
_DELETE_SUBSCRIPTION = "DELETE FROM subscriptions WHERE client_id = ? AND topic_filter = ?"
_DELETE_CLIENT_SUBSCRIPTIONS = "DELETE FROM subscriptions WHERE client_id = ?"
_PUT_DELIVERY = "INSERT OR REPLACE INTO deliveries VALUES (?,?,?,?,?,?,?,?)"
_UPDATE_DELIVERY = "UPDATE deliveries SET packet_id = ?, state = ? WHERE client_id = ? AND seq = ?"
_DELETE_DELIVERY = "DELETE FROM deliveries WHERE client_id = ? AND seq = ?"
_DELETE_CLIENT_DELIVERIES = "DELETE FROM deliveries WHERE client_id = ?"
_PUT_INBOUND = "INSERT OR REPLACE INTO inbound VALUES (?,?,?)"
_DELETE_INBOUND = "DELETE FROM inbound WHERE client_id = ? AND packet_id = ?"
_DELETE_CLIENT_INBOUND = "DELETE FROM inbound WHERE client_id = ?"
_PUT_RETAINED = "INSERT OR REPLACE INTO retained VALUES (?,?)"
_DELETE_RETAINED = "DELETE FROM retained WHERE topic = ?"
_PUT_META = "INSERT OR REPLACE INTO meta VALUES (?,?)"

Op = tuple[str, tuple[Any, ...]]


class _Batch:
    """The operations submitted since the writer last took a batch, with what may be coalesced.

    ``index`` maps a message or delivery key to the position of the latest operation on it in
    this batch. Any later operation on that key either folds into that one (an update into a
    pending put or update) or cancels it (a delete). Cancelling is safe because nothing else in
    between touched the key: every operation on the key moves or removes its index entry, and
    ``delete_session`` clears the whole index (it touches keys it does not name).

    A put is *fresh* when its id is above every id ever submitted (ids only grow): no row with
    that key can exist yet, so a delete of it in the same batch needs no DELETE at all.
    """

    __slots__ = ("ops", "callbacks", "index", "coalesced")

    def __init__(self) -> None:
        self.ops: list[Op | None] = []
        self.callbacks: list[Callable[[], None]] = []
        self.index: dict[tuple[Any, ...], tuple[bool, int, bool]] = {}  # key -> (is_put, pos, fresh)
        self.coalesced = 0

    def __bool__(self) -> bool:
        return bool(self.ops or self.callbacks)

    def put(self, key: tuple[Any, ...], op: Op, fresh: bool) -> None:
        self.index[key] = (True, len(self.ops), fresh)
        self.ops.append(op)

    def update_delivery(self, key: tuple[str, str, int], packet_id: int | None, state: int) -> None:
        """Fold into a pending put or update of the same delivery, else append an UPDATE."""
        update: Op = (_UPDATE_DELIVERY, (packet_id, state, key[1], key[2]))
        entry = self.index.get(key)
        if entry is None:
            self.index[key] = (False, len(self.ops), False)
            self.ops.append(update)
            return
        is_put, pos, _ = entry
        if is_put:
            sql, row = self.ops[pos]  # type: ignore[misc]
            self.ops[pos] = (sql, ser.updated_delivery_row(row, packet_id, state))  # type: ignore[arg-type]
        else:
            self.ops[pos] = update
        self.coalesced += 1

    def delete(self, key: tuple[Any, ...], op: Op) -> None:
        entry = self.index.pop(key, None)
        if entry is not None:
            is_put, pos, fresh = entry
            self.ops[pos] = None
            self.coalesced += 1
            if is_put and fresh:
                self.coalesced += 1  # the DELETE itself is not needed either
                return
        self.ops.append(op)

    def barrier(self, ops: list[Op]) -> None:
        """Operations that touch keys they do not name: nothing before them may fold into later ones."""
        self.index.clear()
        self.ops.extend(ops)


class SQLiteStore(Store):
    """A Store in one SQLite file, written by a dedicated thread in group-committed batches."""

    def __init__(
        self,
        path: str,
        notify: Notify,
        synchronous: str = "FULL",
        commit_delay: float = 0.0,
    ) -> None:
        mode = synchronous.upper()
        if mode not in SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, not {synchronous!r}")
        if commit_delay < 0:
            raise ValueError(f"commit_delay must be >= 0, not {commit_delay!r}")
        self.path = path
        self._notify = notify
        self._commit_delay = commit_delay
        self._conn = _open(path, mode)
        try:
            marks = _read_marks(self._conn)
        except sqlite3.Error as exc:
            self._conn.close()
            raise StoreError(f"cannot read store {path!r}: {exc}") from exc
        self._max_msg_id, self._max_seq = marks
        self._written_marks = marks

        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  # the writer waits here for a batch
        self._done = threading.Condition(self._lock)  # flush() waits here for a batch number
        self._batch = _Batch()
        self._batch_no = 1  # the number the pending batch will get when the writer takes it
        self._done_no = 0  # the last batch committed and whose callbacks were handed to notify
        self._closing = False
        self._failed: BaseException | None = None
        self._commits = 0
        self._written = 0
        self._coalesced = 0
        self._reader: sqlite3.Connection | None = None  # read_deliveries' own connection
        self._thread = threading.Thread(target=self._run, name="relaymq-store-writer", daemon=True)
        self._thread.start()

    # -- state the broker and the benchmarks may read

    @property
    def failed(self) -> BaseException | None:
        """The error that stopped the writer (the store refuses every call from then on), else None."""
        return self._failed

    @property
    def commit_count(self) -> int:
        """Transactions committed so far: one fsync each with synchronous=FULL."""
        return self._commits

    @property
    def written_count(self) -> int:
        """Statements executed (after coalescing), high-water mark updates included."""
        return self._written

    @property
    def coalesced_count(self) -> int:
        """Statements that never reached the database because a later one in the batch undid them."""
        return self._coalesced + self._batch.coalesced

    # -- submission (the broker's thread)

    def _check(self) -> None:
        """Refuse work once the store failed or is closing. Call with the lock held."""
        if self._failed is not None:
            raise StoreError(f"store {self.path!r} failed: {self._failed}") from self._failed
        if self._closing:
            raise StoreError(f"store {self.path!r} is closed")

    def _ready(self) -> _Batch:
        """The batch to add a write to, once the store is known usable; wakes the writer if it
        was empty, and counts the write (``submitted``).

        Call with the lock held, just before adding to the batch.
        """
        self._check()
        self.submitted += 1
        if not self._batch:
            self._work.notify()
        return self._batch

    def _submit(self, op: Op) -> None:
        self._ready().ops.append(op)

    def put_message(self, message: StoredMessage) -> None:
        row = ser.message_row(message)
        with self._lock:
            batch = self._ready()
            fresh = message.msg_id > self._max_msg_id
            if fresh:
                self._max_msg_id = message.msg_id
            batch.put(("m", message.msg_id), (_PUT_MESSAGE, row), fresh)

    def delete_message(self, msg_id: int) -> None:
        with self._lock:
            self._ready().delete(("m", msg_id), (_DELETE_MESSAGE, (msg_id,)))

    def put_session(self, record: SessionRecord) -> None:
        row = ser.session_row(record)
        with self._lock:
            self._submit((_PUT_SESSION, row))

    def delete_session(self, client_id: str) -> None:
        key = (client_id,)
        with self._lock:
            self._ready().barrier([
                (_DELETE_SESSION, key),
                (_DELETE_CLIENT_SUBSCRIPTIONS, key),
                (_DELETE_CLIENT_DELIVERIES, key),
                (_DELETE_CLIENT_INBOUND, key),
            ])

    def put_subscription(self, record: SubscriptionRecord) -> None:
        row = ser.subscription_row(record)
        with self._lock:
            self._submit((_PUT_SUBSCRIPTION, row))

    def delete_subscription(self, client_id: str, topic_filter: str) -> None:
        with self._lock:
            self._submit((_DELETE_SUBSCRIPTION, (client_id, topic_filter)))

    def put_delivery(self, record: DeliveryRecord) -> None:
        row = ser.delivery_row(record)
        with self._lock:
            batch = self._ready()
            fresh = record.seq > self._max_seq
            if fresh:
                self._max_seq = record.seq
            batch.put(("d", record.client_id, record.seq), (_PUT_DELIVERY, row), fresh)

    def update_delivery(self, client_id: str, seq: int, packet_id: int | None, state: int) -> None:
        with self._lock:
            self._ready().update_delivery(("d", client_id, seq), packet_id, state)

    def delete_delivery(self, client_id: str, seq: int) -> None:
        with self._lock:
            self._ready().delete(("d", client_id, seq), (_DELETE_DELIVERY, (client_id, seq)))

    def read_deliveries(self, client_id: str, after_seq: int,
                        limit: int) -> list[tuple[DeliveryRecord, StoredMessage]]:
        """Flushes first (the rows may still be in a pending batch), then reads on a connection of
        the caller's own, kept open: called only when a session's in-memory queue runs low."""
        self.flush()
        if self._reader is None:
            self._reader = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            rows = self._reader.execute(
                "SELECT d.client_id, d.seq, d.msg_id, d.qos, d.retain, d.packet_id, d.state,"
                " d.subscription_ids, m.* FROM deliveries d JOIN messages m ON m.msg_id = d.msg_id"
                " WHERE d.client_id = ? AND d.seq > ? ORDER BY d.seq LIMIT ?",
                (client_id, after_seq, limit)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read store {self.path!r}: {exc}") from exc
        return [(ser.delivery_from_row(row[:8]), ser.message_from_row(row[8:])) for row in rows]

    def put_inbound(self, record: InboundRecord) -> None:
        row = ser.inbound_row(record)
        with self._lock:
            self._submit((_PUT_INBOUND, row))

    def delete_inbound(self, client_id: str, packet_id: int) -> None:
        with self._lock:
            self._submit((_DELETE_INBOUND, (client_id, packet_id)))

    def put_retained(self, topic: str, msg_id: int) -> None:
        with self._lock:
            self._submit((_PUT_RETAINED, (topic, msg_id)))

    def delete_retained(self, topic: str) -> None:
        with self._lock:
            self._submit((_DELETE_RETAINED, (topic,)))

    @property
    def notify(self) -> Callable[[Callable[[], None]], None]:
        """How durable-callbacks are handed back to the owner's thread."""
        return self._notify

    def on_durable(self, callback: Callable[[], None]) -> None:
        """Queue ``callback`` behind everything submitted so far; it goes to ``notify`` after the commit.

        With nothing pending the writer still passes it through (after any batch in flight), so
        callbacks always reach ``notify`` in the order they were registered.
        """
        with self._lock:
            self._check()
            batch = self._batch
            if not batch:
                self._work.notify()
            batch.callbacks.append(callback)

    def flush(self) -> None:
        """Block until everything submitted is committed and its callbacks handed to ``notify``."""
        if threading.current_thread() is self._thread:
            raise StoreError("flush() called on the store's writer thread: notify must not run callbacks that flush")
        with self._lock:
            self._check()
            target = self._batch_no if self._batch else self._batch_no - 1
            while self._done_no < target and self._failed is None:
                self._done.wait()
            self._check()

    def close(self) -> None:
        """Commit what is pending, stop the writer, close the file; raise StoreError if it had failed.

        Closing twice is harmless; every other call after close raises StoreError.
        """
        if threading.current_thread() is self._thread:
            raise StoreError("close() called on the store's writer thread")
        with self._lock:
            already = self._closing
            self._closing = True
            self._work.notify()
        if already:
            return
        self._thread.join()
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._failed is not None:
            raise StoreError(f"store {self.path!r} failed: {self._failed}") from self._failed

    def load(self) -> Snapshot:
        """Everything committed, read through a connection of its own after a flush."""
        self.flush()
        try:
            conn = sqlite3.connect(self.path, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open store {self.path!r}: {exc}") from exc
        try:
            conn.execute("BEGIN")
            return _read_snapshot(conn)
        except (sqlite3.Error, ValueError, TypeError) as exc:
            raise StoreError(f"cannot read store {self.path!r}: {exc}") from exc
        finally:
            conn.close()

    # -- the writer thread

    def _run(self) -> None:
        try:
            while True:
                with self._lock:
                    while not self._batch and not self._closing:
                        self._work.wait()
                    if not self._batch:
                        return  # closing, and everything is written
                if self._commit_delay and not self._closing:
                    time.sleep(self._commit_delay)  # let more work join this batch
                with self._lock:
                    batch, self._batch = self._batch, _Batch()
                    number = self._batch_no
                    self._batch_no += 1
                    marks = (self._max_msg_id, self._max_seq)
                self._coalesced += batch.coalesced
                try:
                    self._commit(batch.ops, marks)
                except BaseException as exc:
                    self._fail(exc, len(batch.callbacks))
                    return
                self._hand_over(batch.callbacks)
                with self._lock:
                    self._done_no = number
                    self._done.notify_all()
        finally:
            self._conn.close()

    def _commit(self, ops: list[Op | None], marks: tuple[int, int]) -> None:
        """Apply ``ops`` in order in one transaction; consecutive same statements go in one executemany."""
        statements: list[tuple[str, list[tuple[Any, ...]]]] = []
        for op in ops:
            if op is None:
                continue
            sql, args = op
            if statements and statements[-1][0] is sql:
                statements[-1][1].append(args)
            else:
                statements.append((sql, [args]))
        if marks != self._written_marks:
            statements.append((_PUT_META, [("max_msg_id", marks[0]), ("max_seq", marks[1])]))
        if not statements:
            return  # only callbacks: everything before them is already committed
        conn = self._conn
        try:
            conn.execute("BEGIN")
            for sql, rows in statements:
                conn.executemany(sql, rows)
            conn.execute("COMMIT")
        except BaseException:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise
        self._written_marks = marks
        self._commits += 1
        self._written += sum(len(rows) for _, rows in statements)

    def _hand_over(self, callbacks: list[Callable[[], None]]) -> None:
        """Give a batch's callbacks to ``notify`` in one call (one wake-up of the event loop
        for the whole batch, not one per acknowledgement); a single one goes as it is."""
        if not callbacks:
            return
        try:
            self._notify(callbacks[0] if len(callbacks) == 1 else partial(_run_in_order, callbacks, self.path))
        except Exception:
            log.exception("store %r: notify failed to take %d on_durable callback(s)", self.path, len(callbacks))

    def _fail(self, exc: BaseException, withheld: int) -> None:
        """Stop for good: no callback of this or any later batch may run (their data is not stored)."""
        with self._lock:
            self._failed = exc
            withheld += len(self._batch.callbacks)
            self._batch = _Batch()
            self._done.notify_all()
        log.error(
            "store %r: commit failed, %d acknowledgement(s) withheld; the store refuses all further work: %s",
            self.path, withheld, exc, exc_info=exc,
        )


def _run_in_order(callbacks: list[Callable[[], None]], path: str) -> None:
    """Run a batch's on_durable callbacks in registration order (in notify's thread); one
    that raises is logged and the others still run, as separate loop callbacks would."""
    for callback in callbacks:
        try:
            callback()
        except Exception:
            log.exception("store %r: an on_durable callback failed", path)


def _open(path: str, synchronous: str) -> sqlite3.Connection:
    """Connect, check this is a relaymq store we understand, bring its schema up to date."""
    try:
        return open_database(path, application_id=APPLICATION_ID, schema_version=SCHEMA_VERSION,
                             migrations=_MIGRATIONS, synchronous=synchronous, what="relaymq store")
    except DatabaseFileError as exc:
        raise StoreError(str(exc)) from exc


def _read_marks(conn: sqlite3.Connection) -> tuple[int, int]:
    """The highest msg_id and seq ever submitted (meta is written with the rows, so it covers them)."""
    meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
    return int(meta.get("max_msg_id", 0)), int(meta.get("max_seq", 0))


def _read_snapshot(conn: sqlite3.Connection) -> Snapshot:
    """Every table, in the order the memory engine reports it too."""
    max_msg_id, max_seq = _read_marks(conn)
    return Snapshot(
        messages={
            row[0]: ser.message_from_row(row)
            for row in conn.execute("SELECT * FROM messages ORDER BY msg_id")
        },
        sessions={
            row[0]: ser.session_from_row(row)
            for row in conn.execute("SELECT * FROM sessions ORDER BY client_id")
        },
        subscriptions=[
            ser.subscription_from_row(row)
            for row in conn.execute("SELECT * FROM subscriptions ORDER BY client_id, topic_filter")
        ],
        deliveries=[
            ser.delivery_from_row(row)
            for row in conn.execute("SELECT * FROM deliveries ORDER BY seq, client_id")
        ],
        inbound=[
            ser.inbound_from_row(row)
            for row in conn.execute("SELECT * FROM inbound ORDER BY client_id, packet_id")
        ],
        retained=dict(conn.execute("SELECT topic, msg_id FROM retained ORDER BY topic")),
        next_msg_id=max_msg_id + 1,
        next_seq=max_seq + 1,
    )
