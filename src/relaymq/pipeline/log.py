"""The message log: partitioned, append-only, in SQLite (the broker's database, or ``<dir>/archive.sqlite3``).

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

Writing goes through the storage engine (:mod:`relaymq.store.engine`). Inside the broker the
log's tables live in the broker's database (``<data_dir>/relaymq.db``): an archive rule's entry
is submitted while the publication is routed, in the same unit of work as its other copies, so
it commits in the transaction that its PUBACK waits for (issue 14: nothing acknowledged is
lost, the archive included). A log on its own (``MessageLog(directory)``: tests, benchmarks,
tools) keeps ``<directory>/archive.sqlite3`` with an engine of its own.

Sequence numbers and archive timestamps are given when the entries join the engine's batch
(under the engine's lock, in batch order), so a reader never sees a gap that a later commit
fills: the partition's ``next_seq`` commits with its entries.

Readers (the fetch endpoint, Spark executors on the same machine) open the file read-only and
see only committed entries (WAL).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from relaymq.pipeline.log_entries import stored_columns
from relaymq.pipeline.record import STORED_COLUMNS, LogRecord, stored_entry
from relaymq.store import log_batch
from relaymq.store.base import StoreError
from relaymq.store.batch import Batch
from relaymq.store.engine import Engine
from relaymq.store.legacy import import_legacy_file

LOG_FILE = "archive.sqlite3"
#: The broker's database, where the log lives when the broker writes it.
BROKER_FILE = "relaymq.db"

_TS = STORED_COLUMNS.index("timestamp")
_EXTENT = ("INSERT INTO partitions VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET next_seq = excluded.next_seq")
# The batches holding entries start <= seq < stop: from the one holding ``start`` on.
_BATCHES = ("SELECT first_seq, count, data FROM log_batches WHERE partition = ? AND first_seq >= COALESCE("
            "(SELECT MAX(first_seq) FROM log_batches WHERE partition = ? AND first_seq <= ?), 0)"
            " AND first_seq < ? ORDER BY first_seq")


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
    """The SQLite file of the log kept in ``directory``: ``archive.sqlite3`` (a log of its own)
    or, when there is none, the broker's database ``relaymq.db`` of a data directory."""
    own = os.path.join(directory, LOG_FILE)
    broker = os.path.join(directory, BROKER_FILE)
    if not os.path.exists(own) and os.path.exists(broker):
        return broker
    return own


#: Where relaymq versions before the one engine kept the broker's log: ``<data_dir>/log``.
LEGACY_DIR = "log"
# The old file's partitions merged with any of the same name, its entries kept where the
# broker's database has none at that (partition, seq).
_IMPORT_PARTITION = ("INSERT INTO partitions VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET"
                     " first_seq = min(first_seq, excluded.first_seq), next_seq = max(next_seq, excluded.next_seq)")
_IMPORT_ENTRY = (f"INSERT OR IGNORE INTO entries (partition, seq, {', '.join(STORED_COLUMNS)})"
                 f" VALUES ({', '.join('?' * (len(STORED_COLUMNS) + 2))})")


def import_legacy_log(engine: Engine, data_dir: str) -> tuple[int, int] | None:
    """Bring ``<data_dir>/log/archive.sqlite3`` (the broker's log before the one engine) into
    the broker's database, once (relaymq.store.legacy); call before a MessageLog opens on it.
    Returns (partitions, entries) imported, or None when there is no such file."""
    old = os.path.join(data_dir, LEGACY_DIR, LOG_FILE)
    if not os.path.exists(old):
        return None
    copies = [("SELECT name, first_seq, next_seq FROM partitions", _IMPORT_PARTITION),
              (f"SELECT partition, seq, {', '.join(STORED_COLUMNS)} FROM entries", _IMPORT_ENTRY)]
    partitions, entries = import_legacy_file(engine, old, copies)
    return partitions, entries


def has_log(directory: str) -> bool:
    """Does ``directory`` hold a message log (its own file, or a broker's database)?"""
    return os.path.exists(log_path(directory))


