"""The SQLite queue store: WAL, one writer thread, group commit (spec README decision 4).

Callers (any thread) append operations to the pending list and get a Ticket. The writer thread
takes *everything* pending, applies it in order in one transaction, commits (one fsync with
``synchronous=FULL``), then finishes every ticket of that batch. While it commits, the next
batch fills: under load one fsync covers many puts and gets. A failed commit marks the store
failed; every later submission fails at once, so nothing unwritten is ever acknowledged.

File: ``<data_dir>/qmgr-<NAME>.db``, versioned with ``PRAGMA user_version``.

One process at a time: the store holds an exclusive ``flock`` on ``qmgr-<NAME>.db.lock``
(beside the database, with the holder's pid in it) for its whole life. Two processes working
on one store would each keep their own in-memory index and hand out the same message twice;
a second opener gets :class:`StoreInUse` instead. The lock goes with the process (a SIGKILL
releases it), so a crash never leaves it stale.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sqlite3
import threading

from relaymq.qmgr.definitions import QueueDefinition
from relaymq.qmgr.errors import StoreFailed, StoreInUse
from relaymq.qmgr.states import Entry
from relaymq.qmgr.store import Loaded, Op, QueueStore, Ticket
from relaymq.store.sqlite_file import SYNCHRONOUS_MODES, DatabaseFileError, open_database

log = logging.getLogger("relaymq.qmgr")

SCHEMA_VERSION = 1
APPLICATION_ID = 0x524D5151  # "RMQQ"

_SCHEMA = (
    "CREATE TABLE queues (owner TEXT, name TEXT, definition TEXT, PRIMARY KEY (owner, name))",
    "CREATE TABLE messages (uid TEXT PRIMARY KEY, qmgr TEXT, queue TEXT, seq INTEGER,"
    " priority INTEGER, state INTEGER, confirm_id INTEGER, lock_id INTEGER, created_ms INTEGER,"
    " expire_at INTEGER, target_qmgr TEXT, target_queue TEXT, msg_id BLOB, correl_id BLOB, data BLOB)",
    "CREATE TABLE confirmed (uid TEXT PRIMARY KEY, at_ms INTEGER)",
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER)",
)

_SQL = {
    "entry": "INSERT OR REPLACE INTO messages VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    "state": "UPDATE messages SET state = ?, confirm_id = ?, lock_id = ? WHERE uid = ?",
    "delete": "DELETE FROM messages WHERE uid = ?",
    "queue": "INSERT OR REPLACE INTO queues VALUES (?,?,?)",
    "unqueue": "DELETE FROM queues WHERE owner = ? AND name = ?",
    "confirmed": "INSERT OR REPLACE INTO confirmed VALUES (?,?)",
    "forget": "DELETE FROM confirmed WHERE at_ms < ?",
    "meta": "INSERT OR REPLACE INTO meta VALUES (?,?)",
}


def store_path(data_dir: str, qmgr_name: str) -> str:
    return os.path.join(data_dir, f"qmgr-{qmgr_name}.db")


def lock_path(path: str) -> str:
    return path + ".lock"


def _lock(path: str) -> int:
    """Take the store's exclusive lock (non-blocking) and write our pid into the lock file;
    raise StoreInUse naming the holder's pid."""
    fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        finally:
            os.close(fd)
        raise StoreInUse(f"the store {path} is in use by another process (pid {holder})", holder) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd


def _row(op: Op) -> tuple[object, ...]:
    kind = op[0]
    if kind == "entry":
        e: Entry = op[1]
        return (e.uid, e.qmgr, e.queue, e.seq, e.priority, e.state, e.confirm_id, e.lock_id, e.created_ms,
                e.expire_at, e.target_qmgr, e.target_queue, e.msg_id, e.correl_id, e.data)
    if kind == "state":
        return (op[2], op[3], op[4], op[1])
    if kind == "queue":
        d: QueueDefinition = op[1]
        return (d.owner, d.name, json.dumps(d.to_dict()))
    return tuple(op[1:])


