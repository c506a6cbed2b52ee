"""MQMD codec: formats-and-jms.md items 1-2 (layout facts from IBM's cmqc.h): StrucId 'MD  ',
version 1 = 324 bytes, version 2 = 364 bytes, both integer encodings, EBCDIC descriptors."""

from __future__ import annotations

import pytest

from relaymq.message import MQMD, StrucIdError, TruncatedError, decode_mqmd, encode_mqmd
from relaymq.message.constants import MQENC_NATIVE, MQENC_NATIVE_BIG
from relaymq.message.mqmd import around_ids, put_fields, with_ids

from .golden import mqmd_bytes

FIELDS = dict(
    Report=0x100, MsgType=1, Expiry=600, Feedback=0, Encoding=273, CodedCharSetId=1208, Format="MQHRF2",
    Priority=5, Persistence=1, MsgId=bytes(range(24)), CorrelId=b"\xaa" * 24, BackoutCount=3,
    ReplyToQ="REPLY.Q", ReplyToQMgr="QM1", UserIdentifier="alice", AccountingToken=b"\x01" * 32,
    ApplIdentityData="ident", PutApplType=28, PutApplName="relaymq test", PutDate="20240102",
    PutTime="03040506", ApplOriginData="orig",
)
V2 = dict(GroupId=b"\x07" * 24, MsgSeqNumber=9, Offset=100, MsgFlags=0x18, OriginalLength=2000)


@pytest.mark.parametrize(("order", "enc"), [("<", MQENC_NATIVE), (">", MQENC_NATIVE_BIG)])
def test_version2_golden_bytes_both_encodings(order: str, enc: int) -> None:
    """Item 2: MQMD v2 is 364 bytes; integers in either byte order decode and re-encode exactly."""
    raw = mqmd_bytes(order, 2, **FIELDS, **V2)
    assert len(raw) == 364
    md, end = decode_mqmd(raw)
    assert end == 364
    for name, value in {**FIELDS, **V2}.items():
        assert getattr(md, name) == value, name
    assert encode_mqmd(md, enc) == raw


@pytest.mark.parametrize(("order", "enc"), [("<", MQENC_NATIVE), (">", MQENC_NATIVE_BIG)])
def test_version1_golden_bytes(order: str, enc: int) -> None:
    """Item 2: MQMD v1 is 324 bytes, without the group fields."""
    raw = mqmd_bytes(order, 1, **FIELDS)
    assert len(raw) == 324
    md, end = decode_mqmd(raw + b"body")
    assert (end, md.Version, md.Priority, md.ReplyToQ) == (324, 1, 5, "REPLY.Q")
    assert encode_mqmd(md, enc) == raw


@pytest.mark.parametrize("ccsid", [500, 37, 1047])
def test_ebcdic_descriptor(ccsid: int) -> None:
    """Strings in the EBCDIC CCSIDs the issue lists: an MQMD built on z/OS decodes."""
    codec = {500: "cp500", 37: "cp037", 1047: "cp037"}[ccsid]  # names use invariant characters
    raw = mqmd_bytes(">", 2, text=codec, **FIELDS, **V2)
    md, _ = decode_mqmd(raw, ccsid=ccsid)
    assert md.ReplyToQ == "REPLY.Q" and md.Format == "MQHRF2" and md.PutApplName == "relaymq test"
    assert encode_mqmd(md, MQENC_NATIVE_BIG, ccsid) == raw
    detected, _ = decode_mqmd(raw)  # EBCDIC StrucId is recognised without a hint
    assert detected == md


def test_defaults_are_ibm_initial_values() -> None:
    """MQMD_DEFAULT: datagram, unlimited expiry, priority/persistence as queue default."""
    md = MQMD()
    assert (md.MsgType, md.Expiry, md.Priority, md.Persistence, md.MsgSeqNumber, md.OriginalLength) == (8, -1, -1, 2, 1, -1)
    assert encode_mqmd(md) == mqmd_bytes("<", 2)


