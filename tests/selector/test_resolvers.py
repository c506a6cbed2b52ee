"""Dotted references into the message tree and JMS names: README decision 3;
formats-and-jms.md items 6, 14; pubsub.md item 17 (content filters on the body)."""

from __future__ import annotations

from relaymq.message import JMSMessage, Message
from relaymq.selector import compile_selector
from relaymq.selector.resolvers import jms_resolver, message_resolver


def _message(body: str = "<order><Name>Smith</Name><Price>150</Price></order>", **props: object) -> Message:
    jms = JMSMessage(message_type="jms_text", body=body, JMSPriority=7, JMSType="car", JMSTimestamp=1_000)
    for k, v in props.items():
        jms.properties[k] = v
    # through bytes, as a message arriving from a queue
    return Message.from_bytes(Message.from_jms(jms).to_bytes())


def _ev(text: str, msg: Message) -> bool | None:
    return compile_selector(text).evaluate(message_resolver(msg))


def test_issue_example_on_a_decoded_message() -> None:
    """Issue 3 benchmark expression on a decoded message: JMS header and usr property."""
    msg = _message(colour="blue")
    assert _ev("JMSPriority > 4 AND colour = 'blue'", msg) is True
    assert _ev("JMSPriority > 7 AND colour = 'blue'", msg) is False


def test_body_paths_and_seed_content_filter() -> None:
    """seed 003 l.1885: `Body.Name LIKE 'Smit%'`; XML text compares numerically."""
    msg = _message()
    assert _ev("Body.order.Name LIKE 'Smit%'", msg) is True
    assert _ev("Body.order.Price > 100", msg) is True
    assert _ev("Body.order.Missing IS NULL", msg) is True


def test_tree_paths_headers_and_properties() -> None:
    """Root.MQMD.Priority, MQRFH2 folders and Properties.MessageDomain (decision 3)."""
    msg = _message(colour="blue")
    assert _ev("Root.MQMD.Priority = 7", msg) is True
    assert _ev("MQMD.Priority = 7", msg) is True
    assert _ev("Root.MQRFH2.usr.colour = 'blue'", msg) is True
    assert _ev("usr.colour = 'blue'", msg) is True
    assert _ev("mcd.Type = 'car'", msg) is True
    assert _ev("Properties.MessageDomain = 'XML'", msg) is True
    assert _ev("Root.MQMD.MsgId IS NULL", msg) is True  # bytes are not selector values


def test_unparseable_body_is_unknown_not_an_exception() -> None:
    """A filter on a malformed body is UNKNOWN (the broker must not crash)."""
    msg = _message(body="<not-closed>")
    assert _ev("Body.x = 1", msg) is None
    assert _ev("JMSPriority = 7", msg) is True


def test_jms_header_names_follow_jms_rules() -> None:
    """seed 004 l.6663-6670: selectable headers; JMSDeliveryMode as PERSISTENT/NON_PERSISTENT;
    JMSDestination/JMSReplyTo are not selectable."""
    jms = JMSMessage(JMSDeliveryMode=1, JMSReplyTo="queue://QM/R", JMSDestination="queue:///Q", JMSCorrelationID=b"\x01" * 24)
    r = jms_resolver(jms)
    assert compile_selector("JMSDeliveryMode = 'NON_PERSISTENT'").matches(r)
    assert compile_selector("JMSReplyTo IS NULL AND JMSDestination IS NULL").matches(r)
    assert compile_selector("JMSTimestamp IS NULL").matches(r)  # 0 = not set
    assert compile_selector("JMSCorrelationID = 'ID:" + "01" * 24 + "'").matches(r)