class SqliteQueueStore(QueueStore):
    """One SQLite file per queue manager."""

    kind = "sqlite"

    def __init__(self, path: str, synchronous: str = "FULL") -> None:
        if synchronous not in SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be one of {SYNCHRONOUS_MODES}")
        self.path = path
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._lock_fd = _lock(path)
        try:
            self._db = open_database(path, application_id=APPLICATION_ID, schema_version=SCHEMA_VERSION,
                                     migrations={1: _SCHEMA}, synchronous=synchronous,
                                     what="relaymq queue manager store")
        except DatabaseFileError as exc:
            self._unlock()
            raise StoreFailed(str(exc)) from exc
        except BaseException:
            self._unlock()
            raise
        self._cond = threading.Condition()
        self._pending: list[tuple[list[Op], Ticket]] = []
        self._closing = False
        self.failed: BaseException | None = None
        self.commits = 0  # batches committed: lets a benchmark show the group commit at work
        self._thread = threading.Thread(target=self._run, name=f"qmgr-store:{os.path.basename(path)}", daemon=True)
        self._thread.start()

    def load(self) -> Loaded:
        db = self._db
        loaded = Loaded()
        for (text,) in db.execute("SELECT definition FROM queues"):
            loaded.queues.append(QueueDefinition.from_dict(json.loads(text)))
        for row in db.execute("SELECT uid, qmgr, queue, seq, priority, state, confirm_id, lock_id, created_ms,"
                              " expire_at, target_qmgr, target_queue, msg_id, correl_id, data FROM messages"):
            (uid, qmgr, queue, seq, priority, state, confirm_id, lock_id, created_ms, expire_at,
             target_qmgr, target_queue, msg_id, correl_id, data) = row
            loaded.entries.append(Entry(uid=uid, qmgr=qmgr, queue=queue, seq=seq, priority=priority, data=data,
                                        msg_id=msg_id, correl_id=correl_id, created_ms=created_ms,
                                        expire_at=expire_at, state=state, confirm_id=confirm_id, lock_id=lock_id,
                                        target_qmgr=target_qmgr, target_queue=target_queue))
        loaded.confirmed = dict(db.execute("SELECT uid, at_ms FROM confirmed"))
        loaded.meta = dict(db.execute("SELECT name, value FROM meta"))
        return loaded

    def submit(self, ops: list[Op]) -> Ticket:
        ticket = Ticket()
        with self._cond:
            if self.failed is not None:
                ticket.finish(self.failed)
                return ticket
            if self._closing:
                ticket.finish(StoreFailed("store closed"))
                return ticket
            self._pending.append((ops, ticket))
            self._cond.notify()
        return ticket

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing:
                    self._cond.wait()
                batch, self._pending = self._pending, []
                if not batch and self._closing:
                    return
            error: BaseException | None = self.failed
            if error is not None:  # never write after a failed batch: order would break
                for _ops, ticket in batch:
                    ticket.finish(error)
                continue
            try:
                self._db.execute("BEGIN")
                for ops, _ticket in batch:
                    for op in ops:
                        self._db.execute(_SQL[op[0]], _row(op))
                self._db.execute("COMMIT")
                self.commits += 1
            except sqlite3.Error as exc:  # disk full, I/O error: stop acknowledging anything
                log.error("queue store %s: commit failed: %s", self.path, exc)
                error = exc
                try:
                    self._db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                with self._cond:
                    self.failed = exc
            for _ops, ticket in batch:
                ticket.finish(error)

    def close(self) -> None:
        """Write what is pending, stop the writer and close the file."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join()
        self._db.close()
        self._unlock()

    def _unlock(self) -> None:
        fd, self._lock_fd = self._lock_fd, -1
        if fd >= 0:
            os.close(fd)  # closing the descriptor releases the flock
