"""The one storage engine: one SQLite file, one writer thread, one group commit, one way to wait.

Every part of the broker process that keeps state writes through one :class:`Engine`: the MQTT
broker's sessions and deliveries (:mod:`relaymq.store.sqlite`), the queue manager's queues and
messages (:mod:`relaymq.qmgr.sqlite_store`), the pub/sub engine's subscriptions
(:mod:`relaymq.pubsub.state`) and the message log (:mod:`relaymq.pipeline.log`). They share
one database file (``<data_dir>/relaymq.db``), so one transaction covers every copy of a
publication: the deliveries to persistent sessions, the retained message, the puts to queue
subscribers and the archive entries commit together, and the PUBACK that waits for that commit
promises all of them (issue 14; spec README decision 4).

Why one file: SQLite commits that span ATTACHed databases are not atomic in WAL mode, and two
files with two writers would need a recovery protocol between them. One file, one transaction.

How a write travels:

* A part *submits* a change: a function that adds operations (a prepared statement and a row of
  plain values) to the pending :class:`Batch`. No SQL runs and nothing waits: the event loop
  never waits for the disk. Submissions from any thread are applied under one lock, in order.
* A **unit of work** (``with engine.unit():``) collects one thread's submissions and applies
  them to the batch together when it ends, so the writer never commits half of it. The broker
  handles each read of a connection in one unit: a QoS 2 PUBREL's routing (every copy) and the
  removal of its inbound record commit together, so a crash can neither lose nor duplicate it.
  ``after_submit`` callbacks registered in a unit run when it ends, once its operations are in
  the batch: a queue makes a message put in a unit visible to other threads only then, so no
  getter can remove a message (and submit its delete) before the put itself was submitted.
* The writer thread sleeps until something is pending, takes *everything*, applies it in order
  in one transaction, commits (one fsync with ``synchronous=FULL``), then hands the batch's
  ``on_durable`` callbacks to ``notify`` in one call (the server passes
  ``loop.call_soon_threadsafe``: one wake-up of the event loop per commit) and finishes the
  batch's ``on_commit`` callbacks on its own thread (how queue-manager threads wait: a
  :class:`Ticket`). While it commits, the next batch fills: the more load, the more work each
  fsync covers (group commit).
* Work undone before its batch is taken never reaches the database: a message or delivery put
  and deleted within one batch cancels out (:class:`Batch` keys), and a put whose key was never
  submitted before (``fresh``) needs no DELETE either.
* A commit that fails with a write error (disk full, an I/O error, a locked or read-only
  file: ``_RETRYABLE_CODES``, or ``OSError``) is rolled back and tried again, backing off from 50 ms to 2 s, until it
  commits (issue 15 finding 9). Meanwhile ``write_error`` holds the cause, submissions are
  still taken (they wait in the next batch), no callback runs, so no acknowledgement is sent
  for data that is not stored, and ``flush`` raises :class:`StoreUnavailable` rather than wait.
  The log says when writing stopped and when it resumed. Closing while it fails gives up
  after one more try: what was never stored was never acknowledged, so that is a clean stop.
  Any other commit error (a bug, a constraint) stops the engine for good: it refuses every
  submission with StoreError; ``failed`` holds the cause.

One process at a time: the engine holds an exclusive ``flock`` on ``<file>.lock`` (with the
holder's pid in it) for its whole life; a second opener gets :class:`StoreInUse`. The lock goes
with the process (SIGKILL releases it).

The schema of every part is here, versioned with ``PRAGMA user_version`` and marked with
``PRAGMA application_id``. Files written by earlier relaymq versions as a queue-manager store
(``qmgr-<NAME>.db``) or a message log (``archive.sqlite3``) are adopted in place: their tables
keep their data under this schema's names.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import chain
from typing import Any

from . import log_batch
from .commit_latency import CommitLatency
from .base import StoreError, StoreUnavailable
from .batch import Batch, Op
from .sqlite_file import SYNCHRONOUS_MODES, DatabaseFileError, open_database
from .ticket import Ticket

log = logging.getLogger("relaymq.store")

# What it returns is ignored (loop.call_soon_threadsafe returns a Handle).
Notify = Callable[[Callable[[], None]], object]

SCHEMA_VERSION = 6
APPLICATION_ID = 0x524D5131  # "RMQ1": a relaymq database
#: application_id of the files earlier versions kept apart, adopted in place (module docstring).
LEGACY_QMGR_ID = 0x524D5151  # "RMQQ": qmgr-<NAME>.db
LEGACY_LOG_ID = 0x524D514C  # "RMQL": archive.sqlite3
_LEGACY_QMGR_TABLES = ("queues", "messages", "confirmed", "meta")

LOG_COLUMNS = ('topic', 'queue', 'timestamp', 'qos', 'msg_id', 'correl_id', 'msg_type', 'priority', 'persistence', 'expiry', 'format', 'ccsid', 'encoding', 'reply_to_q', 'reply_to_qmgr', 'user_identifier', 'put_appl_name', 'put_date', 'put_time', 'group_id', 'msg_seq_number', 'usr', 'domain', 'body')



def _pack_log_entries(conn: sqlite3.Connection) -> None:
    """Migration 4: the log's entries, one row each until now, become record batches."""
    for sql, args in log_batch.pack_entries(conn, LOG_COLUMNS):
        conn.execute(sql, args)


