"""MQTT 5 properties: the table of all 27 (OASIS 5.0 §2.2.2.2, Table 2-4) and their codec.

A property block is a Variable Byte Integer length followed by (identifier, value) pairs.
Decoded, it is a dict keyed by the snake_case property name; ``user_property`` is a list of
(key, value) pairs in wire order, ``subscription_identifier`` is a list of ints in PUBLISH (a
server sends one per matching subscription) and a single int in SUBSCRIBE.

Error precedence follows the reference broker whose conformance cases calibrate this codec:
the whole block is parsed first, so a truncated or unknown property (Malformed Packet, 0x81)
wins over a property that is well-formed but not allowed, repeated or out of range (raised
only once the block has parsed, normally as Protocol Error 0x82).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Final
from collections.abc import Iterable

from relaymq.mqtt.errors import MalformedPacket, MQTTError, ProtocolError
from relaymq.mqtt.packets import (
    AUTH, CONNACK, CONNECT, DISCONNECT, PUBACK, PUBCOMP, PUBLISH, PUBREC, PUBREL, SUBACK,
    SUBSCRIBE, UNSUBACK, UNSUBSCRIBE,
)
from relaymq.mqtt.wire import (
    Buffer, decode_varint, encode_binary, encode_string, encode_varint, pack_uint16,
    pack_uint32, read_binary, read_byte, read_string, read_uint16, read_uint32,
)

#: Pseudo packet type for the will properties inside a CONNECT payload (5.0 §3.1.3.2).
#: Beyond the 4-bit range of real packet types, so it can never clash with one.
WILL: Final = 16


class DataType(IntEnum):
    """The property value encodings of 5.0 §1.5."""

    BYTE = 1
    TWO_BYTE_INT = 2
    FOUR_BYTE_INT = 4
    VARINT = 5
    UTF8_STRING = 6
    BINARY = 7
    STRING_PAIR = 8


@dataclass(frozen=True, slots=True)
class PropertySpec:
    """One row of Table 2-4: identifier, name, value type, the packets that may carry it."""

    identifier: int
    name: str
    data_type: DataType
    packets: frozenset[int]


_PUBACKS = (PUBACK, PUBREC, PUBREL, PUBCOMP)
_REASON_STRING_PACKETS = (CONNACK, *_PUBACKS, SUBACK, UNSUBACK, DISCONNECT, AUTH)
_USER_PROPERTY_PACKETS = (
    CONNECT, CONNACK, PUBLISH, WILL, *_PUBACKS, SUBSCRIBE, SUBACK, UNSUBSCRIBE, UNSUBACK,
    DISCONNECT, AUTH,
)


def _spec(identifier: int, name: str, data_type: DataType, packets: Iterable[int]) -> PropertySpec:
    return PropertySpec(identifier, name, data_type, frozenset(packets))


_B, _U16, _U32, _VBI, _STR, _BIN, _PAIR = (
    DataType.BYTE, DataType.TWO_BYTE_INT, DataType.FOUR_BYTE_INT, DataType.VARINT,
    DataType.UTF8_STRING, DataType.BINARY, DataType.STRING_PAIR,
)

#: All 27 properties, in identifier order (5.0 Table 2-4).
PROPERTIES: Final[tuple[PropertySpec, ...]] = (
    _spec(0x01, "payload_format_indicator", _B, (PUBLISH, WILL)),
    _spec(0x02, "message_expiry_interval", _U32, (PUBLISH, WILL)),
    _spec(0x03, "content_type", _STR, (PUBLISH, WILL)),
    _spec(0x08, "response_topic", _STR, (PUBLISH, WILL)),
    _spec(0x09, "correlation_data", _BIN, (PUBLISH, WILL)),
    _spec(0x0B, "subscription_identifier", _VBI, (PUBLISH, SUBSCRIBE)),
    _spec(0x11, "session_expiry_interval", _U32, (CONNECT, CONNACK, DISCONNECT)),
    _spec(0x12, "assigned_client_identifier", _STR, (CONNACK,)),
    _spec(0x13, "server_keep_alive", _U16, (CONNACK,)),
    _spec(0x15, "authentication_method", _STR, (CONNECT, CONNACK, AUTH)),
    _spec(0x16, "authentication_data", _BIN, (CONNECT, CONNACK, AUTH)),
    _spec(0x17, "request_problem_information", _B, (CONNECT,)),
    _spec(0x18, "will_delay_interval", _U32, (WILL,)),
    _spec(0x19, "request_response_information", _B, (CONNECT,)),
    _spec(0x1A, "response_information", _STR, (CONNACK,)),
    _spec(0x1C, "server_reference", _STR, (CONNACK, DISCONNECT)),
    _spec(0x1F, "reason_string", _STR, _REASON_STRING_PACKETS),
    _spec(0x21, "receive_maximum", _U16, (CONNECT, CONNACK)),
    _spec(0x22, "topic_alias_maximum", _U16, (CONNECT, CONNACK)),
    _spec(0x23, "topic_alias", _U16, (PUBLISH,)),
    _spec(0x24, "maximum_qos", _B, (CONNACK,)),
    _spec(0x25, "retain_available", _B, (CONNACK,)),
    _spec(0x26, "user_property", _PAIR, _USER_PROPERTY_PACKETS),
    _spec(0x27, "maximum_packet_size", _U32, (CONNECT, CONNACK)),
    _spec(0x28, "wildcard_subscription_available", _B, (CONNACK,)),
    _spec(0x29, "subscription_identifier_available", _B, (CONNACK,)),
    _spec(0x2A, "shared_subscription_available", _B, (CONNACK,)),
)

BY_ID: Final[dict[int, PropertySpec]] = {spec.identifier: spec for spec in PROPERTIES}
BY_NAME: Final[dict[str, PropertySpec]] = {spec.name: spec for spec in PROPERTIES}

#: Property names allowed per packet type (and WILL), derived from the table above.
ALLOWED: Final[dict[int, frozenset[str]]] = {
    packet_type: frozenset(spec.name for spec in PROPERTIES if packet_type in spec.packets)
    for packet_type in (CONNECT, CONNACK, PUBLISH, WILL, *_PUBACKS, SUBSCRIBE, SUBACK,
                        UNSUBSCRIBE, UNSUBACK, DISCONNECT, AUTH)
}

# Properties that are a 0/1 flag: any other value is a Protocol Error (5.0 §3.1.2.11,
# §3.2.2.3, §3.3.2.3.2).
_BOOLEAN = frozenset({
    "payload_format_indicator", "request_problem_information", "request_response_information",
    "maximum_qos", "retain_available", "wildcard_subscription_available",
    "subscription_identifier_available", "shared_subscription_available",
})
# A value of 0 is a Protocol Error for these (5.0 §3.1.2.11.3, §3.1.2.11.4).
_NON_ZERO = frozenset({"receive_maximum", "maximum_packet_size"})

# A property the packet may not carry: 5.0 §2.2.2.2 calls it malformed, the reference
# broker's conformance cases answer 0x82 except in SUBSCRIBE and UNSUBSCRIBE (0x81). The
# cases decide: they are what interoperating clients have been tested against.
_DISALLOWED_REASON: Final[dict[int, int]] = {SUBSCRIBE: 0x81, UNSUBSCRIBE: 0x81}


def _read_value(spec: PropertySpec, buf: Buffer, pos: int, end: int) -> tuple[Any, int]:
    data_type = spec.data_type
    if data_type is DataType.BYTE:
        return read_byte(buf, pos, end)
    if data_type is DataType.TWO_BYTE_INT:
        return read_uint16(buf, pos, end)
    if data_type is DataType.FOUR_BYTE_INT:
        return read_uint32(buf, pos, end)
    if data_type is DataType.VARINT:
        return decode_varint(buf, pos, end)
    if data_type is DataType.UTF8_STRING:
        return read_string(buf, pos, end)
    if data_type is DataType.BINARY:
        return read_binary(buf, pos, end)
    key, pos = read_string(buf, pos, end)
    value, pos = read_string(buf, pos, end)
    return (key, value), pos


def _range_problem(name: str, value: Any) -> str | None:
    """Why a well-formed value is out of range, or None."""
    if name in _BOOLEAN and value > 1:
        return f"{name} must be 0 or 1, got {value}"
    if name in _NON_ZERO and value == 0:
        return f"{name} must not be 0"
    return None


def decode_properties(buf: Buffer, offset: int, packet_type: int) -> tuple[dict[str, Any], int]:
    """Decode the property block at ``offset`` (its length first) for ``packet_type``.

    Returns the properties and the offset after the block. The block must end within
    ``buf``. Raises :class:`MalformedPacket` for a truncated block or value, an unknown
    identifier, invalid UTF-8 or a subscription identifier of 0 (the conformance cases answer
    0x81 for it); :class:`ProtocolError` (or 0x81 in SUBSCRIBE/UNSUBSCRIBE) for a property not
    allowed in the packet, a repeated one, or an out-of-range value."""
    length, pos = decode_varint(buf, offset, len(buf))
    end = pos + length
    if end > len(buf):
        raise MalformedPacket("property length exceeds the packet")
    props: dict[str, Any] = {}
    if not length:
        return props, end
    allowed = ALLOWED[packet_type]
    problem: MQTTError | None = None
    while pos < end:
        identifier = buf[pos]
        spec = BY_ID.get(identifier)
        if spec is None:
            raise MalformedPacket(f"unknown property identifier 0x{identifier:02X}")
        value, pos = _read_value(spec, buf, pos + 1, end)
        name = spec.name
        if name == "subscription_identifier" and value == 0:
            raise MalformedPacket("subscription identifier 0")
        if problem is not None:
            continue
        if name not in allowed:
            problem = MQTTError(_DISALLOWED_REASON.get(packet_type, 0x82),
                                f"property {name} not allowed in packet type {packet_type}")
        elif name == "user_property" or name == "subscription_identifier" and packet_type == PUBLISH:
            props.setdefault(name, []).append(value)
        elif name in props:
            problem = ProtocolError(f"property {name} given more than once")
        else:
            reason = _range_problem(name, value)
            if reason is not None:
                problem = ProtocolError(reason)
            props[name] = value
    if problem is not None:
        raise problem
    return props, end


def _encode_value(spec: PropertySpec, value: Any) -> bytes:
    data_type = spec.data_type
    if data_type is DataType.BYTE:
        return bytes((int(value),))
    if data_type is DataType.TWO_BYTE_INT:
        return pack_uint16(value)
    if data_type is DataType.FOUR_BYTE_INT:
        return pack_uint32(value)
    if data_type is DataType.VARINT:
        return encode_varint(value)
    if data_type is DataType.UTF8_STRING:
        return encode_string(value)
    if data_type is DataType.BINARY:
        return encode_binary(value)
    key, text = value
    return encode_string(key) + encode_string(text)


def encode_properties(props: dict[str, Any] | None, packet_type: int) -> bytes:
    """Encode ``props`` as a property block (length first) for ``packet_type``.

    ``user_property`` takes a list of pairs; ``subscription_identifier`` an int or, in
    PUBLISH, a list of ints. A name that is unknown or not allowed in the packet is a bug in
    the caller, not bad input from the network, hence ``ValueError``."""
    if not props:
        return b"\x00"
    allowed = ALLOWED[packet_type]
    parts: list[bytes] = []
    for name, value in props.items():
        spec = BY_NAME.get(name)
        if spec is None or name not in allowed:
            raise ValueError(f"property {name!r} cannot be sent in packet type {packet_type}")
        head = bytes((spec.identifier,))
        if name == "user_property" or (name == "subscription_identifier"
                                       and isinstance(value, (list, tuple))):
            for item in value:
                parts.append(head)
                parts.append(_encode_value(spec, item))
        else:
            parts.append(head)
            parts.append(_encode_value(spec, value))
    body = b"".join(parts)
    return encode_varint(len(body)) + body
