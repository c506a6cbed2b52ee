"""The memory engine: everything in dicts, nothing on disk (``--store memory``).

While the broker runs it behaves exactly as the SQLite engine does: it keeps the same rows
(built by :mod:`.serialize`, so a record mutated after submission is not changed here either),
refuses the same property values and hands back the same Snapshot. Everything is lost when the
process exits; that is the documented price of not touching the disk. Every write is "durable"
at once, so ``on_durable`` calls back immediately (through ``notify`` if one was given, which
keeps acknowledgements on the event loop's next turn, as with the SQLite engine).
"""

from __future__ import annotations

from typing import Any, TypeVar
from collections.abc import Callable, Iterator

from . import serialize as ser
from .engine import Notify
from .base import (
    QUEUED,
    RELEASED,
    DeliveryRecord,
    InboundRecord,
    SessionRecord,
    Snapshot,
    Store,
    StoredMessage,
    StoreError,
    SubscriptionRecord,
)

_Row = TypeVar("_Row", bound=tuple[Any, ...])


class MemoryStore(Store):
    """A Store that keeps rows in dicts; for tests and for brokers that accept losing state."""

    def __init__(self, notify: Notify | None = None) -> None:
        self._notify = notify
        self._closed = False
        self._messages: dict[int, ser.MessageRow] = {}
        self._sessions: dict[str, ser.SessionRow] = {}
        # Per-client tables (client_id -> key -> row), so delete_session costs that client's rows only.
        self._subscriptions: dict[str, dict[str, ser.SubscriptionRow]] = {}
        self._deliveries: dict[str, dict[int, ser.DeliveryRow]] = {}
        #: The messages whose rows hold an inbound QoS 2 state: msg_id -> (client_id, packet_id).
        self._inbound: dict[int, tuple[str, int]] = {}
        self._retained: dict[str, int] = {}
        self._max_msg_id = 0
        self._max_seq = 0

    def _check(self) -> None:
        if self._closed:
            raise StoreError("memory store is closed")

    def _write(self) -> None:
        """Refuse a write once closed; count it (``submitted``)."""
        self._check()
        self.submitted += 1

    def load(self, page: int | None = None) -> Snapshot:
        """Fresh records in the SQLite engine's order (subscriptions and inbound by key, deliveries by seq).
        Everything is in memory already, so ``page`` leaves nothing in the store."""
        self._check()
        return Snapshot(
            messages={k: ser.message_from_row(r) for k, r in self._messages.items()},
            sessions={k: ser.session_from_row(r) for k, r in self._sessions.items()},
            subscriptions=[ser.subscription_from_row(r) for r in sorted(_rows(self._subscriptions))],
            deliveries=[ser.delivery_from_row(r) for r in sorted(_rows(self._deliveries), key=lambda r: (r[1], r[0]))],
            inbound=[ser.inbound_from_row((*state, msg_id))
                     for state, msg_id in sorted((state, msg_id) for msg_id, state in self._inbound.items())],
            retained=dict(self._retained),
            next_msg_id=self._max_msg_id + 1,
            next_seq=self._max_seq + 1,
        )

    def put_message(self, message: StoredMessage) -> None:
        self._write()
        self._messages[message.msg_id] = ser.message_row(message)
        self._inbound.pop(message.msg_id, None)  # a whole row: with no inbound state
        self._max_msg_id = max(self._max_msg_id, message.msg_id)

    def delete_message(self, msg_id: int) -> None:
        self._write()
        self._messages.pop(msg_id, None)
        self._inbound.pop(msg_id, None)

    def put_session(self, record: SessionRecord) -> None:
        self._write()
        self._sessions[record.client_id] = ser.session_row(record)

    def delete_session(self, client_id: str) -> None:
        self._write()
        self._sessions.pop(client_id, None)
        self._subscriptions.pop(client_id, None)
        self._deliveries.pop(client_id, None)
        for msg_id in [m for m, (owner, _) in self._inbound.items() if owner == client_id]:
            del self._inbound[msg_id]

    def put_subscription(self, record: SubscriptionRecord) -> None:
        self._write()
        self._subscriptions.setdefault(record.client_id, {})[record.topic_filter] = ser.subscription_row(record)

    def delete_subscription(self, client_id: str, topic_filter: str) -> None:
        self._write()
        _discard(self._subscriptions, client_id, topic_filter)

    def put_delivery(self, record: DeliveryRecord) -> None:
        self._write()
        self._deliveries.setdefault(record.client_id, {})[record.seq] = ser.delivery_row(record)
        self._max_seq = max(self._max_seq, record.seq)

    def update_delivery(self, client_id: str, seq: int, packet_id: int | None, state: int) -> None:
        self._write()
        rows = self._deliveries.get(client_id)
        if rows is not None and seq in rows:
            rows[seq] = ser.updated_delivery_row(rows[seq], packet_id, state)

    def mark_released(self, client_id: str, seqs: list[int]) -> None:
        rows = self._deliveries.get(client_id)
        for seq in seqs:
            self._write()
            if rows is not None and seq in rows:
                rows[seq] = ser.updated_delivery_state(rows[seq], RELEASED)

    def delete_delivery(self, client_id: str, seq: int) -> None:
        self._write()
        _discard(self._deliveries, client_id, seq)

    def read_deliveries(self, client_id: str, after_seq: int,
                        limit: int) -> list[tuple[DeliveryRecord, StoredMessage]]:
        self._check()
        rows = sorted((seq, row) for seq, row in self._deliveries.get(client_id, {}).items() if seq > after_seq)
        return [(ser.delivery_from_row(row), ser.message_from_row(self._messages[row[2]]))
                for _, row in rows[:limit]]

    def list_queued(self, client_id: str, after_seq: int, through_seq: int, limit: int) -> list[tuple[int, int]]:
        self._check()
        rows = self._deliveries.get(client_id, {})
        listed = sorted((seq, row[2]) for seq, row in rows.items()
                        if after_seq < seq <= through_seq and row[6] == QUEUED)
        return listed[:limit]

    def message_ids(self, low: int, high: int) -> list[int]:
        self._check()
        return sorted(msg_id for msg_id in self._messages if low <= msg_id <= high)

    def put_message_and_inbound(self, message: StoredMessage, record: InboundRecord) -> None:
        self.put_message(message)
        self._inbound[message.msg_id] = (record.client_id, record.packet_id)

    def delete_inbounds(self, rows: list[tuple[int, bool]]) -> None:
        for msg_id, last in rows:
            if last:
                self.delete_message(msg_id)
            else:
                self._write()
                self._inbound.pop(msg_id, None)

    def put_retained(self, topic: str, msg_id: int) -> None:
        self._write()
        self._retained[topic] = msg_id

    def delete_retained(self, topic: str) -> None:
        self._write()
        self._retained.pop(topic, None)

    @property
    def notify(self) -> Notify | None:
        """How durable-callbacks are handed back to the owner's thread (None: called at once)."""
        return self._notify

    def on_durable(self, callback: Callable[[], None]) -> None:
        """Everything is already "durable": call back now, through ``notify`` when given."""
        self._check()
        if self._notify is None:
            callback()
        else:
            self._notify(callback)

    def flush(self) -> None:
        self._check()

    def close(self) -> None:
        """Drop everything; further calls raise StoreError. Closing twice is harmless."""
        self._closed = True
        for table in (self._messages, self._sessions, self._subscriptions, self._deliveries, self._inbound, self._retained):
            table.clear()


def _rows(table: dict[str, dict[Any, _Row]]) -> Iterator[_Row]:
    for rows in table.values():
        yield from rows.values()


def _discard(table: dict[str, dict[Any, Any]], client_id: str, key: Any) -> None:
    """Remove one row of a per-client table, and the client's entry once it is empty."""
    rows = table.get(client_id)
    if rows is not None:
        rows.pop(key, None)
        if not rows:
            del table[client_id]
