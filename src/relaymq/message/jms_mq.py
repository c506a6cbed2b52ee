"""JMS <-> MQ format: the MQMD and MQRFH2 fields of every JMS header field and property
(formats-and-jms.md items 15-20; seed 002 whole; seed 000 l.2207-2264).

To MQ, both the MQMD field and the MQRFH2 field are set where both exist; from MQ, the MQRFH2
field wins when present (seed 002 l.34, l.66). The product's decisions where the seed is
silent are marked DECISION and listed in ``docs/formats.md``.

JMSExpiration (absolute, ms) <-> MQMD Expiry (relative, tenths of a second) needs a "now":
the caller's ``now_ms`` when given, else the message's JMSTimestamp (the send time), else - a
message with no timestamp - the clock, read only in that case (:func:`reference_ms`).
"""

from __future__ import annotations

import datetime as _dt
import string
import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field

from relaymq.message.constants import (
    MQENC_NATIVE,
    MQFMT_STRING,
    MQMF_LAST_MSG_IN_GROUP,
    MQMF_MSG_IN_GROUP,
    MQMT_DATAGRAM,
    MQMT_REQUEST,
    MQPER_NOT_PERSISTENT,
    MQPER_PERSISTENT,
    MQRO_COA_WITH_FULL_DATA,
    MQRO_COD_WITH_FULL_DATA,
    MQRO_DISCARD_MSG,
    MQRO_EXCEPTION_WITH_FULL_DATA,
    MQRO_EXPIRATION_WITH_FULL_DATA,
    MQRO_NAN,
    MQRO_PAN,
    MQRO_PASS_CORREL_ID,
    MQRO_PASS_MSG_ID,
)
from relaymq.message.ccsid import decode_text, encode_text
from relaymq.message.domains.jms_body import JMSMAP, JMSSTREAM, map_body, stream_body
from relaymq.message.errors import DataTypeError, MappingError
from relaymq.message.folders import is_usr_name
from relaymq.message.headers import MQMessage, fmt
from relaymq.message.jms import (
    BYTES,
    MAP,
    MESSAGE_TYPES,
    NON_PERSISTENT,
    NONE,
    OBJECT,
    PERSISTENT,
    STREAM,
    TEXT,
    JMSMessage,
    TypedProperties,
)
from relaymq.message.mqmd import MQMD
from relaymq.message.mqrfh2 import MQRFH2
from relaymq.message.tree import Element
from relaymq.message.typed import STRING

ID_PREFIX = "ID:"
ID_LENGTH = 24

#: JMS_IBM_Report_* property -> mask of MQMD Report bits it carries (seed 002 note 14).
REPORT_PROPERTIES = {
    "JMS_IBM_Report_Exception": MQRO_EXCEPTION_WITH_FULL_DATA,
    "JMS_IBM_Report_Expiration": MQRO_EXPIRATION_WITH_FULL_DATA,
    "JMS_IBM_Report_COA": MQRO_COA_WITH_FULL_DATA,
    "JMS_IBM_Report_COD": MQRO_COD_WITH_FULL_DATA,
    "JMS_IBM_Report_PAN": MQRO_PAN,
    "JMS_IBM_Report_NAN": MQRO_NAN,
    "JMS_IBM_Report_Pass_Msg_ID": MQRO_PASS_MSG_ID,
    "JMS_IBM_Report_Pass_Correl_ID": MQRO_PASS_CORREL_ID,
    "JMS_IBM_Report_Discard_Msg": MQRO_DISCARD_MSG,
}

#: Provider properties consumed by the mapping (everything else travels in ``usr``).
MAPPED_PROPERTIES = frozenset(
    {
        "JMSXAppID", "JMSXDeliveryCount", "JMSXGroupID", "JMSXGroupSeq", "JMSXUserID",
        "JMS_IBM_Character_Set", "JMS_IBM_Encoding", "JMS_IBM_Format", "JMS_IBM_Feedback",
        "JMS_IBM_Last_Msg_In_Group", "JMS_IBM_MQMD_CorrelId", "JMS_IBM_MQMD_MsgId",
        "JMS_IBM_MQMD_Persistence", "JMS_IBM_MQMD_ReplyToQ", "JMS_IBM_MQMD_ReplyToQMgr",
        "JMS_IBM_MsgType", "JMS_IBM_PutDate", "JMS_IBM_PutTime", "JMS_IBM_ArmCorrelator",
        "JMS_TOG_ARM_Correlator", "JMS_IBM_RMCorrelator", *REPORT_PROPERTIES,
    }
)

