"""Byte offsets in errors (issue 3 'Bad input': a typed error naming the field and the byte
offset): each points at the element at fault, in bytes of the input whatever its CCSID."""

from __future__ import annotations

import pytest

from relaymq.message import DataTypeError, DomainError, FolderError, decode_message, mq_to_jms
from relaymq.message.ccsid import encode_text
from relaymq.message.domains import parse_body

from .golden import mqmd_bytes, rfh2_bytes


@pytest.mark.parametrize("domain", ["XMLNSC", "XMLNS", "XML"])
def test_empty_xml_body_error_is_at_offset_0_not_minus_1(domain: str) -> None:
    """An empty XML body: the error is at the end of the input (0), not expat's -1."""
    with pytest.raises(DomainError) as info:
        parse_body(domain, b"")
    assert info.value.offset == 0


@pytest.mark.parametrize(("ccsid", "encoding", "width"), [(1208, 546, 1), (1200, 546, 2), (1200, 273, 2), (819, 546, 1), (500, 273, 1)])
def test_json_error_offset_is_in_bytes_of_the_body_ccsid(ccsid: int, encoding: int, width: int) -> None:
    """JSON offsets were character indexes outside CCSID 1208; now bytes in any CCSID."""
    text = '{"caf\u00e9": [1, 2,, 3]}'  # error at the second ',' (character 15)
    data = encode_text(text, ccsid, encoding)
    with pytest.raises(DomainError) as info:
        parse_body("JSON", data, ccsid, encoding)
    expected = len(encode_text(text[:15], ccsid, encoding))
    assert info.value.offset == expected and data[expected : expected + width] == encode_text(",", ccsid, encoding)


def test_xml_error_offset_in_a_utf16_body() -> None:
    """XML is parsed as UTF-8: the offset is mapped back to the UTF-16 bytes of the body."""
    text = "<a>\u00e9\u00e9</b>"
    data = encode_text(text, 1200, 546)
    with pytest.raises(DomainError) as info:
        parse_body("XMLNSC", data, 1200, 546)
    assert info.value.offset == 2 * text.index("b>")  # expat points at the name in </b>


def test_json_depth_error_points_at_the_bracket() -> None:
    """JSON nested deeper than 256 levels: the offset of the 257th bracket (was None)."""
    data = b" " + b"[" * 300 + b"]" * 300
    with pytest.raises(DomainError) as info:
        parse_body("JSON", data)
    assert info.value.offset == 1 + 256 and "deeper" in info.value.reason


def test_json_nan_points_at_the_constant() -> None:
    with pytest.raises(DomainError) as info:
        parse_body("JSON", b'{"a": "NaN", "b": -Infinity}')
    assert info.value.offset == 18


@pytest.mark.parametrize(
    ("domain", "text", "at"),
    [
        ("JMSMap", "<map><a>1</a><b><c>2</c></b></map>", "<c>"),  # an entry with children
        ("JMSStream", "<stream><elt>1</elt><x>2</x></stream>", "<x>"),  # not <elt>
        ("JMSMap", "<mop><a>1</a></mop>", "<mop>"),
        ("JMSMap", "<map><\u00e9 dt='i4'>x</\u00e9></map>", "<\u00e9"),
    ],
)
def test_jms_body_entry_errors_point_at_the_entry(domain: str, text: str, at: str) -> None:
    """JMSMap/JMSStream entry errors had offset None; now the byte offset of the element."""
    data = text.encode("utf-8")
    with pytest.raises(DomainError) as info:
        parse_body(domain, data)
    assert info.value.offset == len(text[: text.index(at)].encode("utf-8"))


def _message_with_folders(*folders: str) -> tuple[bytes, int]:
    """MQMD + RFH2 with these folders; returns the bytes and the offset of the first folder."""
    data = [f.encode("utf-8") + b" " * (-len(f.encode("utf-8")) % 4) for f in folders]
    raw = mqmd_bytes(CodedCharSetId=1208, Format="MQHRF2") + rfh2_bytes(data)
    return raw, 364 + 36 + 4


@pytest.mark.parametrize(
    ("folder", "at", "fragment"),
    [
        ("<usr><\u00e9>1</\u00e9><b>2</b><b>3</b></usr>", "<b>3", "only once"),
        ("<usr><a>1</a><g><x>1</x></g></usr>", "<x>", "simple elements"),
        ("<usr><a>1</a><p:a>1</p:a></usr>", "<p:a>", "colon"),
    ],
)
def test_usr_rule_violations_point_at_the_element(folder: str, at: str, fragment: str) -> None:
    """usr rules (seed 003 l.5266-5281): the offset is the offending element's, not the folder
    start's."""
    raw, start = _message_with_folders(folder)
    with pytest.raises(FolderError) as info:
        decode_message(raw)
    assert fragment in info.value.reason
    assert info.value.offset == start + len(folder[: folder.index(at)].encode("utf-8"))


def test_jms_folder_type_error_points_at_the_field() -> None:
    """A jms.* field that is not an integer: the offset of that element in the message."""
    folder = "<jms><Dst>queue:///Q</Dst><Dlv>two</Dlv></jms>"
    raw, start = _message_with_folders(folder)
    with pytest.raises(DataTypeError) as info:
        mq_to_jms(decode_message(raw))
    assert info.value.field == "jms.Dlv"
    assert info.value.offset == start + folder.index("<Dlv>")
    assert raw[info.value.offset : info.value.offset + 5] == b"<Dlv>"


def test_unknown_msd_points_at_the_mcd_element() -> None:
    """An mcd.Msd naming no domain: the offset of <Msd> in the message bytes."""
    from relaymq.message import Message

    folder = "<mcd><Msd>cobol</Msd></mcd>"
    raw, start = _message_with_folders(folder)
    with pytest.raises(DomainError) as info:
        Message.from_bytes(raw).body()
    assert info.value.offset == start + folder.index("<Msd>")


def test_unknown_integer_encoding_names_the_encoding_field() -> None:
    """An Encoding whose integer bits are neither normal nor reversed, in force for a header:
    the error names that Encoding field and its offset (it had no offset)."""
    from relaymq.message import FormatError

    raw = bytearray(_message_with_folders("<usr><a>1</a></usr>")[0])
    raw[24:28] = (515).to_bytes(4, "little")  # MQMD.Encoding: integer bits 3
    with pytest.raises(FormatError) as info:
        decode_message(bytes(raw))
    assert (info.value.field, info.value.offset) == ("MQMD.Encoding", 24)
