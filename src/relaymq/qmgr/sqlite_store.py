"""The queue manager's part of the storage engine (:mod:`relaymq.store.engine`).

Callers (any thread) submit operations and get a Ticket (spec README decision 4: durable before
acknowledged). The engine's writer commits them with everything else pending, the MQTT
broker's deliveries and the message log's entries included when the queue manager runs inside
the broker (one file, ``<data_dir>/relaymq.db``, one transaction). A put and the get that takes
the message before the commit cancel out of the batch (key ``("q", uid)``). A failed commit
stops the engine; every later submission fails at once, so nothing unwritten is ever
acknowledged.

A queue manager on its own (``QueueManager.open(name, data_dir)`` outside the broker, the
``relaymq queue`` commands with ``--data-dir``) opens an engine of its own on
``<data_dir>/qmgr-<NAME>.db``; the engine's lock keeps a second process out of it. Inside the
broker, a ``qmgr-<NAME>.db`` left by an earlier relaymq is imported into the broker's database
once (:func:`import_legacy`) and renamed ``qmgr-<NAME>.db.imported``.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import partial
from typing import Any

from relaymq.qmgr.definitions import QueueDefinition
from relaymq.qmgr.errors import StoreFailed, StoreInUse
from relaymq.qmgr.states import Entry
from relaymq.qmgr.store import Loaded, Op, QueueStore, Ticket
from relaymq.store.base import StoreError
from relaymq.store.batch import Batch
from relaymq.store.engine import LEGACY_QMGR_ID, Engine
from relaymq.store.legacy import import_legacy_file, read_legacy
from relaymq.store.engine import StoreInUse as EngineInUse
from relaymq.store.sqlite_file import SYNCHRONOUS_MODES

log = logging.getLogger("relaymq.qmgr")

_ENTRY = "INSERT OR REPLACE INTO qm_messages VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
_STATE = "UPDATE qm_messages SET state = ?, confirm_id = ?, lock_id = ? WHERE uid = ?"
_DELETE = "DELETE FROM qm_messages WHERE uid = ?"
_QUEUE = "INSERT OR REPLACE INTO qm_queues VALUES (?,?,?)"
_UNQUEUE = "DELETE FROM qm_queues WHERE owner = ? AND name = ?"
_CONFIRMED = "INSERT OR REPLACE INTO qm_confirmed VALUES (?,?)"
_FORGET = "DELETE FROM qm_confirmed WHERE at_ms < ?"
_META = "INSERT OR REPLACE INTO qm_meta VALUES (?,?)"
# Positions in an entry row that a state change sets.
_ROW_STATE, _ROW_CONFIRM, _ROW_LOCK = 5, 6, 7


def store_path(data_dir: str, qmgr_name: str) -> str:
    return os.path.join(data_dir, f"qmgr-{qmgr_name}.db")


def _entry_row(e: Entry) -> tuple[object, ...]:
    return (e.uid, e.qmgr, e.queue, e.seq, e.priority, e.state, e.confirm_id, e.lock_id, e.created_ms,
            e.expire_at, e.target_qmgr, e.target_queue, e.msg_id, e.correl_id,
            e.sealed if e.sealed is not None else e.data)  # sealed: queue security, at rest


def _fold_state(state: int, confirm_id: int, lock_id: int, row: tuple[Any, ...]) -> tuple[Any, ...]:
    return row[:_ROW_STATE] + (state, confirm_id, lock_id) + row[_ROW_LOCK + 1:]


def _apply(batch: Batch, ops: list[Op]) -> None:
    """The queue manager's operations (relaymq.qmgr.store) as statements, coalesced by key."""
    for op in ops:
        kind = op[0]
        if kind == "entry":
            entry: Entry = op[1]
            batch.put(("q", entry.uid), (_ENTRY, _entry_row(entry)))
        elif kind == "state":
            _, uid, state, confirm_id, lock_id = op
            batch.update(("q", uid), (_STATE, (state, confirm_id, lock_id, uid)),
                         partial(_fold_state, state, confirm_id, lock_id))
        elif kind == "delete":
            batch.delete(("q", op[1]), (_DELETE, (op[1],)))
        elif kind == "meta":
            batch.put(("qm", op[1]), (_META, (op[1], op[2])))
        elif kind == "queue":
            definition: QueueDefinition = op[1]
            batch.append((_QUEUE, (definition.owner, definition.name, json.dumps(definition.to_dict()))))
        elif kind == "unqueue":
            batch.append((_UNQUEUE, (op[1], op[2])))
        elif kind == "confirmed":
            batch.append((_CONFIRMED, (op[1], op[2])))
        elif kind == "forget":
            batch.append((_FORGET, (op[1],)))
        else:
            raise ValueError(f"unknown queue store operation {kind!r}")