_HEX = set(string.hexdigits)


# -- identifiers (notes 1 and 4) ---------------------------------------------------------------
def _fit(raw: bytes) -> bytes:
    """Truncate or zero-pad to the 24 bytes of an MQ identifier."""
    return raw[:ID_LENGTH].ljust(ID_LENGTH, b"\x00")


def standard_id(value: object) -> bytes | None:
    """The 24 bytes of an identifier given as ``byte[]`` or ``'ID:'`` + hex digits, else None.

    DECISION: ``'ID:'`` followed by anything that is not an even run of hex digits is an
    arbitrary string (note 1 only covers hexadecimal).
    """
    if isinstance(value, (bytes, bytearray)):
        return _fit(bytes(value))
    if isinstance(value, str) and value.startswith(ID_PREFIX):
        digits = value[len(ID_PREFIX):]
        if len(digits) % 2 == 0 and all(c in _HEX for c in digits):
            return _fit(bytes.fromhex(digits))
    return None


def id_string(raw: bytes) -> str | None:
    """``'ID:'`` + 48 hex digits, or None for an all-zero identifier."""
    return None if not any(raw) else ID_PREFIX + raw.hex()


# -- destinations (note 16) ------------------------------------------------------------------
def split_queue_uri(uri: str) -> tuple[str, str]:
    """``queue://QM/Q`` -> (``QM``, ``Q``); ``queue:///Q`` and a plain name have no QMgr."""
    text = uri.split("?", 1)[0]
    if text.startswith("queue://"):
        qmgr, _, queue = text[len("queue://"):].partition("/")
        return qmgr, queue
    if text.startswith("topic://"):
        return "", text[len("topic://"):]
    return "", text


def queue_uri(qmgr: str, queue: str) -> str:
    return f"queue://{qmgr}/{queue}"


# -- time (JMSTimestamp <-> PutDate/PutTime) ---------------------------------------------------
def put_date_time(ms: int) -> tuple[str, str]:
    """UTC ``YYYYMMDD`` and ``HHMMSSTH`` (hundredths) for a Java time in milliseconds."""
    t = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    return t.strftime("%Y%m%d"), t.strftime("%H%M%S") + f"{t.microsecond // 10000:02d}"


def ascii_digits(text: str) -> bool:
    """``str.isdigit`` accepts '²' and '٣', which int() and strptime do not read as digits."""
    return bool(text) and all("0" <= c <= "9" for c in text)


def time_from_put(date: str, time: str) -> int | None:
    """Milliseconds for PutDate + PutTime, or None when they are blank or invalid."""
    if len(date) != 8 or len(time) < 6 or not ascii_digits(date + time):
        return None
    try:
        t = _dt.datetime.strptime(date + time[:6], "%Y%m%d%H%M%S").replace(tzinfo=_dt.UTC)
    except ValueError:
        return None
    hundredths = int(time[6:8]) if len(time) >= 8 else 0
    return int(t.timestamp()) * 1000 + hundredths * 10


MQLONG_MAX = 2**31 - 1


def reference_ms(now_ms: int | None, timestamp_ms: int) -> int:
    """The instant a relative expiry counts from: ``now_ms`` if given, else the JMSTimestamp,
    else (JMSTimestamp 0 means "not set") the current time."""
    if now_ms is not None:
        return now_ms
    if timestamp_ms:
        return timestamp_ms
    return int(_time.time() * 1000)


