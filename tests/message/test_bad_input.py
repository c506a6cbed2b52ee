"""Property-based bad input (issue 3 'Bad input'): every decoder, fed truncated, corrupted or
random bytes, either succeeds or raises a FormatError subclass naming a field and an int byte
offset inside its input - never another exception, never a hang (each example has a deadline)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relaymq.message import JMSMessage, FormatError, Message, decode_message, jms_to_mq, encode_message, mq_to_jms
from relaymq.message.ccsid import encode_text
from relaymq.message.domains import parse_body
from relaymq.message.folders import parse_folder

_PROFILE = settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])


def _offset_inside(exc: FormatError, data: bytes | str) -> None:
    """Issue 3 item 10: the offset is an int pointing inside the input (its end included)."""
    assert exc.field and isinstance(exc.field, str)
    assert isinstance(exc.offset, int) and not isinstance(exc.offset, bool), exc
    assert 0 <= exc.offset <= len(data), exc


def _valid_message() -> bytes:
    jms = JMSMessage(message_type="jms_map", body={"a": 1, "b": "x"}, JMSCorrelationID="c-1", JMSReplyTo="queue://Q/R", JMSTimestamp=5_000)
    jms.properties.set("colour", "blue")
    jms.properties.set("n", 3, "i2")
    return encode_message(jms_to_mq(jms))


VALID = _valid_message()


def _check(data: bytes) -> None:
    try:
        msg = decode_message(data)
        mq_to_jms(msg)
        Message(msg).tree()  # a body error's offset counts from the start of the body
    except FormatError as exc:
        _offset_inside(exc, data)


@_PROFILE
@given(st.integers(0, len(VALID)))
def test_every_truncation_of_a_valid_message(cut: int) -> None:
    """Truncated headers: each prefix of a valid message decodes or gives a typed error."""
    _check(VALID[:cut])


@_PROFILE
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=6))
def test_corrupted_bytes_of_a_valid_message(edits: list[tuple[int, int]]) -> None:
    """Wrong StrucIds, lengths past the end, unknown CCSIDs, malformed folders, invalid dt."""
    raw = bytearray(VALID)
    for pos, value in edits:
        raw[pos] = value
    _check(bytes(raw))


@_PROFILE
@given(st.binary(max_size=600))
def test_random_bytes_after_a_valid_descriptor(tail: bytes) -> None:
    """Random header bytes after an MQMD that says an MQRFH2 follows."""
    _check(VALID[:364] + tail)


@_PROFILE
@given(st.lists(st.sampled_from(list("<>/usr ab='dt&;#x!-[]CDATA\"i4") + ["xsi:nil"]), max_size=60).map("".join))
def test_folder_parser_on_arbitrary_text(text: str) -> None:
    """The folder parser: malformed folders are FolderError/DataTypeError only."""
    try:
        parse_folder(text)
    except FormatError as exc:
        _offset_inside(exc, text)  # text given: offsets are character indexes


@_PROFILE
@given(st.sampled_from(["XMLNSC", "XMLNS", "XML", "JSON", "JMSMap", "JMSStream", "MIME", "BLOB"]), st.binary(max_size=300))
def test_domain_parsers_on_arbitrary_bytes(domain: str, data: bytes) -> None:
    """Every domain parser: a typed error or a tree, for any bytes."""
    try:
        parse_body(domain, data)
    except FormatError as exc:
        _offset_inside(exc, data)


_NOISE = st.lists(st.sampled_from(list('<>/a="{}[]:,\r\n-') + ["&lt;", "<!ENTITY", "<!DOCTYPE", "boundary=", "--", "map", "<map>", "</map>", "<stream>", "<elt>", "dt='i4'", "\u00e9", "\u20ac", "NaN", "[[[[", "Content-Type: multipart/x"]), max_size=40).map("".join)


@_PROFILE
@given(st.sampled_from(["XMLNSC", "XMLNS", "XML", "JSON", "JMSMap", "JMSStream", "MIME"]), _NOISE, st.sampled_from([(1208, 546), (1200, 546), (1200, 273), (819, 546), (500, 273), (13488, 546)]))
def test_domain_error_offsets_are_bytes_in_any_ccsid(domain: str, text: str, charset: tuple[int, int]) -> None:
    """Item 10: an error offset is a *byte* offset in the body whatever its CCSID (UTF-16 has
    two bytes a character, UTF-8 several), never a character index or -1."""
    ccsid, encoding = charset
    try:
        data = encode_text(text, ccsid, encoding)
    except FormatError:
        return  # a character this CCSID cannot hold
    try:
        parse_body(domain, data, ccsid, encoding)
    except FormatError as exc:
        _offset_inside(exc, data)
        if ccsid in (1200, 13488) and domain != "MIME":  # MIME reads bytes, not characters
            assert exc.offset % 2 == 0, exc  # on a character boundary


@_PROFILE
@given(st.sampled_from(["XMLNSC", "JSON", "JMSMap", "MIME"]), st.lists(st.sampled_from(list('<>/a="{}[]:,\r\n-') + ["&lt;", "<!ENTITY", "<!DOCTYPE", "boundary=", "--", "map", "Content-Type: multipart/x"]), max_size=40).map("".join))
def test_domain_parsers_on_structured_noise(domain: str, text: str) -> None:
    """Markup-shaped noise reaches deeper parser states; still only typed errors."""
    data = text.encode("utf-8")
    try:
        parse_body(domain, data)
    except FormatError as exc:
        _offset_inside(exc, data)
