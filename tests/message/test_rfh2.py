"""MQRFH2 codec and the header chain: formats-and-jms.md items 1-4; seed 003 l.4762-5281;
layout facts from cmqc.h (StrucId 'RFH ', fixed part 36 bytes)."""

from __future__ import annotations

import pytest

from relaymq.message import (
    MQMD,
    MQRFH2,
    CCSIDError,
    DataTypeError,
    FolderError,
    LengthError,
    MQMessage,
    StrucIdError,
    TruncatedError,
    decode_message,
    encode_message,
)
from relaymq.message.folders import parse_folder
from relaymq.message.mqrfh2 import decode_rfh2, encode_rfh2

from .golden import mqmd_bytes, rfh2_bytes

USR = b"<usr><colour>blue</colour><n dt='i4'>3</n></usr>"  # 48 bytes: no padding needed
MCD = b"<mcd><Msd>xmlnsc</Msd></mcd>"  # 28 bytes


def _ibm_message(order: str = "<", enc: int = 546) -> bytes:
    return mqmd_bytes(order, 2, Encoding=enc, CodedCharSetId=1208, Format="MQHRF2") + rfh2_bytes(
        [MCD, USR], order=order, encoding=enc, ccsid=1208, fmt="MQSTR"
    ) + b"<doc>hi</doc>"


@pytest.mark.parametrize(("order", "enc"), [("<", 546), (">", 273)])
def test_message_built_like_ibm_mq_decodes_and_reencodes(order: str, enc: int) -> None:
    """Items 1-2: MQMD Format names the RFH2; the RFH2's integers follow the MQMD's Encoding."""
    raw = _ibm_message(order, enc)
    msg = decode_message(raw)
    rfh2 = msg.headers[0]
    assert isinstance(rfh2, MQRFH2)
    assert [f.name for f in rfh2.folders] == ["mcd", "usr"]
    assert rfh2.get("usr.colour") == "blue" and rfh2.get("usr.n") == 3
    assert (msg.body, msg.body_format, msg.body_ccsid) == (b"<doc>hi</doc>", "MQSTR", 1208)
    assert encode_message(msg) == raw


def test_fixed_part_is_36_bytes_and_struclength_counts_pairs() -> None:
    """Item 2: StrucLength = 36 + all (NameValueLength, NameValueData) pairs, multiple of 4."""
    rfh2 = MQRFH2(Format="MQSTR", folders=[parse_folder("<usr><a>xyz</a></usr>")])
    raw = encode_rfh2(rfh2, 546, 1208)
    assert raw[:4] == b"RFH "
    assert int.from_bytes(raw[8:12], "little") == len(raw) and len(raw) % 4 == 0
    nv_len = int.from_bytes(raw[36:40], "little")
    assert nv_len == 24 and raw[40:].rstrip(b" ") == b"<usr><a>xyz</a></usr>"  # 21 bytes + 3 blanks


def test_unpadded_folders_from_other_writers_are_read() -> None:
    """seed 003 StrucLength note: a length that is not a multiple of 4 risks conversion
    problems but is not invalid, so it is read (and written back padded)."""
    raw = mqmd_bytes(CodedCharSetId=1208, Format="MQHRF2") + rfh2_bytes([b"<usr><a>1</a></usr>"]) + b"x"
    msg = decode_message(raw)
    assert msg.headers[0].get("usr.a") == "1" and msg.body == b"x"
    assert int.from_bytes(encode_message(msg)[372:376], "little") % 4 == 0


def test_padding_uses_blanks_in_utf16() -> None:
    """Item 2: NameValueCCSID 1200 data is UTF-16 in the header's byte order, blank padded."""
    rfh2 = MQRFH2(NameValueCCSID=1200, folders=[parse_folder("<usr><é>x</é></usr>")])
    for enc, codec in ((546, "utf-16-le"), (273, "utf-16-be")):
        raw = encode_rfh2(rfh2, enc, 1208)
        data = raw[40:]
        assert len(data) % 4 == 0
        assert data.decode(codec).rstrip(" ") == "<usr><é>x</é></usr>"
        back, _ = decode_rfh2(raw, 0, enc, 1208)
        assert back.get("usr.é") == "x"


def test_name_value_ccsid_rules() -> None:
    """Item 2: NameValueCCSID must be 1208, 1200, 13488 or 17584; no surrogates in UCS-2."""
    raw = rfh2_bytes([USR], nv_ccsid=819)
    with pytest.raises(CCSIDError) as info:
        decode_rfh2(raw, 0, 546, 1208)
    assert (info.value.field, info.value.offset) == ("MQRFH2.NameValueCCSID", 32)
    with pytest.raises(CCSIDError):
        encode_rfh2(MQRFH2(NameValueCCSID=13488, folders=[parse_folder("<usr><a>\U0001F600</a></usr>")]), 546, 1208)


