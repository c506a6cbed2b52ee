"""Bytes to packets: strict decoding of one MQTT control packet for protocol levels 3, 4 and 5.

The input comes from an untrusted peer, so every rule of the wire format is checked here and a
violation raises an :class:`MQTTError` carrying the MQTT 5 reason code to report: 0x81
Malformed Packet, 0x82 Protocol Error, 0x84 Unsupported Protocol Version. The split between
0x81 and 0x82 follows the OASIS specifications, corrected where the reference broker's
byte-exact conformance cases answer otherwise (packet id 0 and a reserved packet type are
0x82; an empty SUBSCRIBE/UNSUBSCRIBE and a subscription identifier of 0 are 0x81).

MQIsdp v3 (level 3) gets the seed's rules (seed 000 l.764-1958): the fixed-header flags its
tables mark "not used" are ignored (PUBREL may come as 0x60 or 0x62, mqtt.md decisions), as
are the connect-flag and requested-QoS bits it reserves; the QoS bits of SUBSCRIBE and
UNSUBSCRIBE must still say 1 and QoS 3 stays reserved (l.835).

Not checked here: topic and filter syntax (wildcards; relaymq.pubsub.topics), client
identifier rules and anything that depends on session state (the broker).
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

from relaymq.mqtt.errors import MalformedPacket, ProtocolError
from relaymq.mqtt.packets import (
    AUTH, CONNACK, CONNECT, DISCONNECT, MQISDP_3, MQTT_5, MQTT_311, PINGREQ, PINGRESP, PUBACK,
    PUBCOMP, PUBLISH, PUBREC, PUBREL, SUBACK, SUBSCRIBE, UNSUBACK, UNSUBSCRIBE, Auth, Connack,
    Connect, Disconnect, Packet, Pingreq, Pingresp, Puback, Pubcomp, Publish, Pubrec, Pubrel,
    Suback, Subscribe, Subscription, Unsuback, Unsubscribe, Will,
)
from relaymq.mqtt.properties import WILL, decode_properties
from relaymq.mqtt.reason_codes import (
    CLIENT_DISCONNECT_CODES, SERVER_DISCONNECT_CODES, SUBACK_CODES_311,
    UNSUPPORTED_PROTOCOL_VERSION, VALID_REASON_CODES,
)
from relaymq.mqtt.wire import (
    Buffer, read_binary, read_byte, read_string, read_uint16,
)

# Packet types only a server sends, and only a client sends (5.0 §2.1.2 "Direction").
SERVER_ONLY = frozenset({CONNACK, SUBACK, UNSUBACK, PINGRESP})
CLIENT_ONLY = frozenset({CONNECT, SUBSCRIBE, UNSUBSCRIBE, PINGREQ})

# Required fixed-header flags (bits 3-0) at levels 4 and 5 (3.1.1 §2.2.2, 5.0 §2.1.3).
_REQUIRED_FLAGS = {
    CONNACK: 0, PUBACK: 0, PUBREC: 0, PUBREL: 2, PUBCOMP: 0, SUBSCRIBE: 2,
    SUBACK: 0, UNSUBSCRIBE: 2, UNSUBACK: 0, PINGREQ: 0, PINGRESP: 0, DISCONNECT: 0, AUTH: 0,
}

# Which error wins for a misdirected packet with bad flags is fixed by the conformance cases:
# a CONNACK or PINGRESP from a client is a protocol error whatever its flags, a SUBACK or
# UNSUBACK with bad flags is malformed first.
_FLAGS_BEFORE_DIRECTION = frozenset({SUBACK, UNSUBACK})

_PROTOCOL_LEVELS = {"MQIsdp": (MQISDP_3,), "MQTT": (MQTT_311, MQTT_5)}


def decode(first_byte: int, body: Buffer, protocol_level: int, *,
           from_client: bool = True) -> Packet:
    """Decode one packet: ``first_byte`` is the fixed header's first byte, ``body`` the bytes
    after the Remaining Length (exactly Remaining Length of them).

    CONNECT is decoded by the rules of the level it announces, whatever ``protocol_level``
    says; any other packet with ``protocol_level`` 0 (no CONNECT yet) uses the level 4 rules.
    ``from_client`` says who sent it: a server-to-client packet from a client (or the reverse)
    is a protocol error, and so is a repeated Subscription Identifier in a client's PUBLISH
    (a server sends one per matching subscription).

    ``body`` may be a memoryview (the reader's zero-copy slice); the returned packet never
    keeps a reference into it."""
    packet_type = first_byte >> 4
    flags = first_byte & 0x0F
    if packet_type == 0:
        raise ProtocolError("reserved packet type 0")
    level = protocol_level if protocol_level in (MQISDP_3, MQTT_5) else MQTT_311
    if packet_type in _FLAGS_BEFORE_DIRECTION:
        _check_flags(packet_type, flags, level)
    if from_client:
        if packet_type in SERVER_ONLY:
            # a misdirected PINGRESP that also has a body is closed on silently, as a PINGREQ
            # with a body is (the conformance cases, from Mosquitto)
            raise ProtocolError(f"packet type {packet_type} is sent only by a server",
                                silent=packet_type == PINGRESP and len(body) > 0)
    elif packet_type in CLIENT_ONLY:
        raise ProtocolError(f"packet type {packet_type} is sent only by a client")
    if packet_type == CONNECT:
        return _decode_connect(flags, body)
    if packet_type == PUBLISH:
        return _decode_publish(flags, body, 0, len(body), level, from_client)
    _check_flags(packet_type, flags, level)
    if packet_type == AUTH and level != MQTT_5:
        raise ProtocolError("AUTH exists only in MQTT 5")
    return _DECODERS[packet_type](body, level, from_client)


def decode_in(first_byte: int, buf: bytes | bytearray, start: int, end: int, protocol_level: int, *,
              from_client: bool = True) -> Packet:
    """:func:`decode` of the body ``buf[start:end]`` (a stream buffer), by the same rules.

    Most of the traffic, PUBLISH without properties (levels 3 and 4) and acknowledgements of
    just a packet id, is read in place; anything else goes to :func:`decode` as a zero-copy
    memoryview slice (a property block is read to the end of the buffer it is given)."""
    packet_type = first_byte >> 4
    if protocol_level in (MQTT_311, MQISDP_3):
        if packet_type == PUBLISH:
            return _decode_publish(first_byte & 0x0F, buf, start, end, protocol_level, from_client)
        if PUBACK <= packet_type <= PUBCOMP and end - start == 2:
            _check_flags(packet_type, first_byte & 0x0F, protocol_level)
            packet_id = buf[start] << 8 | buf[start + 1]
            if not packet_id:
                raise ProtocolError("packet identifier 0")
            return _publication_ack(packet_type, packet_id)
    with memoryview(buf) as view:
        body = view[start:end]
        try:
            return decode(first_byte, body, protocol_level, from_client=from_client)
        finally:
            body.release()


def _publication_ack(packet_type: int, packet_id: int) -> Puback | Pubrec | Pubrel | Pubcomp:
    """The acknowledgement of ``packet_type`` (PUBACK to PUBCOMP) for ``packet_id``; each class
    named, not looked up, so that compiled its construction is a native call (issue 16, row 3:
    three per QoS 2 message)."""
    if packet_type == PUBREC:
        return Pubrec(packet_id)
    if packet_type == PUBREL:
        return Pubrel(packet_id)
    if packet_type == PUBCOMP:
        return Pubcomp(packet_id)
    return Puback(packet_id)


def _check_flags(packet_type: int, flags: int, level: int) -> None:
    """Fixed-header flags of a packet other than CONNECT and PUBLISH."""
    if level == MQISDP_3:
        if packet_type in (SUBSCRIBE, UNSUBSCRIBE) and flags & 0x06 != 0x02:
            raise MalformedPacket(f"packet type {packet_type} must be sent at QoS 1")
    elif flags != _REQUIRED_FLAGS[packet_type]:
        raise MalformedPacket(
            f"invalid fixed header flags 0x{flags:X} for packet type {packet_type}")


# --- CONNECT (seed 000 l.1148-1220; 3.1.1 §3.1; 5.0 §3.1) ----------------------------------

def _decode_connect(flags: int, body: Buffer) -> Connect:
    end = len(body)
    name, pos = read_string(body, 0, end, strict=False)
    levels = _PROTOCOL_LEVELS.get(name)
    if levels is None:
        raise ProtocolError(f"unknown protocol name {name!r}")
    level, pos = read_byte(body, pos, end)
    if level not in levels:
        raise ProtocolError(f"protocol {name} level {level} not supported",
                            UNSUPPORTED_PROTOCOL_VERSION)
    strict = level != MQISDP_3
    if strict and flags:
        raise MalformedPacket(f"invalid fixed header flags 0x{flags:X} for CONNECT")
    connect_flags, pos = read_byte(body, pos, end)
    keep_alive, pos = read_uint16(body, pos, end)
    will_flag = connect_flags & 0x04
    will_qos = (connect_flags >> 3) & 0x03
    will_retain = bool(connect_flags & 0x20)
    has_password = connect_flags & 0x40
    has_username = connect_flags & 0x80
    if strict:
        _check_connect_flags(level, connect_flags)
    if will_flag and will_qos == 3:
        raise MalformedPacket("will QoS 3 is reserved")
    properties: dict[str, Any] = {}
    if level == MQTT_5:
        properties, pos = decode_properties(body, pos, CONNECT)
    client_id, pos = read_string(body, pos, end, strict)
    will = None
    if will_flag:
        will, pos = _decode_will(body, pos, end, level, will_qos, will_retain)
    username = password = None
    if has_username:
        username, pos = read_string(body, pos, end, strict)
    if has_password:
        password, pos = read_binary(body, pos, end)
    if pos != end:
        raise MalformedPacket("bytes left over after the CONNECT payload")
    return Connect(name, level, bool(connect_flags & 0x02), keep_alive, client_id, will,
                   username, password, properties)


def _check_connect_flags(level: int, connect_flags: int) -> None:
    """The Connect Flags' rules MQIsdp v3 does not have (3.1.1 and 5.0 §3.1.2.3-3.1.2.9): the
    reserved bit, will QoS and retain only with the will flag, and in 3.1.1 no password
    without a user name."""
    if connect_flags & 0x01:
        raise MalformedPacket("reserved connect flag bit 0 is set")
    if not connect_flags & 0x04 and connect_flags & 0x38:
        raise MalformedPacket("will QoS or will retain set without the will flag")
    if level == MQTT_311 and connect_flags & 0x40 and not connect_flags & 0x80:
        raise MalformedPacket("password flag set without the user name flag")


def _decode_will(body: Buffer, pos: int, end: int, level: int, qos: int, retain: bool) -> tuple[Will, int]:
    """The will in the CONNECT payload (5.0: its properties first, §3.1.3.2), and the position
    after it."""
    properties: dict[str, Any] = {}
    if level == MQTT_5:
        properties, pos = decode_properties(body, pos, WILL)
    topic, pos = read_string(body, pos, end, level != MQISDP_3)
    if not topic:
        raise MalformedPacket("empty will topic")
    # The seed's v3 will message is a length-prefixed string published as raw bytes
    # (l.1217); 3.1.1 and 5 call it binary data. Either way: length + bytes.
    payload, pos = read_binary(body, pos, end)
    return Will(topic, payload, qos, retain, properties), pos


# --- PUBLISH (seed 000 l.1420-1500; 3.1.1 §3.3; 5.0 §3.3) -----------------------------------

def _decode_publish(flags: int, body: Buffer, start: int, end: int, level: int,
                    from_client: bool) -> Publish:
    """PUBLISH from ``body[start:end]``; at level 5 ``end`` must be the end of ``body`` (the
    property block is bounded by it)."""
    qos = (flags >> 1) & 0x03
    if qos == 3:
        raise MalformedPacket("PUBLISH with QoS 3")
    dup = bool(flags & 0x08)
    if dup and not qos and level != MQISDP_3:
        raise MalformedPacket("DUP set on a QoS 0 PUBLISH")
    topic, pos = read_string(body, start, end, level != MQISDP_3)
    packet_id = None
    if qos:
        packet_id, pos = read_uint16(body, pos, end)
        if not packet_id:
            raise ProtocolError("PUBLISH with packet identifier 0")
    properties: dict[str, Any] = {}
    if level == MQTT_5:
        properties, pos = decode_properties(body, pos, PUBLISH)
        if from_client and len(properties.get("subscription_identifier", ())) > 1:
            # 5.0 [MQTT-3.3.4-6] forbids a client to send one at all; the reference broker
            # accepts (and ignores) a single one, and the conformance cases expect that.
            raise ProtocolError("subscription identifier given more than once by a client")
        if not topic and "topic_alias" not in properties:
            raise MalformedPacket("empty topic name without a topic alias")
    elif not topic:
        raise MalformedPacket("empty topic name")
    return Publish(topic, bytes(body[pos:end]), qos, bool(flags & 0x01), dup, packet_id, properties)


# --- PUBACK, PUBREC, PUBREL, PUBCOMP (seed 000 l.1313-1608; 5.0 §3.4-3.7) ---------------------

def _read_packet_id(body: Buffer, end: int) -> int:
    packet_id, _ = read_uint16(body, 0, end)
    if not packet_id:
        raise ProtocolError("packet identifier 0")
    return packet_id


def _check_reason_code(packet_type: int, code: int, allowed: frozenset[int]) -> None:
    if code not in allowed:
        raise ProtocolError(f"reason code 0x{code:02X} not valid in packet type {packet_type}")


def _decode_ack(packet_type: int, cls: Callable[..., Any]) -> Callable[..., Any]:
    allowed = VALID_REASON_CODES[packet_type]

    def decode_ack(body: Buffer, level: int, from_client: bool) -> Any:
        end = len(body)
        packet_id = _read_packet_id(body, end)
        if level != MQTT_5 or end == 2:
            if end != 2:
                raise MalformedPacket(f"packet type {packet_type} must have 2 bytes, not {end}")
            return cls(packet_id)
        reason_code = body[2]
        _check_reason_code(packet_type, reason_code, allowed)
        properties: dict[str, Any] = {}
        if end > 3:
            properties, pos = decode_properties(body, 3, packet_type)
            if pos != end:
                raise MalformedPacket(f"bytes left over in packet type {packet_type}")
        return cls(packet_id, reason_code, properties)

    return decode_ack


# --- SUBSCRIBE, UNSUBSCRIBE (seed 000 l.1686-1915; 5.0 §3.8, §3.10) ---------------------------

def _subscription(topic_filter: str, options: int, level: int) -> Subscription:
    qos = options & 0x03
    if qos == 3:
        raise MalformedPacket("requested QoS 3")
    if level == MQTT_5:
        if options & 0xC0:
            raise MalformedPacket("reserved subscription option bits set")
        retain_handling = (options >> 4) & 0x03
        if retain_handling == 3:
            raise MalformedPacket("retain handling 3")
        return Subscription(topic_filter, qos, bool(options & 0x04), bool(options & 0x08),
                            retain_handling)
    if level == MQTT_311 and options & 0xFC:
        raise MalformedPacket("reserved requested-QoS bits set")
    return Subscription(topic_filter, qos)


def _decode_subscribe(body: Buffer, level: int, from_client: bool) -> Subscribe:
    end = len(body)
    packet_id = _read_packet_id(body, end)
    pos = 2
    properties: dict[str, Any] = {}
    if level == MQTT_5:
        properties, pos = decode_properties(body, pos, SUBSCRIBE)
    strict = level != MQISDP_3
    subscriptions = []
    while pos < end:
        topic_filter, pos = read_string(body, pos, end, strict)
        options, pos = read_byte(body, pos, end)
        if not topic_filter:
            raise MalformedPacket("empty topic filter")
        subscriptions.append(_subscription(topic_filter, options, level))
    if not subscriptions:
        raise MalformedPacket("SUBSCRIBE without topic filters")
    return Subscribe(packet_id, subscriptions, properties)


def _decode_unsubscribe(body: Buffer, level: int, from_client: bool) -> Unsubscribe:
    end = len(body)
    packet_id = _read_packet_id(body, end)
    pos = 2
    properties: dict[str, Any] = {}
    if level == MQTT_5:
        properties, pos = decode_properties(body, pos, UNSUBSCRIBE)
    strict = level != MQISDP_3
    topic_filters = []
    while pos < end:
        topic_filter, pos = read_string(body, pos, end, strict)
        if not topic_filter:
            raise MalformedPacket("empty topic filter")
        topic_filters.append(topic_filter)
    if not topic_filters:
        raise MalformedPacket("UNSUBSCRIBE without topic filters")
    return Unsubscribe(packet_id, topic_filters, properties)


# --- Server-to-client packets: CONNACK, SUBACK, UNSUBACK, PINGRESP ----------------------------

def _decode_connack(body: Buffer, level: int, from_client: bool) -> Connack:
    end = len(body)
    ack_flags, pos = read_byte(body, 0, end)
    reason_code, pos = read_byte(body, pos, end)
    if level == MQISDP_3:
        ack_flags = 0  # "Topic Name Compression Response": reserved, not used (l.1125-1126)
    elif ack_flags & 0xFE:
        raise MalformedPacket("reserved CONNACK acknowledge flag bits set")
    properties: dict[str, Any] = {}
    if level == MQTT_5:
        _check_reason_code(CONNACK, reason_code, VALID_REASON_CODES[CONNACK])
        properties, pos = decode_properties(body, pos, CONNACK)
    elif reason_code > 5:
        raise ProtocolError(f"CONNACK return code {reason_code}")
    if pos != end:
        raise MalformedPacket("bytes left over in CONNACK")
    return Connack(bool(ack_flags & 0x01), reason_code, properties)


def _decode_suback(body: Buffer, level: int, from_client: bool) -> Suback:
    end = len(body)
    packet_id = _read_packet_id(body, end)
    pos = 2
    properties: dict[str, Any] = {}
    allowed = SUBACK_CODES_311
    if level == MQTT_5:
        properties, pos = decode_properties(body, pos, SUBACK)
        allowed = VALID_REASON_CODES[SUBACK]
    reason_codes = list(body[pos:])
    if not reason_codes:
        raise MalformedPacket("SUBACK without return codes")
    for code in reason_codes:
        _check_reason_code(SUBACK, code, allowed)
    return Suback(packet_id, reason_codes, properties)


def _decode_unsuback(body: Buffer, level: int, from_client: bool) -> Unsuback:
    end = len(body)
    packet_id = _read_packet_id(body, end)
    if level != MQTT_5:
        if end != 2:
            raise MalformedPacket("UNSUBACK must have 2 bytes")
        return Unsuback(packet_id)
    properties, pos = decode_properties(body, 2, UNSUBACK)
    reason_codes = list(body[pos:])
    if not reason_codes:
        raise MalformedPacket("UNSUBACK without reason codes")
    for code in reason_codes:
        _check_reason_code(UNSUBACK, code, VALID_REASON_CODES[UNSUBACK])
    return Unsuback(packet_id, reason_codes, properties)


def _empty(cls: Callable[[], Any]) -> Callable[..., Any]:
    def decode_empty(body: Buffer, level: int, from_client: bool) -> Any:
        if len(body):
            err = MalformedPacket(f"{cls.__name__} must have no variable header")
            err.silent = True
            raise err
        return cls()

    return decode_empty


# --- DISCONNECT and AUTH (seed 000 l.1237-1254; 5.0 §3.14, §3.15) -----------------------------

def _reason_and_properties(packet_type: int, body: Buffer,
                           allowed: frozenset[int]) -> tuple[int, dict[str, Any]]:
    """The optional reason code and property block that end DISCONNECT and AUTH: both may be
    left out when the code is 0 and there are no properties (5.0 §3.14.2.1, §3.15.2.1)."""
    end = len(body)
    if not end:
        return 0, {}
    reason_code = body[0]
    _check_reason_code(packet_type, reason_code, allowed)
    if end == 1:
        return reason_code, {}
    properties, pos = decode_properties(body, 1, packet_type)
    if pos != end:
        raise MalformedPacket(f"bytes left over in packet type {packet_type}")
    return reason_code, properties


def _decode_disconnect(body: Buffer, level: int, from_client: bool) -> Disconnect:
    if level != MQTT_5:
        if len(body):
            raise MalformedPacket("DISCONNECT must have no variable header")
        return Disconnect()
    allowed = CLIENT_DISCONNECT_CODES if from_client else SERVER_DISCONNECT_CODES
    if len(body) and body[0] not in allowed:
        raise ProtocolError(f"reason code 0x{body[0]:02X} not valid in DISCONNECT", silent=True)
    return Disconnect(*_reason_and_properties(DISCONNECT, body, allowed))


def _decode_auth(body: Buffer, level: int, from_client: bool) -> Auth:
    return Auth(*_reason_and_properties(AUTH, body, VALID_REASON_CODES[AUTH]))


_DECODERS: dict[int, Callable[[Buffer, int, bool], Packet]] = {
    CONNACK: _decode_connack,
    PUBACK: _decode_ack(PUBACK, Puback),
    PUBREC: _decode_ack(PUBREC, Pubrec),
    PUBREL: _decode_ack(PUBREL, Pubrel),
    PUBCOMP: _decode_ack(PUBCOMP, Pubcomp),
    SUBSCRIBE: _decode_subscribe,
    SUBACK: _decode_suback,
    UNSUBSCRIBE: _decode_unsubscribe,
    UNSUBACK: _decode_unsuback,
    PINGREQ: _empty(Pingreq),
    PINGRESP: _empty(Pingresp),
    DISCONNECT: _decode_disconnect,
    AUTH: _decode_auth,
}