class MessageLog:
    """The log: read through a connection of its own (thread-safe, behind a lock), written
    through an engine. ``readonly`` opens an existing log for reading (a Spark executor);
    ``engine`` writes into that engine's database (the broker's), else the log has an engine of
    its own on ``<directory>/archive.sqlite3``."""

    def __init__(self, directory: str, *, readonly: bool = False, engine: Engine | None = None) -> None:
        self.directory = directory
        self.readonly = readonly
        self._engine: Engine | None = None
        self._owns_engine = False
        if readonly:
            path = log_path(directory)
            if not os.path.exists(path):
                raise LogError(f"no message log at {path}")
            self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False,
                                       isolation_level=None)
            if self._db.execute("SELECT 1 FROM sqlite_master WHERE name = 'log_batches'").fetchone() is None:
                self._db.close()
                raise LogError(f"the message log at {path} was written by an earlier relaymq; start the broker"
                               " (or `relaymq pipeline`) once with this version to convert it")
        else:
            if engine is None:
                try:
                    engine = Engine(os.path.join(directory, LOG_FILE), None, "NORMAL", what="relaymq message log")
                except StoreError as exc:
                    raise LogError(str(exc)) from exc
                self._owns_engine = True
            self._engine = engine
            self._db = engine.connect()
        self._db.execute("PRAGMA busy_timeout=10000")
        self._lock = threading.Lock()
        # Where appending goes on (read once; then kept here, changed under the engine's lock).
        self._next_seq: dict[str, int] = {}
        self._last_us = -1
        #: partition -> the lists its entries and their stamps gather in, in the pending batch
        #: (``_place``; emptied when the writer takes the batch: ``_taken``).
        self._groups: dict[str, tuple[list[Any], list[int]]] = {}
        self._groups_batch: Batch | None = None
        if self._engine is not None:  # not read-only
            self._pack_entries()
            with self._lock:
                self._next_seq = dict(self._db.execute("SELECT name, next_seq FROM partitions"))
                self._last_us = _last_stamp_us(self._db)
            self._engine.taking.append(self._taken)

    @property
    def engine(self) -> Engine | None:
        return self._engine

    def _pack_entries(self) -> None:
        """Entries kept one row each (a legacy log just imported) become record batches."""
        assert self._engine is not None
        with self._lock:
            ops = log_batch.pack_entries(self._db, STORED_COLUMNS)
        if ops:
            try:
                self._engine.append(ops)
                self._engine.ticket().wait()
            except StoreError as exc:
                raise LogError(f"cannot convert the message log's entries: {exc}") from exc

    # -- writing ------------------------------------------------------------------------------
    def submit(self, records: Sequence[LogRecord], now: float | None = None) -> None:
        """Hand records (each with its ``partition`` set) to the engine without waiting: they
        commit with whatever the caller's unit of work holds (the broker: the publication)."""
        if self._engine is None:
            raise LogError("the log is open read-only")
        self._engine.submit(self._place, _entries(records),
                            time.time() if now is None else now, None, writes=len(records))

    def submit_entry(self, partitions: Sequence[str], entry: Any) -> None:
        """:meth:`submit` for one entry to each of ``partitions`` (a sequence the log keeps
        until the commit: do not change it), as the archive tap hands them: the entry is a
        tuple in STORED_COLUMNS order (timestamp 0.0 for "when appended"), or a routed
        publication (the broker's StoredMessage, which nothing changes once routed), whose
        stored form the writer thread builds at commit (``_pack``), once per partition. Inside
        a unit of work the entries of the unit become one change of the batch when it ends
        (``Engine.submit_item``): the broker's read of a socket submits its publications'
        entries in one piece, stamped with the time they join the batch."""
        self.entry_submitter()((partitions, entry), len(partitions))

    def entry_submitter(self) -> Callable[[tuple[Sequence[str], Any], int], None]:
        """:meth:`submit_entry` as one callable to keep, taking ``((partitions, entry),
        len(partitions))``: the archive tap's, which then makes no call of its own per
        publication but this one."""
        if self._engine is None:
            raise LogError("the log is open read-only")
        return partial(self._engine.submit_item, self._place)

    def append(self, records: Sequence[LogRecord], now: float | None = None) -> list[tuple[str, int]]:
        """Append records (each with its ``partition`` set) and wait for the commit, giving each
        the next seq of its partition and the archive timestamp; returns (partition, seq) each."""
        if self._engine is None:
            raise LogError("the log is open read-only")
        stamp = time.time() if now is None else now
        placed: list[tuple[str, int]] = []
        try:
            self._engine.submit(self._place, _entries(records),
                                stamp, placed, writes=len(records))
            self._engine.ticket().wait()
        except StoreError as exc:
            raise LogError(f"cannot append to the message log: {exc}") from exc
        return placed

    def _place(self, batch: Batch, entries: list[tuple[Sequence[str], Any]], stamp: float | None = None,
               placed: list[tuple[str, int]] | None = None) -> None:
        """Number and stamp the entries, (partitions, entry) each, as they join the batch (the
        engine's lock is held), one per partition, archived at ``stamp`` (default: now). Each
        partition's entries gather in the batch with their archive timestamps (µs); the writer
        thread turns them into record batches and writes the partition's new ``next_seq`` with
        them (``_pack``), once per commit rather than once per entry. The partition's
        ``next_seq`` here moves on when the writer takes the batch (``_taken``); ``_groups``
        holds the pending batch's lists by partition."""
        last_us = self._last_us
        stamp_us = round((time.time() if stamp is None else stamp) * 1_000_000)
        if self._groups_batch is not batch:
            self._groups, self._groups_batch = {}, batch
        groups = self._groups
        for names, entry in entries:
            own = entry[_TS] if entry.__class__ is tuple else 0.0
            us = round(own * 1_000_000) if own else stamp_us
            for name in names:
                group = groups.get(name)
                if group is None:
                    group = groups[name] = self._group(batch, name)
                last_us = us if us > last_us else last_us + 1
                group[0].append(entry)
                group[1].append(last_us)
                if placed is not None:
                    placed.append((name, self._next_seq.get(name, 0) + len(group[0]) - 1))
        self._last_us = last_us

    def _group(self, batch: Batch, name: str) -> tuple[list[Any], list[int]]:
        """The lists a partition's entries and their stamps gather in, in ``batch``."""
        key = (self, name)
        stamps: list[int] = []
        return batch.gather(key, _pack, name, self._next_seq.get(name, 0), stamps), stamps

    def _taken(self, batch: Batch) -> None:
        """The writer took ``batch`` (the engine's lock is held): this log's partitions go on
        after the entries it holds."""
        self._groups, self._groups_batch = {}, None
        next_seq = self._next_seq
        for key, (_build, args, rows) in batch.gathered.items():
            if key[0] is self:
                next_seq[args[0]] = args[1] + len(rows)

    def apply_retention(self, partition: str, *, max_age: float = 0, max_entries: int = 0,
                        now: float | None = None) -> int:
        """Remove entries older than ``max_age`` seconds or beyond the newest ``max_entries``
        (0: no such limit); returns how many were removed. ``first_seq`` moves up, so a reader
        asking for a removed offset gets a RetentionError rather than silently less data.
        Decided on what is committed, so entries still on their way are never touched."""
        if self._engine is None:
            raise LogError("the log is open read-only")
        now = time.time() if now is None else now
        with self._lock:
            db = self._db
            found = db.execute("SELECT first_seq, next_seq FROM partitions WHERE name=?", (partition,)).fetchone()
            if found is None:
                return 0
            first, nxt = found
            low = first
            if max_entries:
                low = max(low, nxt - max_entries)
            if max_age:
                low = max(low, self._first_newer(partition, now - max_age, nxt))
            if low <= first:
                return 0
            removed = low - first  # sequence numbers have no gaps
        try:
            self._engine.append([("DELETE FROM log_batches WHERE partition=? AND first_seq + count <= ?", (partition, low)),
                                 ("UPDATE partitions SET first_seq=? WHERE name=?", (low, partition))])
            self._engine.ticket().wait()
        except StoreError as exc:
            raise LogError(f"cannot apply retention to {partition}: {exc}") from exc
        return removed

    def _first_newer(self, partition: str, cutoff: float, nxt: int) -> int:
        """The seq of the partition's first entry archived at or after ``cutoff`` (``nxt`` when
        none was); timestamps increase with seq. Call with the lock held."""
        found = self._db.execute("SELECT first_seq, data FROM log_batches WHERE partition=? AND last_ts>=?"
                                 " ORDER BY first_seq LIMIT 1", (partition, cutoff)).fetchone()
        if found is None:
            return nxt
        first_seq, data = found
        for offset, stamp in enumerate(log_batch.layout(data).values(_TS)):
            if stamp >= cutoff:
                return first_seq + offset
        return nxt

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
        return [LogRecord(row[0], row[1], partition, seq, *row[2:])
                for first, run in self.read_runs(partition, start, end, limit) for seq, row in enumerate(run, first)]

    def read_runs(self, partition: str, start: int, end: int | None = None,
                  limit: int | None = None) -> Iterator[tuple[int, list[tuple[Any, ...]]]]:
        """What :meth:`read` reads, as runs of consecutive entries, one per stored batch:
        (the seq of the run's first entry, its stored rows). The committed batches are read at
        once (errors are raised here); each is decoded only as the runs are iterated."""
        return _runs(self.read_stored(partition, start, end, limit))

    def read_stored(self, partition: str, start: int, end: int | None = None,
                    limit: int | None = None) -> list[StoredRun]:
        """What :meth:`read` reads, as the stored batches holding it, undecoded: a reader that
        wants columns (``arrowio.stored_batch``) opens each with ``log_batch.layout`` and
        takes only the columns it needs. Raises as :meth:`read` does."""
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
            blobs = self._blobs(partition, start, stop)
        return _stored_runs(blobs, start, stop)

    def _blobs(self, partition: str, start: int, stop: int) -> list[tuple[int, int, bytes]]:
        """(first_seq, count, data) of the stored batches holding entries ``start <= seq <
        stop``, in order. Call with the lock held."""
        if start >= stop:
            return []
        return self._db.execute(_BATCHES, (partition, partition, start, stop)).fetchall()

    def timestamps(self, partition: str, start: int, end: int) -> list[float]:
        """The archive timestamps of entries ``start <= seq < end`` of ``partition``, in seq
        order (what admission control orders entries by, without reading their bodies)."""
        with self._lock:
            found = self._db.execute("SELECT first_seq FROM partitions WHERE name=?", (partition,)).fetchone()
            if found is None:
                raise LogError(f"no partition {partition!r} in the log")
            if start < found[0]:
                raise RetentionError(partition, start, found[0])
            blobs = self._blobs(partition, start, end)
        return [stamp for run in _stored_runs(blobs, start, end)
                for stamp in log_batch.layout(run.data).values(_TS)[run.low:run.high]]

    def flush(self) -> None:
        """Wait until every submitted entry is committed (tests, shutdown)."""
        if self._engine is not None:
            self._engine.flush()

    def close(self) -> None:
        with self._lock:
            self._db.close()
        if self._engine is not None and self._taken in self._engine.taking:
            self._engine.taking.remove(self._taken)
        if self._owns_engine and self._engine is not None:
            self._engine.close()


