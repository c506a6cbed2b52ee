"""The pub/sub engine's durable state in the broker's database (items 19, 22).

Queue subscriptions are rows of ``ps_subscriptions`` (one per subscription, keyed by what
identifies it: topic, subscription point, filter, subscriber); the retained publications of
named subscription points and the psc retained-publication details are two JSON values of
``ps_state``. Changes are *submitted* to the storage engine (:mod:`relaymq.store.engine`), not
written: the psc command that caused them commits with them, in one transaction with its
removal from the control queue and its reply (issue 14).

A ``pubsub-state.json`` written by an earlier relaymq is imported once and renamed
``pubsub-state.json.imported``.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from typing import Any

from relaymq.pubsub.engine import PubSubEngine
from relaymq.pubsub.model import QueueSubscription
from relaymq.store.base import StoreError
from relaymq.store.batch import Batch
from relaymq.store.engine import Engine

log = logging.getLogger("relaymq.pubsub")

LEGACY_FILE = "pubsub-state.json"

_PUT = "INSERT OR REPLACE INTO ps_subscriptions VALUES (?, ?)"
_DELETE = "DELETE FROM ps_subscriptions WHERE key = ?"
_STATE = "INSERT OR REPLACE INTO ps_state VALUES (?, ?)"


def _key_text(key: tuple[Any, ...]) -> str:
    topic, sub_point, filter_text, subscriber = key
    return json.dumps([topic, sub_point, filter_text, subscriber.qmgr, subscriber.queue, subscriber.correl_id.hex()])


class PubSubState:
    """Loads and saves a PubSubEngine's state through a storage engine."""

    def __init__(self, engine: Engine, data_dir: str | None = None) -> None:
        self.engine = engine
        self.data_dir = data_dir
        self._saved: dict[str, str] = {}  # ps_state name -> the JSON last submitted

    def load(self) -> dict[str, Any]:
        """The engine's snapshot as ``PubSubEngine.restore`` takes it (a legacy JSON file when
        the database has nothing yet)."""
        try:
            self.engine.flush()
            conn = self.engine.connect()
            try:
                records = [json.loads(text) for (text,) in conn.execute("SELECT record FROM ps_subscriptions")]
                state = dict(conn.execute("SELECT name, value FROM ps_state"))
            finally:
                conn.close()
        except (sqlite3.Error, StoreError) as exc:
            raise StoreError(f"cannot read the pub/sub state from {self.engine.path}: {exc}") from exc
        self._saved = dict(state)
        data: dict[str, Any] = {"subscriptions": records}
        for name in ("retained", "retained_psc"):
            if name in state:
                data[name] = json.loads(state[name])
        return data

    def legacy_file(self) -> str | None:
        """An earlier relaymq's state file waiting to be imported, if any."""
        if self.data_dir is None:
            return None
        path = os.path.join(self.data_dir, LEGACY_FILE)
        return path if os.path.isfile(path) else None

    def save(self, engine: PubSubEngine) -> int:
        """Submit what changed since the last save (no waiting: the caller's unit of work or its
        ``on_durable`` covers it); returns how many rows were submitted."""
        ops: list[tuple[str, tuple[Any, ...]]] = []
        for key, sub in engine.take_dirty().items():
            text = _key_text(key)
            ops.append((_DELETE, (text,)) if sub is None else (_PUT, (text, json.dumps(_record(sub)))))
        if engine.changed:
            snapshot = engine.retained_snapshot()  # the subscriptions went row by row above
            for name in ("retained", "retained_psc"):
                value = json.dumps(snapshot[name], sort_keys=True)
                if self._saved.get(name) != value:
                    self._saved[name] = value
                    ops.append((_STATE, (name, value)))
            engine.changed = False
        if ops:
            self.engine.submit(_coalesce, ops, writes=len(ops))
        return len(ops)

    def save_all(self, engine: PubSubEngine) -> None:
        """Everything, as after an import."""
        for sub in engine.subscriptions.values():
            engine.dirty[sub.key] = sub
        engine.changed = True
        self._saved = {}
        self.save(engine)


def _record(sub: QueueSubscription) -> dict[str, Any]:
    return sub.to_record()


def _coalesce(batch: Batch, ops: list[tuple[str, tuple[Any, ...]]]) -> None:
    for sql, row in ops:
        key = ("ps", row[0])
        if sql is _DELETE:
            batch.delete(key, (sql, row))
        else:
            batch.put(key, (sql, row))
