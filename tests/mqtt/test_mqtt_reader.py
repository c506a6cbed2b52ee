"""PacketReader: cutting a byte stream into packets (seed 000 l.764-898, the fixed header)."""

from __future__ import annotations

import pytest

from relaymq.mqtt import packets as p
from relaymq.mqtt.codec import encode, encode_publish
from relaymq.mqtt.errors import MalformedPacket, PacketTooLarge, ProtocolError
from relaymq.mqtt.packets import Packet
from relaymq.mqtt.reader import MAX_PACKET_SIZE, PacketReader


def drain(reader: PacketReader) -> list[Packet]:
    out = []
    while (packet := reader.next_packet()) is not None:
        out.append(packet)
    return out


def session(level: int) -> tuple[bytes, list[Packet]]:
    """A client's side of a short session: CONNECT, then traffic of every client packet type."""
    name = "MQIsdp" if level == 3 else "MQTT"
    packets: list[Packet] = [
        p.Connect(name, level, True, 30, "reader-test"),
        p.Publish("a/b", b"hello", 0),
        p.Publish("a/c", bytes(range(256)) * 70, 1, packet_id=1),  # 3-byte Remaining Length
        p.Publish("a/d", b"", 2, True, False, 2),
        p.Puback(9), p.Pubrec(10), p.Pubrel(11), p.Pubcomp(12),
        p.Subscribe(3, [p.Subscription("a/#", 1)]),
        p.Unsubscribe(4, ["a/#"]),
        p.Pingreq(),
        p.Disconnect(),
    ]
    return b"".join(encode(packet, level) for packet in packets), packets


@pytest.mark.parametrize("level", [3, 4, 5])
def test_several_packets_in_one_feed(level: int) -> None:
    """Design guide "parse every complete packet in a buffer per call": one feed holding a
    whole session yields every packet in order, then None.
    Spec: mqtt.md item 16 (Remaining Length framing, seed 000 l.851-878)."""
    stream, packets = session(level)
    reader = PacketReader()
    reader.feed(stream)
    assert drain(reader) == packets
    assert reader.next_packet() is None
    assert reader.buffered == 0


@pytest.mark.parametrize("level", [3, 4, 5])
def test_byte_at_a_time(level: int) -> None:
    """seed 000 l.851-898: a packet is complete only when Remaining Length bytes follow the
    length field; feeding one byte at a time yields the same packets."""
    stream, packets = session(level)
    reader = PacketReader()
    got: list[Packet] = []
    for i in range(len(stream)):
        reader.feed(stream[i:i + 1])
        got.extend(drain(reader))
    assert got == packets


def test_uneven_chunks() -> None:
    """Packets split at arbitrary points across feeds, several per feed.
    Spec: mqtt.md item 16 (Remaining Length framing, seed 000 l.851-878); MQTT runs over a TCP
    byte stream (item 1, l.669)."""
    stream, packets = session(5)
    reader = PacketReader()
    got: list[Packet] = []
    for start in range(0, len(stream), 777):
        reader.feed(stream[start:start + 777])
        got.extend(drain(reader))
    assert got == packets


def test_protocol_level_follows_connect() -> None:
    """Brief: protocol_level is 0 until CONNECT; the CONNECT's level then governs decoding
    (a level-5 PUBLISH has a property length byte).
    Spec: mqtt.md item 18 (protocol name and version, seed 000 l.938-949) and README decision 1
    (the CONNECT selects the rules)."""
    reader = PacketReader()
    assert reader.protocol_level == 0
    reader.feed(encode(p.Connect("MQTT", 5, True, 60, "c"), 5))
    reader.feed(encode(p.Publish("t", b"x", 0, properties={"content_type": "c"}), 5))
    assert isinstance(reader.next_packet(), p.Connect)
    assert reader.protocol_level == 5
    assert reader.next_packet() == p.Publish("t", b"x", 0, properties={"content_type": "c"})


