"""JMS <-> MQTT 5 PUBLISH (the product's own mapping, documented in docs/formats.md).

MQTT 5 has no JMS model, so this module defines one mapping both ways over a neutral
:class:`MQTT5Publish` (this package sits above ``relaymq.mqtt`` and must not import it):

============================  ============================================================
JMS                           MQTT 5
============================  ============================================================
JMSDestination ``topic://T``  topic name ``T`` (unless a topic is given)
JMSDeliveryMode               QoS 0 -> NON_PERSISTENT, QoS 1/2 -> PERSISTENT (inbound only;
                              the outbound QoS is the caller's)
JMSExpiration                 Message Expiry Interval, whole seconds rounded up (1 to
                              2**32-1), relative to ``now_ms``, else JMSTimestamp, else the
                              clock; inbound: (``now_ms`` or JMSTimestamp or the clock) +
                              interval
JMSCorrelationID              Correlation Data: ``ID:``+hex / bytes as raw bytes, other
                              strings as UTF-8; inbound, UTF-8 text is a string and other
                              bytes ``ID:``+hex
JMSReplyTo ``topic://T``      Response Topic ``T`` (a queue URI travels as written)
JMSPriority, JMSType,         user properties of the same names (text); JMSTimestamp and
JMSMessageID, JMSTimestamp    JMSPriority are read back as integers
properties                    user properties, value as text (MQTT has no types: they come
                              back as strings). Inbound, names that are not Java identifiers
                              are kept (no selector can name them); a repeated name: JMS
                              sees the first value, the rest are kept in
                              ``repeated_properties`` and written back after the first
JMS_RelayMQ_ContentType       Content Type
body class                    user property ``JMS_Class``; text/map/stream set Payload Format
                              Indicator 1 (UTF-8); map is a JSON object, stream a JSON array
                              (Content Type ``application/json`` unless one was set)
============================  ============================================================
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from relaymq.message.errors import MappingError
from relaymq.message.jms import BYTES, MAP, MESSAGE_TYPES, NON_PERSISTENT, NONE, OBJECT, PERSISTENT, STREAM, TEXT, JMSMessage
from relaymq.message.jms_mq import ascii_digits, id_string, reference_ms, relative_expiry, standard_id
from relaymq.message.typed import format_value

CONTENT_TYPE_PROPERTY = "JMS_RelayMQ_ContentType"
#: Largest Message Expiry Interval (a Four Byte Integer, seconds).
FOUR_BYTE_MAX = 2**32 - 1
CLASS_PROPERTY = "JMS_Class"
_HEADER_PROPERTIES = ("JMSPriority", "JMSType", "JMSMessageID", "JMSTimestamp")


@dataclass
class MQTT5Publish:
    """The parts of an MQTT 5 PUBLISH the mapping reads and writes."""

    topic: str
    payload: bytes = b""
    qos: int = 0
    retain: bool = False
    payload_format_indicator: int | None = None
    message_expiry_interval: int | None = None
    content_type: str | None = None
    response_topic: str | None = None
    correlation_data: bytes | None = None
    user_properties: list[tuple[str, str]] = field(default_factory=list)


def _expiration_to_mqtt5(jms: JMSMessage, pub: MQTT5Publish, now_ms: int | None) -> None:
    if jms.JMSExpiration:
        ref = reference_ms(now_ms, jms.JMSTimestamp)
        pub.message_expiry_interval = relative_expiry(jms.JMSExpiration, ref, 1000, FOUR_BYTE_MAX)


def _correlation_id_to_mqtt5(jms: JMSMessage, pub: MQTT5Publish, now_ms: int | None) -> None:
    if jms.JMSCorrelationID is not None:
        std = standard_id(jms.JMSCorrelationID)
        pub.correlation_data = std if std is not None else str(jms.JMSCorrelationID).encode("utf-8")


def _reply_to_to_mqtt5(jms: JMSMessage, pub: MQTT5Publish, now_ms: int | None) -> None:
    if jms.JMSReplyTo:
        r = jms.JMSReplyTo
        pub.response_topic = r[len("topic://"):] if r.startswith("topic://") else r


def _user_properties_to_mqtt5(jms: JMSMessage, pub: MQTT5Publish, now_ms: int | None) -> None:
    """The class, the header fields MQTT has no field for, and the properties, as text."""
    props = pub.user_properties
    props.append((CLASS_PROPERTY, jms.message_type))
    for name in _HEADER_PROPERTIES:
        value = getattr(jms, name)
        if value not in (None, 0) or name == "JMSPriority":
            props.append((name, str(value)))
    for name, value in jms.properties.items():
        if name == CONTENT_TYPE_PROPERTY:
            pub.content_type = str(value)
        elif value is not None:
            props.append((name, format_value(value, jms.properties.dt(name), name)))
            if not jms.properties.is_explicit(name):  # still as received: its repeats too
                props.extend((name, str(v)) for v in jms.repeated_properties.get(name, ()))


def _body_to_mqtt5(jms: JMSMessage, pub: MQTT5Publish, now_ms: int | None) -> None:
    kind, body = jms.message_type, jms.body
    if kind == TEXT:
        pub.payload, pub.payload_format_indicator = str(body or "").encode("utf-8"), 1
    elif kind in (BYTES, OBJECT):
        pub.payload, pub.payload_format_indicator = bytes(body or b""), 0  # type: ignore[call-overload]
    elif kind in (MAP, STREAM):
        value = dict(body or {}) if kind == MAP else list(body or [])  # type: ignore[call-overload]
        pub.payload = json.dumps(value, default=_json_default, ensure_ascii=False).encode("utf-8")
        pub.payload_format_indicator = 1
        pub.content_type = pub.content_type or "application/json"


#: JMS -> MQTT 5, one row per part of the table above, in order (the body's Content Type
#: comes after the properties', which it does not replace).
_TO_MQTT5: tuple[tuple[str, Callable[[JMSMessage, MQTT5Publish, int | None], None]], ...] = (
    ("JMSExpiration", _expiration_to_mqtt5),
    ("JMSCorrelationID", _correlation_id_to_mqtt5),
    ("JMSReplyTo", _reply_to_to_mqtt5),
    ("class, headers, properties", _user_properties_to_mqtt5),
    ("body", _body_to_mqtt5),
)


def jms_to_mqtt5(jms: JMSMessage, topic: str | None = None, qos: int = 0, now_ms: int | None = None) -> MQTT5Publish:
    if topic is None:
        dest = jms.JMSDestination or ""
        topic = dest[len("topic://"):] if dest.startswith("topic://") else dest
    if not topic:
        raise MappingError("no topic: give one or set JMSDestination to topic://...")
    pub = MQTT5Publish(topic=topic, qos=qos)
    for _part, row in _TO_MQTT5:
        row(jms, pub, now_ms)
    return pub


def _json_default(value: object) -> object:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _correlation_id_from_mqtt5(data: bytes) -> str | None:
    """UTF-8 text that prints is the string; other bytes ``ID:`` + hex."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "ID:" + data.hex()
    return text if text.isprintable() else id_string(data)