def _last_stamp_us(db: sqlite3.Connection) -> int:
    """The newest archive timestamp in the log (µs; -1 when empty): the last batch of each
    partition holds its partition's newest, since timestamps increase in append order."""
    row = db.execute("SELECT MAX(b.last_ts) FROM partitions p JOIN log_batches b ON b.partition = p.name"
                     " AND b.first_seq = (SELECT MAX(first_seq) FROM log_batches WHERE partition = p.name)").fetchone()
    return -1 if row[0] is None else round(row[0] * 1_000_000)


@dataclass(frozen=True, slots=True)
class StoredRun:
    """Entries ``low <= i < high`` of the stored batch ``data`` (entry i is seq ``first_seq + i``)."""

    first_seq: int
    low: int
    high: int
    data: bytes

    @property
    def start(self) -> int:
        """The seq of the run's first entry."""
        return self.first_seq + self.low


def _entries(records: Sequence[LogRecord]) -> list[tuple[tuple[str], tuple[Any, ...]]]:
    """Records as ``_place`` takes them: each its stored form, to its own ``partition``."""
    return [((record.partition,), stored_entry(record)) for record in records]


def _stored_runs(blobs: list[tuple[int, int, bytes]], start: int, stop: int) -> list[StoredRun]:
    """The parts of stored batches holding entries ``start <= seq < stop``."""
    runs = []
    for first_seq, count, data in blobs:
        low, high = max(start - first_seq, 0), min(stop - first_seq, count)
        if low < high:
            runs.append(StoredRun(first_seq, low, high, data))
    return runs