def test_level_4_rules_before_connect() -> None:
    """Brief: packets before CONNECT decode by the level-4 rules (the broker rejects them).
    Spec: README decision 1; MQTT 3.1.1 3.1 (the first packet must be CONNECT)."""
    reader = PacketReader()
    reader.feed(bytes.fromhex("30 04 00 01 74 78"))
    assert reader.next_packet() == p.Publish("t", b"x")
    assert reader.protocol_level == 0


def test_too_large_packet_rejected_from_its_fixed_header() -> None:
    """5.0 §3.1.2.11.4 (Maximum Packet Size is the total size: fixed header + body): the
    reader rejects as soon as the fixed header is readable, before the body arrives."""
    reader = PacketReader(max_packet_size=100)
    reader.feed(bytes.fromhex("30 E8 07"))  # announces 1000 bytes; none of them sent
    with pytest.raises(PacketTooLarge) as info:
        reader.next_packet()
    assert info.value.reason_code == 0x95


def test_packet_size_limit_counts_the_fixed_header() -> None:
    """5.0 §3.1.2.11.4: a packet of exactly the limit passes, one byte more fails."""
    exact = encode_publish("t", b"x" * 95, 0, False, False, None, None, 4)
    assert len(exact) == 100
    reader = PacketReader(max_packet_size=100)
    reader.feed(exact)
    assert reader.next_packet() == p.Publish("t", b"x" * 95)
    reader = PacketReader(max_packet_size=99)
    reader.feed(exact[:2])
    with pytest.raises(PacketTooLarge):
        reader.next_packet()


def test_default_limit_is_the_protocol_maximum() -> None:
    """seed 000 l.855: 268,435,455 + up to 5 header bytes is the largest possible packet."""
    assert MAX_PACKET_SIZE == 268435460
    assert PacketReader().max_packet_size == MAX_PACKET_SIZE


def test_fifth_length_byte_fails_without_waiting() -> None:
    """mqtt.md item 16: four length bytes all announcing more is malformed at once."""
    reader = PacketReader()
    reader.feed(bytes.fromhex("30 FF FF FF"))
    assert reader.next_packet() is None
    reader.feed(b"\xff")
    with pytest.raises(MalformedPacket):
        reader.next_packet()


def test_errors_propagate_and_name_the_packet() -> None:
    """Brief: next_packet raises the decoder's MQTTError subclasses; last_first_byte tells
    the broker which packet failed (e.g. to close quietly on a bad DISCONNECT).
    Spec: issue 2 Protocol ("a malformed packet closes that connection only, with the reason
    code"); MQTT 5 4.13."""
    reader = PacketReader()
    reader.protocol_level = 5
    reader.feed(bytes.fromhex("C0 00 E0 01 8B"))
    assert reader.next_packet() == p.Pingreq()
    with pytest.raises(ProtocolError):
        reader.next_packet()
    assert reader.last_first_byte == 0xE0


def test_client_side_reader() -> None:
    """A reader for the client side of a connection accepts server packets and rejects a
    CONNECT (5.0 §2.1.2 direction)."""
    reader = PacketReader(from_client=False)
    reader.protocol_level = 5
    reader.feed(encode(p.Connack(True, 0, {"receive_maximum": 5}), 5) + encode(p.Pingresp(), 5))
    assert drain(reader) == [p.Connack(True, 0, {"receive_maximum": 5}), p.Pingresp()]
    reader.feed(encode(p.Connect(), 4))
    with pytest.raises(ProtocolError):
        reader.next_packet()


def test_many_small_packets_are_all_returned() -> None:
    """No packet is lost or duplicated when thousands arrive in one buffer (the reader moves
    an offset rather than copying the rest after each packet).
    Spec: mqtt.md item 16 (framing, seed 000 l.851-878)."""
    one = encode_publish("s/1", b"v", 1, False, False, 1, None, 4)
    reader = PacketReader()
    reader.protocol_level = 4
    reader.feed(one * 5000 + one[:3])
    assert len(drain(reader)) == 5000
    assert reader.buffered == 3
    reader.feed(one[3:])
    assert drain(reader) == [p.Publish("s/1", b"v", 1, packet_id=1)]
    assert reader.buffered == 0
