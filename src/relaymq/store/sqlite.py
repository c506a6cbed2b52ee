"""The MQTT broker's part of the storage engine: sessions, subscriptions, deliveries, inbound
QoS 2 state (columns of its message's row) and retained messages, in the broker's database
(:mod:`relaymq.store.engine`).

Why this shape (spec README decision 4; mqtt.md item 6; design guide "Durable before
acknowledged, in batches"):

* ``put_*``/``delete_*`` run in the broker's thread and only submit an operation (a prepared
  statement and a row of plain values built by :mod:`.serialize`) to the engine's pending batch:
  no SQL, no I/O, so the event loop never waits for the disk.
* The engine's one writer thread commits everything pending in one transaction, the other
  parts' work (queue puts, archive entries) included, and then runs the ``on_durable``
  callbacks registered before it took the batch (group commit).
* Work that is undone before its batch is taken never reaches the database: a QoS 1 subscriber
  online usually acknowledges before the batch commits, so the message and delivery rows it
  created and deleted are dropped from the batch (keys ``("m", msg_id)`` and
  ``("d", client_id, seq)``; :class:`relaymq.store.batch.Batch`). The statements and what each
  submission does to the batch are in :mod:`.sqlite_ops` (compiled: issue 16).
* ``synchronous="FULL"`` (default) fsyncs the WAL on every commit: an acknowledged message
  survives a power cut. ``"NORMAL"`` fsyncs only at checkpoints: an acknowledged message still
  survives the *process* dying (the WAL write happened before the callback), but the last batches
  may be lost if the machine loses power. Choose it only if that is acceptable. ``"OFF"`` is
  refused: it may corrupt the file on power loss.
* A failed commit (disk full, I/O error) stops the engine: every call raises StoreError and no
  ``on_durable`` callback runs again, so no acknowledgement is ever sent for data that was not
  stored. ``failed`` holds the cause.
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from functools import partial
from collections.abc import Callable
from typing import Any

from . import serialize as ser
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
from .batch import Batch
from .engine import SCHEMA_VERSION as ENGINE_SCHEMA_VERSION
from .engine import Engine, Notify
from .sqlite_load import LIST_QUEUED, MESSAGE_IDS, read_marks, read_snapshot
from .sqlite_ops import (
    DELETE_CLIENT_DELIVERIES, DELETE_CLIENT_SUBSCRIPTIONS, DELETE_DELIVERY, DELETE_MESSAGE, DELETE_RETAINED,
    DELETE_SESSION, DELETE_SUBSCRIPTION, PUT_DELIVERY, PUT_MESSAGE, PUT_META, PUT_RETAINED, PUT_SESSION,
    PUT_SUBSCRIPTION, RELEASE_CLIENT_INBOUND, UPDATE_DELIVERY, delete_rows, fold_delivery, mark_released_rows,
    put_both, release_rows, update_rows,
)

# The broker's tables are versions 1 and 2 of the engine's schema (re-exported for callers).
SCHEMA_VERSION = ENGINE_SCHEMA_VERSION


class SQLiteStore(Store):
    """The broker's Store on an :class:`Engine` (its own, or one shared with the other parts)."""

    def __init__(
        self,
        path: str,
        notify: Notify | None = None,
        synchronous: str = "FULL",
        commit_delay: float = 0.0,
        *,
        engine: Engine | None = None,
    ) -> None:
        self._owns_engine = engine is None
        if engine is None:
            engine = Engine(path, notify, synchronous, commit_delay, what="relaymq store")
        self.engine = engine
        self.path = engine.path
        self._notify = engine.notify
        try:
            conn = engine.connect()
            try:
                marks = read_marks(conn)
            finally:
                conn.close()
        except (sqlite3.Error, StoreError) as exc:
            if self._owns_engine:
                engine.close()
            raise StoreError(f"cannot read store {self.path!r}: {exc}") from exc
        self._max_msg_id, self._max_seq = marks
        self._written_marks = marks
        #: Every delivery put with a seq up to this is committed (read_deliveries need not flush).
        self._committed_seq = marks[1]
        self._reader: sqlite3.Connection | None = None  # read_deliveries' (and _read's) own connection
        engine.taking.append(self._marks)

    # -- state the broker and the benchmarks may read

    @property
    def submitted(self) -> int:  # type: ignore[override]
        return self.engine.submitted

    @property
    def failed(self) -> BaseException | None:
        """The error that stopped the writer (the store refuses every call from then on), else None."""
        return self.engine.failed

    @property
    def write_error(self) -> BaseException | None:
        """The write error being retried (disk full...), None while commits succeed (engine.py)."""
        return self.engine.write_error

    @property
    def write_retry_count(self) -> int:
        """Commits tried again after a write error, since start."""
        return self.engine.write_retries

    @property
    def write_outage_count(self) -> int:
        """Times the store stopped writing (a write error) and started again, since start."""
        return self.engine.write_outages

    @property
    def commit_count(self) -> int:
        """Transactions committed so far: one fsync each with synchronous=FULL."""
        return self.engine.commits

    @property
    def written_count(self) -> int:
        """Statements executed (after coalescing), high-water mark updates included."""
        return self.engine.written

    @property
    def coalesced_count(self) -> int:
        """Statements that never reached the database because a later one in the batch undid them."""
        return self.engine.coalesced

    def unit(self) -> AbstractContextManager[None]:
        return self.engine.unit()

    def _marks(self, batch: Batch) -> None:
        """When the writer takes a batch: the high-water marks of the ids submitted so far."""
        marks = (self._max_msg_id, self._max_seq)
        if marks != self._written_marks:
            self._written_marks = marks
            batch.afterwards["broker.max_msg_id"] = (PUT_META, ("max_msg_id", marks[0]))
            batch.afterwards["broker.max_seq"] = (PUT_META, ("max_seq", marks[1]))
        if marks[1] > self._committed_seq:
            batch.commits.append(partial(self._now_committed, marks[1]))

    def _now_committed(self, seq: int, error: BaseException | None) -> None:
        """The writer committed a batch taken when deliveries up to ``seq`` were submitted."""
        if error is None:
            self._committed_seq = seq

    # -- submission (the broker's thread)

    def _fresh_message(self, msg_id: int) -> bool:
        """Is ``msg_id`` above every id submitted so far (its row cannot exist yet)? It is the
        high-water mark from now on."""
        if msg_id > self._max_msg_id:
            self._max_msg_id = msg_id
            return True
        return False

    def _fresh_delivery(self, seq: int) -> bool:
        """As ``_fresh_message``, for a delivery's seq."""
        if seq > self._max_seq:
            self._max_seq = seq
            return True
        return False

    def put_message(self, message: StoredMessage) -> None:
        self.engine.submit(Batch.put, ("m", message.msg_id), (PUT_MESSAGE, ser.message_row(message)),
                           self._fresh_message(message.msg_id))

    def delete_message(self, msg_id: int) -> None:
        self.engine.submit(Batch.delete, ("m", msg_id), (DELETE_MESSAGE, (msg_id,)))

    def put_session(self, record: SessionRecord) -> None:
        self.engine.append([(PUT_SESSION, ser.session_row(record))])

    def delete_session(self, client_id: str) -> None:
        key = (client_id,)
        self.engine.submit(Batch.barrier, [
            (DELETE_SESSION, key),
            (DELETE_CLIENT_SUBSCRIPTIONS, key),
            (DELETE_CLIENT_DELIVERIES, key),
            (RELEASE_CLIENT_INBOUND, key),
        ])

    def put_subscription(self, record: SubscriptionRecord) -> None:
        self.engine.append([(PUT_SUBSCRIPTION, ser.subscription_row(record))])

    def delete_subscription(self, client_id: str, topic_filter: str) -> None:
        self.engine.append([(DELETE_SUBSCRIPTION, (client_id, topic_filter))])

    def put_delivery(self, record: DeliveryRecord) -> None:
        self.engine.submit(Batch.put, ("d", record.client_id, record.seq), (PUT_DELIVERY, ser.delivery_row(record)),
                           self._fresh_delivery(record.seq))

    def put_message_and_delivery(self, message: StoredMessage, record: DeliveryRecord) -> None:
        """Both rows in one submission (the engine's lock and unit taken once, not twice)."""
        msg_id, seq = message.msg_id, record.seq
        self.engine.submit(put_both, ("m", msg_id), (PUT_MESSAGE, ser.message_row(message)), self._fresh_message(msg_id),
                           ("d", record.client_id, seq), (PUT_DELIVERY, ser.delivery_row(record)),
                           self._fresh_delivery(seq), writes=2)

    def update_delivery(self, client_id: str, seq: int, packet_id: int | None, state: int) -> None:
        self.engine.submit(Batch.update, ("d", client_id, seq), (UPDATE_DELIVERY, (packet_id, state, client_id, seq)),
                           partial(fold_delivery, packet_id, state))

    def delete_delivery(self, client_id: str, seq: int) -> None:
        self.engine.submit(Batch.delete, ("d", client_id, seq), (DELETE_DELIVERY, (client_id, seq)))

    def update_deliveries(self, client_id: str, rows: list[tuple[int, int | None, int]]) -> None:
        """One submission for a window of updates (base.Store.update_deliveries)."""
        self.engine.submit(update_rows, client_id, rows, writes=len(rows))

    def mark_released(self, client_id: str, seqs: list[int]) -> None:
        """One submission for a read's PUBRECs (base.Store.mark_released): the rows of a batch
        become one ``UPDATE ... WHERE client_id = ? AND seq IN (...)`` (engine._execute_pairs),
        where an update binding each row's packet id was a statement per row."""
        self.engine.submit(mark_released_rows, client_id, seqs, writes=len(seqs))

    def delete_deliveries(self, client_id: str, rows: list[tuple[int, int | None]]) -> None:
        """One submission for a read's acknowledged deliveries (base.Store.delete_deliveries)."""
        self.engine.submit(delete_rows, client_id, rows,
                           writes=len(rows) + sum(msg_id is not None for _, msg_id in rows))

    def read_deliveries(self, client_id: str, after_seq: int,
                        limit: int) -> list[tuple[DeliveryRecord, StoredMessage]]:
        """Flushes first when a delivery put may still be in a pending batch (not when the rows
        were all committed, as a backlog restored at start: issue 16, row 9, where a flush per
        page stalled the event loop for a commit each time), then reads on a connection of the
        caller's own, kept open: called only when a session's in-memory queue runs low."""
        if self._max_seq > self._committed_seq:
            self.engine.flush()
        rows = self._read(
            "SELECT d.client_id, d.seq, d.msg_id, d.qos, d.retain, d.packet_id, d.state,"
            " d.subscription_ids, m.* FROM deliveries d JOIN messages m ON m.msg_id = d.msg_id"
            " WHERE d.client_id = ? AND d.seq > ? ORDER BY d.seq LIMIT ?",
            (client_id, after_seq, limit))
        return [(ser.delivery_from_row(row[:8]), ser.message_from_row(row[8:])) for row in rows]

    def list_queued(self, client_id: str, after_seq: int, through_seq: int, limit: int) -> list[tuple[int, int]]:
        """A ``QueueTail``'s next ids, without a flush: its rows were committed before the load
        that left it, and nothing changes them until they are listed."""
        return self._read(LIST_QUEUED, (client_id, after_seq, through_seq, limit))

    def message_ids(self, low: int, high: int) -> list[int]:
        """After a flush (a message whose delete is pending is not listed: the sweep that asks,
        ``broker.unlisted``, would delete it again), on the reading connection."""
        self.engine.flush()
        return [msg_id for (msg_id,) in self._read(MESSAGE_IDS, (low, high))]

    def _read(self, query: str, args: tuple[object, ...]) -> list[Any]:
        """``query``'s rows on the store's reading connection (opened on first use, kept)."""
        if self._reader is None:
            self._reader = self.engine.connect()
        try:
            return self._reader.execute(query, args).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read store {self.path!r}: {exc}") from exc

    def put_message_and_inbound(self, message: StoredMessage, record: InboundRecord) -> None:
        """One row: the message with its inbound QoS 2 state (schema 6)."""
        msg_id = message.msg_id
        self.engine.submit(Batch.put, ("m", msg_id),
                           (PUT_MESSAGE, ser.message_row(message, record.client_id, record.packet_id)),
                           self._fresh_message(msg_id))

    def delete_inbounds(self, rows: list[tuple[int, bool]]) -> None:
        """One submission for a read's QoS 2 releases (base.Store.delete_inbounds): a row each."""
        self.engine.submit(release_rows, rows, writes=len(rows))

    def put_retained(self, topic: str, msg_id: int) -> None:
        self.engine.append([(PUT_RETAINED, (topic, msg_id))])

    def delete_retained(self, topic: str) -> None:
        self.engine.append([(DELETE_RETAINED, (topic,))])

    @property
    def notify(self) -> Notify:
        """How durable-callbacks are handed back to the owner's thread."""
        return self._notify

    def on_durable(self, callback: Callable[[], None]) -> None:
        """Queue ``callback`` behind everything submitted so far; it goes to ``notify`` after the commit."""
        self.engine.on_durable(callback)

    def flush(self) -> None:
        """Block until everything submitted is committed and its callbacks handed to ``notify``."""
        self.engine.flush()

    def close(self) -> None:
        """Release the store; the engine is closed too when it is the store's own (commits what is
        pending, raises StoreError if it had failed). Closing twice is harmless."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._owns_engine:
            try:
                self.engine.close()  # the last batch still gets its high-water marks
            finally:
                if self._marks in self.engine.taking:
                    self.engine.taking.remove(self._marks)
            return
        if self._marks in self.engine.taking:
            self.engine.taking.remove(self._marks)
            # the marks of what is pending, since the engine goes on without this store
            try:
                self.engine.append([(PUT_META, ("max_msg_id", self._max_msg_id)),
                                    (PUT_META, ("max_seq", self._max_seq))])
            except StoreError:
                pass  # the engine failed or closed: nothing after it was acknowledged either

    def load(self, page: int | None = None) -> Snapshot:
        """Everything committed, read through a connection of its own after a flush; a long
        queue past ``page`` as ids only (sqlite_load.py)."""
        self.engine.flush()
        conn = self.engine.connect()
        try:
            conn.execute("BEGIN")
            return read_snapshot(conn, page)
        except (sqlite3.Error, ValueError, TypeError) as exc:
            raise StoreError(f"cannot read store {self.path!r}: {exc}") from exc
        finally:
            conn.close()
