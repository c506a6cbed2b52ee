"""The AMQP JMS Mapping: an AMQP 1.0 message <-> relaymq's JMS model (docs/amqp.md "JMS
mapping"; OASIS AMQP JMS Mapping 1.0 as Qpid JMS implements it). Pure: no I/O.

Both directions go through :class:`relaymq.message.jms.JMSMessage`, the model the MQ
(``jms_mq``) and MQTT 5 (``jms_mqtt``) mappings use, so a message keeps its JMS headers
and typed properties across AMQP, MQ-format queues and MQTT 5.

==========================  =====================================================
JMS                         AMQP 1.0
==========================  =====================================================
message class               annotation ``x-opt-jms-msg-type`` (0 Message, 1 Object,
                            2 Map, 3 Bytes, 4 Stream, 5 Text), else from the body
JMSDestination              properties.to (+ ``x-opt-jms-dest``: 0 queue, 1 topic)
JMSReplyTo                  properties.reply-to (+ ``x-opt-jms-reply-to``)
JMSDeliveryMode             header.durable
JMSPriority                 header.priority
JMSTimestamp                properties.creation-time
JMSExpiration               properties.absolute-expiry-time (and header.ttl)
JMSMessageID                properties.message-id (a non-string id: ``ID:AMQP_...``);
                            kept through MQ-format queues as JMS_RelayMQ_MessageID
JMSCorrelationID            properties.correlation-id (string; binary as bytes)
JMSType                     properties.subject
JMSRedelivered              header.delivery-count > 0
JMSXDeliveryCount           header.delivery-count + 1 (inbound)
JMSXUserID                  properties.user-id
JMSXGroupID, JMSXGroupSeq   properties.group-id, group-sequence
JMS_RelayMQ_ContentType     properties.content-type
properties                  application-properties, typed: boolean, byte (i1),
                            short (i2), int (i4), long (i8), float (r4),
                            double (r8), string, char
body                        Text: amqp-value string; Bytes and Object: data;
                            Map: amqp-value map; Stream: amqp-sequence; Message:
                            none
==========================  =====================================================
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from proton import Message, byte, char, float32, int32, short, symbol, ubyte, uint, ulong, ushort

from relaymq.amqp.addresses import AddressScheme
from relaymq.message.jms import BYTES, MAP, NON_PERSISTENT, NONE, OBJECT, PERSISTENT, STREAM, TEXT, JMSMessage
from relaymq.message.jms_mqtt import CONTENT_TYPE_PROPERTY

MSG_TYPE = symbol("x-opt-jms-msg-type")
DEST = symbol("x-opt-jms-dest")
REPLY_TO = symbol("x-opt-jms-reply-to")
#: x-opt-jms-msg-type values.
TYPE_CODES = {NONE: 0, OBJECT: 1, MAP: 2, BYTES: 3, STREAM: 4, TEXT: 5}
CODE_TYPES = {code: kind for kind, code in TYPE_CODES.items()}
QUEUE_CODE, TOPIC_CODE = 0, 1
OBJECT_CONTENT_TYPE = "application/x-java-serialized-object"
OCTET_STREAM = "application/octet-stream"
#: JMSX properties carried by AMQP fields, not application-properties.
#: Provider properties that are an MQ message's MQMD seen through JMS (``jms_mq``): made
#: again on every read from an MQ-format queue, so they do not travel as AMQP properties.
MQ_VIEW_PREFIX = "JMS_IBM_"
#: The AMQP message-id as the sender gave it. An MQ-format queue keeps a JMSMessageID as the
#: 24-byte MQMD MsgId, which only an ``ID:`` + 48 hex digits id fits; Qpid JMS's ids
#: (``ID:<uuid>:1:1:1-1``) do not, and a JMS requester correlates its reply by its own id.
MESSAGE_ID_PROPERTY = "JMS_RelayMQ_MessageID"
#: JMSX properties carried by AMQP fields, not application-properties.
FIELD_PROPERTIES = frozenset({"JMSXUserID", "JMSXGroupID", "JMSXGroupSeq", "JMSXDeliveryCount", CONTENT_TYPE_PROPERTY,
                              MESSAGE_ID_PROPERTY})

#: Python/proton value type -> JMS dt.
_DT_OF: dict[type, str] = {
    bool: "boolean", byte: "i1", short: "i2", int32: "i4", int: "i8", float32: "r4", float: "r8",
    str: "string", char: "char", ubyte: "i2", ushort: "i4", uint: "i8", ulong: "i8",
}
_WRAP: dict[str, Any] = {"i1": byte, "i2": short, "i4": int32, "int": int32, "r4": float32, "char": char}


def _dt_of(value: object) -> str | None:
    for kind in type(value).__mro__:
        if kind in _DT_OF:
            return _DT_OF[kind]
    return "bin.hex" if isinstance(value, (bytes, bytearray)) else None


def plain(value: object) -> object:
    """A proton-typed value (``int32(3)``, ``symbol('x')``) as the plain Python value the JMS
    model holds; the JMS type travels beside it as its dt."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return value


