"""The message log: partitioned, append-only, in one SQLite file (``<dir>/archive.sqlite3``).

Why SQLite rather than segment files: a batch of appends across partitions commits in one
transaction, so "only committed entries are visible" is what SQLite's isolation already gives
every reader (WAL mode: readers never block the writer and never see a half-written batch);
sequence numbers, retention (a DELETE below a low-water mark) and range reads by
``(partition, seq)`` are one indexed statement each; and Spark executors on the same machine
can read the file directly while remote ones use the HTTP fetch endpoint.

Each partition has a sequence number per entry, 0, 1, 2, ... without gaps; ``first_seq`` is
the lowest entry still retained and ``next_seq`` the one the next append gets. An offset in
this package is always "the next seq to read", so ``[start, end)`` ranges compose.

Archive timestamps are unique and increase in append order across the whole log: an entry
gets the time of its append (microseconds), or one microsecond more than the entry appended
just before it when that is not later (several entries in one group commit, a clock stepped
back). So ``(timestamp)`` orders every entry of every partition the way they were appended,
which is what admission control needs to move all partitions forward together (offsets.admit).

``LogWriter`` is the writer thread: the broker's event loop hands records over without
waiting, the thread appends them in group commits (one transaction per ``commit_delay``).

Durability, precisely: the archive is a copy for analysis, not the system of record. The broker
acknowledges a publication once it is routed (and, for QoS > 0, stored in its own store); its
log record is then in the writer's memory queue for a few milliseconds (``commit_delay`` plus
the commit) and is lost if the broker process is killed in that time; a committed entry survives
a process kill, and with ``synchronous=NORMAL`` an OS crash may lose the last commits. The
queue is bounded (``max_pending``): a writer that falls behind (a slow disk) drops new records
and counts them instead of growing without limit or slowing the broker down.
"""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from relaymq.pipeline.record import COLUMNS, LogRecord
from relaymq.store.sqlite_file import DatabaseFileError, open_database

LOG_FILE = "archive.sqlite3"

_DATA_COLUMNS = tuple(c for c in COLUMNS if c not in ("partition", "seq"))
SCHEMA_VERSION = 1
APPLICATION_ID = 0x524D514C  # "RMQL"
_SCHEMA = (
    "CREATE TABLE partitions (name TEXT PRIMARY KEY, first_seq INTEGER NOT NULL, next_seq INTEGER NOT NULL)",
    f"CREATE TABLE entries (partition TEXT NOT NULL, seq INTEGER NOT NULL, "
    f"{', '.join(c + ' ANY' for c in _DATA_COLUMNS)}, PRIMARY KEY (partition, seq)) WITHOUT ROWID",
)
_SELECT = f"SELECT {', '.join(COLUMNS)} FROM entries"
_USR = COLUMNS.index("usr")


class LogError(Exception):
    """The log cannot do what was asked; ``str()`` is one line for the operator."""


class RetentionError(LogError):
    """A read asked for entries that retention has already removed."""

    def __init__(self, partition: str, start: int, first_seq: int) -> None:
        self.partition, self.start, self.first_seq = partition, start, first_seq
        super().__init__(
            f"partition {partition}: offset {start} is no longer in the log (retention removed "
            f"entries below {first_seq}); restart the query from a newer offset or 'earliest'"
        )


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """Committed extent of a partition: entries ``first_seq`` .. ``next_seq - 1`` exist."""

    name: str
    first_seq: int
    next_seq: int

    @property
    def size(self) -> int:
        return self.next_seq - self.first_seq


def log_path(directory: str) -> str:
    """The SQLite file of the log kept in ``directory``."""
    return os.path.join(directory, LOG_FILE)


