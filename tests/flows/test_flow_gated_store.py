"""The SCADA endpoint's store keeps a publication's message until the flow's run of it has
committed (flows/scada.py ``_GatedStore``; spec README decision 4), also when the broker deletes
the message together with the delivery that held its last reference in one store call
(``delete_deliveries``, issue 16): a real SQLite store and the endpoint's real gate."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from relaymq.flows.scada import AckGate, _GatedStore
from relaymq.store.base import SENT, DeliveryRecord, InboundRecord, Store, StoredMessage
from relaymq.store.sqlite import SQLiteStore


def rows(path: Path, table: str) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def awaiting(path: Path) -> int:
    """The messages whose row holds an inbound QoS 2 state (awaiting PUBREL)."""
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT COUNT(*) FROM messages WHERE inbound_client IS NOT NULL").fetchone()[0]


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[tuple[Path, _GatedStore, AckGate]]:
    """The endpoint's store over a real SQLite file: (its path, the gated store, the gate)."""
    path = tmp_path / "endpoint.db"
    inner = SQLiteStore(str(path))
    gate = AckGate()
    try:
        yield path, _GatedStore(inner, gate), gate
    finally:
        inner.close()


def test_acknowledged_deliveries_deleted_in_one_call_leave_their_messages_to_the_gate(gated):
    """``delete_deliveries`` (a read's PUBACKs released at once, issue 16 row 8) through the
    endpoint's store: the rows go, a message whose last reference went waits for the flow."""
    path, store, gate = gated
    for seq in (1, 2):
        store.put_message_and_delivery(StoredMessage(seq, "dev/t", b"reading", 1),
                                       DeliveryRecord("sub", seq, seq, 1, state=SENT))
    store.flush()
    ticket = gate.ticket()
    store.delete_deliveries("sub", [(1, 1), (2, None)])  # message 2 is still referenced elsewhere
    store.flush()
    assert (rows(path, "messages"), rows(path, "deliveries")) == (2, 0)
    gate.done(ticket)
    store.flush()
    assert rows(path, "messages") == 1


def test_every_delete_of_the_store_interface_is_gated_or_named_as_safe():
    """A delete the Store interface gains (a new combined form) would reach the inner store
    through ``_GatedStore.__getattr__`` and remove a message before the flow's run committed:
    each one must be defined on _GatedStore or listed in its PASSED_THROUGH."""
    deletes = {name for name in dir(Store) if name.startswith("delete")}
    gated = {name for name in vars(_GatedStore) if name.startswith("delete")}
    assert deletes - gated - _GatedStore.PASSED_THROUGH == set()
    assert not gated & _GatedStore.PASSED_THROUGH


def test_released_inbound_records_deleted_in_one_call_wait_for_the_gate(gated):
    """``delete_inbounds`` (a read's QoS 2 releases, issue 16 row 3) through the endpoint's
    store: each inbound state and the message whose last reference went wait for the flow."""
    path, store, gate = gated
    for pid in (1, 2):
        store.put_message_and_inbound(StoredMessage(pid, "dev/t", b"reading", 2), InboundRecord("dev", pid, pid))
    store.flush()
    ticket = gate.ticket()
    store.delete_inbounds([(1, True), (2, False)])  # message 2 is still referenced elsewhere
    store.flush()
    assert (rows(path, "messages"), awaiting(path)) == (2, 2)
    gate.done(ticket)
    store.flush()
    assert (rows(path, "messages"), awaiting(path)) == (1, 0)
