"""Property-based tests: untrusted bytes only ever raise MQTTError, valid packets round-trip."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relaymq.mqtt import packets as p
from relaymq.mqtt.codec import SERVER_ONLY, decode, decode_remaining_length, encode
from relaymq.mqtt.decoder import decode_in
from relaymq.mqtt.errors import MQTTError
from relaymq.mqtt.packets import Packet
from relaymq.mqtt.properties import ALLOWED, BY_NAME, WILL, DataType
from relaymq.mqtt.reader import PacketReader
from relaymq.mqtt.reason_codes import (
    CLIENT_DISCONNECT_CODES, SERVER_DISCONNECT_CODES, VALID_REASON_CODES,
)

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LEVELS = st.sampled_from([3, 4, 5])


def feed_all(level: int, data: bytes, from_client: bool) -> None:
    """Feed ``data`` to a reader at ``level``; only MQTTError may escape."""
    reader = PacketReader(max_packet_size=1 << 20, from_client=from_client)
    reader.protocol_level = level
    reader.feed(data)
    try:
        while reader.next_packet() is not None:
            pass
    except MQTTError:
        pass


@FUZZ
@given(level=st.sampled_from([0, 3, 4, 5]), data=st.binary(max_size=300),
       from_client=st.booleans())
def test_random_bytes_raise_only_mqtt_errors(level: int, data: bytes, from_client: bool) -> None:
    """Brief (strict validation of untrusted bytes): random input never raises IndexError,
    UnicodeDecodeError, struct.error, ValueError... only MQTTError subclasses.
    Spec: issue 2 Tests ("random bytes raise only the protocol's own error type"); mqtt.md item
    16 (framing, seed 000 l.851-878)."""
    feed_all(level, data, from_client)


@FUZZ
@given(first=st.integers(0, 255), body=st.binary(max_size=200), level=st.sampled_from([0, 3, 4, 5]),
       from_client=st.booleans())
def test_random_bodies_raise_only_mqtt_errors(first: int, body: bytes, level: int,
                                              from_client: bool) -> None:
    """Every (first byte, body) pair either decodes or raises MQTTError (mqtt.md item 14: all
    sixteen packet types, including the reserved ones)."""
    try:
        decode(first, body, level, from_client=from_client)
    except MQTTError:
        pass


# --- Valid packets ------------------------------------------------------------------------------

SAFE_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Cn")), max_size=12)
TOPIC = SAFE_TEXT.filter(bool)
PACKET_ID = st.integers(1, 0xFFFF)


def value_for(name: str) -> st.SearchStrategy[Any]:
    data_type = BY_NAME[name].data_type
    if data_type is DataType.BYTE:
        return st.integers(0, 1)
    if data_type is DataType.TWO_BYTE_INT:
        return st.integers(1, 0xFFFF)
    if data_type is DataType.FOUR_BYTE_INT:
        return st.integers(1, 0xFFFFFFFF)
    if data_type is DataType.VARINT:
        return st.integers(1, 268435455)
    if data_type is DataType.UTF8_STRING:
        return SAFE_TEXT
    if data_type is DataType.BINARY:
        return st.binary(max_size=10)
    return st.tuples(SAFE_TEXT, SAFE_TEXT)


def properties_for(packet_type: int, level: int) -> st.SearchStrategy[dict[str, Any]]:
    """A valid property dict for ``packet_type`` (empty below level 5)."""
    if level != 5:
        return st.just({})
    names = sorted(ALLOWED[packet_type])

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        chosen = draw(st.lists(st.sampled_from(names), unique=True, max_size=4))
        props: dict[str, Any] = {}
        for name in chosen:
            if name == "user_property" or name == "subscription_identifier" and packet_type == p.PUBLISH:
                props[name] = draw(st.lists(value_for(name), min_size=1, max_size=3))
            else:
                props[name] = draw(value_for(name))
        return props

    return build()


def reason(packet_type: int, level: int) -> st.SearchStrategy[int]:
    return st.sampled_from(sorted(VALID_REASON_CODES[packet_type])) if level == 5 else st.just(0)


@st.composite
def packets(draw: st.DrawFn, level: int) -> Packet:
    kind = draw(st.sampled_from(["connect", "connack", "publish", "ack", "subscribe", "suback",
                                 "unsubscribe", "unsuback", "ping", "disconnect", "auth"]))
    props = lambda t: draw(properties_for(t, level))  # noqa: E731
    if kind == "connect":
        will = None
        if draw(st.booleans()):
            will = p.Will(draw(TOPIC), draw(st.binary(max_size=20)), draw(st.integers(0, 2)),
                          draw(st.booleans()), props(WILL))
        username = draw(st.none() | SAFE_TEXT)
        # 3.1.1 [MQTT-3.1.2-22]: no password without a user name at level 4.
        password = None
        if username is not None or level != 4:
            password = draw(st.none() | st.binary(max_size=8))
        return p.Connect("MQIsdp" if level == 3 else "MQTT", level, draw(st.booleans()),
                         draw(st.integers(0, 0xFFFF)), draw(SAFE_TEXT), will, username, password,
                         props(p.CONNECT))
    if kind == "connack":
        top = 3 if level == 3 else 5
        code = draw(reason(p.CONNACK, level) if level == 5 else st.integers(0, top))
        return p.Connack(level != 3 and draw(st.booleans()), code, props(p.CONNACK))
    if kind == "publish":
        qos = draw(st.integers(0, 2))
        return p.Publish(draw(TOPIC), draw(st.binary(max_size=300)), qos, draw(st.booleans()),
                         qos > 0 and draw(st.booleans()), draw(PACKET_ID) if qos else None,
                         props(p.PUBLISH))
    if kind == "ack":
        cls, packet_type = draw(st.sampled_from([(p.Puback, p.PUBACK), (p.Pubrec, p.PUBREC),
                                                 (p.Pubrel, p.PUBREL), (p.Pubcomp, p.PUBCOMP)]))
        return cls(draw(PACKET_ID), draw(reason(packet_type, level)), props(packet_type))
    if kind == "subscribe":
        subs = draw(st.lists(st.builds(
            p.Subscription, TOPIC, st.integers(0, 2),
            st.booleans() if level == 5 else st.just(False),
            st.booleans() if level == 5 else st.just(False),
            st.integers(0, 2) if level == 5 else st.just(0)), min_size=1, max_size=4))
        return p.Subscribe(draw(PACKET_ID), subs, props(p.SUBSCRIBE))
    if kind == "suback":
        allowed = sorted(VALID_REASON_CODES[p.SUBACK]) if level == 5 else [0, 1, 2, 0x80]
        codes = draw(st.lists(st.sampled_from(allowed), min_size=1, max_size=4))
        return p.Suback(draw(PACKET_ID), codes, props(p.SUBACK))
    if kind == "unsubscribe":
        return p.Unsubscribe(draw(PACKET_ID), draw(st.lists(TOPIC, min_size=1, max_size=4)),
                             props(p.UNSUBSCRIBE))
    if kind == "unsuback":
        codes = []
        if level == 5:
            codes = draw(st.lists(reason(p.UNSUBACK, level), min_size=1, max_size=4))
        return p.Unsuback(draw(PACKET_ID), codes, props(p.UNSUBACK))
    if kind == "ping":
        return draw(st.sampled_from([p.Pingreq(), p.Pingresp()]))
    if kind == "disconnect" or level != 5:
        code = 0
        if level == 5:
            code = draw(st.sampled_from(sorted(CLIENT_DISCONNECT_CODES | SERVER_DISCONNECT_CODES)))
        return p.Disconnect(code, props(p.DISCONNECT))
    return p.Auth(draw(reason(p.AUTH, level)), props(p.AUTH))


def sent_by_client(packet: Packet) -> bool:
    """Who would send this packet (the decoder checks direction)."""
    if packet.packet_type in SERVER_ONLY:
        return False
    if isinstance(packet, p.Publish):
        return len(packet.properties.get("subscription_identifier", ())) < 2
    if isinstance(packet, p.Disconnect):
        return packet.reason_code in CLIENT_DISCONNECT_CODES
    return True


@FUZZ
@given(data=st.data(), level=LEVELS)
def test_valid_packets_round_trip(data: st.DataObject, level: int) -> None:
    """seed 000 l.764-1958, 3.1.1 §3, 5.0 §3: decode(encode(packet)) == packet for random
    valid packets of every type at every level."""
    packet = data.draw(packets(level))
    wire = encode(packet, level)
    header = decode_remaining_length(wire, 1)
    assert header is not None and header[1] + header[0] == len(wire)
    assert decode(wire[0], wire[header[1]:], level, from_client=sent_by_client(packet)) == packet


@FUZZ
@given(data=st.data(), level=LEVELS, edits=st.lists(
    st.tuples(st.sampled_from(["flip", "insert", "delete"]), st.integers(0, 10_000),
              st.integers(0, 255)), min_size=1, max_size=3))
def test_mutated_packets_raise_only_mqtt_errors(data: st.DataObject, level: int,
                                                edits: list[tuple[str, int, int]]) -> None:
    """Near-valid input reaches deep into the decoder: a valid stream with a few bytes
    flipped, inserted or deleted still raises nothing but MQTTError.
    Spec: issue 2 Tests ("random bytes raise only the protocol's own error type") and Protocol
    ("strict validation")."""
    packet = data.draw(packets(level))
    wire = bytearray(encode(packet, level) + encode(p.Pingreq(), level))
    for op, where, byte in edits:
        index = where % (len(wire) + 1)
        if op == "insert":
            wire.insert(index, byte)
        elif index < len(wire):
            if op == "flip":
                wire[index] ^= byte or 1
            else:
                del wire[index]
    feed_all(level, bytes(wire), sent_by_client(packet))


def _outcome(fn: Any) -> Any:
    """A decode's result, or the class, reason code and message of the MQTTError it raised."""
    try:
        return fn()
    except MQTTError as err:
        return (type(err), err.reason_code, err.message)


