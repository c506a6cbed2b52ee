"""MQTT 5 properties: the table (OASIS 5.0 §2.2.2.2, Table 2-4) and the property codec."""

from __future__ import annotations

from typing import Any

import pytest

from relaymq.mqtt import packets as p
from relaymq.mqtt.errors import MalformedPacket, MQTTError, ProtocolError
from relaymq.mqtt.properties import (
    ALLOWED, BY_ID, BY_NAME, PROPERTIES, WILL, DataType, decode_properties, encode_properties,
)
from relaymq.mqtt.wire import encode_varint

# 5.0 Table 2-4, written out independently of the module under test.
SPEC_TABLE = {
    0x01: ("payload_format_indicator", DataType.BYTE),
    0x02: ("message_expiry_interval", DataType.FOUR_BYTE_INT),
    0x03: ("content_type", DataType.UTF8_STRING),
    0x08: ("response_topic", DataType.UTF8_STRING),
    0x09: ("correlation_data", DataType.BINARY),
    0x0B: ("subscription_identifier", DataType.VARINT),
    0x11: ("session_expiry_interval", DataType.FOUR_BYTE_INT),
    0x12: ("assigned_client_identifier", DataType.UTF8_STRING),
    0x13: ("server_keep_alive", DataType.TWO_BYTE_INT),
    0x15: ("authentication_method", DataType.UTF8_STRING),
    0x16: ("authentication_data", DataType.BINARY),
    0x17: ("request_problem_information", DataType.BYTE),
    0x18: ("will_delay_interval", DataType.FOUR_BYTE_INT),
    0x19: ("request_response_information", DataType.BYTE),
    0x1A: ("response_information", DataType.UTF8_STRING),
    0x1C: ("server_reference", DataType.UTF8_STRING),
    0x1F: ("reason_string", DataType.UTF8_STRING),
    0x21: ("receive_maximum", DataType.TWO_BYTE_INT),
    0x22: ("topic_alias_maximum", DataType.TWO_BYTE_INT),
    0x23: ("topic_alias", DataType.TWO_BYTE_INT),
    0x24: ("maximum_qos", DataType.BYTE),
    0x25: ("retain_available", DataType.BYTE),
    0x26: ("user_property", DataType.STRING_PAIR),
    0x27: ("maximum_packet_size", DataType.FOUR_BYTE_INT),
    0x28: ("wildcard_subscription_available", DataType.BYTE),
    0x29: ("subscription_identifier_available", DataType.BYTE),
    0x2A: ("shared_subscription_available", DataType.BYTE),
}

ALL_PACKET_TYPES = [p.CONNECT, p.CONNACK, p.PUBLISH, WILL, p.PUBACK, p.PUBREC, p.PUBREL,
                    p.PUBCOMP, p.SUBSCRIBE, p.SUBACK, p.UNSUBSCRIBE, p.UNSUBACK, p.DISCONNECT,
                    p.AUTH]

SAMPLE = {
    DataType.BYTE: 1,
    DataType.TWO_BYTE_INT: 0x1234,
    DataType.FOUR_BYTE_INT: 0x01020304,
    DataType.VARINT: 268435455,
    DataType.UTF8_STRING: "a/é",
    DataType.BINARY: b"\x00\xff\x01",
    DataType.STRING_PAIR: ("key", "välue"),
}


def raw_block(*entries: bytes) -> bytes:
    """A property block built by hand: length, then the given identifier+value entries."""
    body = b"".join(entries)
    return encode_varint(len(body)) + body


def test_table_has_the_27_properties_of_table_2_4() -> None:
    """5.0 Table 2-4: identifiers, snake_case names and data types of all 27 properties.
    Spec: MQTT 5 2.2.2.2."""
    assert len(PROPERTIES) == 27
    assert {spec.identifier: (spec.name, spec.data_type) for spec in PROPERTIES} == SPEC_TABLE
    assert set(BY_ID) == set(SPEC_TABLE)
    assert set(BY_NAME) == {name for name, _ in SPEC_TABLE.values()}


