"""Encoding and decoding whole packets: the seed's worked examples and round trips of every
packet type at every protocol level."""

from __future__ import annotations

import pytest

from relaymq.mqtt import packets as p
from relaymq.mqtt.codec import (
    SERVER_ONLY, decode, decode_remaining_length, encode, encode_ack, encode_publish, patch_publish,
)
from relaymq.mqtt.packets import Packet
from relaymq.mqtt.reason_codes import CLIENT_DISCONNECT_CODES

LEVELS = [3, 4, 5]


def split(data: bytes) -> tuple[int, bytes]:
    """First byte and body of one encoded packet (checking the Remaining Length)."""
    header = decode_remaining_length(data, 1)
    assert header is not None
    length, start = header
    assert len(data) == start + length
    return data[0], data[start:]


def round_trip(packet: Packet, level: int) -> Packet:
    """Encode then decode, as the receiving side would: packets only a server sends (and a
    PUBLISH carrying subscription identifiers) are decoded as coming from the server."""
    first, body = split(encode(packet, level))
    from_server = packet.packet_type in SERVER_ONLY or (
        isinstance(packet, p.Publish) and "subscription_identifier" in packet.properties) or (
        isinstance(packet, p.Disconnect) and packet.reason_code not in CLIENT_DISCONNECT_CODES)
    return decode(first, body, level, from_client=not from_server)


# --- The seed's worked examples ---------------------------------------------------------------

def test_seed_connect_variable_header() -> None:
    """seed 000 l.1171-1200 (mqtt.md item 18-19): MQIsdp, version 3, flags 0x0E (clean start,
    will flag, will QoS 1), keep alive 10 = 00 06 4D 51 49 73 64 70 03 0E 00 0A."""
    connect = p.Connect("MQIsdp", 3, True, 10, "client1",
                        p.Will("will/topic", b"gone", qos=1, retain=False))
    data = encode(connect, 3)
    assert data[0] == 0x10
    first, body = split(data)
    assert body[:12] == bytes.fromhex("00 06 4D 51 49 73 64 70 03 0E 00 0A")
    assert decode(first, body, 0) == connect


def test_seed_publish_variable_header() -> None:
    """seed 000 l.1483-1490 (mqtt.md item 27): topic "a/b", QoS 1, message id 10 =
    00 03 61 2F 62 00 0A; fixed header 0x32 (l.1424-1426)."""
    data = encode(p.Publish("a/b", b"data", qos=1, packet_id=10), 3)
    assert data == bytes.fromhex("32 0B 00 03 61 2F 62 00 0A") + b"data"
    assert decode(data[0], data[2:], 3) == p.Publish("a/b", b"data", qos=1, packet_id=10)


@pytest.mark.parametrize("level", [3, 4])
def test_seed_subscribe_payload(level: int) -> None:
    """seed 000 l.1695-1765 (mqtt.md item 30): id 10, "a/b" QoS 1, "c/d" QoS 2 =
    00 0A 00 03 61 2F 62 01 00 03 63 2F 64 02 after 82 0E (the Remaining Length includes
    the packet id, mqtt.md decision)."""
    wire = bytes.fromhex("82 0E 00 0A 00 03 61 2F 62 01 00 03 63 2F 64 02")
    subscribe = p.Subscribe(10, [p.Subscription("a/b", 1), p.Subscription("c/d", 2)])
    assert encode(subscribe, level) == wire
    assert decode(wire[0], wire[2:], level) == subscribe