def _headers_from_mqtt5(jms: JMSMessage, pub: MQTT5Publish, now_ms: int) -> None:
    """The header fields, from the PUBLISH's fields and the header user properties (the
    first of repeated values, as for properties)."""
    headers: dict[str, str] = {}
    for k, v in pub.user_properties:
        if k in _HEADER_PROPERTIES:
            headers.setdefault(k, v)
    jms.JMSDeliveryMode = PERSISTENT if pub.qos > 0 else NON_PERSISTENT
    stamp = headers.get("JMSTimestamp", "")
    jms.JMSTimestamp = int(stamp) if ascii_digits(stamp) else now_ms
    if pub.message_expiry_interval is not None:
        jms.JMSExpiration = reference_ms(now_ms or None, jms.JMSTimestamp) + pub.message_expiry_interval * 1000
    if pub.correlation_data is not None:
        jms.JMSCorrelationID = _correlation_id_from_mqtt5(pub.correlation_data)
    if pub.response_topic:
        r = pub.response_topic
        jms.JMSReplyTo = r if "://" in r else f"topic://{r}"
    priority = headers.get("JMSPriority", "")
    if ascii_digits(priority) and 0 <= int(priority) <= 9:
        jms.JMSPriority = int(priority)
    jms.JMSType = headers.get("JMSType")
    jms.JMSMessageID = headers.get("JMSMessageID")


def _properties_from_mqtt5(jms: JMSMessage, pub: MQTT5Publish, now_ms: int) -> None:
    for k, v in pub.user_properties:
        if k == CLASS_PROPERTY or k in _HEADER_PROPERTIES:
            continue
        if k in jms.properties:  # repeated: JMS sees the first, the others are kept in order
            jms.repeated_properties.setdefault(k, []).append(v)
        else:
            jms.properties.set_received(k, v)
    if pub.content_type is not None:
        jms.properties.set_received(CONTENT_TYPE_PROPERTY, pub.content_type)


def _body_from_mqtt5(jms: JMSMessage, pub: MQTT5Publish, now_ms: int) -> None:
    cls = jms.message_type
    if cls == TEXT:
        jms.body = pub.payload.decode("utf-8", errors="replace")
    elif cls in (MAP, STREAM):
        try:
            value = json.loads(pub.payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise MappingError("map/stream payload is not JSON") from None
        if cls == MAP and not isinstance(value, dict) or cls == STREAM and not isinstance(value, list):
            raise MappingError(f"{cls} payload has the wrong JSON shape")
        jms.body = value
    elif cls == NONE:
        jms.body = None
    else:
        jms.body = pub.payload


#: MQTT 5 -> JMS, one row per part of the table above, in order.
_FROM_MQTT5: tuple[tuple[str, Callable[[JMSMessage, MQTT5Publish, int], None]], ...] = (
    ("headers", _headers_from_mqtt5),
    ("properties", _properties_from_mqtt5),
    ("body", _body_from_mqtt5),
)


def mqtt5_to_jms(pub: MQTT5Publish, now_ms: int = 0) -> JMSMessage:
    """The JMS view of a received PUBLISH; ``now_ms`` is the receive time (expiry base).

    Every user property is kept: a name that is not a Java identifier (``trace-id``) is still a
    property (received, so no selector identifier names it); a repeated name gives the JMS
    property its *first* value and the later ones go, in order, to
    ``repeated_properties``, from where :func:`jms_to_mqtt5` writes them back."""
    cls = next((v for k, v in pub.user_properties if k == CLASS_PROPERTY), None)
    if cls not in MESSAGE_TYPES:
        cls = TEXT if pub.payload_format_indicator == 1 else BYTES
    jms = JMSMessage(message_type=cls, JMSDestination=f"topic://{pub.topic}")
    for _part, row in _FROM_MQTT5:
        row(jms, pub, now_ms)
    return jms
