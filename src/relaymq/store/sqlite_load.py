"""Reading the broker's tables at start-up (``SQLiteStore.load``), a long backlog in pages.

A restart reads every session, subscription, retained message and QoS 2 state. A session's
queue is read in full only up to ``page`` queued deliveries: past that, it is not even listed
(``Snapshot.unlisted``): a count of the rest and the range of their message ids, by chunks of
about a page, and the broker lists them (``LIST_QUEUED``) and reads them
(``Store.read_deliveries``) as the session drains. Issue 16, row 9: with 100,000 queued
messages, decoding every row into records took about 1.3 s of CPU before the broker could
accept the session; listing the ids alone, 34% of a start's instructions (48 ms against the
counts' 12).
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_right
from typing import Any

from . import serialize as ser
from .base import DeliveryRecord, InboundRecord, QueueTail, SessionRecord, Snapshot, StoredMessage

#: Bound parameters per ``IN (...)`` query: below SQLite's oldest default limit (999).
_CHUNK = 500

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
#: A chunk of a queue's tail (``QueueTail``): how many, and the range of their message ids.
#: One such range count per chunk costs what one over the tail does (12 ms for 99,000 rows,
#: where a GROUP BY over chunks sorts, 31 ms; listing them, 48).
_TAIL_CHUNK = ("SELECT COUNT(*), MIN(msg_id), MAX(msg_id) FROM deliveries"
               " WHERE client_id = ? AND state = 0 AND seq > ? AND seq <= ?")
#: The messages between the ids the tails may refer to (by primary-key range, not a scan).
_COUNT_BETWEEN = "SELECT COUNT(*) FROM messages WHERE msg_id BETWEEN ? AND ?"
#: A tail's next ids (``Store.list_queued``).
LIST_QUEUED = ("SELECT seq, msg_id FROM deliveries WHERE client_id = ? AND state = 0 AND seq > ? AND seq <= ?"
               " ORDER BY seq LIMIT ?")
#: The ids of a range of messages (``Store.message_ids``).
MESSAGE_IDS = "SELECT msg_id FROM messages WHERE msg_id BETWEEN ? AND ? ORDER BY msg_id"


def read_marks(conn: sqlite3.Connection) -> tuple[int, int]:
    """The highest msg_id and seq ever submitted (meta is written with the rows, so it covers them)."""
    meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
    return int(meta.get("max_msg_id", 0)), int(meta.get("max_seq", 0))


def read_snapshot(conn: sqlite3.Connection, page: int | None = None) -> Snapshot:
    """Every table, in the order the memory engine reports it too; with ``page``, a session's
    queued deliveries past its first ``page`` left unlisted (``Snapshot.unlisted``)."""
    max_msg_id, max_seq = read_marks(conn)
    sessions = {row[0]: ser.session_from_row(row)
                for row in conn.execute("SELECT * FROM sessions ORDER BY client_id")}
    inbound = [ser.inbound_from_row(row) for row in conn.execute(_INBOUND)]
    retained = dict(conn.execute("SELECT topic, msg_id FROM retained ORDER BY topic"))
    if page is None:
        deliveries = [ser.delivery_from_row(row) for row in conn.execute(_ALL_DELIVERIES)]
        unlisted: dict[str, QueueTail] = {}
    else:
        deliveries, unlisted = _read_deliveries_paged(conn, sessions, max(1, page), max_seq)
    return Snapshot(
        messages=_read_messages(conn, unlisted, deliveries, inbound, retained, sessions),
        sessions=sessions,
        subscriptions=[
            ser.subscription_from_row(row)
            for row in conn.execute("SELECT * FROM subscriptions ORDER BY client_id, topic_filter")
        ],
        deliveries=deliveries,
        inbound=inbound,
        retained=retained,
        unlisted=unlisted,
        next_msg_id=max_msg_id + 1,
        next_seq=max_seq + 1,
    )


def _read_deliveries_paged(conn: sqlite3.Connection, sessions: dict[str, SessionRecord], page: int,
                           max_seq: int) -> tuple[list[DeliveryRecord], dict[str, QueueTail]]:
    """Per client (the primary key's order: no sort): every delivery of a short queue; of a
    session's longer one, those in flight and the first ``page`` queued, the rest counted."""
    rows: list[Any] = []
    unlisted: dict[str, QueueTail] = {}
    for client_id, count in conn.execute(_ROWS_PER_CLIENT).fetchall():
        end = (conn.execute(_PAGE_END, (client_id, page - 1)).fetchone()
               if count > page and client_id in sessions else None)
        if end is None:  # at most ``page`` queued
            rows.extend(conn.execute(_CLIENT_DELIVERIES, (client_id,)))
            continue
        (last,) = end
        head = conn.execute(_CLIENT_HEAD, (client_id, last)).fetchall()
        tail = _tail(conn, client_id, last, max_seq, count - len(head), page)
        rows.extend(head)
        if len(head) + tail.count != count:
            # in flight are the oldest, as a rule; the rows the two ranges left are later ones
            rows.extend(conn.execute(_CLIENT_LATER_IN_FLIGHT, (client_id, last)))
        if tail.count:  # none when exactly ``page`` are queued: then every row is read
            unlisted[client_id] = tail
    rows.sort(key=lambda row: (row[1], row[0]))  # the order of _ALL_DELIVERIES
    return [ser.delivery_from_row(row) for row in rows], unlisted


def _tail(conn: sqlite3.Connection, client_id: str, last: int, max_seq: int, rows: int, page: int) -> QueueTail:
    """The client's queued deliveries after seq ``last`` (``rows`` of its rows are), counted
    in chunks of about ``page`` rows: the seqs up to ``max_seq`` cut in equal ranges."""
    step = -(-(max_seq - last) * page // max(rows, 1)) or 1
    tail = QueueTail(last, max_seq, 0, [])
    for first in range(last, max_seq, step):
        end = min(first + step, max_seq)
        queued, low, high = conn.execute(_TAIL_CHUNK, (client_id, first, end)).fetchone()
        if queued:
            tail.count += queued
            tail.chunks.append((end, low, high))
    if tail.chunks:
        tail.low = min(low for _, low, _ in tail.chunks)
        tail.high = max(high for _, _, high in tail.chunks)
    return tail


def _read_messages(conn: sqlite3.Connection, unlisted: dict[str, QueueTail], deliveries: list[DeliveryRecord],
                   inbound: list[InboundRecord], retained: dict[str, int],
                   sessions: dict[str, SessionRecord]) -> dict[int, StoredMessage]:
    """Every message a record read refers to, by msg_id; with no tail left unlisted, every
    message. Beside tails, the messages no record refers to (the orphans a crash left, which
    restore deletes) are read only outside the ids the tails may refer to (their chunks'
    ranges), and only when a count of the rows there says there are any; those inside wait
    for the broker's sweep once their chunk is listed (``broker.unlisted``)."""
    if not unlisted:
        return {row[0]: ser.message_from_row(row)
                for row in conn.execute("SELECT * FROM messages ORDER BY msg_id")}
    referenced = {d.msg_id for d in deliveries}
    referenced.update(i.msg_id for i in inbound)
    referenced.update(retained.values())
    referenced.update(s.will_msg_id for s in sessions.values() if s.will_msg_id is not None)
    messages = _read_by_id(conn, sorted(referenced))
    gaps = _gaps(sorted((low, high) for tail in unlisted.values() for _, low, high in tail.chunks))
    starts = [low for low, _ in gaps]
    outside = sum(_within(gaps, starts, msg_id) for msg_id in messages)  # not one scan of the gaps each
    if sum(conn.execute(_COUNT_BETWEEN, gap).fetchone()[0] for gap in gaps) != outside:  # orphans: read them too
        orphans = [msg_id for gap in gaps for (msg_id,) in conn.execute(MESSAGE_IDS, gap) if msg_id not in messages]
        messages.update(_read_by_id(conn, orphans))
        messages = dict(sorted(messages.items()))
    return messages


_LOWEST, _HIGHEST = -(2 ** 63), 2 ** 63 - 1


def _gaps(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ids outside every one of ``ranges`` (sorted by their start), as ranges."""
    gaps: list[tuple[int, int]] = []
    low = _LOWEST
    for first, last in ranges:
        if first > low:
            gaps.append((low, first - 1))
        low = max(low, last + 1)
    if low <= _HIGHEST:
        gaps.append((low, _HIGHEST))
    return gaps


def _within(gaps: list[tuple[int, int]], starts: list[int], msg_id: int) -> bool:
    """Is ``msg_id`` in one of ``gaps`` (sorted and disjoint, as ``_gaps`` makes them;
    ``starts``: their first ids)?"""
    at = bisect_right(starts, msg_id) - 1
    return at >= 0 and msg_id <= gaps[at][1]


def _read_by_id(conn: sqlite3.Connection, wanted: list[int]) -> dict[int, StoredMessage]:
    """The messages of ``wanted`` (ascending) that are in the table, by msg_id, in order."""
    messages: dict[int, StoredMessage] = {}
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start:start + _CHUNK]
        query = f"SELECT * FROM messages WHERE msg_id IN ({','.join('?' * len(chunk))}) ORDER BY msg_id"
        for row in conn.execute(query, chunk):
            messages[row[0]] = ser.message_from_row(row)
    return messages
