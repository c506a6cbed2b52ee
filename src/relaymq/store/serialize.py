"""Records <-> flat rows, and MQTT 5 property dicts <-> text, for every storage engine.

Both engines store *rows* (tuples of SQLite-compatible values) built here, so a record the
broker mutates after submitting it cannot change what was submitted, and the memory engine
round-trips exactly what the SQLite engine does (same validation, same copies).

Properties hold str, int, bytes, lists of ints (subscription identifiers) and lists of
(str, str) pairs (user properties). They are written as JSON, never pickled: a database file
must never be able to run code when it is read. JSON cannot tell bytes from str or a tuple from
a list, so those two are wrapped in one-key objects (``{"b": base64}``, ``{"t": [...]}``) and a
nested dict in ``{"d": {...}}``; plain JSON objects never appear otherwise, so decoding is
unambiguous.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from .base import DeliveryRecord, InboundRecord, SessionRecord, StoredMessage, SubscriptionRecord

#: A message's columns, then its inbound QoS 2 state: the client and packet id of a QoS 2
#: PUBLISH it is awaiting PUBREL for, else (None, None) (schema 6).
MessageRow = tuple[int, str, bytes, int, int, str | None, float | None, float, str | None, int | None]
SessionRow = tuple[str, int, int, float | None, str | None, int | None, float | None]
SubscriptionRow = tuple[str, str, int, int, int, int, int | None, str | None]
DeliveryRow = tuple[str, int, int, int, int, int | None, int, str | None]

# Where a MessageRow's inbound QoS 2 state starts.
INBOUND_CLIENT = 8
# Positions inside a DeliveryRow that update_delivery changes.
DELIVERY_PACKET_ID = 5
DELIVERY_STATE = 6


def _encode_value(value: Any) -> Any:
    """One property value -> a JSON-native value; refuse anything that would not round-trip."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"b": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, tuple):
        return {"t": [_encode_value(v) for v in value]}
    if isinstance(value, list):
        return [_encode_value(v) for v in value]
    if isinstance(value, dict):
        return {"d": _encode_dict(value)}
    raise TypeError(f"cannot store a property value of type {type(value).__name__}")


def _encode_dict(values: dict[Any, Any]) -> dict[str, Any]:
    """Keys are checked here, not declared: compiled (mypyc), a ``str`` key type would be
    checked at run time too, with a message that does not say which rule was broken."""
    encoded: dict[str, Any] = {}
    for key, value in values.items():
        if not isinstance(key, str):
            raise TypeError(f"property names must be str, not {type(key).__name__}")
        encoded[key] = _encode_value(value)
    return encoded


def _decode_value(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode_value(v) for v in value]
    if isinstance(value, dict):
        (tag, inner), = value.items()
        if tag == "b":
            return base64.b64decode(inner)
        if tag == "t":
            return tuple(_decode_value(v) for v in inner)
        if tag == "d":
            return {k: _decode_value(v) for k, v in inner.items()}
        raise ValueError(f"unknown property tag {tag!r}")
    return value


def encode_properties(properties: dict[str, Any]) -> str | None:
    """Properties -> compact JSON text; None for the common empty case (no bytes written)."""
    if not properties:
        return None
    return json.dumps(_encode_dict(properties), separators=(",", ":"))


def decode_properties(text: str | None) -> dict[str, Any]:
    """Inverse of :func:`encode_properties`: a fresh dict on every call."""
    if text is None:
        return {}
    return {k: _decode_value(v) for k, v in json.loads(text).items()}


def encode_int_list(values: list[int]) -> str | None:
    """Subscription identifiers of a delivery -> text; None when there are none."""
    if not values:
        return None
    return ",".join(str(int(v)) for v in values)


def decode_int_list(text: str | None) -> list[int]:
    if not text:
        return []
    return [int(v) for v in text.split(",")]


# -- records <-> rows (column order = the SQLite schema's column order)


def message_row(m: StoredMessage, inbound_client: str | None = None,
                inbound_packet_id: int | None = None) -> MessageRow:
    """The message's row; with the inbound QoS 2 state it is kept for (a client's packet id
    awaiting PUBREL), or none."""
    return (  # the payload is bytes, immutable: StoredMessage copied any other buffer
        m.msg_id, m.topic, m.payload, m.qos, int(m.retain),
        encode_properties(m.properties), m.expiry_at, m.created_at, inbound_client, inbound_packet_id,
    )


def released_message_row(row: MessageRow) -> MessageRow:
    """The row with its inbound QoS 2 state cleared (PUBREL released it); shared so both
    engines release alike."""
    return row[:INBOUND_CLIENT] + (None, None)  # type: ignore[return-value]


def message_from_row(row: tuple[Any, ...]) -> StoredMessage:
    """The message of a row (its first eight columns: the inbound state is not the message's)."""
    msg_id, topic, payload, qos, retain, props, expiry_at, created_at = row[:INBOUND_CLIENT]
    return StoredMessage(
        msg_id, topic, bytes(payload), qos, bool(retain), decode_properties(props), expiry_at, created_at
    )


def session_row(s: SessionRecord) -> SessionRow:
    return (s.client_id, s.protocol_level, s.expiry_interval, s.disconnected_at, s.username,
            s.will_msg_id, s.will_at)


def session_from_row(row: tuple[Any, ...]) -> SessionRecord:
    return SessionRecord(*row)


def subscription_row(s: SubscriptionRecord) -> SubscriptionRow:
    return (
        s.client_id, s.topic_filter, s.qos, int(s.no_local), int(s.retain_as_published),
        s.retain_handling, s.subscription_id, s.content_filter,
    )


def subscription_from_row(row: tuple[Any, ...]) -> SubscriptionRecord:
    client_id, topic_filter, qos, no_local, rap, retain_handling, subscription_id, content_filter = row
    return SubscriptionRecord(
        client_id, topic_filter, qos, bool(no_local), bool(rap), retain_handling, subscription_id,
        content_filter,
    )


def delivery_row(d: DeliveryRecord) -> DeliveryRow:
    return (
        d.client_id, d.seq, d.msg_id, d.qos, int(d.retain), d.packet_id, d.state,
        encode_int_list(d.subscription_ids),
    )


def delivery_from_row(row: tuple[Any, ...]) -> DeliveryRecord:
    client_id, seq, msg_id, qos, retain, packet_id, state, sub_ids = row
    return DeliveryRecord(
        client_id, seq, msg_id, qos, bool(retain), packet_id, state, decode_int_list(sub_ids)
    )


def updated_delivery_row(row: DeliveryRow, packet_id: int | None, state: int) -> DeliveryRow:
    """The row ``update_delivery`` leaves behind; shared so both engines update alike."""
    return row[:DELIVERY_PACKET_ID] + (packet_id, state) + row[DELIVERY_STATE + 1 :]  # type: ignore[return-value]


def updated_delivery_state(row: DeliveryRow, state: int) -> DeliveryRow:
    """The row with ``state``, its packet id as it is (``mark_released``); shared as above."""
    return row[:DELIVERY_STATE] + (state,) + row[DELIVERY_STATE + 1 :]  # type: ignore[return-value]


def inbound_from_row(row: tuple[Any, ...]) -> InboundRecord:
    return InboundRecord(*row)
