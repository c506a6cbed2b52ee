"""How the writer turns a batch's operations into statements (``engine._runs``): each table's
operations in order, the same statements on a table in one run, a statement that may read
another table never crossed."""

from __future__ import annotations

import sqlite3

from relaymq.store.engine import _execute, _runs
from relaymq.store.sqlite import _DELETE_INBOUND, _DELETE_MESSAGE, _PUT_INBOUND, _PUT_MESSAGE

SELECTING = "INSERT OR REPLACE INTO inbound SELECT 'c', msg_id, msg_id FROM messages WHERE msg_id = ?"


def message(msg_id: int) -> tuple[object, ...]:
    return (msg_id, "t", b"", 2, 0, None, None, 0.0)


def test_alternating_tables_become_one_run_each_in_order_within_a_table() -> None:
    """QoS 2 PUBLISHes alternate messages and inbound rows: two multi-row statements, not one
    per row; a delete between puts of one table keeps its place among them."""
    ops = [(_PUT_MESSAGE, message(1)), (_PUT_INBOUND, ("c", 1, 1)),
           (_PUT_MESSAGE, message(2)), (_PUT_INBOUND, ("c", 2, 2)),
           (_DELETE_MESSAGE, (1,)), (_DELETE_INBOUND, ("c", 1)), (_PUT_MESSAGE, message(1))]
    assert _runs(ops) == [
        (_PUT_MESSAGE, [message(1), message(2)]),
        (_PUT_INBOUND, [("c", 1, 1), ("c", 2, 2)]),
        (_DELETE_MESSAGE, [(1,)]),
        (_DELETE_INBOUND, [("c", 1)]),
        (_PUT_MESSAGE, [message(1)]),
    ]


def test_a_statement_that_reads_another_table_is_never_crossed() -> None:
    ops = [(_PUT_MESSAGE, message(1)), (SELECTING, (1,)), (_DELETE_MESSAGE, (1,)), None,
           (_PUT_MESSAGE, message(3))]
    assert _runs(ops) == [(_PUT_MESSAGE, [message(1)]), (SELECTING, [(1,)]),
                          (_DELETE_MESSAGE, [(1,)]), (_PUT_MESSAGE, [message(3)])]
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE messages (msg_id INTEGER PRIMARY KEY, topic, payload, qos, retain,"
                 " properties, expiry_at, created_at)")
    conn.execute("CREATE TABLE inbound (client_id, packet_id, msg_id, PRIMARY KEY (client_id, packet_id))")
    for sql, rows in _runs(ops):
        _execute(conn, sql, rows)
    assert conn.execute("SELECT * FROM inbound").fetchall() == [("c", 1, 1)]
    assert conn.execute("SELECT msg_id FROM messages").fetchall() == [(3,)]