# Steps applied by version (an SQL statement, or a function of the connection for what SQL
# cannot say); a file at version N gets the steps N+1..SCHEMA_VERSION.
MIGRATIONS: dict[int, tuple[str | Callable[[sqlite3.Connection], None], ...]] = {
    # 1-2: the MQTT broker (relaymq.store.sqlite).
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
    2: (
        "ALTER TABLE subscriptions ADD COLUMN content_filter TEXT",
        "ALTER TABLE sessions ADD COLUMN will_msg_id INTEGER",
        "ALTER TABLE sessions ADD COLUMN will_at REAL",
    ),
    # 3: the other parts join the broker's file (issue 14): the queue manager (qm_*), the
    # pub/sub engine's state (ps_*) and the message log (partitions, entries). IF NOT EXISTS:
    # an adopted file already has some of them.
    3: (
        "CREATE TABLE IF NOT EXISTS qm_queues (owner TEXT, name TEXT, definition TEXT, PRIMARY KEY (owner, name))",
        "CREATE TABLE IF NOT EXISTS qm_messages (uid TEXT PRIMARY KEY, qmgr TEXT, queue TEXT, seq INTEGER,"
        " priority INTEGER, state INTEGER, confirm_id INTEGER, lock_id INTEGER, created_ms INTEGER,"
        " expire_at INTEGER, target_qmgr TEXT, target_queue TEXT, msg_id BLOB, correl_id BLOB, data BLOB)",
        "CREATE TABLE IF NOT EXISTS qm_confirmed (uid TEXT PRIMARY KEY, at_ms INTEGER)",
        "CREATE TABLE IF NOT EXISTS qm_meta (name TEXT PRIMARY KEY, value INTEGER)",
        "CREATE TABLE IF NOT EXISTS ps_subscriptions (key TEXT PRIMARY KEY, record TEXT) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS ps_state (name TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS partitions (name TEXT PRIMARY KEY, first_seq INTEGER NOT NULL,"
        " next_seq INTEGER NOT NULL)",
        # the columns of relaymq.pipeline.record.LogRecord but partition and seq (a test checks)
        "CREATE TABLE IF NOT EXISTS entries (partition TEXT NOT NULL, seq INTEGER NOT NULL, "
        + ", ".join(c + " ANY" for c in LOG_COLUMNS) + ", PRIMARY KEY (partition, seq)) WITHOUT ROWID",
    ),
    # 4: the log keeps its entries as record batches (relaymq.store.log_batch): SQLite's cost
    # per row, not per byte, capped a log of one row per entry. ``entries`` stays, empty: the
    # table a legacy log is imported into before it is packed.
    4: (log_batch.CREATE, _pack_log_entries),
    # 5: the QoS 2 publications of a SCADAInput endpoint whose flow run has committed, written
    # in the run's unit of work (relaymq.flows.releases): exactly once into a flow (issue 14).
    5: ("CREATE TABLE IF NOT EXISTS flow_releases (endpoint TEXT NOT NULL, msg_id INTEGER NOT NULL,"
        " PRIMARY KEY (endpoint, msg_id)) WITHOUT ROWID",),
    # 6: a QoS 2 publication awaiting PUBREL is two columns of its message row, no longer a row
    # of ``inbound`` (issue 16, row 3: one insert and one delete fewer per message). The
    # partial index finds them at start without reading a backlog's messages; an inbound row
    # with no message (a refused publication: nothing to release) is not carried over.
    6: (
        "ALTER TABLE messages ADD COLUMN inbound_client TEXT",
        "ALTER TABLE messages ADD COLUMN inbound_packet_id INTEGER",
        "CREATE INDEX messages_inbound ON messages (inbound_client, inbound_packet_id)"
        " WHERE inbound_client IS NOT NULL",
        # scalar subqueries, not UPDATE ... FROM: that needs SQLite 3.33 (2020), and a Python
        # built against an older system SQLite must still be able to upgrade its database
        "UPDATE messages SET"
        " inbound_client = (SELECT i.client_id FROM inbound i WHERE i.msg_id = messages.msg_id),"
        " inbound_packet_id = (SELECT i.packet_id FROM inbound i WHERE i.msg_id = messages.msg_id)"
        " WHERE msg_id IN (SELECT msg_id FROM inbound)",
        "DROP TABLE inbound",
    ),
}