@FUZZ
@given(data=st.data(), level=st.sampled_from([0, 3, 4, 5]), flips=st.lists(
    st.tuples(st.integers(0, 10_000), st.integers(1, 255)), max_size=2),
    before=st.binary(max_size=8), after=st.binary(max_size=8))
def test_decode_in_place_is_decode(data: st.DataObject, level: int, flips: list[tuple[int, int]],
                                   before: bytes, after: bytes) -> None:
    """The reader decodes PUBLISH and acknowledgements where they lie in its buffer
    (decoder.decode_in): for valid and damaged bodies alike, with other bytes around them,
    it answers exactly what decode() answers for the body alone, error and reason code
    included (mqtt.md item 32, strict validation; issue 8 hot path)."""
    packet = data.draw(packets(level or 4))
    wire = encode(packet, level or 4)
    header = decode_remaining_length(wire, 1)
    assert header is not None
    body = bytearray(wire[header[1]:])
    for where, byte in flips:
        if body:
            body[where % len(body)] ^= byte
    buf = bytearray(before) + body + bytearray(after)
    start, end = len(before), len(before) + len(body)
    from_client = sent_by_client(packet)
    assert _outcome(lambda: decode_in(wire[0], buf, start, end, level, from_client=from_client)) \
        == _outcome(lambda: decode(wire[0], bytes(body), level, from_client=from_client))
