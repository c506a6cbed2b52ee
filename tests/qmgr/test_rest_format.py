"""The REST header mapping as pure functions (docs/rest.md; IBM MQ REST v3 ibm-mq-md-* and
ibm-mq-usr headers, formats-and-jms.md for the JMS TextMessage form)."""

from __future__ import annotations

import pytest

from relaymq.message import Message
from relaymq.qmgr.rest_format import (
    RestInputError,
    body_of,
    build_message,
    parse_id,
    parse_usr,
    put_options,
    response_headers,
)


def test_usr_items_types_and_quoted_commas():
    """docs/rest.md: comma-separated name;value;type; quotes protect commas; type defaults to
    string; several header lines add up."""
    assert parse_usr(['a;"x, y";string,b;true;boolean', "c;-128;i1,d;2.5;r8,e;plain"]) == [
        ("a", "x, y", "string"), ("b", True, "boolean"), ("c", -128, "i1"), ("d", 2.5, "r8"), ("e", "plain", "string")]


@pytest.mark.parametrize("bad", ["a;1;i3", "a;128;i1", "a;yes;boolean", "a", "a;x;r4"])
def test_usr_errors_name_the_header(bad):
    with pytest.raises(RestInputError, match="ibm-mq-usr"):
        parse_usr([bad])


def test_ids_v3_forms():
    """IBM v3: message ids are ID:+hex; a correlation id may be an application string."""
    assert parse_id("ID:" + "0a" * 24, "messageId", allow_text=False) == b"\x0a" * 24
    assert parse_id("ID:0102", "messageId", allow_text=False) == b"\x01\x02".ljust(24, b"\0")
    assert parse_id("order-1", "correlationId", allow_text=True) == b"order-1".ljust(24, b"\0")
    for bad, allow in (("order-1", False), ("ID:xyz", True), ("x" * 25, True)):
        with pytest.raises(RestInputError):
            parse_id(bad, "id", allow_text=allow)


def _options(**headers: str):
    lower = {k.lower(): v for k, v in headers.items() if k != "usr"}
    return put_options(lambda name: lower.get(name.lower()), [headers["usr"]] if "usr" in headers else [])


def test_plain_text_put_is_mqstr_and_round_trips_through_bytes():
    """Without user properties the message is MQSTR; priority, persistence, expiry (tenths of
    a second in MQMD), reply-to come back as the same headers."""
    message = build_message("hi", _options(**{"ibm-mq-md-priority": "3", "ibm-mq-md-persistence": "nonPersistent",
                                              "ibm-mq-md-expiry": "60000", "ibm-mq-md-replyTo": "R@QM2"}))
    again = Message.from_bytes(message.to_bytes())
    assert again.mq.md.Format.strip() == "MQSTR" and again.mq.md.Expiry == 600
    headers = dict(response_headers(again))
    assert (headers["ibm-mq-md-priority"], headers["ibm-mq-md-persistence"], headers["ibm-mq-md-expiry"],
            headers["ibm-mq-md-replyTo"]) == ("3", "nonPersistent", "60000", "R@QM2")
    assert "ibm-mq-usr" not in headers
    assert body_of(again) == (b"hi", "text/plain;charset=utf-8")


def test_user_properties_make_a_jms_text_message():
    """IBM v3: user properties or an application correlation id make a JMS TextMessage; only
    application properties come back in ibm-mq-usr."""
    message = build_message("body", _options(usr="k;7;i4", **{"ibm-mq-md-correlationId": "abc"}))
    again = Message.from_bytes(message.to_bytes())
    assert again.mq.rfh2s() and again.jms().message_type == "jms_text"
    headers = dict(response_headers(again))
    assert headers["ibm-mq-usr"] == "k;7;i4"
    assert headers["ibm-mq-md-correlationId"] == "ID:" + b"abc".ljust(24, b"\0").hex()
    assert body_of(again)[0] == b"body"


@pytest.mark.parametrize(("header", "value"), [("ibm-mq-md-priority", "10"), ("ibm-mq-md-persistence", "yes"),
                                               ("ibm-mq-md-expiry", "-5"), ("ibm-mq-md-replyTo", "@QM")])
def test_bad_md_headers_are_refused(header, value):
    with pytest.raises(RestInputError, match=header):
        _options(**{header: value})


def test_a_plain_message_is_not_read_as_jms():
    """docs/rest.md "Get": only a message with an MQRFH2 is read as JMS; a plain
    MQSTR message's body is text in its own CCSID, and when its bytes are not valid there
    they come back as application/octet-stream. Reading such a message as JMS failed (the JMS
    body must decode), so a destructive REST get took the message and answered 500."""
    from relaymq.message.headers import MQMessage

    mq = MQMessage()
    mq.md.Format = "MQSTR"
    mq.md.CodedCharSetId = 1208
    mq.body = b"\xff\xfe not UTF-8"
    message = Message(mq)
    assert not message.mq.rfh2s()
    assert body_of(message) == (b"\xff\xfe not UTF-8", "application/octet-stream")
    headers = dict(response_headers(message))
    assert "ibm-mq-usr" not in headers and headers["ibm-mq-md-persistence"] == "nonPersistent"
    mq.md.CodedCharSetId = 819  # latin-1 text comes back as UTF-8
    mq.body = b"caf\xe9"
    assert body_of(Message(mq)) == ("café".encode(), "text/plain;charset=utf-8")