@pytest.mark.parametrize(("packet_type", "names"), [
    (p.CONNECT, {"session_expiry_interval", "receive_maximum", "maximum_packet_size",
                 "topic_alias_maximum", "request_response_information",
                 "request_problem_information", "user_property", "authentication_method",
                 "authentication_data"}),
    (WILL, {"will_delay_interval", "payload_format_indicator", "message_expiry_interval",
            "content_type", "response_topic", "correlation_data", "user_property"}),
    (p.PUBLISH, {"payload_format_indicator", "message_expiry_interval", "topic_alias",
                 "response_topic", "correlation_data", "user_property",
                 "subscription_identifier", "content_type"}),
    (p.PUBACK, {"reason_string", "user_property"}),
    (p.PUBREL, {"reason_string", "user_property"}),
    (p.SUBSCRIBE, {"subscription_identifier", "user_property"}),
    (p.UNSUBSCRIBE, {"user_property"}),
    (p.DISCONNECT, {"session_expiry_interval", "reason_string", "user_property",
                    "server_reference"}),
    (p.AUTH, {"authentication_method", "authentication_data", "reason_string",
              "user_property"}),
])
def test_allowed_properties_per_packet(packet_type: int, names: set[str]) -> None:
    """5.0 §3.1.2.11, §3.1.3.2, §3.3.2.3, §3.4.2.2, §3.6.2.2, §3.8.2.1, §3.10.2.1,
    §3.14.2.2, §3.15.2.2: the properties each packet (and the will) may carry."""
    assert ALLOWED[packet_type] == names


def test_connack_allows_17_properties() -> None:
    """5.0 §3.2.2.3: CONNACK carries every server capability property."""
    assert len(ALLOWED[p.CONNACK]) == 17
    assert "topic_alias" not in ALLOWED[p.CONNACK]
    assert "assigned_client_identifier" in ALLOWED[p.CONNACK]


@pytest.mark.parametrize("spec", PROPERTIES, ids=lambda spec: spec.name)
def test_every_property_round_trips(spec: Any) -> None:
    """5.0 §2.2.2.2: each property encodes and decodes back in every packet that allows it;
    user_property as a list of pairs, subscription_identifier as a list in PUBLISH."""
    value = SAMPLE[spec.data_type]
    for packet_type in sorted(spec.packets):
        if spec.name == "user_property":
            props = {"user_property": [value, ("k2", "")]}
        elif spec.name == "subscription_identifier" and packet_type == p.PUBLISH:
            props = {"subscription_identifier": [value, 1]}
        else:
            props = {spec.name: value}
        block = encode_properties(props, packet_type)
        assert block[0] == len(block) - 1  # the length prefix covers the rest
        assert decode_properties(b"\xee" + block + b"tail", 1, packet_type) == (
            props, 1 + len(block))


def test_user_property_wire_format_and_order() -> None:
    """5.0 §3.3.2.3.7: a user property is a string pair; several keep their order."""
    block = encode_properties({"user_property": [("p", "q"), ("p", "r")]}, p.PUBACK)
    assert block == bytes.fromhex("0E 26 0001 70 0001 71 26 0001 70 0001 72")
    assert decode_properties(block, 0, p.PUBACK)[0] == {"user_property": [("p", "q"), ("p", "r")]}


def test_subscription_identifier_int_in_subscribe_list_in_publish() -> None:
    """5.0 §3.8.2.1.2 (one in SUBSCRIBE) and §3.3.4 (one per matching subscription in a
    server's PUBLISH)."""
    assert decode_properties(raw_block(b"\x0b\x7f"), 0, p.SUBSCRIBE)[0] == {
        "subscription_identifier": 127}
    assert decode_properties(raw_block(b"\x0b\x01", b"\x0b\x80\x01"), 0, p.PUBLISH)[0] == {
        "subscription_identifier": [1, 128]}