def relative_expiry(expiration_ms: int, reference: int, unit_ms: int, maximum: int) -> int:
    """Whole ``unit_ms`` units from ``reference`` until ``expiration_ms``, rounded up, at least
    1 (an already expired message expires at once) and at most ``maximum`` (the field's range)."""
    return min(maximum, max(1, -(-(expiration_ms - reference) // unit_ms)))


def _ccsid_of(value: object, default: int) -> int:
    if value is None:
        return default
    try:
        return int(str(value))
    except ValueError:
        raise MappingError(f"JMS_IBM_Character_Set {value!r} is not a CCSID number") from None


def _int_property(props: TypedProperties, name: str) -> int:
    """An integer property (an int, or text holding one); a MappingError names it otherwise."""
    value = props[name]
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise MappingError(f"{name} {value!r} is not an integer")


def _explicit(props: TypedProperties, name: str) -> object:
    """The value of a property the application set (None if absent, null or filled on receipt)."""
    return props[name] if props.is_explicit(name) else None


def _explicit_int(props: TypedProperties, name: str) -> int | None:
    return _int_property(props, name) if _explicit(props, name) is not None else None


# -- JMS -> MQ -------------------------------------------------------------------------------
@dataclass
class _ToMQ:
    """The MQ message being written: the MQMD and the RFH2 folders, filled row by row."""

    md: MQMD
    now_ms: int | None
    jms: Element = field(default_factory=lambda: Element("jms"))
    mcd: Element = field(default_factory=lambda: Element("mcd"))
    usr: Element = field(default_factory=lambda: Element("usr"))
    mqext: Element = field(default_factory=lambda: Element("mqext"))


_ToMQRow = Callable[[JMSMessage, _ToMQ], None]


def _correlation_id_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """CorrelId and, for an arbitrary string, jms.Cid (note 1)."""
    if jms.JMSCorrelationID is None:
        return
    std = standard_id(jms.JMSCorrelationID)
    if std is not None:
        out.md.CorrelId = std
    else:
        out.md.CorrelId = _fit(str(jms.JMSCorrelationID).encode("utf-8"))
        out.jms.add("Cid", str(jms.JMSCorrelationID))


def _delivery_mode_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """Persistence and jms.Dlv (DECISION: Dlv holds the JMS value 1 or 2)."""
    if jms.JMSDeliveryMode not in (PERSISTENT, NON_PERSISTENT):
        raise MappingError(f"JMSDeliveryMode {jms.JMSDeliveryMode} is not 1 or 2")
    out.md.Persistence = MQPER_PERSISTENT if jms.JMSDeliveryMode == PERSISTENT else MQPER_NOT_PERSISTENT
    out.jms.add("Dlv", jms.JMSDeliveryMode, dt="i4")


def _destination_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """jms.Dst only."""
    if jms.JMSDestination:
        out.jms.add("Dst", jms.JMSDestination)


def _expiration_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """Expiry (relative tenths of a second) and jms.Exp (absolute ms)."""
    if jms.JMSExpiration:
        ref = reference_ms(out.now_ms, jms.JMSTimestamp)
        out.md.Expiry = relative_expiry(jms.JMSExpiration, ref, 100, MQLONG_MAX)
        out.jms.add("Exp", jms.JMSExpiration, dt="i8")


def _message_id_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """MsgId (note 11: JMS_IBM_MQMD_MsgId replaces it when explicitly set)."""
    if jms.JMSMessageID:
        std = standard_id(jms.JMSMessageID)
        out.md.MsgId = std if std is not None else _fit(jms.JMSMessageID.encode("utf-8"))


def _priority_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """Priority only; jms.Pri is neither set nor read (note 2)."""
    if not 0 <= jms.JMSPriority <= 9:
        raise MappingError(f"JMSPriority {jms.JMSPriority} is outside 0-9")
    out.md.Priority = jms.JMSPriority


def _reply_to_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """ReplyToQ + ReplyToQMgr and jms.Rto; a request expects the reply."""
    if not jms.JMSReplyTo:
        out.md.MsgType = MQMT_DATAGRAM
        return
    # DECISION (note 16): a topic:// reply destination has no MQMD form - ReplyToQ names a
    # queue - so it travels in jms.Rto only (and is lost without an RFH2).
    if not jms.JMSReplyTo.startswith("topic://"):
        out.md.ReplyToQMgr, out.md.ReplyToQ = split_queue_uri(jms.JMSReplyTo)
    out.jms.add("Rto", jms.JMSReplyTo)
    out.md.MsgType = MQMT_REQUEST


def _timestamp_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """PutDate + PutTime and jms.Tms."""
    if jms.JMSTimestamp:
        out.md.PutDate, out.md.PutTime = put_date_time(jms.JMSTimestamp)
        out.jms.add("Tms", jms.JMSTimestamp, dt="i8")


def _type_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """mcd.Type; the class goes in mcd.Msd (DECISION, as IBM MQ JMS writes it)."""
    out.mcd.add("Msd", jms.message_type)
    if jms.JMSType:
        out.mcd.add("Type", jms.JMSType)


def _delivery_count_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """BackoutCount; the provider's value on receipt is not sent again."""
    count = _explicit_int(jms.properties, "JMSXDeliveryCount")
    if count is not None:
        out.md.BackoutCount = max(0, count - 1)


def _group_id_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """GroupId (an arbitrary string also in jms.Gid) and the in-group flag (note 5)."""
    gid = jms.properties.get("JMSXGroupID")
    if gid is None:
        return
    std = standard_id(gid)
    if std is not None:
        out.md.GroupId = std
    else:
        out.md.GroupId = _fit(str(gid).encode("utf-8"))
        out.jms.add("Gid", str(gid))
    out.md.MsgFlags |= MQMF_MSG_IN_GROUP


def _group_seq_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """MsgSeqNumber and jms.Seq."""
    if jms.properties.get("JMSXGroupSeq") is not None:
        out.md.MsgSeqNumber = _int_property(jms.properties, "JMSXGroupSeq")
        out.jms.add("Seq", out.md.MsgSeqNumber, dt="i4")


def _last_in_group_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """The last-in-group and in-group flags (note 8)."""
    if jms.properties.get("JMS_IBM_Last_Msg_In_Group"):
        out.md.MsgFlags |= MQMF_LAST_MSG_IN_GROUP | MQMF_MSG_IN_GROUP


def _report_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """Report: each JMS_IBM_Report_* property's bits (note 14)."""
    props = jms.properties
    for name, mask in REPORT_PROPERTIES.items():
        if props.get(name) is not None:
            out.md.Report |= _int_property(props, name) & mask


def _correlators_to_mq(jms: JMSMessage, out: _ToMQ) -> None:
    """mqext.Arm (either ARM property, note 6) and mqext.Wrm."""
    props = jms.properties
    arm = props.get("JMS_TOG_ARM_Correlator", props.get("JMS_IBM_ArmCorrelator"))
    if arm is not None:
        out.mqext.add("Arm", str(arm))
    if props.get("JMS_IBM_RMCorrelator") is not None:
        out.mqext.add("Wrm", str(props["JMS_IBM_RMCorrelator"]))


def _set_str(props: TypedProperties, name: str) -> object:
    """The property as text, when set at all."""
    return str(props[name]) if props.get(name) is not None else None


def _explicit_str(props: TypedProperties, name: str) -> object:
    """The property as text, when the application set it."""
    return str(props[name]) if _explicit(props, name) is not None else None


def _explicit_id(props: TypedProperties, name: str) -> object:
    """The 24-byte identifier the application set (note 11)."""
    value = _explicit(props, name)
    if value is None:
        return None
    raw = standard_id(value)
    if raw is None:
        raise MappingError(f"{name} must be a byte[] (or 'ID:' and hex digits), not {value!r}")
    return raw


#: JMS -> MQ, one row per JMS field that needs more than a copy, in the order of the seed's
#: tables (header fields, JMS-defined properties, provider-specific properties).
#: JMSRedelivered has no row: the queue manager keeps BackoutCount (note 3).
_TO_MQ: tuple[tuple[str, _ToMQRow], ...] = (
    ("JMSCorrelationID", _correlation_id_to_mq),
    ("JMSDeliveryMode", _delivery_mode_to_mq),
    ("JMSDestination", _destination_to_mq),
    ("JMSExpiration", _expiration_to_mq),
    ("JMSMessageID", _message_id_to_mq),
    ("JMSPriority", _priority_to_mq),
    ("JMSReplyTo", _reply_to_to_mq),
    ("JMSTimestamp", _timestamp_to_mq),
    ("JMSType", _type_to_mq),
    ("JMSXDeliveryCount", _delivery_count_to_mq),
    ("JMSXGroupID", _group_id_to_mq),
    ("JMSXGroupSeq", _group_seq_to_mq),
    ("JMS_IBM_Last_Msg_In_Group", _last_in_group_to_mq),
    ("JMS_IBM_Report_*", _report_to_mq),
    ("JMS_TOG_ARM_Correlator, JMS_IBM_ArmCorrelator, JMS_IBM_RMCorrelator", _correlators_to_mq),
)

#: JMS -> MQ for the properties that are one MQMD field: (property, MQMD field, how it is
#: read). Walked after :data:`_TO_MQ`, since notes 9-13 make JMS_IBM_MQMD_* override the
#: MQMD field only, never the RFH2 field, and only when the application set them (on a
#: received message they hold the old MQMD's values).
_PROPERTIES_TO_MD: tuple[tuple[str, str, Callable[[TypedProperties, str], object]], ...] = (
    ("JMSXAppID", "PutApplName", _set_str),
    ("JMSXUserID", "UserIdentifier", _set_str),
    ("JMS_IBM_Feedback", "Feedback", _explicit_int),
    ("JMS_IBM_MsgType", "MsgType", _explicit_int),
    ("JMS_IBM_PutDate", "PutDate", _explicit_str),
    ("JMS_IBM_PutTime", "PutTime", _explicit_str),
    ("JMS_IBM_MQMD_CorrelId", "CorrelId", _explicit_id),
    ("JMS_IBM_MQMD_MsgId", "MsgId", _explicit_id),
    ("JMS_IBM_MQMD_Persistence", "Persistence", _explicit_int),
    ("JMS_IBM_MQMD_ReplyToQ", "ReplyToQ", _explicit_str),
    ("JMS_IBM_MQMD_ReplyToQMgr", "ReplyToQMgr", _explicit_str),
)


def _usr_to_mq(props: TypedProperties, usr: Element) -> None:
    """Everything else (application properties, unmapped JMSX/JMS_ ones), typed. A received
    name usr cannot hold (not an XML name, or with a colon) is left out, and so are the later
    values of a repeated property (usr holds each name once)."""
    for name, value in props.items():
        if name in MAPPED_PROPERTIES or not is_usr_name(name):
            continue
        dt = props.dt(name)
        if value is None:
            usr.add(name, None, attrs={"xsi:nil": "true"})
        else:
            usr.add(name, value, dt=None if dt == STRING else dt)


def jms_to_mq(jms: JMSMessage, *, with_rfh2: bool = True, now_ms: int | None = None) -> MQMessage:
    """The MQ-format message for ``jms``. ``with_rfh2=False`` serves applications that cannot
    read an MQRFH2 (item 20): the RFH2-only fields are then dropped. ``now_ms`` is the send
    time, the base of the relative MQMD Expiry (see :func:`reference_ms`)."""
    props = jms.properties
    md = MQMD()
    out = _ToMQ(md, now_ms)
    for _field, row in _TO_MQ:
        row(jms, out)
    for name, attr, read in _PROPERTIES_TO_MD:
        value = read(props, name)
        if value is not None:
            setattr(md, attr, value)
    _usr_to_mq(props, out.usr)

    # Body: note 7 - Character_Set/Encoding/Format describe the payload after the RFH2.
    body_ccsid = _ccsid_of(props.get("JMS_IBM_Character_Set"), 1208)
    body_encoding = _int_property(props, "JMS_IBM_Encoding") if props.get("JMS_IBM_Encoding") is not None else MQENC_NATIVE
    body, default_format = _encode_body(jms, body_ccsid, body_encoding)
    body_format = str(props.get("JMS_IBM_Format", default_format)).strip()

    msg = MQMessage(md=md, body=body)
    if with_rfh2:
        rfh2 = MQRFH2(Encoding=body_encoding, CodedCharSetId=body_ccsid, Format=body_format, NameValueCCSID=1208)
        rfh2.folders = [f for f in (out.mcd, out.jms, out.usr, out.mqext) if f.children]
        msg.headers.append(rfh2)
        md.Format = MQRFH2.FORMAT_NAME
        md.Encoding, md.CodedCharSetId = MQENC_NATIVE, 1208
    else:
        md.Format = body_format
        md.Encoding, md.CodedCharSetId = body_encoding, body_ccsid
    return msg


def _encode_body(jms: JMSMessage, ccsid: int, encoding: int) -> tuple[bytes, str]:
    kind, body = jms.message_type, jms.body
    if kind == NONE or body is None:
        return b"", ""
    if kind == TEXT:
        return encode_text(str(body), ccsid, encoding, "JMS body"), fmt(MQFMT_STRING)
    if kind in (BYTES, OBJECT):
        return bytes(body), ""  # type: ignore[call-overload]
    if kind == MAP:
        folder = map_body(dict(body), body_types_dict(jms))  # type: ignore[call-overload]
        return JMSMAP.serialize(folder, ccsid, encoding), fmt(MQFMT_STRING)
    folder = stream_body(list(body), jms.body_types if isinstance(jms.body_types, list) else None)  # type: ignore[call-overload]
    return JMSSTREAM.serialize(folder, ccsid, encoding), fmt(MQFMT_STRING)


def body_types_dict(jms: JMSMessage) -> dict[str, str] | None:
    return jms.body_types if isinstance(jms.body_types, dict) else None


# -- MQ -> JMS -------------------------------------------------------------------------------
class _FromMQ:
    """The MQ message being read: the MQMD and the RFH2 folders (item 3: the body's mcd
    from the last RFH2, the others from the first)."""

    def __init__(self, msg: MQMessage, now_ms: int | None) -> None:
        self.msg, self.md, self.now_ms = msg, msg.md, now_ms
        first, last = msg.first_rfh2(), msg.last_rfh2()
        self.jms = first.folder("jms") if first else None
        self.usr = first.folder("usr") if first else None
        self.mqext = first.folder("mqext") if first else None
        self.mcd = last.folder("mcd") if last else None

    def jget(self, name: str) -> object:
        return self.jms.get(name) if self.jms is not None else None

    def jint(self, name: str) -> int | None:
        """An integer jms field; untyped text that is a number is accepted."""
        value = self.jget(name)
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        text = str(value).strip()
        if text[:1] in "+-":
            text = text[1:]
        if ascii_digits(text):
            return int(str(value).strip())
        element = self.jms.find(name) if self.jms is not None else None
        offset = element.offset if element is not None else None  # where it was in the bytes
        raise DataTypeError(f"jms.{name}", offset, f"{value!r} is not an integer")


_FromMQRow = Callable[[JMSMessage, _FromMQ], None]


def _correlation_id_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    cid = src.jget("Cid")
    jms.JMSCorrelationID = str(cid) if cid is not None else id_string(src.md.CorrelId)


def _delivery_mode_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    dlv = src.jint("Dlv")
    if dlv in (PERSISTENT, NON_PERSISTENT):
        jms.JMSDeliveryMode = int(dlv)
    else:  # DECISION: MQPER_PERSISTENCE_AS_Q_DEF reads as non-persistent (the queue default).
        jms.JMSDeliveryMode = PERSISTENT if src.md.Persistence == MQPER_PERSISTENT else NON_PERSISTENT


def _destination_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    dst = src.jget("Dst")
    jms.JMSDestination = str(dst) if dst is not None else None


def _timestamp_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    tms = src.jint("Tms")
    jms.JMSTimestamp = int(tms) if tms is not None else (time_from_put(src.md.PutDate, src.md.PutTime) or 0)


def _expiration_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    """jms.Exp, else the MQMD Expiry (the time left) from the reference time; after the timestamp."""
    exp = src.jint("Exp")
    if exp is not None:
        jms.JMSExpiration = int(exp)
    elif src.md.Expiry > 0:
        jms.JMSExpiration = reference_ms(src.now_ms, jms.JMSTimestamp) + src.md.Expiry * 100


def _message_id_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    jms.JMSMessageID = id_string(src.md.MsgId)


def _priority_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    jms.JMSPriority = src.md.Priority if 0 <= src.md.Priority <= 9 else 4


def _redelivered_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    jms.JMSRedelivered = src.md.BackoutCount > 0  # note 3


def _reply_to_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    rto = src.jget("Rto")
    if rto is not None:
        jms.JMSReplyTo = str(rto)
    elif src.md.ReplyToQ:
        jms.JMSReplyTo = queue_uri(src.md.ReplyToQMgr, src.md.ReplyToQ)


def _type_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    """The message class from mcd.Msd and JMSType from mcd.Type; for a message with no JMS
    class, a best guess from the body's format (item 20)."""
    mcd = src.mcd
    msd = str(mcd.get("Msd", "")) if mcd is not None else ""
    mtype = mcd.get("Type") if mcd is not None else None
    if msd in MESSAGE_TYPES:
        jms.message_type = msd
        jms.JMSType = str(mtype) if mtype is not None else None
        return
    jms.message_type = TEXT if src.msg.body_format == fmt(MQFMT_STRING) else BYTES
    if msd:  # a broker domain: JMSType as the mcd URI (DECISION)
        mset = mcd.get("Set", "") if mcd is not None else ""
        mfmt = mcd.get("Fmt", "") if mcd is not None else ""
        uri = f"mcd://{msd}/{mset}/{mtype or ''}"
        jms.JMSType = uri + (f"?format={mfmt}" if mfmt else "")
    elif mtype is not None:
        jms.JMSType = str(mtype)


def _app_id_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    if src.md.PutApplName:
        jms.properties.set_received("JMSXAppID", src.md.PutApplName)


def _delivery_count_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    jms.properties.set_received("JMSXDeliveryCount", src.md.BackoutCount + 1, "i4")  # decision: BackoutCount + 1


def _group_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    """JMSXGroupID and JMSXGroupSeq: jms.Gid and jms.Seq, else the MQMD's for a message in a group."""
    md, props = src.md, jms.properties
    gid = src.jget("Gid")
    in_group = bool(md.MsgFlags & MQMF_MSG_IN_GROUP) or any(md.GroupId)
    if gid is not None:
        props.set_received("JMSXGroupID", str(gid))
    elif in_group and any(md.GroupId):
        props.set_received("JMSXGroupID", id_string(md.GroupId))
    seq = src.jint("Seq")
    if seq is not None:
        props.set_received("JMSXGroupSeq", int(seq), "i4")
    elif in_group:
        props.set_received("JMSXGroupSeq", md.MsgSeqNumber, "i4")


def _user_id_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    if src.md.UserIdentifier:
        jms.properties.set_received("JMSXUserID", src.md.UserIdentifier)


def _provider_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    """Provider-specific properties: always set from the MQMD on receipt (note 9), marked as
    filled on receipt so that sending the message on does not apply them again."""
    msg, md, props = src.msg, src.md, jms.properties
    for name, read, dt in _PROVIDER_FROM_MQ:
        props.set_received(name, read(msg, md), dt)
    for name, mask in REPORT_PROPERTIES.items():
        if md.Report & mask:
            props.set_received(name, md.Report & mask, "i4")


def _correlators_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    if src.mqext is None:
        return
    for field_name, name in (("Arm", "JMS_TOG_ARM_Correlator"), ("Wrm", "JMS_IBM_RMCorrelator")):
        if src.mqext.get(field_name) is not None:
            jms.properties.set_received(name, str(src.mqext.get(field_name)))


def _usr_from_mq(jms: JMSMessage, src: _FromMQ) -> None:
    if src.usr is not None:
        for el in src.usr.children:
            jms.properties.set_received(el.name, el.value, el.dt)


#: The provider-specific properties that are an MQMD field or the body's description:
#: (property, how it is read, dt).
_PROVIDER_FROM_MQ: tuple[tuple[str, Callable[[MQMessage, MQMD], object], str | None], ...] = (
    ("JMS_IBM_Character_Set", lambda msg, md: str(msg.body_ccsid), None),
    ("JMS_IBM_Encoding", lambda msg, md: msg.body_encoding, "i4"),
    ("JMS_IBM_Format", lambda msg, md: msg.body_format, None),
    ("JMS_IBM_Feedback", lambda msg, md: md.Feedback, "i4"),
    ("JMS_IBM_MsgType", lambda msg, md: md.MsgType, "i4"),
    ("JMS_IBM_PutDate", lambda msg, md: md.PutDate, None),
    ("JMS_IBM_PutTime", lambda msg, md: md.PutTime, None),
    ("JMS_IBM_Last_Msg_In_Group", lambda msg, md: bool(md.MsgFlags & MQMF_LAST_MSG_IN_GROUP), None),
    ("JMS_IBM_MQMD_CorrelId", lambda msg, md: md.CorrelId, "bin.hex"),
    ("JMS_IBM_MQMD_MsgId", lambda msg, md: md.MsgId, "bin.hex"),
    ("JMS_IBM_MQMD_Persistence", lambda msg, md: md.Persistence, "i4"),
    ("JMS_IBM_MQMD_ReplyToQ", lambda msg, md: md.ReplyToQ, None),
    ("JMS_IBM_MQMD_ReplyToQMgr", lambda msg, md: md.ReplyToQMgr, None),
)

#: MQ -> JMS, one row per JMS field (RFH2 field first, else the MQMD field), in the order of
#: the seed's tables; the properties in the order a received message lists them.
_FROM_MQ: tuple[tuple[str, _FromMQRow], ...] = (
    ("JMSCorrelationID", _correlation_id_from_mq),
    ("JMSDeliveryMode", _delivery_mode_from_mq),
    ("JMSDestination", _destination_from_mq),
    ("JMSTimestamp", _timestamp_from_mq),
    ("JMSExpiration", _expiration_from_mq),
    ("JMSMessageID", _message_id_from_mq),
    ("JMSPriority", _priority_from_mq),
    ("JMSRedelivered", _redelivered_from_mq),
    ("JMSReplyTo", _reply_to_from_mq),
    ("JMSType", _type_from_mq),
    ("JMSXAppID", _app_id_from_mq),
    ("JMSXDeliveryCount", _delivery_count_from_mq),
    ("JMSXGroupID, JMSXGroupSeq", _group_from_mq),
    ("JMSXUserID", _user_id_from_mq),
    ("JMS_IBM_*", _provider_from_mq),
    ("JMS_TOG_ARM_Correlator, JMS_IBM_RMCorrelator", _correlators_from_mq),
    ("application properties", _usr_from_mq),
)


def mq_to_jms(msg: MQMessage, now_ms: int | None = None) -> JMSMessage:
    """The JMS message for an MQ-format message (RFH2 field first, else the MQMD field).
    ``now_ms`` is the receive time, the base of JMSExpiration when only the MQMD Expiry
    (the time left) gives it (see :func:`reference_ms`)."""
    src = _FromMQ(msg, now_ms)
    jms = JMSMessage(properties=TypedProperties())
    for _field, row in _FROM_MQ:
        row(jms, src)
    _decode_body(jms, msg)
    return jms


def _decode_body(jms: JMSMessage, msg: MQMessage) -> None:
    kind, data = jms.message_type, msg.body
    ccsid, encoding = msg.body_ccsid, msg.body_encoding
    if kind == NONE:
        jms.body = None
    elif kind == TEXT:
        jms.body = decode_text(data, ccsid, encoding, "JMS body", 0)
    elif kind in (BYTES, OBJECT):
        jms.body = data
    elif kind == MAP:
        root = JMSMAP.parse(data, ccsid, encoding).children[0]
        jms.body = {c.name: c.value for c in root.children}
        jms.body_types = {c.name: c.dt or STRING for c in root.children}
    elif kind == STREAM:
        root = JMSSTREAM.parse(data, ccsid, encoding).children[0]
        jms.body = [c.value for c in root.children]
        jms.body_types = [c.dt or STRING for c in root.children]