@pytest.mark.parametrize(("packet", "wire"), [
    (p.Connack(False, 0), "20 02 00 00"),  # l.1041-1047
    (p.Connack(False, 2), "20 02 00 02"),  # rc 2 identifier rejected, l.1140
    (p.Disconnect(), "E0 00"),  # l.1237-1254
    (p.Pingreq(), "C0 00"),  # l.1267-1285
    (p.Pingresp(), "D0 00"),  # l.1290-1309
    (p.Puback(10), "40 02 00 0A"),  # l.1313-1350
    (p.Pubrec(10), "50 02 00 0A"),  # l.1520-1560
    (p.Pubrel(10), "62 02 00 0A"),  # mqtt.md item 29: 62 (3.1.1) is what we send
    (p.Pubcomp(10), "70 02 00 0A"),
    (p.Suback(10, [0, 2]), "90 04 00 0A 00 02"),  # l.1614-1682 example payload 0, 2
    (p.Unsubscribe(10, ["a/b", "c/d"]), "A2 0C 00 0A 00 03 61 2F 62 00 03 63 2F 64"),  # l.1850-1915
    (p.Unsuback(10), "B0 02 00 0A"),  # l.1795-1845
])
def test_seed_fixed_formats_at_level_3(packet: Packet, wire: str) -> None:
    """seed 000 l.1041-1915 (mqtt.md items 22, 26, 29, 30): the v3 byte layouts."""
    assert encode(packet, 3) == bytes.fromhex(wire)
    assert round_trip(packet, 3) == packet


# --- Round trips of every packet type at every level -------------------------------------------

def packets_for(level: int) -> list[Packet]:
    """A few representative packets of every type, with level-5 content only at level 5."""
    v5 = level == 5
    props = {"user_property": [("k", "v"), ("k", "w")], "reason_string": "why"} if v5 else {}
    name = "MQIsdp" if level == 3 else "MQTT"
    out: list[Packet] = [
        p.Connect(name, level, True, 60, "c1"),
        p.Connect(name, level, False, 0, "c2", p.Will("w/t", b"\x00bye", 2, True,
                  {"will_delay_interval": 5, "content_type": "text/plain"} if v5 else {}),
                  "user", b"\x00pw", {"session_expiry_interval": 30, "receive_maximum": 20}
                  if v5 else {}),
        p.Connect(name, level, True, 65535, "c3", username="only-user"),
        p.Connack(level != 3, 0, {"topic_alias_maximum": 10, "assigned_client_identifier": "x"}
                  if v5 else {}),
        p.Connack(False, 0x87 if v5 else 5 if level == 4 else 3),
        p.Publish("a/b", b"", 0),
        p.Publish("a/b/é", b"\x00" * 300, 1, True, True, 65535,
                  {"message_expiry_interval": 9, "correlation_data": b"\x01"} if v5 else {}),
        p.Publish("x", b"payload", 2, False, False, 1),
        p.Puback(1), p.Pubrec(2), p.Pubrel(3), p.Pubcomp(4),
        p.Subscribe(7, [p.Subscription("a/+", 1), p.Subscription("#", 2)]),
        p.Suback(7, [0, 1, 2, 0x80]),
        p.Unsubscribe(8, ["a/+", "b"]),
        p.Unsuback(8, [0x00, 0x11] if v5 else []),
        p.Pingreq(), p.Pingresp(), p.Disconnect(),
    ]
    if v5:
        out += [
            p.Connect(name, 5, True, 60, "", None, None, b"pw-without-user"),
            p.Publish("", b"aliased", 0, properties={"topic_alias": 3}),
            p.Publish("t", b"", 1, packet_id=9, properties={"subscription_identifier": [1, 2]}),
            p.Puback(5, 0x10), p.Pubrec(6, 0x80, props), p.Pubrel(7, 0x92, props),
            p.Pubcomp(8, 0x00, props),
            p.Subscribe(9, [p.Subscription("s", 2, True, True, 2)],
                        {"subscription_identifier": 268435455}),
            p.Suback(9, [0x9E, 0xA1], props),
            p.Unsubscribe(10, ["s"], {"user_property": [("a", "b")]}),
            p.Unsuback(10, [0x8F], props),
            p.Disconnect(0x04), p.Disconnect(0x00, {"session_expiry_interval": 0}),
            p.Disconnect(0x8B, {"server_reference": "elsewhere"}),
            p.Auth(), p.Auth(0x18, {"authentication_method": "SCRAM", "authentication_data": b"x"}),
        ]
    return out


