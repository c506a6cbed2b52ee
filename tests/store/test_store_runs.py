"""How the writer turns a batch's operations into statements (``engine._runs``): each table's
operations in order, the same statements on a table in one run, a statement that may read
another table never crossed."""

from __future__ import annotations

import sqlite3

from relaymq.store.batch import Batch
from relaymq.store.engine import _COMBINE_BYTES, _COMBINE_MAX, _chunks, _execute, _runs
from relaymq.store.sqlite_ops import (
    DELETE_DELIVERY, DELETE_MESSAGE, MARK_RELEASED, PUT_DELIVERY, PUT_MESSAGE, RELEASE_INBOUND, UPDATE_DELIVERY,
)

SELECTING = "INSERT OR REPLACE INTO retained SELECT 'c', msg_id FROM messages WHERE msg_id = ?"


def message(msg_id: int) -> tuple[object, ...]:
    return (msg_id, "t", b"", 2, 0, None, None, 0.0, None, None)


def delivery(seq: int) -> tuple[object, ...]:
    return ("c", seq, seq, 2, 0, None, 0, None)


def test_alternating_tables_become_one_run_each_in_order_within_a_table() -> None:
    """Publications alternate messages and delivery rows: two multi-row statements, not one
    per row; a delete between puts of one table keeps its place among them."""
    ops = [(PUT_MESSAGE, message(1)), (PUT_DELIVERY, delivery(1)),
           (PUT_MESSAGE, message(2)), (PUT_DELIVERY, delivery(2)),
           (DELETE_MESSAGE, (1,)), (DELETE_DELIVERY, ("c", 1)), (PUT_MESSAGE, message(1))]
    assert _runs(ops) == [
        (PUT_MESSAGE, [message(1), message(2)]),
        (PUT_DELIVERY, [delivery(1), delivery(2)]),
        (DELETE_MESSAGE, [(1,)]),
        (DELETE_DELIVERY, [("c", 1)]),
        (PUT_MESSAGE, [message(1)]),
    ]


def test_a_statement_that_reads_another_table_is_never_crossed() -> None:
    ops = [(PUT_MESSAGE, message(1)), (SELECTING, (1,)), (DELETE_MESSAGE, (1,)), None,
           (PUT_MESSAGE, message(3))]
    assert _runs(ops) == [(PUT_MESSAGE, [message(1)]), (SELECTING, [(1,)]),
                          (DELETE_MESSAGE, [(1,)]), (PUT_MESSAGE, [message(3)])]
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE messages (msg_id INTEGER PRIMARY KEY, topic, payload, qos, retain,"
                 " properties, expiry_at, created_at, inbound_client, inbound_packet_id)")
    conn.execute("CREATE TABLE retained (topic PRIMARY KEY, msg_id)")
    for sql, rows in _runs(ops):
        _execute(conn, sql, rows)
    assert conn.execute("SELECT * FROM retained").fetchall() == [("c", 1)]
    assert conn.execute("SELECT msg_id FROM messages").fetchall() == [(3,)]


def test_combined_statements_bind_at_most_a_megabyte_of_payloads() -> None:
    """A run of 1 MB messages (a stuck subscriber's backlog, tests/interop/test_memory_bounds.py)
    goes one row a statement: SQLite copies what a statement binds, and 64 rows at once held
    64 MB. Small rows still go 64 a statement; one row larger than the budget goes alone."""
    big = [(i, "t", b"x" * (600 * 1024), 1, 0, None, None, 0.0) for i in range(5)]
    assert [len(chunk) for chunk in _chunks(big)] == [1, 1, 1, 1, 1]
    small = [message(i) for i in range(150)]
    assert [len(chunk) for chunk in _chunks(small)] == [_COMBINE_MAX, _COMBINE_MAX, 150 - 2 * _COMBINE_MAX]
    mixed = [(1, "t", b"x" * (_COMBINE_BYTES + 1), 1, 0, None, None, 0.0), message(2), message(3)]
    assert [len(chunk) for chunk in _chunks(mixed)] == [1, 2]
    assert [row for chunk in _chunks(big + small) for row in chunk] == big + small


def test_released_inbound_states_are_cleared_in_one_statement(tmp_path) -> None:
    """A read's QoS 2 releases (issue 16, row 3) clear their messages' inbound columns: an
    UPDATE that binds only the key combines into one ``WHERE msg_id IN (...)`` like a DELETE,
    so the writer steps once (and hands the GIL to the event loop once), not once a row."""
    conn = sqlite3.connect(tmp_path / "r.db")
    conn.execute("CREATE TABLE messages (msg_id INTEGER PRIMARY KEY, topic, payload, qos, retain,"
                 " properties, expiry_at, created_at, inbound_client, inbound_packet_id)")
    conn.executemany(PUT_MESSAGE, [message(i)[:8] + ("pub", i) for i in range(1, 5)])
    steps: list[str] = []
    conn.set_trace_callback(steps.append)
    statements = _runs([(RELEASE_INBOUND, (i,)) for i in (1, 2, 4)])
    for sql, rows in statements:
        _execute(conn, sql, rows)
    assert steps == [RELEASE_INBOUND.replace("= ?", "IN (1,2,4)")]
    assert conn.execute("SELECT msg_id, inbound_client, inbound_packet_id FROM messages").fetchall() == [
        (1, None, None), (2, None, None), (3, "pub", 3), (4, None, None)]


def test_a_reads_released_states_are_one_statement_and_never_replace_a_packet_id(tmp_path) -> None:
    """A read's PUBRECs (issue 16, row 3) store their RELEASED states with an UPDATE that binds
    only the key: a batch's rows of one session become one ``seq IN (...)`` statement, where
    binding each row's packet id made one statement per row. Pending behind an update that
    sets the packet id too, it is appended, never put in that update's place (which would
    lose the packet id)."""
    conn = sqlite3.connect(tmp_path / "d.db")
    conn.execute("CREATE TABLE deliveries (client_id, seq, msg_id, qos, retain, packet_id, state,"
                 " subscription_ids, PRIMARY KEY (client_id, seq))")
    conn.executemany(PUT_DELIVERY, [delivery(seq)[:5] + (seq + 100, 1, None) for seq in range(1, 5)])
    batch = Batch()
    batch.update(("d", "c", 4), (UPDATE_DELIVERY, (7, 1, "c", 4)), lambda row: row)
    for seq in (1, 2, 4):
        batch.update(("d", "c", seq), (MARK_RELEASED, ("c", seq)), lambda row: row)
    steps: list[str] = []
    conn.set_trace_callback(steps.append)
    for sql, rows in _runs(batch.ops):
        _execute(conn, sql, rows)
    assert steps == [UPDATE_DELIVERY.replace("packet_id = ?, state = ?", "packet_id = 7, state = 1")
                     .replace("client_id = ?", "client_id = 'c'").replace("seq = ?", "seq = 4"),
                     MARK_RELEASED.replace("client_id = ?", "client_id = 'c'").replace("seq = ?", "seq IN (1,2,4)")]
    assert conn.execute("SELECT seq, packet_id, state FROM deliveries ORDER BY seq").fetchall() == [
        (1, 101, 2), (2, 102, 2), (3, 103, 1), (4, 7, 2)]
