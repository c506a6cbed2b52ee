"""Issue 16 (bench/compare rows 5 and 8): a stored QoS 1 delivery put in flight from its
session's queue is sent without a store write; its row says QUEUED until the client goes away,
whose disconnect stores the exact states (``persistence.record_sent``). Nothing acknowledged
depends on that state: it only decides how a restart sends the delivery again (mqtt.md item 8,
retransmitted with DUP on reconnect; MQTT 3.1.1 3.3.1.1: DUP=1 "might be re-delivery of an
earlier attempt")."""

from __future__ import annotations

from relaymq.mqtt import packets as p
from relaymq.store.base import QUEUED, SENT

from .driver import TestClient, sqlite_broker
from .test_broker_limits import _drain
from .test_broker_restart_backlog import _offline_backlog

BACKLOG = [f"m{i:03d}".encode() for i in range(4)]


def _rows(store) -> dict[bytes, tuple[int | None, int]]:
    store.flush()
    snap = store.load()
    return {snap.messages[d.msg_id].payload: (d.packet_id, d.state) for d in snap.deliveries}


def _first_window(path: str):
    """Four messages queued for "sub" offline; "sub" connects with a window of two: the store,
    the client and what it got."""
    _offline_backlog(path, 4, "sub")
    broker, store = sqlite_broker(path, max_inflight=2)
    sub = TestClient(broker)
    sub.connect("sub", clean=False)
    return broker, store, sub, sub.publishes()


def _reconnected(path: str):
    """A broker restarted on ``path`` and "sub" back: the store, the client, what it got."""
    broker, store = sqlite_broker(path, max_inflight=2)
    back = TestClient(broker)
    assert back.connect("sub", clean=False).session_present
    return store, back, back.publishes()


def test_queued_qos1_deliveries_go_out_without_a_write_and_come_back_with_dup_after_a_crash(tmp_path):
    path = str(tmp_path / "crash.db")
    _, store, _, first = _first_window(path)
    assert [(m.payload, m.dup) for m in first] == [(b"m000", False), (b"m001", False)]
    assert _rows(store) == {m: (None, QUEUED) for m in BACKLOG}  # no write for putting them in flight
    store.close()  # the broker dies with the client connected: its session was never closed

    store, back, again = _reconnected(path)
    try:
        # any of them may have been sent: DUP=1 on each, nothing lost
        assert [(m.payload, m.dup) for m in again] == [(b"m000", True), (b"m001", True)]
        for m in again:
            back.send(p.Puback(m.packet_id))
        assert _drain(back, 2) == BACKLOG[2:]
        assert _rows(store) == {}
    finally:
        store.close()


def test_a_disconnect_stores_the_sent_states_so_a_restart_resends_under_the_same_packet_ids(tmp_path):
    path = str(tmp_path / "clean.db")
    broker, store, sub, first = _first_window(path)
    sub.send(p.Disconnect())
    assert _rows(store) == {**{m.payload: (m.packet_id, SENT) for m in first},
                            b"m002": (None, QUEUED), b"m003": (None, QUEUED)}
    broker.shutdown()
    store.close()

    store, back, again = _reconnected(path)
    try:
        assert [(m.payload, m.packet_id, m.dup) for m in again] == [
            (m.payload, m.packet_id, True) for m in first]
        for m in again:
            back.send(p.Puback(m.packet_id))
        rest = back.publishes()
        assert [(m.payload, m.dup) for m in rest] == [(b"m002", False), (b"m003", False)]
    finally:
        store.close()
