"""Reading the broker's tables at start-up (``SQLiteStore.load``), a long backlog in pages.

A restart reads every session, subscription, retained message and QoS 2 state. A session's
queue is read in full only up to ``page`` queued deliveries: past that, only (seq, msg_id) of
each delivery is read (``Snapshot.stored_only``) and the message stays in the database until
the session drains that far (``Store.read_deliveries``). Issue 16, row 9: with 100,000 queued
messages, decoding every row into records took about 1.3 s of CPU before the broker could
accept the session; the ids alone take a tenth of that.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from operator import itemgetter
from typing import Any

from . import serialize as ser
from .base import DeliveryRecord, InboundRecord, SessionRecord, Snapshot, StoredMessage

#: Bound parameters per ``IN (...)`` query: below SQLite's oldest default limit (999).
_CHUNK = 500
_MSG_ID = itemgetter(1)  # of a (seq, msg_id) pair

_ALL_DELIVERIES = "SELECT * FROM deliveries ORDER BY seq, client_id"
#: Rows per client, whatever their state: counting reads no column but the key (a quarter
#: less than summing the states; issue 16, row 9).
_ROWS_PER_CLIENT = "SELECT client_id, COUNT(*) FROM deliveries GROUP BY client_id"
_CLIENT_DELIVERIES = "SELECT * FROM deliveries WHERE client_id = ? ORDER BY seq"
_PAGE_END = ("SELECT seq FROM deliveries WHERE client_id = ? AND state = 0 ORDER BY seq"
             " LIMIT 1 OFFSET ?")
_CLIENT_HEAD = "SELECT * FROM deliveries WHERE client_id = ? AND seq <= ? ORDER BY seq"
_CLIENT_LATER_IN_FLIGHT = "SELECT * FROM deliveries WHERE client_id = ? AND seq > ? AND state != 0 ORDER BY seq"
#: The inbound QoS 2 states (schema 6: columns of their messages' rows), from the partial
#: index that holds them only: a backlog's messages are not read for it.
_INBOUND = ("SELECT inbound_client, inbound_packet_id, msg_id FROM messages WHERE inbound_client IS NOT NULL"
            " ORDER BY inbound_client, inbound_packet_id, msg_id")
_CLIENT_TAIL = "SELECT seq, msg_id FROM deliveries WHERE client_id = ? AND state = 0 AND seq > ? ORDER BY seq"


def read_marks(conn: sqlite3.Connection) -> tuple[int, int]:
    """The highest msg_id and seq ever submitted (meta is written with the rows, so it covers them)."""
    meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
    return int(meta.get("max_msg_id", 0)), int(meta.get("max_seq", 0))


def read_snapshot(conn: sqlite3.Connection, page: int | None = None) -> Snapshot:
    """Every table, in the order the memory engine reports it too; with ``page``, a session's
    queued deliveries past its first ``page`` as ids only (``Snapshot.stored_only``)."""
    max_msg_id, max_seq = read_marks(conn)
    sessions = {row[0]: ser.session_from_row(row)
                for row in conn.execute("SELECT * FROM sessions ORDER BY client_id")}
    inbound = [ser.inbound_from_row(row) for row in conn.execute(_INBOUND)]
    retained = dict(conn.execute("SELECT topic, msg_id FROM retained ORDER BY topic"))
    if page is None:
        deliveries = [ser.delivery_from_row(row) for row in conn.execute(_ALL_DELIVERIES)]
        stored_only: dict[str, list[tuple[int, int]]] = {}
    else:
        deliveries, stored_only = _read_deliveries_paged(conn, sessions, max(1, page))
    skip = _unread_messages(stored_only, deliveries, inbound, retained, sessions)
    return Snapshot(
        messages=_read_messages(conn, skip, deliveries, inbound, retained, sessions),
        sessions=sessions,
        subscriptions=[
            ser.subscription_from_row(row)
            for row in conn.execute("SELECT * FROM subscriptions ORDER BY client_id, topic_filter")
        ],
        deliveries=deliveries,
        inbound=inbound,
        retained=retained,
        stored_only=stored_only,
        next_msg_id=max_msg_id + 1,
        next_seq=max_seq + 1,
    )


def _read_deliveries_paged(conn: sqlite3.Connection, sessions: dict[str, SessionRecord],
                           page: int) -> tuple[list[DeliveryRecord], dict[str, list[tuple[int, int]]]]:
    """Per client (the primary key's order: no sort): every delivery of a short queue; of a
    session's longer one, those in flight and the first ``page`` queued, the rest as ids."""
    rows: list[Any] = []
    stored_only: dict[str, list[tuple[int, int]]] = {}
    for client_id, count in conn.execute(_ROWS_PER_CLIENT).fetchall():
        end = (conn.execute(_PAGE_END, (client_id, page - 1)).fetchone()
               if count > page and client_id in sessions else None)
        if end is None:  # at most ``page`` queued
            rows.extend(conn.execute(_CLIENT_DELIVERIES, (client_id,)))
            continue
        (last,) = end
        head = conn.execute(_CLIENT_HEAD, (client_id, last)).fetchall()
        tail = conn.execute(_CLIENT_TAIL, (client_id, last)).fetchall()
        rows.extend(head)
        if len(head) + len(tail) != count:
            # in flight are the oldest, as a rule; the rows the two ranges left are later ones
            rows.extend(conn.execute(_CLIENT_LATER_IN_FLIGHT, (client_id, last)))
        if tail:  # none when exactly ``page`` are queued: then every row is read
            stored_only[client_id] = tail
    rows.sort(key=lambda row: (row[1], row[0]))  # the order of _ALL_DELIVERIES
    return [ser.delivery_from_row(row) for row in rows], stored_only


def _unread_messages(stored_only: dict[str, list[tuple[int, int]]], deliveries: list[DeliveryRecord],
                     inbound: list[InboundRecord], retained: dict[str, int],
                     sessions: dict[str, SessionRecord]) -> set[int]:
    """The messages only deliveries left in the store refer to: they are not read now."""
    if not stored_only:
        return set()
    skip: set[int] = set()
    for tail in stored_only.values():
        skip.update(map(_MSG_ID, tail))  # no Python loop over a backlog's 99,000 pairs
    skip.difference_update(d.msg_id for d in deliveries)
    skip.difference_update(i.msg_id for i in inbound)
    skip.difference_update(retained.values())
    skip.difference_update(s.will_msg_id for s in sessions.values())
    return skip


def _read_messages(conn: sqlite3.Connection, skip: set[int], deliveries: list[DeliveryRecord],
                   inbound: list[InboundRecord], retained: dict[str, int],
                   sessions: dict[str, SessionRecord]) -> dict[int, StoredMessage]:
    """Every message but those in ``skip``, by msg_id. With a backlog left in the store, the
    messages the records read refer to are read by id, and the rest of the table (the
    orphans a crash left, which restore deletes) only when a count of the rows outside the
    backlog says there are any: listing every msg_id of a 100,000-message backlog to find
    none cost ~40 ms of the restart (issue 16, row 9)."""
    if not skip:
        return {row[0]: ser.message_from_row(row)
                for row in conn.execute("SELECT * FROM messages ORDER BY msg_id")}
    referenced = {d.msg_id for d in deliveries}
    referenced.update(i.msg_id for i in inbound)
    referenced.update(retained.values())
    referenced.update(s.will_msg_id for s in sessions.values() if s.will_msg_id is not None)
    messages = _read_by_id(conn, sorted(referenced - skip))
    if _count_outside(conn, skip) != len(messages):  # orphans: read them too
        orphans = [msg_id for (msg_id,) in conn.execute("SELECT msg_id FROM messages ORDER BY msg_id")
                   if msg_id not in skip and msg_id not in messages]
        messages.update(_read_by_id(conn, orphans))
        messages = dict(sorted(messages.items()))
    return messages


#: Past this many gaps between the runs of unread msg_ids, ``_count_outside`` gives up (-1):
#: one range count per gap would cost more than listing the table's ids.
_MAX_GAPS = 1_000
_LOWEST, _HIGHEST = -(2 ** 63), 2 ** 63 - 1


def _count_outside(conn: sqlite3.Connection, skip: set[int]) -> int:
    """How many rows of ``messages`` have a msg_id outside ``skip`` (-1: not counted). The ids
    of a backlog run in a few ranges, so the rows between them are counted by primary-key
    range, never the backlog's rows themselves. Not ``COUNT(*)`` less ``len(skip)``: a
    delivery whose message is gone would hide an orphan from that sum."""
    ordered = sorted(skip)
    gaps: list[tuple[int, int]] = []
    low = _LOWEST
    for first, last in _runs(ordered):
        if first > low:
            gaps.append((low, first - 1))
            if len(gaps) > _MAX_GAPS:
                return -1
        low = last + 1
    if low <= _HIGHEST:
        gaps.append((low, _HIGHEST))
    return sum(conn.execute("SELECT COUNT(*) FROM messages WHERE msg_id BETWEEN ? AND ?", gap).fetchone()[0]
               for gap in gaps)


def _runs(ordered: list[int]) -> Iterator[tuple[int, int]]:
    """The runs of consecutive integers in ``ordered`` (ascending, no repeats) as (first,
    last), each end found by a galloping search: ``ordered[j] - ordered[i] == j - i`` holds
    exactly while ``i..j`` is one run, so a backlog of 99,000 ids in a few runs costs a few
    hundred steps, not a step per id."""
    start, size = 0, len(ordered)
    while start < size:
        first = ordered[start]
        end, step = start, 1  # ordered[end] is in the run; find the run's last index
        while end + step < size and ordered[end + step] - first == end + step - start:
            end += step
            step *= 2
        while step > 1:
            step //= 2
            if end + step < size and ordered[end + step] - first == end + step - start:
                end += step
        yield first, ordered[end]
        start = end + 1


def _read_by_id(conn: sqlite3.Connection, wanted: list[int]) -> dict[int, StoredMessage]:
    """The messages of ``wanted`` (ascending) that are in the table, by msg_id, in order."""
    messages: dict[int, StoredMessage] = {}
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start:start + _CHUNK]
        query = f"SELECT * FROM messages WHERE msg_id IN ({','.join('?' * len(chunk))}) ORDER BY msg_id"
        for row in conn.execute(query, chunk):
            messages[row[0]] = ser.message_from_row(row)
    return messages