class MessageLog:
    """The log in one SQLite file. Thread-safe: one connection behind a lock, every write one
    transaction. ``readonly`` opens an existing log for reading (a Spark executor)."""

    def __init__(self, directory: str, *, readonly: bool = False) -> None:
        self.directory = directory
        path = log_path(directory)
        if readonly:
            if not os.path.exists(path):
                raise LogError(f"no message log at {path}")
            self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False,
                                       isolation_level=None)
        else:
            os.makedirs(directory, exist_ok=True)
            try:
                self._db = open_database(path, application_id=APPLICATION_ID, schema_version=SCHEMA_VERSION,
                                         migrations={1: _SCHEMA}, synchronous="NORMAL", what="relaymq message log")
            except DatabaseFileError as exc:
                raise LogError(str(exc)) from exc
        self._db.execute("PRAGMA busy_timeout=10000")
        self._lock = threading.Lock()
        self.readonly = readonly

    # -- writing ------------------------------------------------------------------------------
    def append(self, records: Sequence[LogRecord], now: float | None = None) -> list[tuple[str, int]]:
        """Append records (each with its ``partition`` set) in one transaction, giving each the
        next seq of its partition and the archive timestamp; returns (partition, seq) each."""
        stamp = time.time() if now is None else now
        placed: list[tuple[str, int]] = []
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                last_us = _last_stamp_us(db)
                next_seq: dict[str, int] = {}
                rows = []
                for record in records:
                    name = record.partition
                    if name not in next_seq:
                        found = db.execute("SELECT next_seq FROM partitions WHERE name=?", (name,)).fetchone()
                        next_seq[name] = found[0] if found else 0
                        if not found:
                            db.execute("INSERT INTO partitions VALUES (?, 0, 0)", (name,))
                    record.seq = next_seq[name]
                    next_seq[name] += 1
                    last_us = max(round((record.timestamp or stamp) * 1_000_000), last_us + 1)
                    record.timestamp = last_us / 1_000_000
                    rows.append(_to_sql(record))
                    placed.append((name, record.seq))
                db.executemany(f"INSERT INTO entries ({', '.join(COLUMNS)}) VALUES "
                               f"({', '.join('?' * len(COLUMNS))})", rows)
                db.executemany("UPDATE partitions SET next_seq=? WHERE name=?",
                               [(seq, name) for name, seq in next_seq.items()])
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return placed

    def apply_retention(self, partition: str, *, max_age: float = 0, max_entries: int = 0,
                        now: float | None = None) -> int:
        """Remove entries older than ``max_age`` seconds or beyond the newest ``max_entries``
        (0: no such limit); returns how many were removed. ``first_seq`` moves up, so a reader
        asking for a removed offset gets a RetentionError rather than silently less data."""
        now = time.time() if now is None else now
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                found = db.execute("SELECT first_seq, next_seq FROM partitions WHERE name=?", (partition,)).fetchone()
                if found is None:
                    db.execute("COMMIT")
                    return 0
                first, nxt = found
                low = first
                if max_entries:
                    low = max(low, nxt - max_entries)
                if max_age:
                    newer = db.execute("SELECT MIN(seq) FROM entries WHERE partition=? AND timestamp>=?",
                                       (partition, now - max_age)).fetchone()[0]
                    low = max(low, nxt if newer is None else newer)
                removed = 0
                if low > first:
                    removed = db.execute("DELETE FROM entries WHERE partition=? AND seq<?", (partition, low)).rowcount
                    db.execute("UPDATE partitions SET first_seq=? WHERE name=?", (low, partition))
                db.execute("COMMIT")
                return removed
            except BaseException:
                db.execute("ROLLBACK")
                raise

    # -- reading ------------------------------------------------------------------------------
    def partitions(self) -> dict[str, PartitionInfo]:
        """Every partition with its committed extent."""
        with self._lock:
            rows = self._db.execute("SELECT name, first_seq, next_seq FROM partitions ORDER BY name").fetchall()
        return {name: PartitionInfo(name, first, nxt) for name, first, nxt in rows}

    def read(self, partition: str, start: int, end: int | None = None, limit: int | None = None) -> list[LogRecord]:
        """Committed entries of ``partition`` with ``start <= seq < end`` in seq order.

        Raises RetentionError when ``start`` is below what retention kept (the caller asked
        for entries that are gone) and LogError for an unknown partition."""
        with self._lock:
            found = self._db.execute("SELECT first_seq, next_seq FROM partitions WHERE name=?", (partition,)).fetchone()
            if found is None:
                raise LogError(f"no partition {partition!r} in the log")
            first, nxt = found
            if start < first:
                raise RetentionError(partition, start, first)
            stop = nxt if end is None else min(end, nxt)
            if limit is not None:
                stop = min(stop, start + limit)
            rows = self._db.execute(f"{_SELECT} WHERE partition=? AND seq>=? AND seq<? ORDER BY seq",
                                    (partition, start, stop)).fetchall()
        return [_from_sql(row) for row in rows]

    def timestamps(self, partition: str, start: int, end: int) -> list[float]:
        """The archive timestamps of entries ``start <= seq < end`` of ``partition``, in seq
        order (what admission control orders entries by, without reading their bodies)."""
        with self._lock:
            found = self._db.execute("SELECT first_seq FROM partitions WHERE name=?", (partition,)).fetchone()
            if found is None:
                raise LogError(f"no partition {partition!r} in the log")
            if start < found[0]:
                raise RetentionError(partition, start, found[0])
            rows = self._db.execute("SELECT timestamp FROM entries WHERE partition=? AND seq>=? AND seq<? ORDER BY seq",
                                    (partition, start, end)).fetchall()
        return [row[0] for row in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _last_stamp_us(db: sqlite3.Connection) -> int:
    """The newest archive timestamp in the log (µs; -1 when empty): the last entry of each
    partition holds its partition's newest, since timestamps increase in append order."""
    row = db.execute("SELECT MAX(e.timestamp) FROM partitions p JOIN entries e "
                     "ON e.partition = p.name AND e.seq = p.next_seq - 1").fetchone()
    return -1 if row[0] is None else round(row[0] * 1_000_000)


def _to_sql(record: LogRecord) -> tuple[object, ...]:
    row = [getattr(record, name) for name in COLUMNS]
    row[_USR] = json.dumps(record.usr, ensure_ascii=False, separators=(",", ":"))
    return tuple(row)


def _from_sql(row: Sequence[object]) -> LogRecord:
    values = dict(zip(COLUMNS, row))
    values["usr"] = json.loads(values["usr"])  # type: ignore[arg-type]
    return LogRecord(**values)  # type: ignore[arg-type]


_IDLE = object()  # what the writer thread "receives" when it wakes up for housekeeping only


class LogWriter:
    """The writer thread: ``submit`` never blocks; records are appended in group commits.

    ``on_error`` hears about a batch that could not be written (disk full): the records are
    dropped and counted, because the log must never stop the broker that feeds it. At most
    ``max_pending`` records wait for the writer; beyond that ``submit`` drops them, counts them
    in ``overflowed`` and tells ``on_overflow`` (the total so far) at most once a second.
    """

    def __init__(self, log: MessageLog, *, commit_delay: float = 0.005, max_batch: int = 5000,
                 housekeeping: Callable[[], None] | None = None, housekeeping_every: float = 60.0,
                 on_error: Callable[[BaseException], None] | None = None, max_pending: int = 100_000,
                 on_overflow: Callable[[int], None] | None = None) -> None:
        self.log = log
        self.commit_delay = commit_delay
        self.max_batch = max_batch
        self.housekeeping = housekeeping
        self.housekeeping_every = housekeeping_every
        self.on_error = on_error
        self.on_overflow = on_overflow
        self.appended = 0
        self.dropped = 0  # could not be written (on_error)
        self.overflowed = 0  # refused because max_pending records were waiting
        self._last_overflow_report = 0.0
        self._slots = threading.BoundedSemaphore(max_pending)
        self._queue: queue.SimpleQueue[LogRecord | threading.Event | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="relaymq-log-writer", daemon=True)
        self._thread.start()

    def submit(self, records: Iterable[LogRecord]) -> None:
        """Hand records over to the writer (each with its partition set); never waits."""
        for record in records:
            if not self._slots.acquire(blocking=False):
                self.overflowed += 1
                now = time.monotonic()
                if self.on_overflow is not None and now - self._last_overflow_report >= 1.0:
                    self._last_overflow_report = now
                    self.on_overflow(self.overflowed)
                continue
            self._queue.put(record)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything submitted so far is committed (tests, shutdown)."""
        done = threading.Event()
        self._queue.put(done)
        return done.wait(timeout)

    def close(self) -> None:
        """Commit what is pending and stop the thread."""
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        last_housekeeping = time.monotonic()
        running = True
        while running:
            try:  # wake up for housekeeping even when nothing arrives (retention of an idle log)
                item: object = self._queue.get(timeout=self.housekeeping_every if self.housekeeping else None)
            except queue.Empty:
                item = _IDLE
            batch: list[LogRecord] = []
            waiters: list[threading.Event] = []
            if self.commit_delay and isinstance(item, LogRecord):
                time.sleep(self.commit_delay)  # let the batch grow: one commit for many records
            while True:
                if item is None:
                    running = False
                elif isinstance(item, threading.Event):
                    waiters.append(item)
                elif isinstance(item, LogRecord):
                    batch.append(item)
                if len(batch) >= self.max_batch or not running:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if batch:
                try:
                    self.log.append(batch)
                    self.appended += len(batch)
                except Exception as error:  # noqa: BLE001 - reported, never raised into the broker
                    self.dropped += len(batch)
                    if self.on_error is not None:
                        self.on_error(error)
                finally:
                    for _ in batch:
                        self._slots.release()
            if self.housekeeping is not None and time.monotonic() - last_housekeeping >= self.housekeeping_every:
                last_housekeeping = time.monotonic()
                try:
                    self.housekeeping()
                except Exception as error:  # noqa: BLE001
                    if self.on_error is not None:
                        self.on_error(error)
            for waiter in waiters:
                waiter.set()