def test_empty_block() -> None:
    """5.0 §2.2.2.1: a property length of 0 means no properties."""
    assert encode_properties({}, p.PUBLISH) == b"\x00"
    assert decode_properties(b"\x00", 0, p.CONNECT) == ({}, 1)


def _disallowed_cases() -> list[tuple[int, str]]:
    return [(packet_type, spec.name) for packet_type in ALL_PACKET_TYPES
            for spec in PROPERTIES if packet_type not in spec.packets]


@pytest.mark.parametrize(("packet_type", "name"), _disallowed_cases())
def test_property_not_allowed_in_packet(packet_type: int, name: str) -> None:
    """5.0 §2.2.2.2; conformance cases "DISALLOWED PROPERTIES": a well-formed property the
    packet may not carry is a protocol error (0x82), in SUBSCRIBE and UNSUBSCRIBE malformed
    (0x81) as the reference broker answers."""
    spec = BY_NAME[name]
    allowed_in = next(iter(spec.packets))
    block = encode_properties({name: SAMPLE[spec.data_type] if name != "user_property"
                               else [SAMPLE[spec.data_type]]}, allowed_in)
    with pytest.raises(MQTTError) as info:
        decode_properties(block, 0, packet_type)
    expected = 0x81 if packet_type in (p.SUBSCRIBE, p.UNSUBSCRIBE) else 0x82
    assert info.value.reason_code == expected


@pytest.mark.parametrize("name", sorted(set(BY_NAME) - {"user_property"}))
def test_property_given_twice_is_a_protocol_error(name: str) -> None:
    """5.0 §3.x "It is a Protocol Error to include X more than once"; conformance "2*...".
    Only user_property (and a server's subscription_identifier in PUBLISH) may repeat.
    Spec: MQTT 5 2.2.2.2 and e.g. 3.1.2.11.2, 3.3.2.3.2 ("more than once" is a Protocol Error)."""
    spec = BY_NAME[name]
    packet_type = next(t for t in sorted(spec.packets)
                       if not (name == "subscription_identifier" and t == p.PUBLISH))
    one = encode_properties({name: SAMPLE[spec.data_type]}, packet_type)[1:]
    with pytest.raises(ProtocolError):
        decode_properties(raw_block(one, one), 0, packet_type)


@pytest.mark.parametrize("spec", PROPERTIES, ids=lambda spec: spec.name)
def test_truncated_value_is_malformed(spec: Any) -> None:
    """Conformance "... missing" cases; 5.0 §1.5: a value cut off by the end of the
    property block is a malformed packet, in allowed and disallowed packets alike."""
    value = SAMPLE[spec.data_type]
    full = encode_properties({spec.name: [value] if spec.name == "user_property" else value},
                             next(iter(spec.packets)))[1:]
    for cut in range(1, len(full)):
        for packet_type in (p.PUBACK, next(iter(spec.packets))):
            with pytest.raises(MalformedPacket):
                decode_properties(raw_block(full[:cut]), 0, packet_type)


@pytest.mark.parametrize("identifier", [0x00, 0x04, 0x0A, 0x14, 0x1E, 0x20, 0x2B, 0x7F, 0x80, 0xFF])
def test_unknown_property_identifier_is_malformed(identifier: int) -> None:
    """5.0 §2.2.2.2 (an invalid identifier makes the packet malformed); conformance
    "unknown-property" / "invalid-property" cases answer 0x81."""
    with pytest.raises(MalformedPacket):
        decode_properties(raw_block(bytes((identifier, 1))), 0, p.PUBLISH)