#: Backing off between two tries of a commit that failed with a write error (seconds).
RETRY_FIRST = 0.05
RETRY_MAX = 2.0


class StoreInUse(StoreError):
    """Another process has the database open; ``holder`` is its pid (as written in the lock)."""

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message)
        self.holder = holder


class _UnitScope:
    """The context manager ``Engine.unit`` returns (one per engine, reused: the units are
    per thread, kept in the engine's thread-local state). Entering and leaving do the work
    themselves rather than call the engine: the broker opens a unit per publication."""

    __slots__ = ("_engine", "_local")

    def __init__(self, engine: Engine, local: threading.local) -> None:
        self._engine = engine
        self._local = local

    def __enter__(self) -> None:
        local = self._local.__dict__
        unit: _Unit | None = local.get("unit")
        if unit is None:
            unit = local["unit"] = _Unit()
        unit.depth += 1

    def __exit__(self, *exc: object) -> None:
        local = self._local.__dict__
        unit: _Unit = local["unit"]
        unit.depth -= 1
        if not unit.depth:
            local["unit"] = None
            self._engine._apply(unit)


class _Unit:
    """One thread's submissions while a unit of work is open (``Engine.unit``): its changes in
    order, and its ``on_durable`` callbacks, which join the batch after the changes (the same
    commit covers all of them, so a callback registered before one of its unit's changes still
    waits for it); ``items``: the lists of :meth:`Engine.submit_item`, by change."""

    __slots__ = ("changes", "callbacks", "afterwards", "depth", "items")

    def __init__(self) -> None:
        self.changes: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
        self.callbacks: list[Callable[[], None]] = []
        self.afterwards: list[Callable[[], None]] = []
        self.depth = 0
        self.items: dict[Callable[..., None], list[Any]] | None = None


