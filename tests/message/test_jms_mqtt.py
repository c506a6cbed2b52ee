"""JMS <-> MQTT 5 mapping (issue 3 'JMS'; documented in docs/formats.md): user properties,
content type, correlation data, response topic, message expiry."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relaymq.message import DataTypeError, JMSMessage, MappingError, MQTT5Publish, jms_to_mqtt5, mqtt5_to_jms

T0 = 1_700_000_000_000


def test_expiry_correlation_response_topic() -> None:
    """JMSExpiration <-> Message Expiry Interval (seconds, rounded up); JMSCorrelationID <->
    Correlation Data; JMSReplyTo topic:// <-> Response Topic."""
    jms = JMSMessage(message_type="jms_text", body="hi", JMSTimestamp=T0, JMSExpiration=T0 + 1500, JMSCorrelationID="req-42", JMSReplyTo="topic://replies/me", JMSDestination="topic://a/b")
    pub = jms_to_mqtt5(jms)
    assert (pub.topic, pub.message_expiry_interval, pub.correlation_data, pub.response_topic) == ("a/b", 2, b"req-42", "replies/me")
    back = mqtt5_to_jms(pub, now_ms=T0)
    assert (back.JMSExpiration, back.JMSCorrelationID, back.JMSReplyTo, back.JMSDestination) == (T0 + 2000, "req-42", "topic://replies/me", "topic://a/b")


def test_expiry_without_timestamp_or_now_counts_from_the_clock() -> None:
    """DECISION (docs/formats.md): with neither now_ms nor JMSTimestamp the interval counts
    from the clock, both ways; before, the outbound interval was ~1.7e9 s and the inbound
    JMSExpiration was the bare interval (a date in 1970)."""
    before = int(time.time() * 1000)
    pub = jms_to_mqtt5(JMSMessage(JMSExpiration=before + 60_000), topic="t")
    assert pub.message_expiry_interval is not None and 59 <= pub.message_expiry_interval <= 60
    back = mqtt5_to_jms(MQTT5Publish(topic="t", message_expiry_interval=10))
    assert before + 10_000 <= back.JMSExpiration <= int(time.time() * 1000) + 10_000
    far = jms_to_mqtt5(JMSMessage(JMSTimestamp=T0, JMSExpiration=2**63 - 1), topic="t")
    assert far.message_expiry_interval == 2**32 - 1  # the largest Four Byte Integer


def test_binary_correlation_id() -> None:
    """A standard 'ID:' correlation id travels as its 24 raw bytes and comes back the same."""
    cid = "ID:" + "00ff" * 12
    pub = jms_to_mqtt5(JMSMessage(JMSCorrelationID=cid), topic="t")
    assert pub.correlation_data == bytes.fromhex("00ff" * 12)
    assert mqtt5_to_jms(pub).JMSCorrelationID == cid


def test_user_properties_and_content_type() -> None:
    """Properties become user properties (text); JMS_RelayMQ_ContentType <-> Content Type."""
    jms = JMSMessage(JMSPriority=6, JMSType="order")
    jms.properties.set("colour", "blue")
    jms.properties.set("n", 5, "i2")
    jms.properties.set("JMS_RelayMQ_ContentType", "text/csv")
    pub = jms_to_mqtt5(jms, topic="t", qos=1)
    assert ("colour", "blue") in pub.user_properties and ("n", "5") in pub.user_properties
    assert pub.content_type == "text/csv"
    back = mqtt5_to_jms(pub)
    assert (back.JMSPriority, back.JMSType, back.JMSDeliveryMode) == (6, "order", 2)
    assert back.properties["colour"] == "blue" and back.properties["n"] == "5"  # MQTT has no types
    assert back.properties["JMS_RelayMQ_ContentType"] == "text/csv"


@pytest.mark.parametrize(("kind", "body", "pfi"), [("jms_text", "héllo", 1), ("jms_bytes", b"\x00\xff", 0), ("jms_map", {"a": 1, "b": "x"}, 1), ("jms_stream", [1, "x", True], 1), ("jms_object", b"\xac\xed", 0)])
def test_body_classes(kind: str, body: object, pfi: int) -> None:
    """Body class rides in user property JMS_Class; text/map/stream are UTF-8 (indicator 1)."""
    pub = jms_to_mqtt5(JMSMessage(message_type=kind, body=body), topic="t")
    assert pub.payload_format_indicator == pfi
    back = mqtt5_to_jms(pub)
    assert (back.message_type, back.body) == (kind, body)


def test_plain_mqtt_publish_without_jms_hints() -> None:
    """A publish from a plain MQTT client: indicator 1 -> TextMessage, else BytesMessage."""
    assert mqtt5_to_jms(MQTT5Publish(topic="t", payload=b"21.5", payload_format_indicator=1)).body == "21.5"
    assert mqtt5_to_jms(MQTT5Publish(topic="t", payload=b"\x01")).message_type == "jms_bytes"
    with pytest.raises(MappingError):
        jms_to_mqtt5(JMSMessage())  # no topic anywhere
    with pytest.raises(MappingError):
        mqtt5_to_jms(MQTT5Publish(topic="t", payload=b"[1]", user_properties=[("JMS_Class", "jms_map")]))