def typed_value(value: object, dt: str) -> object:
    """A JMS-typed value as the AMQP type that keeps its Java type."""
    if value is None:
        return None
    wrap = _WRAP.get(dt)
    return wrap(value) if wrap is not None else value


def _message_id(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value if value.startswith("ID:") else "ID:AMQP_NO_PREFIX:" + value
    if isinstance(value, uuid.UUID):
        return f"ID:AMQP_UUID:{value}"
    if isinstance(value, (bytes, bytearray)):
        return "ID:AMQP_BINARY:" + bytes(value).hex()
    return f"ID:AMQP_ULONG:{value}"


def _seconds(ms: int) -> float:
    return ms / 1000.0


def _kind_of(msg: Message, annotations: dict[Any, Any]) -> tuple[str, Any]:
    """The message class (x-opt-jms-msg-type, else from the body) and the body; a body of
    another type is text."""
    body: Any = msg.body
    code = annotations.get(MSG_TYPE)
    kind = CODE_TYPES.get(int(code)) if code is not None else None
    if kind is not None:
        return kind, body
    if body is None:
        return NONE, body
    if isinstance(body, str):
        return TEXT, body
    if isinstance(body, (bytes, bytearray, memoryview)):
        return (OBJECT if msg.content_type == OBJECT_CONTENT_TYPE else BYTES), body
    if isinstance(body, dict):
        return MAP, body
    if isinstance(body, (list, tuple)):
        return STREAM, body
    return TEXT, str(body)


def _expiration_from_amqp(jms: JMSMessage, msg: Message, scheme: AddressScheme) -> None:
    """absolute-expiry-time, else creation-time + ttl (after the timestamp)."""
    if msg.expiry_time:
        jms.JMSExpiration = int(round(msg.expiry_time * 1000))
    elif msg.ttl:
        jms.JMSExpiration = (jms.JMSTimestamp or 0) + int(msg.ttl * 1000)


def _correlation_id_from_amqp(jms: JMSMessage, msg: Message, scheme: AddressScheme) -> None:
    cid = msg.correlation_id
    if isinstance(cid, (bytes, bytearray)):
        jms.JMSCorrelationID = bytes(cid)
    elif cid is not None:
        jms.JMSCorrelationID = str(cid)


def _headers_from_amqp(jms: JMSMessage, msg: Message, scheme: AddressScheme) -> None:
    jms.JMSDestination = scheme.to_jms(msg.address)
    jms.JMSReplyTo = scheme.to_jms(msg.reply_to)
    jms.JMSDeliveryMode = PERSISTENT if msg.durable else NON_PERSISTENT
    jms.JMSPriority = min(max(int(msg.priority), 0), 9)
    jms.JMSTimestamp = int(round((msg.creation_time or 0) * 1000))


def _message_id_from_amqp(jms: JMSMessage, msg: Message, scheme: AddressScheme) -> None:
    jms.JMSMessageID = _message_id(msg.id)


def _type_from_amqp(jms: JMSMessage, msg: Message, scheme: AddressScheme) -> None:
    jms.JMSType = msg.subject or None


def _application_properties_from_amqp(jms: JMSMessage, msg: Message, scheme: AddressScheme) -> None:
    properties: dict[Any, Any] = dict(msg.properties or {})
    for name, value in properties.items():
        dt = _dt_of(value) if value is not None else "string"
        if dt is None:
            continue  # a list or map property: JMS has none; not selectable, not kept
        jms.properties.set_received(str(name), plain(value), dt)


#: AMQP -> JMS header fields, one row per line of the table above (JMSRedelivered and
#: JMSXDeliveryCount come from the transfer's delivery count, not the message).
_FROM_AMQP: tuple[tuple[str, Callable[[JMSMessage, Message, AddressScheme], None]], ...] = (
    ("JMSDestination, JMSReplyTo, JMSDeliveryMode, JMSPriority, JMSTimestamp", _headers_from_amqp),
    ("JMSExpiration", _expiration_from_amqp),
    ("JMSMessageID", _message_id_from_amqp),
    ("JMSCorrelationID", _correlation_id_from_amqp),
    ("JMSType", _type_from_amqp),
    ("properties", _application_properties_from_amqp),
)


def _field_properties_from_amqp(jms: JMSMessage, msg: Message) -> None:
    """The JMSX and provider properties AMQP fields carry."""
    props = jms.properties
    if jms.JMSMessageID is not None:
        props.set_received(MESSAGE_ID_PROPERTY, jms.JMSMessageID)
    if msg.user_id:
        props.set_received("JMSXUserID", bytes(msg.user_id).decode("utf-8", "replace"))
    if msg.group_id:
        props.set_received("JMSXGroupID", str(msg.group_id))
        props.set_received("JMSXGroupSeq", int(msg.group_sequence or 0), "i4")
    content_type = str(msg.content_type or "")
    if content_type not in ("", "None", OCTET_STREAM, OBJECT_CONTENT_TYPE):  # proton reads an absent one as 'None'
        props.set_received(CONTENT_TYPE_PROPERTY, content_type)


def _body_from_amqp(jms: JMSMessage, kind: str, body: Any) -> None:
    if kind == TEXT:
        jms.body = body if isinstance(body, str) else (bytes(body).decode("utf-8", "replace") if body else "")
    elif kind in (BYTES, OBJECT):
        jms.body = bytes(body) if isinstance(body, (bytes, bytearray, memoryview)) else b""
    elif kind == MAP:
        entries = {str(k): v for k, v in dict(body or {}).items()}
        jms.body_types = {k: t for k, v in entries.items() if (t := _dt_of(v)) is not None}
        jms.body = {k: plain(v) for k, v in entries.items()}
    elif kind == STREAM:
        items = list(body or [])
        jms.body_types = [_dt_of(v) for v in items]
        jms.body = [plain(v) for v in items]
    else:
        jms.body = None


def amqp_to_jms(msg: Message, scheme: AddressScheme, delivery_count: int = 0) -> JMSMessage:
    """The JMS view of a received AMQP message."""
    kind, body = _kind_of(msg, dict(msg.annotations or {}))
    jms = JMSMessage(message_type=kind)
    for _field, row in _FROM_AMQP:
        row(jms, msg, scheme)
    jms.JMSRedelivered = delivery_count > 0
    jms.properties.set_received("JMSXDeliveryCount", delivery_count + 1, "i4")
    _field_properties_from_amqp(jms, msg)
    _body_from_amqp(jms, kind, body)
    return jms


def _destinations_to_amqp(jms: JMSMessage, msg: Message, scheme: AddressScheme, to: str | None) -> None:
    """properties.to and reply-to, with the x-opt-jms-dest and x-opt-jms-reply-to annotations
    beside the class's."""
    if to:
        msg.address = to
    annotations: dict[Any, Any] = {MSG_TYPE: byte(TYPE_CODES[jms.message_type])}
    destination = scheme.to_jms(to) if to else jms.JMSDestination
    if destination:
        annotations[DEST] = byte(TOPIC_CODE if destination.startswith("topic://") else QUEUE_CODE)
    if jms.JMSReplyTo:
        msg.reply_to = scheme.from_jms(jms.JMSReplyTo) or ""
        annotations[REPLY_TO] = byte(TOPIC_CODE if jms.JMSReplyTo.startswith("topic://") else QUEUE_CODE)
    msg.annotations = annotations


def _headers_to_amqp(jms: JMSMessage, msg: Message, scheme: AddressScheme, to: str | None) -> None:
    msg.durable = jms.JMSDeliveryMode == PERSISTENT
    msg.priority = jms.JMSPriority
    if jms.JMSTimestamp:
        msg.creation_time = _seconds(jms.JMSTimestamp)
    if jms.JMSExpiration:
        msg.expiry_time = _seconds(jms.JMSExpiration)


def _ids_to_amqp(jms: JMSMessage, msg: Message, scheme: AddressScheme, to: str | None) -> None:
    """message-id (the sender's own, when a queue kept it) and correlation-id."""
    original_id = jms.properties.get(MESSAGE_ID_PROPERTY)
    if isinstance(original_id, str) and original_id:
        msg.id = original_id
    elif jms.JMSMessageID:
        msg.id = jms.JMSMessageID
    if jms.JMSCorrelationID is not None:
        msg.correlation_id = jms.JMSCorrelationID


def _type_to_amqp(jms: JMSMessage, msg: Message, scheme: AddressScheme, to: str | None) -> None:
    if jms.JMSType:
        msg.subject = jms.JMSType


def _properties_to_amqp(jms: JMSMessage, msg: Message, scheme: AddressScheme, to: str | None) -> None:
    """application-properties, typed, and the JMSX properties AMQP fields carry."""
    props = jms.properties
    application: dict[Any, Any] = {}
    for name, value in props.items():
        if name in FIELD_PROPERTIES or name.startswith(MQ_VIEW_PREFIX):
            continue
        application[name] = typed_value(value, props.dt(name))
    msg.properties = application  # type: ignore[assignment]  # proton's stub says None
    if "JMSXUserID" in props and props["JMSXUserID"]:
        msg.user_id = str(props["JMSXUserID"]).encode("utf-8")
    if "JMSXGroupID" in props and props["JMSXGroupID"]:
        msg.group_id = str(props["JMSXGroupID"])
        if "JMSXGroupSeq" in props and props["JMSXGroupSeq"] is not None:
            msg.group_sequence = int(props["JMSXGroupSeq"])  # type: ignore[call-overload]


def _body_to_amqp(jms: JMSMessage, msg: Message, scheme: AddressScheme, to: str | None) -> None:
    """The class's body section, and the content-type (a set one, except for data sections)."""
    kind, body = jms.message_type, jms.body
    if kind == TEXT:
        msg.body = "" if body is None else str(body)
    elif kind in (BYTES, OBJECT):
        msg.body = bytes(body or b"")  # type: ignore[call-overload]
        msg.inferred = True  # a data section, not an amqp-value binary
        msg.content_type = OBJECT_CONTENT_TYPE if kind == OBJECT else OCTET_STREAM
    elif kind == MAP:
        types = jms.body_types if isinstance(jms.body_types, dict) else {}
        msg.body = {str(k): typed_value(v, types.get(k, "")) for k, v in dict(body or {}).items()}  # type: ignore[call-overload]
    elif kind == STREAM:
        seq = list(body or [])  # type: ignore[call-overload]
        types_list = jms.body_types if isinstance(jms.body_types, list) else []
        msg.body = [typed_value(v, types_list[i] or "" if i < len(types_list) else "") for i, v in enumerate(seq)]
        msg.inferred = True  # an amqp-sequence
    content_type = jms.properties.get(CONTENT_TYPE_PROPERTY)
    if content_type and kind not in (BYTES, OBJECT):
        msg.content_type = str(content_type)


#: JMS -> AMQP, one row per group of lines of the table above, in order.
_TO_AMQP: tuple[tuple[str, Callable[[JMSMessage, Message, AddressScheme, str | None], None]], ...] = (
    ("JMSDestination, JMSReplyTo, message class", _destinations_to_amqp),
    ("JMSDeliveryMode, JMSPriority, JMSTimestamp, JMSExpiration", _headers_to_amqp),
    ("JMSMessageID, JMSCorrelationID", _ids_to_amqp),
    ("JMSType", _type_to_amqp),
    ("properties", _properties_to_amqp),
    ("body", _body_to_amqp),
)


def jms_to_amqp(jms: JMSMessage, scheme: AddressScheme, address: str | None = None) -> Message:
    """An AMQP message for a JMS message; ``address`` (properties.to) defaults to
    JMSDestination's."""
    msg = Message()
    to = address or scheme.from_jms(jms.JMSDestination)
    for _field, row in _TO_AMQP:
        row(jms, msg, scheme, to)
    return msg