@pytest.mark.parametrize("nv_ccsid", [1200, 13488, 17584])
@pytest.mark.parametrize(("order", "encoding", "codec"), [("<", 546, "utf-16-le"), (">", 273, "utf-16-be")])
def test_surrogates_refused_in_ucs2_name_value_data(nv_ccsid: int, order: str, encoding: int, codec: str) -> None:
    """Item 2, seed 003 l.5055: surrogate characters (X'D800'-X'DFFF') are not supported in
    UCS-2 NameValueData - CCSID 1200 too (it accepted a surrogate pair before). Decoding names
    the byte offset of the pair; encoding refuses to write one."""
    text = "<usr><a>x\U0001F600</a></usr>"
    data = text.encode(codec)
    data += " ".encode(codec) * ((-len(data) % 4) // 2)
    raw = rfh2_bytes([data], order=order, encoding=encoding, nv_ccsid=nv_ccsid)
    with pytest.raises(CCSIDError) as info:
        decode_rfh2(raw, 0, encoding, 1208)
    assert info.value.field == "MQRFH2.NameValueData"
    assert info.value.offset == 40 + 2 * text.index("\U0001F600")
    with pytest.raises(CCSIDError):
        encode_rfh2(MQRFH2(NameValueCCSID=nv_ccsid, folders=[parse_folder(text)]), encoding, 1208)
    # UTF-8 NameValueData carries the character
    ok = MQRFH2(NameValueCCSID=1208, folders=[parse_folder(text)])
    assert decode_rfh2(encode_rfh2(ok, encoding, 1208), 0, encoding, 1208)[0].get("usr.a") == "x\U0001F600"


def test_several_rfh2_first_and_last_rule() -> None:
    """Item 3 (seed 003 l.4787-4805): body attributes from the last RFH2, the rest from the first."""
    first = MQRFH2(folders=[parse_folder("<psc><Topic>a/b</Topic></psc>"), parse_folder("<mcd><Msd>xml</Msd></mcd>")])
    last = MQRFH2(Format="MQSTR", CodedCharSetId=819, folders=[parse_folder("<psc><Topic>x/y</Topic></psc>"), parse_folder("<mcd><Msd>json</Msd></mcd>")])
    msg = decode_message(encode_message(MQMessage(md=MQMD(CodedCharSetId=1208), headers=[first, last], body=b"{}")))
    assert msg.md.Format == "MQHRF2" and msg.headers[0].Format == "MQHRF2"
    assert msg.first_rfh2().get("psc.Topic") == "a/b"
    assert msg.last_rfh2().get("mcd.Msd") == "json"
    assert (msg.body_format, msg.body_ccsid) == ("MQSTR", 819)


def test_inherit_and_qmgr_ccsid() -> None:
    """RFH2 CodedCharSetId -2 (inherit) keeps the previous CCSID; 0 means the queue manager's."""
    msg = MQMessage(md=MQMD(CodedCharSetId=850), headers=[MQRFH2(CodedCharSetId=-2, Format="MQSTR")], body=b"x")
    assert msg.body_ccsid == 850
    assert MQMessage(md=MQMD(CodedCharSetId=0)).body_ccsid == 1208


@pytest.mark.parametrize(
    ("mutate", "error", "field", "offset"),
    [
        (lambda b: b[:364] + b"RFX " + b[368:], StrucIdError, "MQRFH2.StrucId", 364),
        (lambda b: b[:368] + (1).to_bytes(4, "little") + b[372:], StrucIdError, "MQRFH2.Version", 368),
        (lambda b: b[:372] + (10_000).to_bytes(4, "little") + b[376:], LengthError, "MQRFH2.StrucLength", 372),
        (lambda b: b[:372] + (30).to_bytes(4, "little") + b[376:], LengthError, "MQRFH2.StrucLength", 372),
        (lambda b: b[:372] + (38).to_bytes(4, "little") + b[376:], TruncatedError, "MQRFH2.NameValueLength", 400),
        (lambda b: b[:400] + (9_999).to_bytes(4, "little") + b[404:], LengthError, "MQRFH2.NameValueLength", 400),
        (lambda b: b[:380], TruncatedError, "MQRFH2.CodedCharSetId", 380),
        (lambda b: b[:28] + (4242).to_bytes(4, "little") + b[32:], CCSIDError, "CodedCharSetId", 28),
    ],
)
def test_bad_headers_name_field_and_offset(mutate, error, field: str, offset: int) -> None:  # type: ignore[no-untyped-def]
    """Bad input: wrong StrucId, lengths past the end, truncation, unknown CCSID."""
    with pytest.raises(error) as info:
        decode_message(mutate(_ibm_message()))
    assert (info.value.field, info.value.offset) == (field, offset)


@pytest.mark.parametrize(
    ("folder", "error", "fragment"),
    [
        (b"<usr><a>1</a><a>2</a></usr>", FolderError, "only once"),
        (b"<usr><g><x>1</x></g></usr>", FolderError, "simple elements"),
        (b"<usr><p:a>1</p:a></usr>", FolderError, "colon"),
        (b"<usr><a>1</a></usr><jms></jms>", FolderError, "one folder"),
        (b"<usr><a>1</b></usr>", FolderError, "does not match"),
        (b"<usr><a dt='i4'>x</a></usr>", DataTypeError, "not an integer"),
        (b"<usr><a dt='i9'>1</a></usr>", DataTypeError, "unknown dt"),
        (b"<usr><a>&ent;</a></usr>", FolderError, "undefined entity"),
        (b"<!DOCTYPE u><usr/>", FolderError, "declarations"),
        (b"<usr><a>1</a>", FolderError, "ends before"),
        (b"   ", FolderError, "empty"),
    ],
)
def test_malformed_folders(folder: bytes, error: type, fragment: str) -> None:
    """Item 4 folder rules and bad input: a malformed folder / invalid dt is a typed error
    pointing into the NameValueData."""
    padded = folder + b" " * (-len(folder) % 4)
    raw = mqmd_bytes(CodedCharSetId=1208, Format="MQHRF2") + rfh2_bytes([padded])
    with pytest.raises(error) as info:
        decode_message(raw)
    assert fragment in info.value.reason
    assert 404 <= info.value.offset <= len(raw)  # inside the NameValueData


def test_nil_and_typed_values_round_trip() -> None:
    """Item 11: typed folder values keep their dt; xsi:nil is a null value."""
    text = "<usr><b dt='boolean'>1</b><h dt='bin.hex'>0AFF</h><f dt='r4'>2.24</f><c dt='char'>A</c><z xsi:nil='true'></z></usr>"
    folder = parse_folder(text)
    values = {c.name: (c.value, c.dt) for c in folder.children}
    assert values == {"b": (True, "boolean"), "h": (b"\n\xff", "bin.hex"), "f": (pytest.approx(2.24), "r4"), "c": ("A", "char"), "z": (None, None)}
    back, _ = decode_rfh2(encode_rfh2(MQRFH2(folders=[folder]), 546, 1208), 0, 546, 1208)
    assert back.folders[0] == folder


def test_ebcdic_mqmd_with_rfh2() -> None:
    """A z/OS message: EBCDIC MQMD (CCSID 500, big-endian) followed by an RFH2 whose fixed
    text is in the MQMD's CodedCharSetId 500 and whose folders are UTF-8."""
    md = mqmd_bytes(">", 2, text="cp500", Encoding=273, CodedCharSetId=500, Format="MQHRF2")
    rfh = rfh2_bytes([USR], order=">", encoding=273, ccsid=500, fmt="MQSTR")
    rfh = "RFH ".encode("cp500") + rfh[4:20] + "MQSTR   ".encode("cp500") + rfh[28:]
    msg = decode_message(md + rfh + "text".encode("cp500"))
    assert msg.headers[0].get("usr.colour") == "blue"
    assert msg.body.decode("cp500") == "text" and msg.body_ccsid == 500
    assert encode_message(msg) == md + rfh + "text".encode("cp500")


def test_fixed_part_template_gives_the_full_encoding() -> None:
    """seed 003 l.4762-4800 (StrucLength counts the folders): the fixed part is spliced from a
    template of an earlier header with its own StrucLength (issue 14: a publication's copies),
    byte for byte what encoding it in full gives; an integer field that is not an int is still
    refused, though it equals the int of a template."""
    from relaymq.message import FormatError
    from relaymq.message.mqrfh2 import _FIXED

    headers = [MQRFH2(Format="MQSTR", folders=[parse_folder(USR.decode())]), MQRFH2(Format="MQSTR", folders=[parse_folder(MCD.decode())]),
               MQRFH2(Format="MQSTR", Flags=0, folders=[parse_folder(USR.decode()), parse_folder(MCD.decode())])]
    for order_enc, ccsid in ((546, 819), (273, 500), (546, 1208)):
        spliced = [encode_rfh2(h, order_enc, ccsid) for h in headers + headers]
        full = []
        for h in headers + headers:
            _FIXED.clear()
            full.append(encode_rfh2(h, order_enc, ccsid))
        assert spliced == full
    encode_rfh2(MQRFH2(Format="MQSTR", Flags=1, folders=[parse_folder(USR.decode())]), 546, 819)
    with pytest.raises(FormatError):
        encode_rfh2(MQRFH2(Format="MQSTR", Flags=1.0, folders=[parse_folder(USR.decode())]), 546, 819)  # type: ignore[arg-type]