@pytest.mark.parametrize(("entry", "packet_type"), [
    (b"\x01\x02", p.PUBLISH),  # payload_format_indicator
    (b"\x17\x02", p.CONNECT),  # request_problem_information
    (b"\x19\x02", p.CONNECT),  # request_response_information
    (b"\x24\x02", p.CONNACK),  # maximum_qos
    (b"\x25\x02", p.CONNACK),  # retain_available
    (b"\x28\x02", p.CONNACK),  # wildcard_subscription_available
    (b"\x29\xff", p.CONNACK),  # subscription_identifier_available
    (b"\x2a\x02", p.CONNACK),  # shared_subscription_available
    (b"\x21\x00\x00", p.CONNECT),  # receive_maximum 0
    (b"\x27\x00\x00\x00\x00", p.CONNECT),  # maximum_packet_size 0
])
def test_out_of_range_value_is_a_protocol_error(entry: bytes, packet_type: int) -> None:
    """5.0 §3.3.2.3.2, §3.1.2.11.3-7, §3.2.2.3.4-12; conformance "payload-format-indicator=2
    (byte, invalid)" answers 0x82."""
    with pytest.raises(ProtocolError):
        decode_properties(raw_block(entry), 0, packet_type)


@pytest.mark.parametrize("entry", [b"\x0b\x00", b"\x0b\x80\x00"])
def test_subscription_identifier_zero_is_malformed(entry: bytes) -> None:
    """5.0 §3.8.2.1.2 (0 is an error); conformance "subscription-identifier=0" and "=0x8000"
    answer 0x81."""
    for packet_type in (p.SUBSCRIBE, p.PUBLISH):
        with pytest.raises(MalformedPacket):
            decode_properties(raw_block(entry), 0, packet_type)


def test_five_byte_subscription_identifier_is_malformed() -> None:
    """5.0 §1.5.5; conformance "subscription-identifier=0x8080808001" answers 0x81."""
    with pytest.raises(MalformedPacket):
        decode_properties(raw_block(b"\x0b\x80\x80\x80\x80\x01"), 0, p.SUBSCRIBE)


def test_malformed_property_wins_over_earlier_protocol_error() -> None:
    """Conformance "40 with user-property missing value" (a disallowed topic alias followed
    by garbage) answers 0x81: the block is parsed before it is judged.
    Spec: MQTT 5 1.5.7 (UTF-8 string pair) and 4.13 (handling errors)."""
    with pytest.raises(MalformedPacket):
        decode_properties(raw_block(b"\x23\x00\x01", b"\x70"), 0, p.PUBACK)
    with pytest.raises(MalformedPacket):
        decode_properties(raw_block(b"\x1f\x00\x01p", b"\x1f\x00\x01q", b"\x1f\x00"), 0, p.PUBACK)


def test_invalid_utf8_in_string_property_is_malformed() -> None:
    """5.0 §1.5.4: string properties are UTF-8 Encoded Strings."""
    with pytest.raises(MalformedPacket):
        decode_properties(raw_block(b"\x1f\x00\x02\xc3\x28"), 0, p.PUBACK)
    with pytest.raises(MalformedPacket):
        decode_properties(raw_block(b"\x26\x00\x01a\x00\x01\x00"), 0, p.PUBACK)


def test_property_length_beyond_packet_is_malformed() -> None:
    """5.0 §2.2.2.1: the property block must fit in the packet."""
    with pytest.raises(MalformedPacket):
        decode_properties(b"\x05\x1f\x00\x00", 0, p.PUBACK)
    with pytest.raises(MalformedPacket):
        decode_properties(b"", 0, p.PUBACK)


def test_encoding_rejects_unknown_or_disallowed_names() -> None:
    """The encoder's input comes from the broker: a wrong name is a programming error.
    Spec: MQTT 5 2.2.2.2 Table 2-4 (which packets carry which property)."""
    with pytest.raises(ValueError):
        encode_properties({"no_such_property": 1}, p.PUBLISH)
    with pytest.raises(ValueError):
        encode_properties({"topic_alias": 1}, p.PUBACK)
