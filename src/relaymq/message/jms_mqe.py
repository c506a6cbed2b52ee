"""JMS <-> MQ Everyplace message fields (formats-and-jms.md item 21; seed 004 l.6964-7216).

An MQe message is a JMS message when it has ``MQe_JMS_VERSION`` (short, 1). Top-level fields:
``MQe_JMS_CLASS`` (jms_bytes/map/null/object/stream/text), ``MQe_JMS_BODY`` (bytes; text as
UTF-8), and the MQe message fields the headers map onto: JMSTimestamp -> ``Msg_Time``,
JMSCorrelationID -> ``Msg_CorrelID``, JMSExpiration -> ``Msg_ExpireTime`` (long: absolute),
JMSPriority -> ``Msg_Priority``, JMSReplyTo -> ``Msg_ReplyToQMgr`` + ``Msg_ReplyToQ``. The
headers MQe has no field for - delivery mode, redelivered, type - are in the embedded
``MQe_JMS_HEADER`` fields; properties in ``MQe_JMS_PROPERTIES`` (application),
``MQe_JMSX_PROPERTIES`` (standard) and ``MQe_JMS_PS_PROPERTIES`` (provider). JMSDestination
is not stored: the receiver recreates it. JMSMessageID is ``ID:`` + a 24-byte hash of
(``Msg_OriginQMgr``, ``Msg_Time``).

DECISIONS (documented in docs/formats.md): the MQe constants' field names are their symbolic
names (the seed gives no values); the hash is the first 24 bytes of SHA-256 over
``origin-qmgr NUL time``; an arbitrary-string JMSCorrelationID is also kept in
``MQe_JMS_HEADER.MQe_JMS_CORRELATIONID`` so that it survives (``Msg_CorrelID`` holds bytes);
map and stream bodies, which MQe JMS does not support, travel as JMSMap/JMSStream XML.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from relaymq.message.domains.jms_body import JMSMAP, JMSSTREAM, map_body, stream_body
from relaymq.message.errors import FormatError, MappingError, MQeFieldsError
from relaymq.message.jms import (
    APPLICATION,
    BYTES,
    MAP,
    NON_PERSISTENT,
    NONE,
    OBJECT,
    PERSISTENT,
    PROVIDER,
    STANDARD,
    STREAM,
    TEXT,
    JMSMessage,
    TypedProperties,
    property_family,
)
from relaymq.message.jms_mq import body_types_dict, id_string, split_queue_uri, standard_id, queue_uri
from relaymq.message.mqe_fields import (
    ASCII,
    BOOLEAN,
    BYTE,
    BYTE_ARRAY,
    DOUBLE,
    FIELDS,
    FLOAT,
    INT,
    LONG,
    SHORT,
    UNICODE,
    MQeFields,
    is_field_name,
)
from relaymq.message.typed import STRING

MQE_JMS_VERSION = "MQe_JMS_VERSION"
MQE_JMS_CLASS = "MQe_JMS_CLASS"
MQE_JMS_HEADER = "MQe_JMS_HEADER"
MQE_JMS_PROPERTIES = "MQe_JMS_PROPERTIES"
MQE_JMSX_PROPERTIES = "MQe_JMSX_PROPERTIES"
MQE_JMS_PS_PROPERTIES = "MQe_JMS_PS_PROPERTIES"
MQE_JMS_BODY = "MQe_JMS_BODY"
MQE_JMS_DELIVERYMODE = "MQe_JMS_DELIVERYMODE"
MQE_JMS_REDELIVERED = "MQe_JMS_REDELIVERED"
MQE_JMS_TYPE = "MQe_JMS_TYPE"
MQE_JMS_CORRELATIONID = "MQe_JMS_CORRELATIONID"
MSG_TIME = "Msg_Time"
MSG_CORRELID = "Msg_CorrelID"
MSG_EXPIRETIME = "Msg_ExpireTime"
MSG_PRIORITY = "Msg_Priority"
MSG_REPLYTOQMGR = "Msg_ReplyToQMgr"
MSG_REPLYTOQ = "Msg_ReplyToQ"
MSG_ORIGINQMGR = "Msg_OriginQMgr"

#: JMS class <-> MQe_JMS_CLASS (seed 004 table 5: a body-less message is ``jms_null``).
CLASS_TO_MQE = {BYTES: "jms_bytes", MAP: "jms_map", NONE: "jms_null", OBJECT: "jms_object", STREAM: "jms_stream", TEXT: "jms_text"}
MQE_TO_CLASS = {v: k for k, v in CLASS_TO_MQE.items()}

#: property dt -> MQe field type (and back). char travels as unicode and comes back a string.
DT_TO_MQE = {
    STRING: UNICODE, "char": UNICODE, "boolean": BOOLEAN, "i1": BYTE, "i2": SHORT,
    "i4": INT, "int": LONG, "i8": LONG, "r4": FLOAT, "r8": DOUBLE, "bin.hex": BYTE_ARRAY,
}
MQE_TO_DT = {UNICODE: STRING, "ascii": STRING, BOOLEAN: "boolean", BYTE: "i1", SHORT: "i2", INT: "i4", LONG: "i8", FLOAT: "r4", DOUBLE: "r8", BYTE_ARRAY: "bin.hex"}

_FAMILY_FOLDER = {APPLICATION: MQE_JMS_PROPERTIES, STANDARD: MQE_JMSX_PROPERTIES, PROVIDER: MQE_JMS_PS_PROPERTIES}


def message_id(origin_qmgr: str, time_ms: int) -> str:
    """``ID:`` + 24 bytes derived from the MQe unique id (origin queue manager, time)."""
    digest = hashlib.sha256(origin_qmgr.encode("utf-8") + b"\x00" + str(time_ms).encode("ascii")).digest()
    return "ID:" + digest[:24].hex()


def is_jms(fields: MQeFields) -> bool:
    return MQE_JMS_VERSION in fields


def jms_to_mqe(jms: JMSMessage, origin_qmgr: str = "") -> MQeFields:
    msg = MQeFields()
    msg.put(MQE_JMS_VERSION, SHORT, 1)
    msg.put(MQE_JMS_CLASS, "ascii", CLASS_TO_MQE[jms.message_type])
    if origin_qmgr:
        msg.put(MSG_ORIGINQMGR, "ascii", origin_qmgr)
    msg.put(MSG_TIME, LONG, jms.JMSTimestamp)
    header = MQeFields()
    if jms.JMSCorrelationID is not None:
        std = standard_id(jms.JMSCorrelationID)
        if std is not None:
            msg.put(MSG_CORRELID, BYTE_ARRAY, std)
        else:
            msg.put(MSG_CORRELID, BYTE_ARRAY, str(jms.JMSCorrelationID).encode("utf-8"))
            header.put(MQE_JMS_CORRELATIONID, UNICODE, str(jms.JMSCorrelationID))
    if jms.JMSExpiration:
        msg.put(MSG_EXPIRETIME, LONG, jms.JMSExpiration)  # long = absolute (everyplace item 5)
    if not 0 <= jms.JMSPriority <= 9:
        raise MappingError(f"JMSPriority {jms.JMSPriority} is outside 0-9")
    msg.put(MSG_PRIORITY, BYTE, jms.JMSPriority)
    if jms.JMSReplyTo:
        text = jms.JMSReplyTo
        qmgr, queue = text.split("+", 1) if "+" in text and "://" not in text else split_queue_uri(text)
        msg.put(MSG_REPLYTOQMGR, "ascii" if qmgr.isascii() else UNICODE, qmgr)
        msg.put(MSG_REPLYTOQ, "ascii" if queue.isascii() else UNICODE, queue)
    header.put(MQE_JMS_DELIVERYMODE, INT, jms.JMSDeliveryMode)
    header.put(MQE_JMS_REDELIVERED, BOOLEAN, jms.JMSRedelivered)
    if jms.JMSType is not None:
        header.put(MQE_JMS_TYPE, UNICODE, jms.JMSType)
    msg.put_fields(MQE_JMS_HEADER, header)
    folders = {name: MQeFields() for name in _FAMILY_FOLDER.values()}
    for name, value in jms.properties.items():
        if value is None or not is_field_name(name):
            continue  # MQeFields has no null scalar; a received name MQe cannot hold is left out
        folders[_FAMILY_FOLDER[property_family(name)]].put(name, DT_TO_MQE[jms.properties.dt(name)], value)
    for name, sub in folders.items():
        msg.put_fields(name, sub)
    body = _body_bytes(jms)
    if body is not None:
        msg.put(MQE_JMS_BODY, BYTE_ARRAY, body)
    return msg


def _body_bytes(jms: JMSMessage) -> bytes | None:
    kind, body = jms.message_type, jms.body
    if kind == NONE or body is None:
        return None
    if kind == TEXT:
        return str(body).encode("utf-8")
    if kind in (BYTES, OBJECT):
        return bytes(body)  # type: ignore[call-overload, no-any-return]
    if kind == MAP:
        return JMSMAP.serialize(map_body(dict(body), body_types_dict(jms)))  # type: ignore[call-overload]
    return JMSSTREAM.serialize(stream_body(list(body), jms.body_types if isinstance(jms.body_types, list) else None))  # type: ignore[call-overload]


def _field(fields: MQeFields, name: str, kinds: tuple[str, ...], where: str = "") -> object:
    """The value of ``name`` if present, checked to be one of ``kinds``; None when absent."""
    if name not in fields:
        return None
    kind = fields.get_type(name)
    if kind not in kinds:
        raise MQeFieldsError(where + name, None, f"is {kind}, expected {' or '.join(kinds)}")
    return fields.get(name)


def _sub_fields(fields: MQeFields, name: str) -> MQeFields | None:
    if name in fields and fields.get_type(name) != FIELDS:
        raise MQeFieldsError(name, None, f"is {fields.get_type(name)}, expected fields")
    return fields.get_fields(name)


_INTEGERS = (BYTE, SHORT, INT, LONG)
_TEXT = (ASCII, UNICODE)


class _FromMQe:
    """The MQe message being read, with its MQe_JMS_HEADER fields (field names in errors
    are prefixed ``MQe_JMS_HEADER.``)."""

    AT = MQE_JMS_HEADER + "."

    def __init__(self, msg: MQeFields) -> None:
        self.msg = msg
        self.header = _sub_fields(msg, MQE_JMS_HEADER) or MQeFields()

    def field(self, name: str, kinds: tuple[str, ...]) -> object:
        return _field(self.msg, name, kinds)

    def header_field(self, name: str, kinds: tuple[str, ...]) -> object:
        return _field(self.header, name, kinds, self.AT)


def _timestamp_from_mqe(jms: JMSMessage, src: _FromMQe) -> None:
    jms.JMSTimestamp = int(src.field(MSG_TIME, _INTEGERS) or 0)  # type: ignore[call-overload]


def _message_id_from_mqe(jms: JMSMessage, src: _FromMQe) -> None:
    """From the MQe unique id: the origin queue manager and the time (after the timestamp)."""
    origin = src.field(MSG_ORIGINQMGR, _TEXT)
    jms.JMSMessageID = message_id(str(origin or ""), jms.JMSTimestamp)


def _correlation_id_from_mqe(jms: JMSMessage, src: _FromMQe) -> None:
    cid = src.header_field(MQE_JMS_CORRELATIONID, _TEXT)
    raw_cid = src.field(MSG_CORRELID, (BYTE_ARRAY,))
    jms.JMSCorrelationID = str(cid) if cid is not None else (id_string(raw_cid) if isinstance(raw_cid, bytes) else None)


def _expiration_from_mqe(jms: JMSMessage, src: _FromMQe) -> None:
    exp = src.field(MSG_EXPIRETIME, (INT, LONG))
    if exp is not None:
        # an int ExpireTime is relative to creation, a long is absolute (everyplace item 5)
        jms.JMSExpiration = int(exp) if src.msg.get_type(MSG_EXPIRETIME) == LONG else jms.JMSTimestamp + int(exp)  # type: ignore[call-overload]


def _priority_from_mqe(jms: JMSMessage, src: _FromMQe) -> None:
    priority = src.field(MSG_PRIORITY, _INTEGERS)
    if priority is not None and not 0 <= priority <= 9:  # type: ignore[operator]
        raise MQeFieldsError(MSG_PRIORITY, None, f"{priority} is outside 0-9")
    jms.JMSPriority = 4 if priority is None else int(priority)  # type: ignore[call-overload]


def _reply_to_from_mqe(jms: JMSMessage, src: _FromMQe) -> None:
    queue = src.field(MSG_REPLYTOQ, _TEXT)
    if queue:
        jms.JMSReplyTo = queue_uri(str(src.field(MSG_REPLYTOQMGR, _TEXT) or ""), str(queue))


def _delivery_mode_from_mqe(jms: JMSMessage, src: _FromMQe) -> None:
    mode = src.header_field(MQE_JMS_DELIVERYMODE, _INTEGERS)
    if mode is not None and mode not in (PERSISTENT, NON_PERSISTENT):
        raise MQeFieldsError(src.AT + MQE_JMS_DELIVERYMODE, None, f"{mode} is not 1 (non-persistent) or 2 (persistent)")
    jms.JMSDeliveryMode = PERSISTENT if mode is None else int(mode)


def _redelivered_from_mqe(jms: JMSMessage, src: _FromMQe) -> None:
    jms.JMSRedelivered = bool(src.header_field(MQE_JMS_REDELIVERED, (BOOLEAN,)))


def _type_from_mqe(jms: JMSMessage, src: _FromMQe) -> None:
    t = src.header_field(MQE_JMS_TYPE, _TEXT)
    jms.JMSType = str(t) if t is not None else None


def _properties_from_mqe(jms: JMSMessage, src: _FromMQe) -> None:
    """The three property folders: application, JMSX, provider."""
    props = TypedProperties()
    for folder_name in (MQE_JMS_PROPERTIES, MQE_JMSX_PROPERTIES, MQE_JMS_PS_PROPERTIES):
        sub = _sub_fields(src.msg, folder_name)
        if sub is None:
            continue
        for name, kind, value in sub.items():
            where = f"{folder_name}.{name}"
            if kind not in MQE_TO_DT:
                raise MQeFieldsError(where, None, f"has MQe type {kind}, which a JMS property cannot hold")
            try:
                props.set_received(name, value if value is not None or kind != BYTE_ARRAY else b"", MQE_TO_DT[kind])
            except FormatError as exc:
                raise MQeFieldsError(where, None, exc.reason) from None
    jms.properties = props


def _body_from_mqe(jms: JMSMessage, src: _FromMQe) -> None:
    """MQe_JMS_BODY as the class's body; for a text body that is not UTF-8 the error's offset
    is the byte offset in MQe_JMS_BODY."""
    body = src.field(MQE_JMS_BODY, (BYTE_ARRAY,))
    data = body if isinstance(body, bytes) else b""
    if jms.message_type == TEXT:
        try:
            jms.body = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MQeFieldsError(MQE_JMS_BODY, exc.start, f"text body is not UTF-8: {exc.reason}") from None
    elif jms.message_type in (BYTES, OBJECT):
        jms.body = data
    elif jms.message_type == MAP:
        root = JMSMAP.parse(data).children[0]
        jms.body = {c.name: c.value for c in root.children}
        jms.body_types = {c.name: c.dt or STRING for c in root.children}
    elif jms.message_type == STREAM:
        root = JMSSTREAM.parse(data).children[0]
        jms.body = [c.value for c in root.children]
        jms.body_types = [c.dt or STRING for c in root.children]


#: MQe -> JMS, one row per JMS field, in the order the fields are checked.
_FROM_MQE: tuple[tuple[str, Callable[[JMSMessage, _FromMQe], None]], ...] = (
    ("JMSTimestamp", _timestamp_from_mqe),
    ("JMSMessageID", _message_id_from_mqe),
    ("JMSCorrelationID", _correlation_id_from_mqe),
    ("JMSExpiration", _expiration_from_mqe),
    ("JMSPriority", _priority_from_mqe),
    ("JMSReplyTo", _reply_to_from_mqe),
    ("JMSDeliveryMode", _delivery_mode_from_mqe),
    ("JMSRedelivered", _redelivered_from_mqe),
    ("JMSType", _type_from_mqe),
    ("properties", _properties_from_mqe),
    ("body", _body_from_mqe),
)


def mqe_to_jms(msg: MQeFields, destination: str | None = None) -> JMSMessage:
    """The JMS message in ``msg``; ``destination`` is the queue it was received from.

    Raises :class:`MQeFieldsError` naming the field (``Msg_Priority``,
    ``MQe_JMS_HEADER.MQe_JMS_DELIVERYMODE``, ``MQe_JMS_PROPERTIES.name``...) for anything that
    is not a valid MQe JMS message; for a text body that is not UTF-8 the offset is the byte
    offset in ``MQe_JMS_BODY``."""
    version = _field(msg, MQE_JMS_VERSION, _INTEGERS)
    if version is None:
        raise MQeFieldsError(MQE_JMS_VERSION, None, "missing: not an MQe JMS message")
    if version != 1:
        raise MQeFieldsError(MQE_JMS_VERSION, None, f"version {version} is not supported (1 is)")
    cls = _field(msg, MQE_JMS_CLASS, _TEXT)
    if cls not in MQE_TO_CLASS:
        raise MQeFieldsError(MQE_JMS_CLASS, None, f"{cls!r} is not a JMS message class ({', '.join(sorted(MQE_TO_CLASS))})")
    jms = JMSMessage(message_type=MQE_TO_CLASS[cls], JMSDestination=destination)
    src = _FromMQe(msg)
    for _field_name, row in _FROM_MQE:
        row(jms, src)
    return jms
