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
def jms_to_mq(jms: JMSMessage, *, with_rfh2: bool = True, now_ms: int | None = None) -> MQMessage:
    """The MQ-format message for ``jms``. ``with_rfh2=False`` serves applications that cannot
    read an MQRFH2 (item 20): the RFH2-only fields are then dropped. ``now_ms`` is the send
    time, the base of the relative MQMD Expiry (see :func:`reference_ms`)."""
    props = jms.properties
    md = MQMD()
    jms_folder = Element("jms")
    mcd = Element("mcd")
    usr = Element("usr")
    mqext = Element("mqext")

    # JMSCorrelationID: CorrelId and, for an arbitrary string, jms.Cid (note 1).
    if jms.JMSCorrelationID is not None:
        std = standard_id(jms.JMSCorrelationID)
        if std is not None:
            md.CorrelId = std
        else:
            md.CorrelId = _fit(str(jms.JMSCorrelationID).encode("utf-8"))
            jms_folder.add("Cid", str(jms.JMSCorrelationID))
    # JMSDeliveryMode: Persistence and jms.Dlv (DECISION: Dlv holds the JMS value 1 or 2).
    if jms.JMSDeliveryMode not in (PERSISTENT, NON_PERSISTENT):
        raise MappingError(f"JMSDeliveryMode {jms.JMSDeliveryMode} is not 1 or 2")
    md.Persistence = MQPER_PERSISTENT if jms.JMSDeliveryMode == PERSISTENT else MQPER_NOT_PERSISTENT
    jms_folder.add("Dlv", jms.JMSDeliveryMode, dt="i4")
    # JMSDestination: jms.Dst only.
    if jms.JMSDestination:
        jms_folder.add("Dst", jms.JMSDestination)
    # JMSExpiration: Expiry (relative tenths of a second) and jms.Exp (absolute ms).
    if jms.JMSExpiration:
        ref = reference_ms(now_ms, jms.JMSTimestamp)
        md.Expiry = relative_expiry(jms.JMSExpiration, ref, 100, MQLONG_MAX)
        jms_folder.add("Exp", jms.JMSExpiration, dt="i8")
    # JMSMessageID: MsgId (note 11: JMS_IBM_MQMD_MsgId replaces it when explicitly set).
    if jms.JMSMessageID:
        std = standard_id(jms.JMSMessageID)
        md.MsgId = std if std is not None else _fit(jms.JMSMessageID.encode("utf-8"))
    # JMSPriority: Priority only; jms.Pri is neither set nor read (note 2).
    if not 0 <= jms.JMSPriority <= 9:
        raise MappingError(f"JMSPriority {jms.JMSPriority} is outside 0-9")
    md.Priority = jms.JMSPriority
    # JMSReplyTo: ReplyToQ + ReplyToQMgr and jms.Rto; a request expects the reply.
    if jms.JMSReplyTo:
        # DECISION (note 16): a topic:// reply destination has no MQMD form - ReplyToQ names a
        # queue - so it travels in jms.Rto only (and is lost without an RFH2).
        if not jms.JMSReplyTo.startswith("topic://"):
            md.ReplyToQMgr, md.ReplyToQ = split_queue_uri(jms.JMSReplyTo)
        jms_folder.add("Rto", jms.JMSReplyTo)
        md.MsgType = MQMT_REQUEST
    else:
        md.MsgType = MQMT_DATAGRAM
    # JMSTimestamp: PutDate + PutTime and jms.Tms.
    if jms.JMSTimestamp:
        md.PutDate, md.PutTime = put_date_time(jms.JMSTimestamp)
        jms_folder.add("Tms", jms.JMSTimestamp, dt="i8")
    # JMSType: mcd.Type; the class goes in mcd.Msd (DECISION, as IBM MQ JMS writes it).
    mcd.add("Msd", jms.message_type)
    if jms.JMSType:
        mcd.add("Type", jms.JMSType)
    # JMSRedelivered: nothing to set (the queue manager keeps BackoutCount, note 3).

    # JMS-defined properties (second table).
    if props.get("JMSXAppID") is not None:
        md.PutApplName = str(props["JMSXAppID"])
    count = _explicit_int(props, "JMSXDeliveryCount")  # the provider's on receipt: not re-sent
    if count is not None:
        md.BackoutCount = max(0, count - 1)
    if props.get("JMSXGroupID") is not None:
        gid = props["JMSXGroupID"]
        std = standard_id(gid)
        if std is not None:
            md.GroupId = std
        else:
            md.GroupId = _fit(str(gid).encode("utf-8"))
            jms_folder.add("Gid", str(gid))
        md.MsgFlags |= MQMF_MSG_IN_GROUP  # note 5
    if props.get("JMSXGroupSeq") is not None:
        md.MsgSeqNumber = _int_property(props, "JMSXGroupSeq")
        jms_folder.add("Seq", md.MsgSeqNumber, dt="i4")
    if props.get("JMSXUserID") is not None:
        md.UserIdentifier = str(props["JMSXUserID"])

    # Provider-specific properties (third table).
    if props.get("JMS_IBM_Last_Msg_In_Group"):
        md.MsgFlags |= MQMF_LAST_MSG_IN_GROUP | MQMF_MSG_IN_GROUP  # note 8
    for name, attr in (("JMS_IBM_Feedback", "Feedback"), ("JMS_IBM_MsgType", "MsgType")):
        number = _explicit_int(props, name)
        if number is not None:
            setattr(md, attr, number)
    for name, attr in (("JMS_IBM_PutDate", "PutDate"), ("JMS_IBM_PutTime", "PutTime")):
        if _explicit(props, name) is not None:
            setattr(md, attr, str(props[name]))
    for name, mask in REPORT_PROPERTIES.items():
        if props.get(name) is not None:
            md.Report |= _int_property(props, name) & mask
    arm = props.get("JMS_TOG_ARM_Correlator", props.get("JMS_IBM_ArmCorrelator"))  # note 6
    if arm is not None:
        mqext.add("Arm", str(arm))
    if props.get("JMS_IBM_RMCorrelator") is not None:
        mqext.add("Wrm", str(props["JMS_IBM_RMCorrelator"]))
    # Notes 9-13: JMS_IBM_MQMD_* override the MQMD field only, never the RFH2 field, and only
    # when the application set them: on a received message they hold the old MQMD's values.
    for name, attr in (("JMS_IBM_MQMD_CorrelId", "CorrelId"), ("JMS_IBM_MQMD_MsgId", "MsgId")):
        value = _explicit(props, name)
        if value is not None:
            raw = standard_id(value)
            if raw is None:
                raise MappingError(f"{name} must be a byte[] (or 'ID:' and hex digits), not {value!r}")
            setattr(md, attr, raw)
    persistence = _explicit_int(props, "JMS_IBM_MQMD_Persistence")
    if persistence is not None:
        md.Persistence = persistence
    for name, attr in (("JMS_IBM_MQMD_ReplyToQ", "ReplyToQ"), ("JMS_IBM_MQMD_ReplyToQMgr", "ReplyToQMgr")):
        if _explicit(props, name) is not None:
            setattr(md, attr, str(props[name]))

    # Everything else (application properties, unmapped JMSX/JMS_ ones) goes in usr, typed.
    # A received name usr cannot hold (not an XML name, or with a colon) is left out, and so
    # are the later values of a repeated property (usr holds each name once).
    for name, value in props.items():
        if name in MAPPED_PROPERTIES or not is_usr_name(name):
            continue
        dt = props.dt(name)
        if value is None:
            usr.add(name, None, attrs={"xsi:nil": "true"})
        else:
            usr.add(name, value, dt=None if dt == STRING else dt)

    # Body: note 7 - Character_Set/Encoding/Format describe the payload after the RFH2.
    body_ccsid = _ccsid_of(props.get("JMS_IBM_Character_Set"), 1208)
    body_encoding = _int_property(props, "JMS_IBM_Encoding") if props.get("JMS_IBM_Encoding") is not None else MQENC_NATIVE
    body, default_format = _encode_body(jms, body_ccsid, body_encoding)
    body_format = str(props.get("JMS_IBM_Format", default_format)).strip()

    msg = MQMessage(md=md, body=body)
    if with_rfh2:
        rfh2 = MQRFH2(Encoding=body_encoding, CodedCharSetId=body_ccsid, Format=body_format, NameValueCCSID=1208)
        rfh2.folders = [f for f in (mcd, jms_folder, usr, mqext) if f.children]
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
def mq_to_jms(msg: MQMessage, now_ms: int | None = None) -> JMSMessage:
    """The JMS message for an MQ-format message (RFH2 field first, else the MQMD field).
    ``now_ms`` is the receive time, the base of JMSExpiration when only the MQMD Expiry
    (the time left) gives it (see :func:`reference_ms`)."""
    md = msg.md
    first, last = msg.first_rfh2(), msg.last_rfh2()
    jf = first.folder("jms") if first else None
    usr = first.folder("usr") if first else None
    mqext = first.folder("mqext") if first else None
    mcd = last.folder("mcd") if last else None  # body attributes from the last RFH2 (item 3)

    def jget(name: str) -> object:
        return jf.get(name) if jf is not None else None

    def jint(name: str) -> int | None:
        """An integer jms field; untyped text that is a number is accepted."""
        value = jget(name)
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        text = str(value).strip()
        if text[:1] in "+-":
            text = text[1:]
        if ascii_digits(text):
            return int(str(value).strip())
        element = jf.find(name) if jf is not None else None
        offset = element.offset if element is not None else None  # where it was in the bytes
        raise DataTypeError(f"jms.{name}", offset, f"{value!r} is not an integer")

    props = TypedProperties()
    jms = JMSMessage(properties=props)

    cid = jget("Cid")
    jms.JMSCorrelationID = str(cid) if cid is not None else id_string(md.CorrelId)
    dlv = jint("Dlv")
    if dlv in (PERSISTENT, NON_PERSISTENT):
        jms.JMSDeliveryMode = int(dlv)
    else:  # DECISION: MQPER_PERSISTENCE_AS_Q_DEF reads as non-persistent (the queue default).
        jms.JMSDeliveryMode = PERSISTENT if md.Persistence == MQPER_PERSISTENT else NON_PERSISTENT
    dst = jget("Dst")
    jms.JMSDestination = str(dst) if dst is not None else None
    tms = jint("Tms")
    put_ms = time_from_put(md.PutDate, md.PutTime)
    jms.JMSTimestamp = int(tms) if tms is not None else (put_ms or 0)
    exp = jint("Exp")
    if exp is not None:
        jms.JMSExpiration = int(exp)
    elif md.Expiry > 0:
        jms.JMSExpiration = reference_ms(now_ms, jms.JMSTimestamp) + md.Expiry * 100
    jms.JMSMessageID = id_string(md.MsgId)
    jms.JMSPriority = md.Priority if 0 <= md.Priority <= 9 else 4
    jms.JMSRedelivered = md.BackoutCount > 0  # note 3
    rto = jget("Rto")
    if rto is not None:
        jms.JMSReplyTo = str(rto)
    elif md.ReplyToQ:
        jms.JMSReplyTo = queue_uri(md.ReplyToQMgr, md.ReplyToQ)
    msd = str(mcd.get("Msd", "")) if mcd is not None else ""
    mtype = mcd.get("Type") if mcd is not None else None
    if msd in MESSAGE_TYPES:
        jms.message_type = msd
        jms.JMSType = str(mtype) if mtype is not None else None
    else:
        body_is_text = msg.body_format == fmt(MQFMT_STRING)
        jms.message_type = TEXT if body_is_text else BYTES  # best guess (item 20)
        if msd:  # a broker domain: JMSType as the mcd URI (DECISION)
            mset = mcd.get("Set", "") if mcd is not None else ""
            mfmt = mcd.get("Fmt", "") if mcd is not None else ""
            uri = f"mcd://{msd}/{mset}/{mtype or ''}"
            jms.JMSType = uri + (f"?format={mfmt}" if mfmt else "")
        elif mtype is not None:
            jms.JMSType = str(mtype)

    # JMS-defined properties.
    if md.PutApplName:
        props.set_received("JMSXAppID", md.PutApplName)
    props.set_received("JMSXDeliveryCount", md.BackoutCount + 1, "i4")  # decision: BackoutCount + 1
    gid = jget("Gid")
    in_group = bool(md.MsgFlags & MQMF_MSG_IN_GROUP) or any(md.GroupId)
    if gid is not None:
        props.set_received("JMSXGroupID", str(gid))
    elif in_group and any(md.GroupId):
        props.set_received("JMSXGroupID", id_string(md.GroupId))
    seq = jint("Seq")
    if seq is not None:
        props.set_received("JMSXGroupSeq", int(seq), "i4")
    elif in_group:
        props.set_received("JMSXGroupSeq", md.MsgSeqNumber, "i4")
    if md.UserIdentifier:
        props.set_received("JMSXUserID", md.UserIdentifier)

    # Provider-specific properties: always set from the MQMD on receipt (note 9), marked as
    # filled on receipt so that sending the message on does not apply them again.
    props.set_received("JMS_IBM_Character_Set", str(msg.body_ccsid))
    props.set_received("JMS_IBM_Encoding", msg.body_encoding, "i4")
    props.set_received("JMS_IBM_Format", msg.body_format)
    props.set_received("JMS_IBM_Feedback", md.Feedback, "i4")
    props.set_received("JMS_IBM_MsgType", md.MsgType, "i4")
    props.set_received("JMS_IBM_PutDate", md.PutDate)
    props.set_received("JMS_IBM_PutTime", md.PutTime)
    props.set_received("JMS_IBM_Last_Msg_In_Group", bool(md.MsgFlags & MQMF_LAST_MSG_IN_GROUP))
    props.set_received("JMS_IBM_MQMD_CorrelId", md.CorrelId, "bin.hex")
    props.set_received("JMS_IBM_MQMD_MsgId", md.MsgId, "bin.hex")
    props.set_received("JMS_IBM_MQMD_Persistence", md.Persistence, "i4")
    props.set_received("JMS_IBM_MQMD_ReplyToQ", md.ReplyToQ)
    props.set_received("JMS_IBM_MQMD_ReplyToQMgr", md.ReplyToQMgr)
    for name, mask in REPORT_PROPERTIES.items():
        if md.Report & mask:
            props.set_received(name, md.Report & mask, "i4")
    if mqext is not None:
        if mqext.get("Arm") is not None:
            props.set_received("JMS_TOG_ARM_Correlator", str(mqext.get("Arm")))
        if mqext.get("Wrm") is not None:
            props.set_received("JMS_IBM_RMCorrelator", str(mqext.get("Wrm")))
    if usr is not None:
        for el in usr.children:
            props.set_received(el.name, el.value, el.dt)

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