def test_wrong_strucid_names_field_and_offset() -> None:
    """Bad input: a wrong StrucId is a typed error naming the field and byte offset."""
    raw = b"XD  " + mqmd_bytes()[4:]
    with pytest.raises(StrucIdError) as info:
        decode_mqmd(raw)
    assert (info.value.field, info.value.offset) == ("MQMD.StrucId", 0)


def test_bad_version_is_reported_at_offset_4() -> None:
    """Bad input: a version other than 1 or 2."""
    raw = mqmd_bytes()[:4] + (7).to_bytes(4, "little") + mqmd_bytes()[8:]
    with pytest.raises(StrucIdError) as info:
        decode_mqmd(raw)
    assert (info.value.field, info.value.offset) == ("MQMD.Version", 4)


@pytest.mark.parametrize(("cut", "field", "offset"), [(2, "MQMD.StrucId", 0), (6, "MQMD.Version", 4), (40, "MQMD.Priority", 40), (350, "MQMD.MsgSeqNumber", 348)])
def test_truncated_descriptor(cut: int, field: str, offset: int) -> None:
    """Bad input: truncated headers name the first missing field and its offset."""
    with pytest.raises(TruncatedError) as info:
        decode_mqmd(mqmd_bytes()[:cut])
    assert (info.value.field, info.value.offset) == (field, offset)


def test_oversized_values_are_refused_on_encode() -> None:
    """A value that does not fit its field is an error, never silently cut."""
    with pytest.raises(ValueError):
        encode_mqmd(MQMD(ReplyToQ="Q" * 49))
    with pytest.raises(ValueError):
        encode_mqmd(MQMD(MsgId=b"x" * 25))
    with pytest.raises(ValueError):
        encode_mqmd(MQMD(Priority=2**31))


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize(("order", "enc"), [("<", MQENC_NATIVE), (">", MQENC_NATIVE_BIG)])
def test_put_fields_are_read_where_they_are(order: str, enc: int, version: int) -> None:
    """What a queue manager reads of a stored message it puts (Expiry, Priority, MsgId,
    CorrelId) is at the same offsets in versions 1 and 2, in the MQMD's own byte order."""
    extra = V2 if version == 2 else {}
    raw = mqmd_bytes(order, version, **FIELDS, **extra) + b"body"
    assert put_fields(raw) == (600, 5, bytes(range(24)), b"\xaa" * 24)
    assert put_fields(raw[:323]) is None  # shorter than any MQMD
    assert put_fields(b"XX  " + raw[4:]) is None  # not an MQMD: decoding it says why


def test_put_fields_leave_an_ebcdic_descriptor_to_the_decoder() -> None:
    raw = encode_mqmd(MQMD(Priority=4), MQENC_NATIVE, 500)
    assert decode_mqmd(raw)[0].Priority == 4 and put_fields(raw) is None


def test_with_ids_is_the_encoding_of_the_mqmd_with_those_ids() -> None:
    md = MQMD(**FIELDS, **V2)
    data = encode_mqmd(md, MQENC_NATIVE) + b"rest"
    for msg_id, correl_id in ((b"\x01" * 24, b"\x02" * 24), (b"short", b"")):
        other = MQMD(**{**FIELDS, **V2, "MsgId": msg_id, "CorrelId": correl_id})
        assert with_ids(data, msg_id, correl_id) == encode_mqmd(other, MQENC_NATIVE) + b"rest"


def test_around_ids_cut_a_message_where_with_ids_puts_the_ids() -> None:
    """A publication's copies are cut once and joined with each copy's ids (issue 14)."""
    data = encode_mqmd(MQMD(**FIELDS, **V2), MQENC_NATIVE) + b"rest"
    head, tail = around_ids(data)
    msg_id, correl_id = b"\x01" * 24, b"\x02" * 24
    assert head + msg_id + correl_id + tail == with_ids(data, msg_id, correl_id)
    assert len(head) + 48 + len(tail) == len(data) and tail.endswith(b"rest")
