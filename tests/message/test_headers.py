"""Header chaining by Format beyond MQRFH2: MQRFH v1 (formats-and-jms.md item 5, pubsub.md
item 37), MQDLH and other MQH* headers (item 1: each Format names the next header)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relaymq.message import MQDLH, MQMD, MQRFH, MQRFH2, FolderError, FormatError, MQMessage, RawHeader, decode_message, encode_message
from relaymq.message.folders import parse_folder
from relaymq.message.mqrfh import format_name_values, from_psc, parse_name_values, to_psc

from .golden import mqmd_bytes, rfh1_bytes


def test_rfh_v1_golden_and_psc_mapping() -> None:
    """Item 5 / pubsub.md 37 (seed 003 l.3636-3660): MQRFH name/values map to a psc folder;
    names without a counterpart (MQPSStreamName) are not copied."""
    nv = b'MQPSCommand Publish MQPSPubOpts RetainPub MQPSStreamName SAMPLE.BROKER.RESULTS.STREAM MQPSTopic "Sport/Soccer/State/LatestScore/Team1 Team2"'
    nv += b" " * (-len(nv) % 4)
    raw = mqmd_bytes(CodedCharSetId=819, Format="MQHRF") + rfh1_bytes(nv, ccsid=819) + b"score"
    msg = decode_message(raw)
    rfh = msg.headers[0]
    assert isinstance(rfh, MQRFH) and rfh.get("MQPSTopic") == "Sport/Soccer/State/LatestScore/Team1 Team2"
    psc = to_psc(rfh)
    assert [(c.name, c.value) for c in psc.children] == [
        ("Command", "Publish"), ("PubOpt", "RetainPub"), ("Topic", "Sport/Soccer/State/LatestScore/Team1 Team2"),
    ]
    assert from_psc(psc) == [("MQPSCommand", "Publish"), ("MQPSPubOpts", "RetainPub"), ("MQPSTopic", "Sport/Soccer/State/LatestScore/Team1 Team2")]
    assert encode_message(msg) == raw and msg.body == b"score"


def test_name_value_quoting_round_trip() -> None:
    """MQRFH NameValueString: quoted tokens with doubled quotes."""
    pairs = [("MQPSTopic", 'a "quoted" b'), ("Empty", ""), ("X", "y")]
    assert parse_name_values(format_name_values(pairs)) == pairs
    with pytest.raises(FolderError):
        parse_name_values('MQPSTopic "open')
    with pytest.raises(FolderError):
        parse_name_values("LonelyName")


def test_dead_letter_header_then_rfh2() -> None:
    """A message from a dead-letter queue: MQMD -> MQDLH -> MQRFH2 -> body."""
    dlh = MQDLH(Reason=2053, DestQName="FULL.Q", DestQMgrName="QM1", CodedCharSetId=1208, PutApplName="qmgr")
    rfh2 = MQRFH2(Format="MQSTR", folders=[parse_folder("<usr><a>1</a></usr>")])
    raw = encode_message(MQMessage(md=MQMD(CodedCharSetId=1208), headers=[dlh, rfh2], body=b"data"))
    assert raw[364:368] == b"DLH " and raw[364 + 172 : 364 + 176] == b"RFH "
    back = decode_message(raw)
    assert back.md.Format == "MQDEAD" and isinstance(back.headers[0], MQDLH)
    assert back.headers[0].Reason == 2053 and back.headers[0].Format == "MQHRF2"
    assert back.headers[1].get("usr.a") == "1" and back.body == b"data"


def test_unknown_standard_header_is_carried_through() -> None:
    """Other MQH* headers share the chained prefix: kept byte for byte and followed."""
    cih = b"CIH " + (2).to_bytes(4, "little") + (32).to_bytes(4, "little") + (546).to_bytes(4, "little") + (1208).to_bytes(4, "little") + b"MQSTR   " + bytes(4)
    raw = mqmd_bytes(CodedCharSetId=1208, Format="MQHCIH") + cih + b"payload"
    msg = decode_message(raw)
    assert isinstance(msg.headers[0], RawHeader) and msg.body_format == "MQSTR" and msg.body == b"payload"
    assert encode_message(msg) == raw


def _cih(fmt: bytes = b"MQSTR   ", order: str = "little", encoding: int = 546, ccsid: int = 1208) -> bytes:
    """A 32-byte chained header in the MQ standard prefix layout (Format at offset 20)."""
    def i(v: int) -> bytes:
        return v.to_bytes(4, order, signed=True)  # type: ignore[arg-type]

    return b"CIH " + i(2) + i(32) + i(encoding) + i(ccsid) + fmt + bytes(4)


def test_raw_header_followed_by_rfh2_names_it_in_its_format_bytes() -> None:
    """Item 1 (each Format names the next header): a CIH followed by an MQRFH2 is written with
    'MQHRF2  ' in the CIH's Format bytes, so it decodes back as CIH -> RFH2 -> body instead of
    the CIH alone with the RFH2 in the body."""
    cih = decode_message(mqmd_bytes(CodedCharSetId=1208, Format="MQHCIH") + _cih() + b"x").headers[0]
    rfh2 = MQRFH2(CodedCharSetId=1208, Format="MQSTR", folders=[parse_folder("<usr><a>1</a></usr>")])
    msg = MQMessage(md=MQMD(CodedCharSetId=1208, Format="MQSTR"), headers=[cih, rfh2], body=b"payload")
    raw = encode_message(msg)
    assert raw[364 + 20 : 364 + 28] == b"MQHRF2  "
    back = decode_message(raw)
    assert [type(h).__name__ for h in back.headers] == ["RawHeader", "MQRFH2"]
    assert back.headers[1].get("usr.a") == "1" and back.body == b"payload" and back.body_format == "MQSTR"
    assert encode_message(back) == raw


def test_raw_header_format_patched_in_ebcdic_and_big_endian() -> None:
    """The Format bytes are written in the character set in force before the header."""
    cih = RawHeader("MQHCIH", _cih("MQSTR   ".encode("cp500"), "big", 273, 500), 273, 500, "MQSTR")
    rfh2 = MQRFH2(Encoding=273, CodedCharSetId=1208, Format="MQSTR")
    msg = MQMessage(md=MQMD(Encoding=273, CodedCharSetId=500), headers=[cih, rfh2], body=b"p")
    raw = encode_message(msg)
    assert raw[364 + 20 : 364 + 28] == "MQHRF2  ".encode("cp500")
    back = decode_message(raw)
    assert back.headers[0].Format == "MQHRF2" and isinstance(back.headers[1], MQRFH2) and back.body == b"p"


def test_encode_message_does_not_change_the_message() -> None:
    """Encoding is a pure function of the message: the caller's MQMD and headers keep their
    Format fields (the chain is computed for the bytes only)."""
    cih = RawHeader("MQHCIH", _cih(), 546, 1208, "MQSTR")
    dlh = MQDLH(Format="MQSTR", CodedCharSetId=1208)
    rfh2 = MQRFH2(CodedCharSetId=1208, Format="MQSTR")
    md = MQMD(CodedCharSetId=1208, Format="MQSTR")
    msg = MQMessage(md=md, headers=[dlh, cih, rfh2], body=b"b")
    raw = encode_message(msg)
    assert (md.Format, dlh.Format, cih.Format, rfh2.Format) == ("MQSTR", "MQSTR", "MQSTR", "MQSTR")
    assert cih.data == _cih() and msg.headers == [dlh, cih, rfh2]
    back = decode_message(raw)
    assert (back.md.Format, back.headers[0].Format, back.headers[1].Format, back.headers[2].Format) == ("MQDEAD", "MQHCIH", "MQHRF2", "MQSTR")
    assert encode_message(msg) == raw  # and encoding twice gives the same bytes


def test_no_headers_body_described_by_mqmd() -> None:
    """Item 1: without an MQRFH2 the MQMD's Format/CCSID describe the body."""
    raw = mqmd_bytes(CodedCharSetId=437, Format="MQSTR") + "héllo".encode("cp437")
    msg = decode_message(raw)
    assert (msg.headers, msg.body_format, msg.body_ccsid) == ([], "MQSTR", 437)


