"""The primitive wire types: Remaining Length / Variable Byte Integer, integers, strings."""

from __future__ import annotations

import pytest

from relaymq.mqtt.codec import decode_remaining_length, encode_remaining_length
from relaymq.mqtt.errors import MalformedPacket
from relaymq.mqtt.wire import (
    decode_varint, encode_string, read_binary, read_string, read_uint16, read_uint32,
)

# Seed 000 l.859-864 (table of boundaries) and l.855 (maximum), mqtt.md item 16.
BOUNDARIES = [
    (0, "00"),
    (64, "40"),
    (127, "7F"),
    (128, "80 01"),
    (16383, "FF 7F"),
    (16384, "80 80 01"),
    (2097151, "FF FF 7F"),
    (2097152, "80 80 80 01"),
    (268435455, "FF FF FF 7F"),
]


@pytest.mark.parametrize(("value", "wire"), BOUNDARIES)
def test_remaining_length_boundaries_encode(value: int, wire: str) -> None:
    """mqtt.md item 16; seed 000 l.853-864: each boundary value has the seed's encoding."""
    assert encode_remaining_length(value) == bytes.fromhex(wire)


@pytest.mark.parametrize(("value", "wire"), BOUNDARIES)
def test_remaining_length_boundaries_decode(value: int, wire: str) -> None:
    """mqtt.md item 16; seed 000 l.880-893: the decoding algorithm inverts the table, and the
    offset after the field is returned."""
    data = b"\x30" + bytes.fromhex(wire) + b"rest"
    assert decode_remaining_length(data, 1) == (value, 1 + len(bytes.fromhex(wire)))


def test_321_follows_the_algorithm_not_the_worked_example() -> None:
    """mqtt.md decision "321 encodes as C1 02"; seed 000 l.853 gives 130, 65 in its example."""
    assert encode_remaining_length(321) == b"\xc1\x02"
    assert decode_remaining_length(b"\xc1\x02", 0) == (321, 2)


def test_fifth_length_byte_is_malformed() -> None:
    """mqtt.md item 16 ("a fifth length byte is a protocol error"); seed 000 l.855: at most
    four bytes. Raised as soon as the fourth byte still announces more."""
    with pytest.raises(MalformedPacket):
        decode_remaining_length(b"\xff\xff\xff\xff", 0)
    with pytest.raises(MalformedPacket):
        decode_remaining_length(b"\xff\xff\xff\xff\x7f", 0)


@pytest.mark.parametrize("partial", ["", "80", "FF FF", "80 80 80"])
def test_incomplete_remaining_length_asks_for_more(partial: str) -> None:
    """seed 000 l.880-893: the length is complete only at a byte without the continuation
    bit; before that the reader must wait (None), not fail."""
    assert decode_remaining_length(bytes.fromhex(partial), 0) is None


@pytest.mark.parametrize("value", [-1, 268435456])
def test_out_of_range_remaining_length_cannot_be_encoded(value: int) -> None:
    """seed 000 l.855: 268,435,455 is the largest representable length."""
    with pytest.raises(ValueError):
        encode_remaining_length(value)


def test_varint_in_a_region_is_malformed_when_truncated() -> None:
    """5.0 §1.5.5: a Variable Byte Integer cut off by the end of its region is malformed
    (property values and lengths cannot wait for more bytes)."""
    with pytest.raises(MalformedPacket):
        decode_varint(b"\x80\x80", 0, 2)
    with pytest.raises(MalformedPacket):
        decode_varint(b"\xff\xff\xff\xff\x01", 0, 5)
    assert decode_varint(b"\x00\xc1\x02", 1, 3) == (321, 3)


def test_integers_are_big_endian() -> None:
    """mqtt.md item 13; seed 000 l.781: MSB first."""
    assert read_uint16(b"\x00\x0a", 0, 2) == (10, 2)
    assert read_uint32(b"\x01\x02\x03\x04", 0, 4) == (0x01020304, 4)
    with pytest.raises(MalformedPacket):
        read_uint16(b"\x00", 0, 1)
    with pytest.raises(MalformedPacket):
        read_uint32(b"\x00\x00\x00\x00", 0, 3)


def test_string_example_otwp() -> None:
    """seed 000 l.1940-1958: "OTWP" is 00 04 4F 54 57 50."""
    assert encode_string("OTWP") == bytes.fromhex("00 04 4F 54 57 50")
    assert read_string(bytes.fromhex("00 04 4F 54 57 50"), 0, 6) == ("OTWP", 6)


def test_string_length_counts_bytes_not_characters() -> None:
    """seed 000 l.1934: the length is the number of encoded bytes."""
    encoded = encode_string("é/𪛔")
    assert int.from_bytes(encoded[:2], "big") == len("é/𪛔".encode())
    assert read_string(encoded, 0, len(encoded)) == ("é/𪛔", len(encoded))


@pytest.mark.parametrize("raw", [
    "746F700000",  # U+0000
    "746FEDA080",  # a UTF-16 surrogate, U+D800
    "C0AF",  # overlong "/"
    "F4908080",  # above U+10FFFF
    "FF",
])
def test_invalid_utf8_or_nul_is_malformed_at_every_level(raw: str) -> None:
    """mqtt.md item 32: invalid UTF-8 and U+0000 are rejected, v3 included."""
    data = bytes.fromhex(raw)
    buf = len(data).to_bytes(2, "big") + data
    for strict in (True, False):
        with pytest.raises(MalformedPacket):
            read_string(buf, 0, len(buf), strict)


@pytest.mark.parametrize("text", ["to\x01p", "to\x1fp", "to\x7fp", "to\x9fp", "a\ufffe", "\ufdd0",
                                  "x\U0010ffff"])
def test_control_and_noncharacters_rejected_at_levels_4_and_5(text: str) -> None:
    """3.1.1 §1.5.3 / 5.0 §1.5.4 (a receiver MAY treat them as malformed; the conformance
    cases do); the v3 seed allows ASCII 0x01-0x7F (seed 000 l.1938), so only strict
    (level 4/5) reading rejects them."""
    buf = encode_string(text)
    with pytest.raises(MalformedPacket):
        read_string(buf, 0, len(buf), strict=True)
    if text.isascii():
        assert read_string(buf, 0, len(buf), strict=False)[0] == text


def test_supplementary_character_accepted() -> None:
    """3.1.1 §1.5.3.1: U+2A6D4 (encoded F0 AA 9B 94) is a valid character."""
    buf = bytes.fromhex("0005 41F0AA9B94")
    assert read_string(buf, 0, len(buf)) == ("A\U0002a6d4", 7)


def test_truncated_strings_and_binary_are_malformed() -> None:
    """seed 000 l.1917-1930: the two-byte length must be followed by that many bytes."""
    for reader in (read_string, read_binary):
        with pytest.raises(MalformedPacket):
            reader(b"\x00", 0, 1)
        with pytest.raises(MalformedPacket):
            reader(b"\x00\x03ab", 0, 4)
    assert read_binary(b"\x00\x02\x00\xff", 0, 4) == (b"\x00\xff", 4)
