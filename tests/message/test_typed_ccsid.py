"""Typed values (formats-and-jms.md item 11, seed 000 l.2437-2457, digest decisions on dt
names) and CCSID conversion (issue 3: 1208, 1200, 819, 850, 437, 37, 500, 1047)."""

from __future__ import annotations

import pytest

from relaymq.message import CCSIDError, DataTypeError
from relaymq.message.ccsid import decode_text, encode_text
from relaymq.message.typed import canonical_dt, format_value, infer_dt, parse_value


@pytest.mark.parametrize(
    ("dt", "text", "value"),
    [
        (None, "a<b", "a<b"), ("boolean", "1", True), ("boolean", "0", False), ("bin.hex", "0aFF", b"\x0a\xff"),
        ("i1", "-128", -128), ("i1", "127", 127), ("i2", "-32768", -32768), ("i4", "2147483647", 2147483647),
        ("i8", "9223372036854775807", 2**63 - 1), ("int", "-9223372036854775808", -(2**63)),
        ("r8", "1.7976931348623E+308", 1.7976931348623e308), ("r8", "-21.4E4", -214000.0), ("r4", "3.4E38", pytest.approx(3.4e38, rel=1e-6)),
        ("char", "A", "A"), ("I4", "5", 5), ("R8", "2.5", 2.5), ("BOOLEAN", "1", True),
    ],
)
def test_valid_values(dt: str | None, text: str, value: object) -> None:
    """Each dt of item 11 with its range limits; names are case-insensitive."""
    assert parse_value(text, dt) == value


@pytest.mark.parametrize(
    ("dt", "text"),
    [
        ("i1", "128"), ("i2", "32768"), ("i4", "2147483648"), ("i8", "9223372036854775808"), ("int", "1.5"),
        ("i4", "1e3"), ("r4", "3.5E38"), ("r4", "1E-38"), ("r8", "1E309"), ("r8", "abc"), ("boolean", "yes"),
        ("bin.hex", "ABC"), ("bin.hex", "zz"), ("char", "AB"), ("char", ""), ("float", "1"),
    ],
)
def test_invalid_values_are_typed_errors(dt: str, text: str) -> None:
    """Bad input: an invalid dt value gives DataTypeError naming the field."""
    with pytest.raises(DataTypeError) as info:
        parse_value(text, dt, "usr.x", 12)
    assert (info.value.field, info.value.offset) == ("usr.x", 12)


@pytest.mark.parametrize("value", [True, 5, 2**40, 1.25, "text", b"\x00\x01"])
def test_inferred_type_round_trips(value: object) -> None:
    """A Python value gets the type its JMS setter would give, and formats back to itself."""
    dt = infer_dt(value)
    assert parse_value(format_value(value, dt), dt) == value


def test_r4_keeps_single_precision_text_short() -> None:
    """r4 values print the shortest text that reads back as the same float."""
    assert format_value(2.24, "r4") == "2.24"
    assert canonical_dt("Bin.Hex") == "bin.hex"


@pytest.mark.parametrize(
    ("ccsid", "encoding", "text", "raw"),
    [
        (1208, 546, "héllo", "héllo".encode()),
        (1200, 546, "hé", "hé".encode("utf-16-le")),
        (1200, 273, "hé", "hé".encode("utf-16-be")),
        (819, 546, "héllo", "héllo".encode("latin-1")),
        (850, 546, "héllo", "héllo".encode("cp850")),
        (437, 546, "héllo", "héllo".encode("cp437")),
        (37, 273, "MD [x]", "MD [x]".encode("cp037")),
        (500, 273, "MD [x]", "MD [x]".encode("cp500")),
        (1047, 273, "[]^", b"\xad\xbd\x5f"),  # IBM-1047 positions of [ ] ^
    ],
)
def test_ccsids(ccsid: int, encoding: int, text: str, raw: bytes) -> None:
    """Issue 3: CCSIDs 1208, 1200 (byte order from Encoding), 819, 850, 437, 37, 500, 1047."""
    assert encode_text(text, ccsid, encoding) == raw
    assert decode_text(raw, ccsid, encoding) == text


def test_unknown_ccsid_and_bad_bytes() -> None:
    """Bad input: an unknown CCSID or invalid bytes is a CCSIDError with field and offset."""
    with pytest.raises(CCSIDError) as info:
        decode_text(b"x", 4242, 546, "MQMD.CodedCharSetId", 28)
    assert (info.value.field, info.value.offset) == ("MQMD.CodedCharSetId", 28)
    with pytest.raises(CCSIDError) as info:
        decode_text(b"ab\xff", 1208, 546, "body", 100)
    assert info.value.offset == 102
    with pytest.raises(CCSIDError):
        encode_text("€", 819, 546)
