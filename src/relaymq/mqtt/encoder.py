"""Packets to bytes for protocol levels 3, 4 and 5.

The broker is the caller, so the input is trusted: only what would corrupt the byte stream
(sizes, QoS, missing packet ids) raises ``ValueError``. Level-5-only content (properties,
reason codes of acknowledgements) is dropped when encoding for an older level, so one
message can go to subscribers of every level.

PUBLISH has its own path, :func:`encode_publish`, because a fan-out encodes it far more often
than anything else; :func:`patch_publish` then rewrites only the packet id (and DUP) of an
already encoded PUBLISH ("encode once, write many", design guide).
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

from relaymq.mqtt.packets import (
    AUTH, CONNACK, CONNECT, DISCONNECT, MQISDP_3, MQTT_5, PUBACK, PUBCOMP, PUBLISH, PUBREC,
    PUBREL, SUBACK, SUBSCRIBE, UNSUBACK, UNSUBSCRIBE, Auth, Connack, Connect, Disconnect,
    Packet, Pingreq, Pingresp, Puback, Pubcomp, Publish, Pubrec, Pubrel, Suback, Subscribe,
    Unsuback, Unsubscribe,
)
from relaymq.mqtt.properties import WILL, encode_properties
from relaymq.mqtt.reason_codes import connack_code_for_level
from relaymq.mqtt.wire import (
    MAX_UINT16, MAX_VARINT, encode_binary, encode_string, encode_varint, pack_uint16,
)

_NO_PROPERTIES = b"\x00"
# First byte of PUBLISH for every combination of DUP (8), QoS (2, 4) and RETAIN (1).
_PUBLISH_FIRST_BYTES = tuple(bytes((0x30 | flags,)) for flags in range(16))


def _frame(first_byte: int, body: bytes) -> bytes:
    """Fixed header (type and flags, Remaining Length) + body."""
    if len(body) > MAX_VARINT:
        raise ValueError(f"packet body of {len(body)} bytes exceeds the MQTT maximum")
    return bytes((first_byte,)) + encode_varint(len(body)) + body


def encode_publish(topic: str, payload: bytes, qos: int, retain: bool, dup: bool,
                   packet_id: int | None, properties: dict[str, Any] | None,
                   protocol_level: int, head_only: bool = False) -> bytes:
    """Encode a PUBLISH without building a :class:`Publish` first (the fan-out hot path).

    DUP is cleared at QoS 0, where 3.1.1 §3.3.1.1 and 5.0 forbid it; ``properties`` are sent
    only at level 5. ``head_only``: everything but the payload (whose size the Remaining
    Length still counts), for a caller that writes a large payload after it as it is rather
    than copying it into one buffer (``Connection.send_publish``)."""
    topic_bytes = topic.encode("utf-8")
    size = len(topic_bytes)
    if size > MAX_UINT16:
        raise ValueError("topic longer than 65535 bytes")
    # the parts are joined once (row 8: a drained backlog encodes one PUBLISH per message)
    if qos in (1, 2):
        if not packet_id:
            raise ValueError("a QoS 1 or 2 PUBLISH needs a packet id")
        first = _PUBLISH_FIRST_BYTES[(8 if dup else 0) | qos << 1 | (1 if retain else 0)]
        packet_id_bytes = pack_uint16(packet_id)
        remaining = size + 4 + len(payload)
    elif qos == 0:
        first = _PUBLISH_FIRST_BYTES[1 if retain else 0]
        packet_id_bytes = b""
        remaining = size + 2 + len(payload)
    else:
        raise ValueError(f"invalid QoS {qos}")
    props = b""
    if protocol_level == MQTT_5:
        props = encode_properties(properties, PUBLISH) if properties else _NO_PROPERTIES
        remaining += len(props)
    if remaining > MAX_VARINT:
        raise ValueError(f"PUBLISH of {remaining} bytes exceeds the MQTT maximum")
    if head_only:
        payload = b""  # counted in ``remaining`` above, written by the caller
    return b"".join((first, encode_varint(remaining), pack_uint16(size), topic_bytes, packet_id_bytes,
                     props, payload))


def patch_publish(encoded: bytes, packet_id: int, dup: bool | None = None) -> bytes:
    """A copy of an encoded QoS 1/2 PUBLISH with another packet id (and, if given, DUP flag),
    so a message encoded once can go to many sessions, each with its own id."""
    first = encoded[0]
    if first >> 4 != PUBLISH or not first & 0x06:
        raise ValueError("not an encoded QoS 1 or 2 PUBLISH")
    pos = 1
    while encoded[pos] & 0x80:
        pos += 1
    pos += 1
    pos += 2 + int.from_bytes(encoded[pos:pos + 2], "big")
    out = bytearray(encoded)
    if dup is not None:
        out[0] = (first | 0x08) if dup else (first & 0xF7)
    out[pos:pos + 2] = pack_uint16(packet_id)
    return bytes(out)


def _encode_publish_packet(packet: Publish, level: int) -> bytes:
    return encode_publish(packet.topic, packet.payload, packet.qos, packet.retain, packet.dup,
                          packet.packet_id, packet.properties, level)


def _encode_connect(packet: Connect, level: int) -> bytes:
    # CONNECT carries its own level: the caller's is not known yet when it is sent.
    level = packet.protocol_level
    will = packet.will
    flags = 0x02 if packet.clean_start else 0
    if will is not None:
        flags |= 0x04 | will.qos << 3 | (0x20 if will.retain else 0)
    if packet.password is not None:
        flags |= 0x40
    if packet.username is not None:
        flags |= 0x80
    parts = [encode_string(packet.protocol_name), bytes((level, flags)),
             pack_uint16(packet.keep_alive)]
    if level == MQTT_5:
        parts.append(encode_properties(packet.properties, CONNECT))
    parts.append(encode_string(packet.client_id))
    if will is not None:
        if level == MQTT_5:
            parts.append(encode_properties(will.properties, WILL))
        parts.append(encode_string(will.topic))
        parts.append(encode_binary(will.payload))
    if packet.username is not None:
        parts.append(encode_string(packet.username))
    if packet.password is not None:
        parts.append(encode_binary(packet.password))
    return _frame(0x10, b"".join(parts))


def _encode_connack(packet: Connack, level: int) -> bytes:
    if level != MQTT_5:
        # v3 reserves the whole first byte (seed 000 l.1125-1126); 3.1.1 has session present.
        flags = 1 if packet.session_present and level != MQISDP_3 else 0
        return bytes((0x20, 2, flags, connack_code_for_level(packet.reason_code, level)))
    body = (bytes((1 if packet.session_present else 0, packet.reason_code))
            + encode_properties(packet.properties, CONNACK))
    return _frame(0x20, body)


# First byte of each acknowledgement; 0x62 for PUBREL: what 3.1.1 requires and what the v3
# seed's "x" flag bits allow (mqtt.md).
_ACK_FIRST_BYTES = {PUBACK: 0x40, PUBREC: 0x50, PUBREL: 0x62, PUBCOMP: 0x70}


def encode_ack(packet_type: int, packet_id: int, reason_code: int = 0,
               protocol_level: int = 4) -> bytes:
    """PUBACK, PUBREC, PUBREL or PUBCOMP without properties, without building the packet
    first (the broker acknowledges every QoS 1/2 message): the reason code only at level 5
    and only when it is not 0 (success). The packet as one integer's bytes: compiled, that is a
    native conversion where ``bytes((...))`` builds a tuple and calls the type (about 1,500
    instructions fewer an acknowledgement, three per QoS 2 message: issue 16, row 3)."""
    if packet_id >> 16:  # two bytes (the shifts below would let it into the fixed header)
        raise ValueError(f"packet identifier {packet_id} out of range")
    first_byte = _ACK_FIRST_BYTES[packet_type]
    if protocol_level != MQTT_5 or not reason_code:
        return (first_byte << 24 | 2 << 16 | packet_id).to_bytes(4, "big")
    return (first_byte << 32 | 3 << 24 | packet_id << 8 | reason_code).to_bytes(5, "big")


def _encode_ack(packet_type: int) -> Callable[[Any, int], bytes]:
    def encode_ack_packet(packet: Any, level: int) -> bytes:
        if level != MQTT_5 or not packet.properties:
            return encode_ack(packet_type, packet.packet_id, packet.reason_code, level)
        return _frame(_ACK_FIRST_BYTES[packet_type], pack_uint16(packet.packet_id)
                      + bytes((packet.reason_code,)) + encode_properties(packet.properties, packet_type))

    return encode_ack_packet


def _encode_subscribe(packet: Subscribe, level: int) -> bytes:
    parts = [pack_uint16(packet.packet_id)]
    if level == MQTT_5:
        parts.append(encode_properties(packet.properties, SUBSCRIBE))
    for sub in packet.subscriptions:
        options = sub.qos
        if level == MQTT_5:
            options |= ((0x04 if sub.no_local else 0) | (0x08 if sub.retain_as_published else 0)
                        | sub.retain_handling << 4)
        parts.append(encode_string(sub.topic_filter))
        parts.append(bytes((options,)))
    return _frame(0x82, b"".join(parts))


def _encode_suback(packet: Suback, level: int) -> bytes:
    if level == MQTT_5:
        return _frame(0x90, pack_uint16(packet.packet_id)
                      + encode_properties(packet.properties, SUBACK) + bytes(packet.reason_codes))
    # Before MQTT 5 the only failure code is 0x80 (3.1.1 §3.9.3).
    codes = bytes(code if code < 0x80 else 0x80 for code in packet.reason_codes)
    return _frame(0x90, pack_uint16(packet.packet_id) + codes)


def _encode_unsubscribe(packet: Unsubscribe, level: int) -> bytes:
    parts = [pack_uint16(packet.packet_id)]
    if level == MQTT_5:
        parts.append(encode_properties(packet.properties, UNSUBSCRIBE))
    parts.extend(encode_string(topic_filter) for topic_filter in packet.topic_filters)
    return _frame(0xA2, b"".join(parts))


def _encode_unsuback(packet: Unsuback, level: int) -> bytes:
    if level != MQTT_5:
        return b"\xb0\x02" + pack_uint16(packet.packet_id)
    return _frame(0xB0, pack_uint16(packet.packet_id)
                  + encode_properties(packet.properties, UNSUBACK) + bytes(packet.reason_codes))


def _encode_reason_and_properties(packet_type: int, first_byte: int,
                                  packet: Disconnect | Auth) -> bytes:
    """DISCONNECT and AUTH at level 5: the shortest form that carries the content."""
    if not packet.properties:
        if not packet.reason_code:
            return bytes((first_byte, 0))
        return bytes((first_byte, 1, packet.reason_code))
    return _frame(first_byte, bytes((packet.reason_code,))
                  + encode_properties(packet.properties, packet_type))


def _encode_disconnect(packet: Disconnect, level: int) -> bytes:
    if level != MQTT_5:
        return b"\xe0\x00"
    return _encode_reason_and_properties(DISCONNECT, 0xE0, packet)


def _encode_auth(packet: Auth, level: int) -> bytes:
    if level != MQTT_5:
        raise ValueError("AUTH exists only in MQTT 5")
    return _encode_reason_and_properties(AUTH, 0xF0, packet)


_ENCODERS: dict[type, Callable[[Any, int], bytes]] = {
    Connect: _encode_connect,
    Connack: _encode_connack,
    Publish: _encode_publish_packet,
    Puback: _encode_ack(PUBACK),
    Pubrec: _encode_ack(PUBREC),
    Pubrel: _encode_ack(PUBREL),
    Pubcomp: _encode_ack(PUBCOMP),
    Subscribe: _encode_subscribe,
    Suback: _encode_suback,
    Unsubscribe: _encode_unsubscribe,
    Unsuback: _encode_unsuback,
    Pingreq: lambda packet, level: b"\xc0\x00",
    Pingresp: lambda packet, level: b"\xd0\x00",
    Disconnect: _encode_disconnect,
    Auth: _encode_auth,
}


def encode(packet: Packet, protocol_level: int) -> bytes:
    """Encode ``packet`` for a connection at ``protocol_level`` (3, 4 or 5)."""
    encoder = _ENCODERS.get(type(packet))
    if encoder is None:
        raise TypeError(f"not an MQTT packet: {packet!r}")
    return encoder(packet, protocol_level)