@pytest.mark.parametrize("level", LEVELS)
def test_every_packet_type_round_trips(level: int) -> None:
    """seed 000 l.764-1958 (v3), 3.1.1 §3, 5.0 §3: decode(encode(packet)) is the packet, for
    all fifteen packet types (AUTH at level 5 only)."""
    samples = packets_for(level)
    assert {type(pkt) for pkt in samples} >= (
        {type(x) for x in packets_for(5)} - ({p.Auth} if level != 5 else set()))
    for packet in samples:
        assert round_trip(packet, level) == packet, packet


def test_level_5_only_content_is_dropped_for_older_levels() -> None:
    """3.1.1 §3.4-3.7: acknowledgements are 2 bytes; properties do not exist before MQTT 5,
    so the same message can be encoded for every subscriber."""
    assert encode(p.Puback(1, 0x10, {"reason_string": "x"}), 4) == bytes.fromhex("40 02 00 01")
    assert encode(p.Disconnect(0x8B), 3) == b"\xe0\x00"
    assert encode(p.Unsuback(1, [0x11]), 4) == bytes.fromhex("B0 02 00 01")
    publish = p.Publish("t", b"m", 0, properties={"message_expiry_interval": 5})
    assert encode(publish, 4) == bytes.fromhex("30 04 00 01 74 6D")


def test_level_5_compact_forms() -> None:
    """5.0 §3.4.2.1, §3.14.2.1: the reason code and property length may be omitted when they
    are 0 / empty; conformance "32 QoS 1 Dup 0" expects PUBACK 40 03 1234 10."""
    assert encode(p.Puback(0x1234), 5) == bytes.fromhex("40 02 12 34")
    assert encode(p.Puback(0x1234, 0x10), 5) == bytes.fromhex("40 03 12 34 10")
    assert encode(p.Disconnect(), 5) == b"\xe0\x00"
    assert encode(p.Disconnect(0x82), 5) == b"\xe0\x01\x82"
    assert encode(p.Auth(), 5) == b"\xf0\x00"


def test_connack_at_level_5_matches_conformance_default() -> None:
    """Conformance README: the default level-5 CONNACK is 20 09 00 00 06 22 00 0A 21 00 14."""
    connack = p.Connack(False, 0, {"topic_alias_maximum": 10, "receive_maximum": 20})
    assert encode(connack, 5) == bytes.fromhex("20 09 00 00 06 22 00 0A 21 00 14")


def test_connack_maps_mqtt5_codes_for_older_levels() -> None:
    """seed 000 l.1111-1144 and 3.1.1 §3.2.2.3: a refusal given as an MQTT 5 reason code is
    sent as the return code the level knows; v3 has no session-present bit (l.1125-1126)."""
    assert encode(p.Connack(False, 0x87), 4) == bytes.fromhex("20 02 00 05")
    assert encode(p.Connack(False, 0x84), 3) == bytes.fromhex("20 02 00 01")
    assert encode(p.Connack(True, 0), 3) == bytes.fromhex("20 02 00 00")
    assert encode(p.Connack(True, 0), 4) == bytes.fromhex("20 02 01 00")


def test_suback_failure_code_before_mqtt5() -> None:
    """3.1.1 §3.9.3: the only failure return code is 0x80."""
    assert encode(p.Suback(1, [0x87, 1]), 4) == bytes.fromhex("90 04 00 01 80 01")


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("qos", [0, 1, 2])
def test_encode_publish_fast_path_matches_generic_encoding(level: int, qos: int) -> None:
    """mqtt.md item 27: the fast path produces the same bytes as encoding a Publish."""
    props = {"content_type": "a", "user_property": [("x", "y")]}
    packet_id = 77 if qos else None
    fast = encode_publish("t/é", b"body", qos, True, qos > 0, packet_id, props, level)
    publish = p.Publish("t/é", b"body", qos, True, qos > 0, packet_id, props)
    assert fast == encode(publish, level)
    expected = publish if level == 5 else p.Publish("t/é", b"body", qos, True, qos > 0, packet_id)
    assert decode(fast[0], split(fast)[1], level) == expected