def _runs(runs: list[StoredRun]) -> Iterator[tuple[int, list[tuple[Any, ...]]]]:
    """Stored runs decoded: (seq of the first, rows) each."""
    for run in runs:
        rows = log_batch.decode(run.data)
        yield run.start, rows if (run.low, run.high) == (0, len(rows)) else rows[run.low:run.high]


def _pack(entries: list[Any], partition: str, first_seq: int, stamps: list[int]) -> list[tuple[str, tuple[Any, ...]]]:
    """The record batches of one commit's entries of a partition (Batch.gather's build; on
    the writer thread), at most MAX_ROWS each, every entry in its stored form at its archive
    timestamp from ``stamps`` (µs), the batch's columns built directly
    (log_entries.stored_columns: a publication's mapped here), and the partition's extent
    that they move on. The same entries give the same operations (a commit tried again)."""
    ops = []
    for start in range(0, len(entries), log_batch.MAX_ROWS):
        stop = start + log_batch.MAX_ROWS
        times = stamps[start:stop]
        # last_ts: the newest stamp, as stored_columns turns it into the timestamp column's value
        ops.append(log_batch.batch_op(partition, first_seq + start, stored_columns(entries[start:stop], times),
                                      len(times), times[-1] / 1_000_000))
    ops.append((_EXTENT, (partition, 0, first_seq + len(entries))))
    return ops
