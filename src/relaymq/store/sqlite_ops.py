"""The MQTT broker's SQL statements (the tables of :mod:`relaymq.store.engine`'s migrations 1-2
and 6) and the changes :class:`relaymq.store.sqlite.SQLiteStore` submits with them: what each
does to the pending :class:`relaymq.store.batch.Batch`, folding into or cancelling what is still
pending on its rows.

Apart from the store so that it is compiled with the broker's per-message path
(``relaymq.native_build``): the changes run for every durable message, under the engine's lock,
on the event loop's thread (issue 16, bench/compare rows 3 and 5).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Final

from . import serialize as ser
from .base import RELEASED
from .batch import Batch, Op

PUT_MESSAGE: Final = "INSERT OR REPLACE INTO messages VALUES (?,?,?,?,?,?,?,?,?,?)"
DELETE_MESSAGE: Final = "DELETE FROM messages WHERE msg_id = ?"
NO_INBOUND: Final = "UPDATE messages SET inbound_client = NULL, inbound_packet_id = NULL WHERE"
RELEASE_INBOUND: Final = f"{NO_INBOUND} msg_id = ?"
RELEASE_CLIENT_INBOUND: Final = f"{NO_INBOUND} inbound_client = ?"
PUT_SESSION: Final = "INSERT OR REPLACE INTO sessions VALUES (?,?,?,?,?,?,?)"
DELETE_SESSION: Final = "DELETE FROM sessions WHERE client_id = ?"
PUT_SUBSCRIPTION: Final = "INSERT OR REPLACE INTO subscriptions VALUES (?,?,?,?,?,?,?,?)"
DELETE_SUBSCRIPTION: Final = "DELETE FROM subscriptions WHERE client_id = ? AND topic_filter = ?"
DELETE_CLIENT_SUBSCRIPTIONS: Final = "DELETE FROM subscriptions WHERE client_id = ?"
PUT_DELIVERY: Final = "INSERT OR REPLACE INTO deliveries VALUES (?,?,?,?,?,?,?,?)"
UPDATE_DELIVERY: Final = "UPDATE deliveries SET packet_id = ?, state = ? WHERE client_id = ? AND seq = ?"
DELETE_DELIVERY: Final = "DELETE FROM deliveries WHERE client_id = ? AND seq = ?"
MARK_RELEASED: Final = f"UPDATE deliveries SET state = {RELEASED} WHERE client_id = ? AND seq = ?"
DELETE_CLIENT_DELIVERIES: Final = "DELETE FROM deliveries WHERE client_id = ?"
PUT_RETAINED: Final = "INSERT OR REPLACE INTO retained VALUES (?,?)"
DELETE_RETAINED: Final = "DELETE FROM retained WHERE topic = ?"
PUT_META: Final = "INSERT OR REPLACE INTO meta VALUES (?,?)"


def fold_delivery(packet_id: int | None, state: int, row: tuple[Any, ...]) -> tuple[Any, ...]:
    return ser.updated_delivery_row(row, packet_id, state)


def update_rows(batch: Batch, client_id: str, rows: list[tuple[int, int | None, int]]) -> None:
    """``update_delivery`` of each row, in order (``update_deliveries``)."""
    for seq, packet_id, state in rows:
        batch.update(("d", client_id, seq), (UPDATE_DELIVERY, (packet_id, state, client_id, seq)),
               partial(fold_delivery, packet_id, state))


def released_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return ser.updated_delivery_state(row, RELEASED)


def mark_released_rows(batch: Batch, client_id: str, seqs: list[int]) -> None:
    """Each delivery's RELEASED state (``mark_released``), folded into its put still pending."""
    for seq in seqs:
        batch.update(("d", client_id, seq), (MARK_RELEASED, (client_id, seq)), released_row)


def delete_rows(batch: Batch, client_id: str, rows: list[tuple[int, int | None]]) -> None:
    """``delete_delivery`` of each row, with its message when it names one (``delete_deliveries``)."""
    for seq, msg_id in rows:
        batch.delete(("d", client_id, seq), (DELETE_DELIVERY, (client_id, seq)))
        if msg_id is not None:
            batch.delete(("m", msg_id), (DELETE_MESSAGE, (msg_id,)))


def release_rows(batch: Batch, rows: list[tuple[int, bool]]) -> None:
    """Each message's inbound QoS 2 state cleared, or the message deleted when ``last``
    (``delete_inbounds``); a clearing folds into the message's put still pending."""
    for msg_id, last in rows:
        key = ("m", msg_id)
        if last:
            batch.delete(key, (DELETE_MESSAGE, (msg_id,)))
        else:
            batch.update(key, (RELEASE_INBOUND, (msg_id,)), ser.released_message_row)


def put_both(batch: Batch, first_key: tuple[Any, ...], first: Op, first_fresh: bool,
             second_key: tuple[Any, ...], second: Op, second_fresh: bool) -> None:
    """Two puts of one submission, in order (``put_message_and_delivery``)."""
    batch.put(first_key, first, first_fresh)
    batch.put(second_key, second, second_fresh)