def test_user_property_names_that_are_not_java_identifiers() -> None:
    """DECISION (docs/formats.md): ordinary MQTT traffic maps - a user property named trace-id
    is a (received) JMS property, reachable on the MQ form as MQRFH2.usr.trace-id, though a
    selector identifier cannot name it. A name usr cannot hold ('a b') stays in the JMS view
    and goes back to MQTT, but is left out of the MQRFH2."""
    from relaymq.message import Message

    pub = MQTT5Publish(topic="t", payload=b"x", user_properties=[("trace-id", "abc"), ("a b", "1"), ("ok", "2")])
    jms = mqtt5_to_jms(pub)
    assert (jms.properties["trace-id"], jms.properties["a b"], jms.properties["ok"]) == ("abc", "1", "2")
    assert jms.selector_value("ok") == "2"
    msg = Message.from_bytes(Message.from_jms(jms).to_bytes())
    assert msg.get("MQRFH2.usr.trace-id") == "abc" and msg.get("MQRFH2.usr.ok") == "2"
    assert msg.jms().properties["trace-id"] == "abc" and "a b" not in msg.jms().properties
    back = jms_to_mqtt5(jms, topic="t")
    assert ("trace-id", "abc") in back.user_properties and ("a b", "1") in back.user_properties
    with pytest.raises(DataTypeError):
        jms.properties.set("trace-id", "x")  # the application API still wants Java identifiers


def test_repeated_user_properties_are_all_kept() -> None:
    """DECISION (docs/formats.md): MQTT 5 allows a name several times; JMS sees the first value,
    the later ones are kept in order and written back after the first."""
    pub = MQTT5Publish(topic="t", user_properties=[("tag", "a"), ("n", "1"), ("tag", "b"), ("tag", "c"), ("JMSPriority", "7"), ("JMSPriority", "2")])
    jms = mqtt5_to_jms(pub)
    assert jms.properties["tag"] == "a" and jms.repeated_properties == {"tag": ["b", "c"]}
    assert jms.JMSPriority == 7  # a repeated header property: the first, as for properties
    out = [(k, v) for k, v in jms_to_mqtt5(jms, topic="t").user_properties if k in ("tag", "n")]
    assert out == [("tag", "a"), ("tag", "b"), ("tag", "c"), ("n", "1")]
    jms.properties.set("tag", "z")  # set by the application: one value, the new one
    assert [v for k, v in jms_to_mqtt5(jms, topic="t").user_properties if k == "tag"] == ["z"]


@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "12\u00b2"])
def test_unicode_digits_in_header_properties_are_ignored_not_errors(value: str) -> None:
    """JMSTimestamp / JMSPriority user properties must be ASCII digits ('²'.isdigit() is true
    but int('²') fails)."""
    jms = mqtt5_to_jms(MQTT5Publish(topic="t", user_properties=[("JMSTimestamp", value), ("JMSPriority", value)]), now_ms=T0)
    assert (jms.JMSTimestamp, jms.JMSPriority) == (T0, 4)


_TEXTS = st.one_of(st.text(max_size=8), st.sampled_from(["jms_map", "jms_stream", "jms_text", "jms_bytes", "jms_none", "7", "\u00b2", "-1", "99"]))
_PUBLISH = st.builds(
    MQTT5Publish,
    topic=st.text(min_size=1, max_size=8),
    payload=st.one_of(st.binary(max_size=20), st.sampled_from([b'{"a": 1}', b"[1, 2]", b"\xff", b"null"])),
    qos=st.integers(0, 2),
    payload_format_indicator=st.sampled_from([None, 0, 1]),
    message_expiry_interval=st.one_of(st.none(), st.integers(0, 2**32 - 1)),
    content_type=st.one_of(st.none(), st.text(max_size=6)),
    response_topic=st.one_of(st.none(), st.text(max_size=8)),
    correlation_data=st.one_of(st.none(), st.binary(max_size=30)),
    user_properties=st.lists(st.tuples(st.sampled_from(["JMS_Class", "JMSPriority", "JMSTimestamp", "JMSType", "JMSMessageID", "colour", "trace-id", "a b", ""]) | st.text(max_size=5), _TEXTS), max_size=6),
)


@settings(max_examples=400, deadline=2000)
@given(_PUBLISH)
def test_mqtt5_to_jms_on_arbitrary_publications(pub: MQTT5Publish) -> None:
    """Issue 3 'Bad input' for the MQTT 5 mapping (hypothesis): any PUBLISH maps to a JMS
    message - which maps on to MQ and back to MQTT - or gives a MappingError (a map/stream
    payload that is not the JSON its class needs); nothing else."""
    from relaymq.message import FormatError, Message

    try:
        jms = mqtt5_to_jms(pub, now_ms=T0)
    except MappingError:
        return
    assert 0 <= jms.JMSPriority <= 9
    try:
        Message.from_bytes(Message.from_jms(jms).to_bytes()).jms()
    except (MappingError, FormatError) as exc:
        # a value MQ cannot hold (a 49-character reply queue, a map key that is no XML name)
        assert str(exc)
    back = jms_to_mqtt5(jms, topic=pub.topic)
    assert [kv for kv in back.user_properties if kv[0] not in ("JMS_Class", "JMSPriority", "JMSTimestamp", "JMSType", "JMSMessageID")] == [
        kv for kv in pub.user_properties if kv[0] not in ("JMS_Class", "JMSPriority", "JMSTimestamp", "JMSType", "JMSMessageID")
    ] or len({k for k, _ in pub.user_properties}) != len(pub.user_properties)
