"""The SCADA endpoint's store keeps a publication's message until the flow's run of it has
committed (flows/scada.py ``_GatedStore``; spec README decision 4), also when the broker deletes
the message together with the delivery that held its last reference in one store call
(``delete_delivery_and_message``, issue 16): a real SQLite store and the endpoint's real gate."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from relaymq.flows.scada import AckGate, _GatedStore
from relaymq.store.base import SENT, DeliveryRecord, StoredMessage
from relaymq.store.sqlite import SQLiteStore


def rows(path: Path, table: str) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def test_message_deleted_with_its_last_delivery_waits_for_the_flow(tmp_path: Path):
    path = tmp_path / "endpoint.db"
    inner = SQLiteStore(str(path))
    gate = AckGate()
    store = _GatedStore(inner, gate)
    try:
        message = StoredMessage(1, "dev/t", b"reading", 1)
        store.put_message_and_delivery(message, DeliveryRecord("sub", 1, 1, 1, state=SENT))
        store.flush()
        assert (rows(path, "messages"), rows(path, "deliveries")) == (1, 1)
        ticket = gate.ticket()  # a publication handed to the flow, its run not finished
        store.delete_delivery_and_message("sub", 1, 1)
        store.flush()
        # the delivery is gone; its message stays while the flow's run may still need it
        assert (rows(path, "messages"), rows(path, "deliveries")) == (1, 0)
        gate.done(ticket)
        store.flush()
        assert rows(path, "messages") == 0
    finally:
        inner.close()