class Engine:
    """One SQLite file, written by one thread in group-committed batches (module docstring)."""

    def __init__(self, path: str, notify: Notify | None = None, synchronous: str = "FULL",
                 commit_delay: float = 0.0, what: str = "relaymq database") -> None:
        mode = synchronous.upper()
        if mode not in SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, not {synchronous!r}")
        if commit_delay < 0:
            raise ValueError(f"commit_delay must be >= 0, not {commit_delay!r}")
        self.path = path
        self.what = what
        self._notify: Notify = notify if notify is not None else _call
        self._commit_delay = commit_delay
        directory = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create directory {directory!r}: {exc}") from exc
        self._lock_fd = _take_lock(path, what)
        try:
            self._conn = open_engine_file(path, mode, what)
        except BaseException:
            self._release_lock()
            raise
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  # the writer waits here for a batch
        self._done = threading.Condition(self._lock)  # flush() waits here for a batch number
        self._batch = Batch()
        self._batch_no = 1  # the number the pending batch will get when the writer takes it
        self._done_no = 0  # the last batch committed and whose callbacks were handed over
        self._closing = False
        self._stopping = threading.Event()  # set by close(): a writer backing off wakes at once
        self._failed: BaseException | None = None
        self._abandoned = False  # closed while a write error was being retried (a clean stop)
        #: The write error being retried (module docstring), None while commits succeed.
        self.write_error: BaseException | None = None
        #: Commits tried again after a write error, and write-error episodes, since start.
        self.write_retries = 0
        self.write_outages = 0
        #: Called on the writer thread with the error when commits start failing: how a waiter
        #: that must not wait through an outage (a shutdown) learns of it.
        self.outage_watchers: list[Callable[[BaseException], None]] = []
        self._local = threading.local()
        self._scope = _UnitScope(self, self._local)
        #: Called (lock held) when the writer takes a batch: may add ``batch.afterwards``.
        self.taking: list[Callable[[Batch], None]] = []
        #: Write submissions so far (each put/update/delete a part makes). The broker reads it
        #: before and after handling a publication: when it did not move, the acknowledgement
        #: promises nothing that waits for a commit.
        self.submitted = 0
        self.commits = 0
        self.written = 0
        #: Seconds each commit took (BEGIN to COMMIT), for the metrics endpoint.
        self.commit_latency = CommitLatency()
        self._coalesced = 0
        self._writer = threading.Thread(target=self._run, name="relaymq-store-writer", daemon=True)
        self._writer.start()

    # -- state the parts and the statistics read

    @property
    def failed(self) -> BaseException | None:
        """The error that stopped the writer (every submission is refused from then on), else None."""
        return self._failed

    @property
    def coalesced(self) -> int:
        """Statements that never reached the database because a later one in the batch undid them."""
        return self._coalesced + self._batch.coalesced

    @property
    def batch_number(self) -> int:
        """The number of the batch that submissions join now (it grows each time the writer
        takes one). A waiter whose submissions were made before it read a number may share one
        ``on_commit`` callback with every other waiter that read the same number."""
        return self._batch_no

    @property
    def notify(self) -> Notify:
        return self._notify

    def connect(self) -> sqlite3.Connection:
        """A connection of the caller's own for reading what is committed (autocommit; WAL
        readers never block the writer and never see half a batch)."""
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 10000")
            return conn
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.what} {self.path!r}: {exc}") from exc

    # -- submission (any thread)

    def _check(self) -> None:
        """Refuse work once the engine failed or is closing. Call with the lock held."""
        if self._failed is not None:
            raise StoreError(f"{self.what} {self.path!r} failed: {self._failed}") from self._failed
        if self._closing:
            raise StoreError(f"{self.what} {self.path!r} is closed")

    def submit(self, change: Callable[..., None], *args: Any, writes: int = 1) -> None:
        """Apply ``change(batch, *args)`` to the pending batch, now or (inside a unit) when the
        unit ends; ``writes`` counts toward ``submitted``. (Arguments rather than a closure:
        this is the broker's hot path, a tuple is cheaper than a partial.)"""
        self.submitted += writes
        unit: _Unit | None = self._local.__dict__.get("unit")
        if unit is not None:
            if self._failed is not None:
                with self._lock:
                    self._check()
            unit.changes.append((change, args))
            return
        with self._lock:
            self._check()
            batch = self._batch
            if not batch:
                self._work.notify()
            change(batch, *args)

    def submit_item(self, change: Callable[[Batch, list[Any]], None], item: Any, writes: int = 1) -> None:
        """``submit(change, [item])``, except inside a unit of work: there every item this
        thread submits with the same ``change`` joins one list, and ``change(batch, items)``
        runs once when the unit ends, in the place of the unit's first such item (the
        broker's read of a socket: one change for all its publications' archive entries, not
        one per publication). Equal changes share a list (a bound method of one object is equal to
        itself each time it is made)."""
        unit: _Unit | None = self._local.__dict__.get("unit")
        if unit is None:
            self.submit(change, [item], writes=writes)
            return
        self.submitted += writes
        if self._failed is not None:
            with self._lock:
                self._check()
        lists = unit.items
        if lists is None:
            lists = unit.items = {}
        items = lists.get(change)
        if items is None:
            lists[change] = items = [item]
            unit.changes.append((change, (items,)))
        else:
            items.append(item)

    def append(self, ops: list[Op]) -> None:
        """Operations with nothing to coalesce, in order."""
        self.submit(_extend, ops, writes=len(ops))

    def after_submit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` in this thread once everything this thread submitted so far is in
        the batch: when the current unit ends, or at once outside a unit."""
        unit: _Unit | None = self._local.__dict__.get("unit")
        if unit is None:
            callback()
        else:
            unit.afterwards.append(callback)

    def unit(self) -> _UnitScope:
        """``with engine.unit():`` everything this thread submits inside goes to one batch
        (nestable; the outermost one applies it). The writer never commits part of a unit."""
        return self._scope

    def _apply(self, unit: _Unit) -> None:
        """A unit ended: its changes and callbacks join the batch together, then its
        ``after_submit`` callbacks run (in this thread)."""
        if unit.changes or unit.callbacks:
            with self._lock:
                if self._failed is None and not self._closing:
                    batch = self._batch
                    if not batch:
                        self._work.notify()
                    for change, args in unit.changes:
                        change(batch, *args)
                    batch.callbacks += unit.callbacks
        for callback in unit.afterwards:
            callback()

    def on_durable(self, callback: Callable[[], None]) -> None:
        """Queue ``callback`` behind everything submitted so far (inside a unit: behind the
        unit's operations); it goes to ``notify`` after the commit, never if the commit fails.
        Callbacks reach ``notify`` in the order they were registered."""
        unit: _Unit | None = self._local.__dict__.get("unit")
        if unit is not None and self._failed is None:
            unit.callbacks.append(callback)
            return
        self.submit(_add_callback, callback, writes=0)

    def on_commit(self, callback: Callable[[BaseException | None], None]) -> None:
        """``callback(None)`` on the writer thread once everything submitted so far is durable,
        or ``callback(error)`` if that cannot be (the commit failed, the engine is closed)."""
        try:
            self.submit(_add_commit, callback, writes=0)
        except StoreError as exc:
            callback(exc)

    def ticket(self) -> Ticket:
        """A Ticket that a thread can wait on for everything it submitted so far."""
        ticket = Ticket()
        self.on_commit(ticket.finish)
        return ticket

    def flush(self) -> None:
        """Block until everything submitted (outside an open unit) is committed and its
        callbacks handed over; raise StoreUnavailable instead of waiting while a write error
        is being retried."""
        if threading.current_thread() is self._writer:
            raise StoreError("flush() called on the store's writer thread: notify must not run callbacks that flush")
        with self._lock:
            self._check()
            target = self._batch_no if self._batch else self._batch_no - 1
            while self._done_no < target and self._failed is None and self.write_error is None:
                self._done.wait()
            self._check()
            if self._done_no < target and self.write_error is not None:
                raise StoreUnavailable(f"{self.what} {self.path!r} cannot write, retrying: {self.write_error}")

    def close(self) -> None:
        """Commit what is pending, stop the writer, close the file; raise StoreError if it had failed.

        Closing twice is harmless; every submission after close raises StoreError.
        """
        if threading.current_thread() is self._writer:
            raise StoreError("close() called on the store's writer thread")
        with self._lock:
            already = self._closing
            self._closing = True
            self._work.notify()
        self._stopping.set()
        if already:
            return
        self._writer.join()
        self._release_lock()
        if self._failed is not None and not self._abandoned:
            raise StoreError(f"{self.what} {self.path!r} failed: {self._failed}") from self._failed

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
                    batch, self._batch = self._batch, Batch()
                    number = self._batch_no
                    self._batch_no += 1
                    for hook in self.taking:
                        hook(batch)
                self._coalesced += batch.coalesced
                try:
                    self._commit(batch)
                except BaseException as exc:
                    if not (_retryable(exc) and self._retry(batch, exc)):
                        self._fail(exc, batch)
                        return
                self._hand_over(batch.callbacks)
                for commit in batch.commits:
                    commit(None)
                with self._lock:
                    self._done_no = number
                    self._done.notify_all()
        finally:
            self._conn.close()

    def _commit(self, batch: Batch) -> None:
        """Apply the batch in one transaction, each table's operations in order, the same
        statements on a table in one run (``_runs``)."""
        gathered = (op for build, extra, items in batch.gathered.values() for op in build(items, *extra))
        statements = _runs(chain(batch.ops, gathered))
        for sql, args in batch.afterwards.values():
            statements.append((sql, [args]))
        if not statements:
            return  # only callbacks: everything before them is already committed
        conn = self._conn
        try:
            if conn.in_transaction:  # left open by a failed try whose ROLLBACK failed too
                conn.execute("ROLLBACK")
            started = time.perf_counter()
            conn.execute("BEGIN")
            for sql, rows in statements:
                _execute(conn, sql, rows)
            conn.execute("COMMIT")
        except BaseException:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise
        self.commit_latency.observe(time.perf_counter() - started)
        self.commits += 1
        self.written += sum(len(rows) for _, rows in statements)

    def _hand_over(self, callbacks: list[Callable[[], None]]) -> None:
        """Give a batch's callbacks to ``notify`` in one call (one wake-up of the event loop
        for the whole batch, not one per acknowledgement); a single one goes as it is."""
        if not callbacks:
            return
        try:
            self._notify(callbacks[0] if len(callbacks) == 1 else partial(_run_in_order, callbacks, self.path))
        except Exception:
            log.exception("%s %r: notify failed to take %d on_durable callback(s)", self.what, self.path,
                          len(callbacks))

    def _retry(self, batch: Batch, exc: BaseException) -> bool:
        """Try the failed batch again, backing off, until it commits (True) or the engine is
        closed and one more try failed too (False). Nothing waiting for it runs meanwhile."""
        started = time.monotonic()
        with self._lock:
            self.write_error = exc
            self.write_outages += 1
            waiting = len(batch.callbacks) + len(self._batch.callbacks)
            self._done.notify_all()  # a flush() waiting for this batch raises StoreUnavailable
            watchers = list(self.outage_watchers)
        for watcher in watchers:
            watcher(exc)
        log.error("%s %r: cannot write (%s); %d acknowledgement(s) wait, none is sent until the "
                  "commit succeeds; trying again every %g s at most", self.what, self.path, exc,
                  waiting, RETRY_MAX)
        delay = RETRY_FIRST
        while True:
            closing = self._stopping.wait(delay)
            delay = min(delay * 2, RETRY_MAX)
            try:
                self._commit(batch)
            except BaseException as again:
                self.write_retries += 1
                if closing or not _retryable(again):
                    return False
                with self._lock:
                    self.write_error = again
                continue
            self.write_retries += 1
            with self._lock:
                self.write_error = None
            log.warning("%s %r: writing again after %.1f s; acknowledgements resume", self.what,
                        self.path, time.monotonic() - started)
            return True

    def _fail(self, exc: BaseException, batch: Batch) -> None:
        """Stop for good: no callback of this or any later batch may run (their data is not stored)."""
        with self._lock:
            self._failed = exc
            self._abandoned = self._closing and _retryable(exc)
            self.write_error = None
            pending, self._batch = self._batch, Batch()
            self._done.notify_all()
        withheld = len(batch.callbacks) + len(pending.callbacks)
        for commit in [*batch.commits, *pending.commits]:
            commit(exc)
        if self._abandoned:
            log.error("%s %r: closed while it cannot write (%s): the last %d acknowledgement(s) were "
                      "never sent, their data is not stored", self.what, self.path, exc, withheld)
            return
        log.error(
            "%s %r: commit failed, %d acknowledgement(s) withheld; the store refuses all further work: %s",
            self.what, self.path, withheld, exc, exc_info=exc,
        )

    def _release_lock(self) -> None:
        fd, self._lock_fd = self._lock_fd, -1
        if fd >= 0:
            os.close(fd)  # closing the descriptor releases the flock


#: The one table a batch statement writes (``INSERT [OR ...] INTO t``, ``UPDATE t``,
#: ``DELETE FROM t``), None for a statement that might read another (a sub-select): by SQL text.
_TABLE_RE = re.compile(r"^(?:INSERT(?: OR \w+)? INTO|UPDATE|DELETE FROM) (\w+)(?:[ (]|$)")
_tables: dict[str, str | None] = {}


def _table(sql: str) -> str | None:
    match = _TABLE_RE.match(sql)
    table = match.group(1) if match and "SELECT" not in sql.upper() else None
    _tables[sql] = table
    return table


def _runs(ops: Iterable[Op | None]) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """The statements of a batch's operations, each with its rows: an operation joins the
    latest statement of its table when that is the same SQL, so one table's operations keep
    their order and those on different tables need not. Why: a publication's rows alternate
    between tables (a QoS 2 publisher's read writes a PUBREL's delivery to ``deliveries``, then
    the next PUBLISH's message to ``messages``, and so on), so in arrival order hardly two neighbours share a statement and each row was
    a statement of its own, at several times the writer's CPU of one multi-row statement
    (``_execute``). Rows of different tables commute within the transaction: these
    statements write one table each and read none (no triggers, no foreign keys). One that
    may read another table (``_table`` says None) stays where it is, and nothing after it
    joins a statement before it."""
    statements: list[tuple[str, list[tuple[Any, ...]]]] = []
    latest: dict[str, tuple[str, list[tuple[Any, ...]]]] = {}  # table -> its latest statement
    tables = _tables
    for op in ops:
        if op is None:
            continue
        sql, args = op
        table = tables.get(sql, "")
        if table == "":
            table = _table(sql)
        if table is None:
            statements.append((sql, [args]))
            latest.clear()
            continue
        last = latest.get(table)
        if last is not None and last[0] is sql:
            last[1].append(args)
        else:
            latest[table] = last = (sql, [args])
            statements.append(last)
    return statements


#: Most rows one combined statement carries (and the sizes its statements are prepared for).
_COMBINE_MAX = 64
#: Most bytes of blob values one combined statement binds. SQLite copies every bound value
#: until the statement is reset, so 64 rows of 1 MB payloads would hold 64 MB at once where one
#: row at a time holds 1 MB (tests/interop/test_memory_bounds.py: a stuck subscriber's backlog).
_COMBINE_BYTES = 1 << 20
_INSERT_RE = re.compile(r"^(INSERT(?: OR REPLACE)? INTO \w+(?: \([\w, ]*\))?) VALUES (\(\?(?:,\s*\?)*\))$")
#: A delete by one key column, or an update by it that binds nothing else (a released QoS 2
#: message's inbound columns cleared): the rows become ``... WHERE key IN (...)``.
_KEYED_RE = re.compile(r"^((?:DELETE FROM \w+|UPDATE \w+ SET [^?]+) WHERE \w+) = \?$")
#: A delete by a two-column key (a session's delivery), or an update by it that binds nothing
#: else (a delivery's RELEASED state): the rows that share the first column become
#: ``... AND second IN (...)``.
_KEYED_PAIR_RE = re.compile(r"^((?:DELETE FROM \w+|UPDATE \w+ SET [^?]+) WHERE \w+ = \? AND \w+) = \?$")
_combined: dict[tuple[str, int], str | None] = {}


def _combine(sql: str, count: int) -> str | None:
    """``sql`` for ``count`` rows in one statement (a multi-row INSERT, a DELETE or UPDATE
    ``... WHERE key IN``), or None when it cannot be combined. Why: the sqlite3 module releases the GIL for every step of a
    statement; a batch of many one-row steps hands the GIL back and forth with the event loop
    once per row, which costs more than the rows themselves."""
    key = (sql, count)
    found = _combined.get(key, "")
    if found != "":
        return found
    combined: str | None = None
    match = _INSERT_RE.match(sql)
    if match:
        combined = f"{match.group(1)} VALUES {','.join([match.group(2)] * count)}"
    else:
        match = _KEYED_RE.match(sql)
        if match:
            combined = f"{match.group(1)} IN ({','.join('?' * count)})"
    _combined[key] = combined
    return combined


def _execute(conn: sqlite3.Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
    """Run ``sql`` for each row, in order: as few combined statements as possible."""
    if len(rows) == 1:
        conn.execute(sql, rows[0])
        return
    if _combine(sql, 2) is None:
        if _KEYED_PAIR_RE.match(sql):
            _execute_pairs(conn, sql, rows)
        else:
            conn.executemany(sql, rows)
        return
    for chunk in _chunks(rows):
        if len(chunk) == 1:
            conn.execute(sql, chunk[0])
        else:
            conn.execute(_combine(sql, len(chunk)), [value for row in chunk for value in row])  # type: ignore[arg-type]


def _chunks(rows: list[tuple[Any, ...]]) -> Iterator[list[tuple[Any, ...]]]:
    """``rows`` in runs of at most ``_COMBINE_MAX`` rows and ``_COMBINE_BYTES`` of bytes values
    (a run's first row always goes in, whatever its size). The bytes are counted in the columns
    that hold bytes in the first row: every row of one statement has the same columns."""
    sized = [i for i, value in enumerate(rows[0]) if value.__class__ is bytes]
    if not sized:
        for start in range(0, len(rows), _COMBINE_MAX):
            yield rows[start:start + _COMBINE_MAX]
        return
    start = size = 0
    for i, row in enumerate(rows):
        n = 0
        for column in sized:
            value = row[column]
            if value.__class__ is bytes:
                n += len(value)
        if i > start and (i - start == _COMBINE_MAX or size + n > _COMBINE_BYTES):
            yield rows[start:i]
            start, size = i, 0
        size += n
    yield rows[start:]


def _execute_pairs(conn: sqlite3.Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
    """A delete (or an update that binds only the key) by a two-column key for each row: each
    run of rows with the same first column (one session's deliveries acknowledged in a batch)
    as few ``second IN (...)`` statements as possible (such changes of distinct keys commute,
    so runs need not be consecutive; of one key twice, the second changes nothing)."""
    runs: dict[Any, list[Any]] = {}
    for first, second in rows:
        run = runs.get(first)
        if run is None:
            runs[first] = [second]
        else:
            run.append(second)
    for first, seconds in runs.items():
        for start in range(0, len(seconds), _COMBINE_MAX):
            chunk = seconds[start:start + _COMBINE_MAX]
            if len(chunk) == 1:
                conn.execute(sql, (first, chunk[0]))
            else:
                conn.execute(_combine_pairs(sql, len(chunk)), (first, *chunk))


def _combine_pairs(sql: str, count: int) -> str:
    """``sql`` (``_KEYED_PAIR_RE``) for one first-column value and ``count`` second ones."""
    key = (sql, -count)  # negative: not one of ``_combine``'s keys
    found = _combined.get(key)
    if found is None:
        match = _KEYED_PAIR_RE.match(sql)
        assert match is not None
        found = _combined[key] = f"{match.group(1)} IN ({','.join('?' * count)})"
    return found


#: SQLite's primary result codes of a write error that a later try may not meet: the disk
#: full, an I/O error, the file busy, locked, unopenable or read-only (permissions an operator
#: can fix). A missing table or a constraint is a bug: retrying cannot cure it.
_RETRYABLE_CODES = frozenset({13, 10, 5, 6, 14, 8})  # FULL, IOERR, BUSY, LOCKED, CANTOPEN, READONLY


def _retryable(exc: BaseException) -> bool:
    """Is this commit error worth trying again (module docstring)?"""
    if isinstance(exc, OSError):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.OperationalError) and code is not None and code & 0xFF in _RETRYABLE_CODES


def _call(callback: Callable[[], None]) -> None:
    callback()


def _extend(batch: Batch, ops: list[Op]) -> None:
    batch.ops.extend(ops)


def _add_callback(batch: Batch, callback: Callable[[], None]) -> None:
    batch.callbacks.append(callback)


def _add_commit(batch: Batch, callback: Callable[[BaseException | None], None]) -> None:
    batch.commits.append(callback)


def _run_in_order(callbacks: list[Callable[[], None]], path: str) -> None:
    """Run a batch's on_durable callbacks in registration order (in notify's thread); one
    that raises is logged and the others still run, as separate loop callbacks would."""
    for callback in callbacks:
        try:
            callback()
        except Exception:
            log.exception("store %r: an on_durable callback failed", path)


def lock_path(path: str) -> str:
    return path + ".lock"


def _take_lock(path: str, what: str) -> int:
    """Take the file's exclusive lock (non-blocking) and write our pid into the lock file;
    raise StoreInUse naming the holder's pid."""
    try:
        fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot open {what} {path!r}: {exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        finally:
            os.close(fd)
        raise StoreInUse(f"the {what} {path} is in use by another process (pid {holder})", holder) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd


def _adopt_queue_manager_file(conn: sqlite3.Connection) -> None:
    """A qmgr-<NAME>.db of an earlier version: its tables take this schema's names."""
    for table in _LEGACY_QMGR_TABLES:
        conn.execute(f"ALTER TABLE {table} RENAME TO qm_{table}")


def open_engine_file(path: str, synchronous: str, what: str = "relaymq database") -> sqlite3.Connection:
    """The database file with every part's schema up to date (legacy files adopted in place),
    in ONE transaction: a process killed meanwhile leaves the old file or the complete new one."""
    try:
        return open_database(path, application_id=APPLICATION_ID, schema_version=SCHEMA_VERSION,
                             migrations=MIGRATIONS, synchronous=synchronous, what=what,
                             legacy={LEGACY_QMGR_ID: _adopt_queue_manager_file, LEGACY_LOG_ID: lambda conn: None})
    except DatabaseFileError as exc:
        raise StoreError(str(exc)) from exc