_NV = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\x7f"), max_size=10)
_DLH = st.builds(
    MQDLH,
    Reason=st.integers(-(2**31), 2**31 - 1),
    DestQName=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=48),
    DestQMgrName=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=48),
    PutApplType=st.integers(0, 40),
    PutApplName=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=28),
    PutDate=st.sampled_from(["", "20240102"]),
    PutTime=st.sampled_from(["", "01020304"]),
    CodedCharSetId=st.sampled_from([819, 1208, -2]),
)


@settings(max_examples=200, deadline=2000)
@given(_DLH, st.lists(st.tuples(_NV, _NV), max_size=5), st.binary(max_size=20))
def test_dlh_then_rfh_v1_chain_round_trips(dlh: MQDLH, pairs: list[tuple[str, str]], body: bytes) -> None:
    """Item 1 and 5 (hypothesis): MQMD -> MQDLH -> MQRFH (v1) -> body; any field values and
    name/value strings (blanks, quotes, empty strings) decode back to the same message."""
    msg = MQMessage(md=MQMD(CodedCharSetId=819), headers=[dlh, MQRFH(CodedCharSetId=819, Format="MQSTR", name_values=pairs)], body=body)
    back = decode_message(encode_message(msg))
    assert back.headers[0] == MQDLH(**{**dlh.__dict__, "Format": "MQHRF"})
    assert isinstance(back.headers[1], MQRFH) and back.headers[1].name_values == pairs
    assert back.body == body


def _dlh_rfh_message() -> bytes:
    dlh = MQDLH(Reason=2053, DestQName="FULL.Q", CodedCharSetId=819)
    rfh = MQRFH(CodedCharSetId=819, Format="MQSTR", name_values=[("MQPSCommand", "Publish"), ("MQPSTopic", "a b")])
    return encode_message(MQMessage(md=MQMD(CodedCharSetId=819), headers=[dlh, rfh], body=b"data"))


_CHAIN = _dlh_rfh_message()


@settings(max_examples=300, deadline=2000)
@given(st.integers(0, len(_CHAIN)), st.lists(st.tuples(st.integers(364, len(_CHAIN) - 1), st.integers(0, 255)), max_size=4))
def test_dlh_rfh_v1_chain_bad_input(cut: int, edits: list[tuple[int, int]]) -> None:
    """Bad input (hypothesis) in an MQDLH / MQRFH v1 chain: truncated or corrupted, it decodes
    or gives a FormatError naming a field with an int offset inside the input."""
    raw = bytearray(_CHAIN)
    for pos, value in edits:
        raw[pos] = value
    data = bytes(raw[:cut])
    try:
        decode_message(data)
    except FormatError as exc:
        assert exc.field and isinstance(exc.offset, int) and 0 <= exc.offset <= len(data), exc
