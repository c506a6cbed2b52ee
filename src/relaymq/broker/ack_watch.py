"""A QoS 1 PUBACK that may leave before the commit (spec README decision 4; issue 8).

The PUBACK to a publisher promises that the broker will not lose the message. Routing writes
the message to the store for the persistent sessions that receive it, and the PUBACK waits
for that commit. The promise is kept just as well once every one of those sessions'
subscribers has acknowledged its copy: nothing is left to lose (a crash before the commit
finds no rows, or rows the subscriber gets again, which QoS 1 allows). So such a PUBACK goes
at the first of the two: the commit, or the last subscriber's PUBACK; always in order behind
the connection's earlier acknowledgements.

Only a publication whose every store write was one of those deliveries is watched. One that
stored anything else (a retained message, a copy for a queue subscriber or a flow through a
publication tap) waits for the commit as before, and so does one with a delivery that did not
go straight into flight (queued behind others: it will rarely be acknowledged before the
commit, and a queued backlog must not hold the publisher's connection) or that ended otherwise
(expired, session discarded).

Why it matters: with a subscriber that keeps up, its PUBACK arrives within a round trip,
sooner than a commit; the publisher's next messages then come while the writer still commits,
and the rows of those acknowledged in time cancel out of the pending batch unwritten.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from relaymq.broker.connection import Connection
    from relaymq.broker.records import PendingAck


class AckWatch:
    """The stored deliveries of one QoS 1 publication, and its PUBACK waiting in the
    publisher's connection (``entry``, once armed)."""

    __slots__ = ("writes", "waiting", "conn", "entry")

    def __init__(self) -> None:
        self.writes = 0  # store writes the watched deliveries made
        self.waiting = 0  # watched deliveries not acknowledged yet
        self.conn: Connection | None = None
        self.entry: PendingAck | None = None

    def watch(self, writes: int) -> None:
        """A delivery of the publication was stored with ``writes`` store operations."""
        self.writes += writes
        self.waiting += 1

    def arm(self, conn: Connection, entry: PendingAck) -> None:
        """The PUBACK is queued as ``entry`` of ``conn``: release it when the last watched
        delivery is acknowledged."""
        self.conn = conn
        self.entry = entry

    def delivered(self) -> Connection | None:
        """A watched delivery was acknowledged by its subscriber. Returns the publisher's
        connection when that was the last one (its PUBACK is ready now): the caller sends its
        ready acknowledgements, once per connection for all the watches a read released
        (``delivery.settle_acknowledged``), with ``resume=False`` (inside another
        connection's read)."""
        self.waiting -= 1
        if self.waiting == 0 and self.entry is not None and self.conn is not None:
            conn, self.conn = self.conn, None
            self.entry.ready = True
            self.entry = None
            return conn
        return None
