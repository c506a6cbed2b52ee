"""The JSON form of an MQ message (`relaymq msg decode` / `msg encode`, issue 3 'Command
line'): every mistake in the JSON is a FormatError naming the JSON path of the field, never a
KeyError, TypeError or ValueError from inside the builder."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relaymq.message import FormatError, JMSMessage, Message, decode_message, encode_message
from relaymq.message.jsonform import from_json, to_json


def _valid_doc() -> dict[str, object]:
    jms = JMSMessage(message_type="jms_text", body="hello", JMSCorrelationID="c-1", JMSReplyTo="queue://QM/R")
    jms.properties.set("colour", "blue")
    return json.loads(json.dumps(to_json(decode_message(Message.from_jms(jms).to_bytes()))))


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"MQMD": {"Priority": "high"}}, "MQMD.Priority"),
        ({"MQMD": {"Priority": True}}, "MQMD.Priority"),
        ({"MQMD": {"ReplyToQ": 5}}, "MQMD.ReplyToQ"),
        ({"MQMD": {"MsgId": "zz"}}, "MQMD.MsgId"),
        ({"MQMD": {"Colour": 1}}, "MQMD.Colour"),
        ({"MQMD": []}, "MQMD"),
        ({"descriptor_encoding": "546"}, "descriptor_encoding"),
        ({"headers": [{"header": "MQHCIH", "bytes": "00"}]}, "headers[0].Encoding"),
        ({"headers": [{"header": "MQHCIH", "bytes": "0", "Encoding": 546, "CodedCharSetId": 1208, "Format": "MQSTR"}]}, "headers[0].bytes"),
        ({"headers": [{"header": "MQRFH", "NameValueString": [["only-one"]]}]}, "headers[0].NameValueString[0]"),
        ({"headers": [{"header": "MQRFH", "NameValueString": [["a", 1]]}]}, "headers[0].NameValueString[0][1]"),
        ({"headers": [{"header": "MQRFH2", "NameValueCCSID": "x"}]}, "headers[0].NameValueCCSID"),
        ({"headers": [{"header": "MQRFH2", "folders": [7]}]}, "headers[0].folders[0]"),
        ({"headers": [{"header": "MQRFH2", "folders": ["<usr><a>"]}]}, "headers[0].folders[0].a"),
        ({"headers": [{"header": "MQDLH", "Colour": 1}]}, "headers[0].Colour"),
        ({"headers": [{"header": "MQDLH", "Reason": "x"}]}, "headers[0].Reason"),
        ({"headers": [{"header": "XYZ"}]}, "headers[0].header"),
        ({"headers": {}}, "headers"),
        ({"body": {"text": 5}}, "body.text"),
        ({"body": {"format": 5}}, "body.format"),
        ({"body": {"hex": "abc"}}, "body.hex"),
        ({"body": {"text": "x", "ccsid": "1208"}}, "body.ccsid"),
        ({"MQMD": {"CodedCharSetId": 437}, "body": {"text": "\u20ac"}}, "body.text"),
        ({"body": {"domain": "cobol"}}, "MessageDomain"),
        ([], "message"),
    ],
)
def test_from_json_errors_name_the_field(doc: object, field: str) -> None:
    """Issue 3 'Bad input' for `msg encode`: a typed error naming the JSON path of the field."""
    with pytest.raises(FormatError) as info:
        from_json(doc)
    assert info.value.field == field, str(info.value)


def test_from_json_round_trips_to_json() -> None:
    """encode(decode(bytes)) == bytes through the JSON form, display-only keys ignored."""
    raw = Message.from_jms(JMSMessage(message_type="jms_text", body="hi", JMSType="t")).to_bytes()
    assert encode_message(from_json(json.loads(json.dumps(to_json(decode_message(raw)))))) == raw


_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3000), st.text(max_size=6), st.sampled_from(["MQSTR", "MQHRF2", "00ff", "<usr><a>1</a></usr>"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["header", "Format", "Encoding", "CodedCharSetId", "folders", "NameValueString", "bytes", "text", "hex", "Priority", "MsgId", "Reason"]), inner, max_size=3)),
    max_leaves=12,
)


@settings(max_examples=400, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["MQMD", "headers", "body", "descriptor_encoding"]), _JSON, st.integers(0, 8))
def test_from_json_on_arbitrary_documents(key: str, value: object, which: int) -> None:
    """Hypothesis: a real document with one part replaced by arbitrary JSON either builds a
    message that encodes, or raises FormatError naming a field - nothing else."""
    doc = _valid_doc()
    if key == "headers" and isinstance(value, dict):
        headers = doc["headers"]
        assert isinstance(headers, list)
        entry = dict(headers[0])
        entry.update(value)
        headers[0] = entry
    else:
        doc[key] = value
    try:
        encode_message(from_json(doc))
    except FormatError as exc:
        assert exc.field and isinstance(exc.field, str)
