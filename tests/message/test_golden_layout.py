"""Golden layouts (issue 3: "the layout follows IBM's published structures ... a message built
by IBM MQ must decode, and ours must decode in IBM MQ").

The tables below are typed from IBM's ``cmqc.h`` (MQMD2, MQRFH2, MQRFH, MQDLH: field, byte
offset, length), independently of the product's own layout tables in ``relaymq.message`` and of
``golden.py``. Every field is checked both ways: a value the product encodes lands at the
table's offset, and bytes placed at the table's offset decode into that field.
"""

from __future__ import annotations

import struct

import pytest

from relaymq.message import MQDLH, MQMD, MQRFH, MQRFH2, decode_message, encode_message, encode_mqmd
from relaymq.message.headers import MQMessage
from relaymq.message.mqdlh import decode_dlh
from relaymq.message.mqmd import decode_mqmd
from relaymq.message.mqrfh import decode_rfh
from relaymq.message.mqrfh2 import decode_rfh2

L, C, B = "MQLONG", "MQCHAR", "MQBYTE"

#: cmqc.h, struct tagMQMD (version 2): (field, offset, length, type)
MQMD_V2 = [
    ("StrucId", 0, 4, C), ("Version", 4, 4, L), ("Report", 8, 4, L), ("MsgType", 12, 4, L),
    ("Expiry", 16, 4, L), ("Feedback", 20, 4, L), ("Encoding", 24, 4, L), ("CodedCharSetId", 28, 4, L),
    ("Format", 32, 8, C), ("Priority", 40, 4, L), ("Persistence", 44, 4, L), ("MsgId", 48, 24, B),
    ("CorrelId", 72, 24, B), ("BackoutCount", 96, 4, L), ("ReplyToQ", 100, 48, C),
    ("ReplyToQMgr", 148, 48, C), ("UserIdentifier", 196, 12, C), ("AccountingToken", 208, 32, B),
    ("ApplIdentityData", 240, 32, C), ("PutApplType", 272, 4, L), ("PutApplName", 276, 28, C),
    ("PutDate", 304, 8, C), ("PutTime", 312, 8, C), ("ApplOriginData", 320, 4, C),
    # MQMD_VERSION_2 adds (MQMD_LENGTH_1 = 324, MQMD_LENGTH_2 = 364):
    ("GroupId", 324, 24, B), ("MsgSeqNumber", 348, 4, L), ("Offset", 352, 4, L),
    ("MsgFlags", 356, 4, L), ("OriginalLength", 360, 4, L),
]
MQMD_LENGTH_1, MQMD_LENGTH_2 = 324, 364

#: cmqc.h, struct tagMQRFH2 (fixed part, MQRFH_STRUC_LENGTH_FIXED_2 = 36)
MQRFH2_FIXED = [
    ("StrucId", 0, 4, C), ("Version", 4, 4, L), ("StrucLength", 8, 4, L), ("Encoding", 12, 4, L),
    ("CodedCharSetId", 16, 4, L), ("Format", 20, 8, C), ("Flags", 28, 4, L), ("NameValueCCSID", 32, 4, L),
]
#: cmqc.h, struct tagMQRFH (MQRFH_STRUC_LENGTH_FIXED = 32)
MQRFH_FIXED = MQRFH2_FIXED[:7]
#: cmqc.h, struct tagMQDLH (MQDLH_LENGTH_1 = 172)
MQDLH_V1 = [
    ("StrucId", 0, 4, C), ("Version", 4, 4, L), ("Reason", 8, 4, L), ("DestQName", 12, 48, C),
    ("DestQMgrName", 60, 48, C), ("Encoding", 108, 4, L), ("CodedCharSetId", 112, 4, L),
    ("Format", 116, 8, C), ("PutApplType", 124, 4, L), ("PutApplName", 128, 28, C),
    ("PutDate", 156, 8, C), ("PutTime", 164, 8, C),
]


def test_tables_are_contiguous() -> None:
    """The typed tables themselves: each field starts where the previous one ends, and the
    totals are IBM's structure lengths."""
    for table, total in ((MQMD_V2, MQMD_LENGTH_2), (MQRFH2_FIXED, 36), (MQRFH_FIXED, 32), (MQDLH_V1, 172)):
        pos = 0
        for name, offset, length, _ in table:
            assert offset == pos, name
            pos += length
        assert pos == total


def _sample(name: str, length: int, kind: str, index: int) -> object:
    """A value for ``name`` that no other field has (so a field at the wrong offset shows)."""
    if kind == L:
        return 1000 + index
    if kind == B:
        return bytes((index + k) % 256 for k in range(length))
    return f"{name[:length - 2]}{index % 10}"[:length]