class SqliteQueueStore(QueueStore):
    """The queue manager's tables in an engine's database: its own engine on ``path``, or the
    broker's (``engine=``), shared with every other part."""

    kind = "sqlite"
    defers = True

    def __init__(self, path: str | None = None, synchronous: str = "FULL", *, engine: Engine | None = None) -> None:
        if synchronous not in SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be one of {SYNCHRONOUS_MODES}")
        self._owns_engine = engine is None
        if engine is None:
            if path is None:
                raise ValueError("a path or an engine is needed")
            try:
                engine = Engine(path, None, synchronous, what="relaymq queue manager store")
            except EngineInUse as exc:
                raise StoreInUse(str(exc), exc.holder) from None
            except StoreError as exc:
                raise StoreFailed(str(exc)) from exc
        self.engine = engine
        self.path = engine.path

    @property
    def failed(self) -> BaseException | None:
        return self.engine.failed

    @property
    def commits(self) -> int:
        """Batches committed (by the whole engine): lets a benchmark show the group commit at work."""
        return self.engine.commits

    def load(self) -> Loaded:
        try:
            self.engine.flush()
            db = self.engine.connect()
        except StoreError as exc:
            raise StoreFailed(str(exc)) from exc
        loaded = Loaded()
        try:
            db.execute("BEGIN")
            for (text,) in db.execute("SELECT definition FROM qm_queues"):
                loaded.queues.append(QueueDefinition.from_dict(json.loads(text)))
            for row in db.execute("SELECT uid, qmgr, queue, seq, priority, state, confirm_id, lock_id, created_ms,"
                                  " expire_at, target_qmgr, target_queue, msg_id, correl_id, data FROM qm_messages"):
                (uid, qmgr, queue, seq, priority, state, confirm_id, lock_id, created_ms, expire_at,
                 target_qmgr, target_queue, msg_id, correl_id, data) = row
                loaded.entries.append(Entry(uid=uid, qmgr=qmgr, queue=queue, seq=seq, priority=priority, data=data,
                                            msg_id=msg_id, correl_id=correl_id, created_ms=created_ms,
                                            expire_at=expire_at, state=state, confirm_id=confirm_id,
                                            lock_id=lock_id, target_qmgr=target_qmgr, target_queue=target_queue))
            loaded.confirmed = dict(db.execute("SELECT uid, at_ms FROM qm_confirmed"))
            loaded.meta = dict(db.execute("SELECT name, value FROM qm_meta"))
        except sqlite3.Error as exc:
            raise StoreFailed(f"cannot read the queue store {self.path!r}: {exc}") from exc
        finally:
            db.close()
        return loaded

    def submit(self, ops: list[Op]) -> Ticket:
        ticket = Ticket()
        try:
            self.engine.submit(_apply, ops, writes=len(ops))
        except StoreError as exc:
            ticket.finish(exc)
            return ticket
        self.engine.on_commit(ticket.finish)
        return ticket

    def submit_nowait(self, ops: list[Op]) -> None:
        """Submit without a ticket: whoever acknowledges waits for the engine (``on_durable``)."""
        try:
            self.engine.submit(_apply, ops, writes=len(ops))
        except StoreError as exc:
            raise StoreFailed(f"store write failed: {exc}") from exc

    def after_submit(self, callback: Callable[[], None]) -> None:
        self.engine.after_submit(callback)

    def unit(self) -> AbstractContextManager[None]:
        return self.engine.unit()

    def close(self) -> None:
        """Write what is pending; stop the engine when it is this store's own."""
        if self._owns_engine:
            try:
                self.engine.close()
            except StoreError as exc:
                log.error("queue store %s: %s", self.path, exc)
        else:
            try:
                self.engine.flush()
            except StoreError:
                pass


def import_legacy(engine: Engine, data_dir: str, qmgr_name: str) -> bool:
    """Bring the queues and messages of ``qmgr-<NAME>.db`` (kept apart by earlier relaymq
    versions) into the broker's database, once (relaymq.store.legacy). True if it did."""
    old = store_path(data_dir, qmgr_name)
    if not os.path.exists(old):
        return False
    try:
        [[(app_id,)]] = read_legacy(old, [("PRAGMA application_id", "")])
        prefix = "qm_" if app_id != LEGACY_QMGR_ID else ""
        copies = [(f"SELECT owner, name, definition FROM {prefix}queues", _QUEUE),
                  (f"SELECT * FROM {prefix}messages", _ENTRY),
                  (f"SELECT uid, at_ms FROM {prefix}confirmed", _CONFIRMED),
                  (f"SELECT name, value FROM {prefix}meta", _META)]
        queues, messages, _, _ = import_legacy_file(engine, old, copies)
    except StoreError as exc:
        raise StoreFailed(f"cannot import the queue manager store: {exc}") from exc
    log.info("queue manager %s: imported %d queue(s) and %d message(s) from %s (renamed %s.imported)",
             qmgr_name, queues, messages, old, old)
    return True