def test_encode_publish_large_payload_uses_multibyte_length() -> None:
    """mqtt.md item 16: a 200,000-byte payload needs a three-byte Remaining Length."""
    payload = bytes(range(256)) * 800
    data = encode_publish("big", payload, 0, False, False, None, None, 4)
    assert data[1] & 0x80 and data[2] & 0x80 and not data[3] & 0x80
    first, body = split(data)
    assert decode(first, body, 4).payload == payload


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("qos", [0, 1, 2])
def test_encode_publish_head_only_is_the_packet_without_its_payload(level: int, qos: int) -> None:
    """A large payload is written after its PUBLISH's head rather than copied into one buffer
    (broker/connection.py, WRITTEN_APART_AT): head + payload must be the very packet, its
    Remaining Length counting the payload (mqtt.md items 16 and 27)."""
    payload = bytes(range(256)) * 800
    props = {"content_type": "a"}
    packet_id = 9 if qos else None
    head = encode_publish("big/é", payload, qos, False, False, packet_id, props, level, True)
    assert head + payload == encode_publish("big/é", payload, qos, False, False, packet_id, props, level)
    assert len(head) < 32


def test_encode_publish_rejects_what_would_corrupt_the_stream() -> None:
    """seed 000 l.1070-1074 (mqtt.md item 28): QoS > 0 needs a packet id; QoS 3 is reserved."""
    with pytest.raises(ValueError):
        encode_publish("t", b"", 1, False, False, None, None, 4)
    with pytest.raises(ValueError):
        encode_publish("t", b"", 3, False, False, 1, None, 4)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("packet_type", [p.PUBACK, p.PUBREC, p.PUBREL, p.PUBCOMP])
def test_encode_ack_matches_generic_encoding(level: int, packet_type: int) -> None:
    """3.4-3.7 (issue 16, row 3: the broker's acknowledgements are encoded without a packet):
    the same bytes as encoding the packet, reason code only at level 5 and only when not 0,
    and a packet identifier of more than two bytes refused, never let into the fixed header."""
    cls = {p.PUBACK: p.Puback, p.PUBREC: p.Pubrec, p.PUBREL: p.Pubrel, p.PUBCOMP: p.Pubcomp}[packet_type]
    for packet_id, code in ((1, 0), (0x1234, 0), (0xFFFF, 0x87)):
        assert encode_ack(packet_type, packet_id, code, level) == encode(cls(packet_id, code), level)
    for wrong in (0x10000, -1):
        with pytest.raises(ValueError):
            encode_ack(packet_type, wrong, 0, level)


def test_dup_is_cleared_at_qos_0() -> None:
    """3.1.1 §3.3.1.1 [MQTT-3.3.1-2]: DUP must be 0 for QoS 0."""
    assert encode_publish("t", b"", 0, False, True, None, None, 4)[0] == 0x30


def test_patch_publish_rewrites_packet_id_and_dup() -> None:
    """Design guide "encode once, write many": only the packet id differs between sessions.
    Spec: mqtt.md item 15 (DUP, seed 000 l.822) and item 28 (packet id 1-65535, l.1070-1074)."""
    data = encode_publish("a/b", b"m" * 200, 2, False, False, 1, {"content_type": "x"}, 5)
    patched = patch_publish(data, 0xBEEF, dup=True)
    decoded = decode(patched[0], split(patched)[1], 5)
    assert (decoded.packet_id, decoded.dup, decoded.qos) == (0xBEEF, True, 2)
    assert decoded.payload == b"m" * 200
    assert patch_publish(patched, 0xBEEF, dup=False) == patch_publish(data, 0xBEEF)
    with pytest.raises(ValueError):
        patch_publish(encode_publish("a", b"", 0, False, False, None, None, 4), 5)