def _md_values(version: int) -> dict[str, object]:
    values = {}
    for i, (name, _, length, kind) in enumerate(MQMD_V2):
        if name in ("StrucId", "Version") or (version == 1 and name == "GroupId"):
            continue
        if version == 1 and name in ("MsgSeqNumber", "Offset", "MsgFlags", "OriginalLength"):
            continue
        values[name] = _sample(name, length, kind, i)
    values["Format"] = "MQSTR"
    return values


def _expected(value: object, length: int, kind: str, order: str) -> bytes:
    if kind == L:
        return struct.pack(order + "i", value)
    if kind == B:
        return bytes(value).ljust(length, b"\x00")  # type: ignore[arg-type]
    return str(value).encode("latin-1").ljust(length, b" ")


@pytest.mark.parametrize(("order", "encoding"), [("<", 546), (">", 273)])
@pytest.mark.parametrize("version", [1, 2])
def test_every_mqmd_field_is_at_its_cmqc_offset(order: str, encoding: int, version: int) -> None:
    """Item 2 (cmqc.h MQMD): each field the product writes is at IBM's offset with IBM's
    length, version 1 is 324 bytes and version 2 364, in both integer encodings."""
    values = _md_values(version)
    raw = encode_mqmd(MQMD(Version=version, **values), encoding)  # type: ignore[arg-type]
    assert len(raw) == (MQMD_LENGTH_1 if version == 1 else MQMD_LENGTH_2)
    for name, offset, length, kind in MQMD_V2:
        if offset >= len(raw):
            continue
        if name == "StrucId":
            assert raw[0:4] == b"MD  "
        elif name == "Version":
            assert raw[4:8] == struct.pack(order + "i", version)
        else:
            assert raw[offset : offset + length] == _expected(values[name], length, kind, order), name


@pytest.mark.parametrize(("order", "encoding"), [("<", 546), (">", 273)])
def test_every_mqmd_field_is_read_from_its_cmqc_offset(order: str, encoding: int) -> None:
    """The other way: bytes placed at the table's offsets (as IBM MQ writes them) decode into
    the named fields."""
    raw = bytearray(MQMD_LENGTH_2)
    values = _md_values(2)
    raw[0:4] = b"MD  "
    raw[4:8] = struct.pack(order + "i", 2)
    for name, offset, length, kind in MQMD_V2[2:]:
        raw[offset : offset + length] = _expected(values[name], length, kind, order)
    md, end = decode_mqmd(bytes(raw))
    assert end == MQMD_LENGTH_2
    for name, value in values.items():
        assert getattr(md, name) == value, name


@pytest.mark.parametrize(("table", "build", "decode"), [
    (MQRFH2_FIXED, lambda: MQRFH2(Encoding=1002, CodedCharSetId=1003, Format="MQSTR", Flags=1005, NameValueCCSID=1208), decode_rfh2),
    (MQRFH_FIXED, lambda: MQRFH(Encoding=1002, CodedCharSetId=1003, Format="MQSTR", Flags=1005), decode_rfh),
    (MQDLH_V1, lambda: MQDLH(Reason=1001, DestQName="DEST.Q", DestQMgrName="DEST.QM", Encoding=1002, CodedCharSetId=1003, Format="MQSTR", PutApplType=1006, PutApplName="app", PutDate="20240102", PutTime="01020304"), decode_dlh),
])
def test_rfh2_rfh_dlh_fields_are_at_their_cmqc_offsets(table: list[tuple[str, int, int, str]], build, decode) -> None:  # type: ignore[no-untyped-def]
    """cmqc.h MQRFH2 (36-byte fixed part), MQRFH (32) and MQDLH (172): each field at IBM's
    offset, with an empty MQRFH/MQRFH2 StrucLength equal to the fixed length."""
    header = build()
    msg = MQMessage(md=MQMD(CodedCharSetId=819), headers=[header], body=b"")
    raw = encode_message(msg)[MQMD_LENGTH_2:]
    fixed = table[-1][1] + table[-1][2]
    assert len(raw) == fixed
    for name, offset, length, kind in table:
        field = raw[offset : offset + length]
        if name == "StrucId":
            assert field == (b"DLH " if header.FORMAT_NAME == "MQDEAD" else b"RFH ")
        elif name == "Version":
            assert field == struct.pack("<i", 2 if isinstance(header, MQRFH2) else 1)
        elif name == "StrucLength":
            assert field == struct.pack("<i", fixed)
        else:
            assert field == _expected(getattr(header, name), length, kind, "<"), name
    decoded, end = decode(raw, 0, 546, 819)
    assert end == fixed and decoded == header
    assert decode_message(encode_message(msg)).headers == [header]
