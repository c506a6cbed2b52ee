"""How a REST request becomes a message and a message a REST response, in the shape of IBM
MQ's messaging REST API v3 (docs/rest.md): the text body, the ``ibm-mq-md-*`` headers and
the ``ibm-mq-usr`` user properties; and IBM's JSON error body.

Pure functions, no I/O: the handlers in relaymq.qmgr.rest call them.

``ibm-mq-usr`` uses the syntax of MQ's HTTP bridge ``x-msg-usr``: comma-separated
``name;value;type`` items, the type one of string, boolean, i1, i2, i4, i8, r4, r8 (string
values may be double-quoted; a missing type means string). Several header lines add up.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from relaymq.message.message import Message

TEXT_FORMAT = "MQSTR"
_MQPER_NOT_PERSISTENT, _MQPER_PERSISTENT = 0, 1
_MQEI_UNLIMITED = -1
USR_TYPES = ("string", "boolean", "i1", "i2", "i4", "i8", "r4", "r8")
_INT_RANGES = {"i1": 8, "i2": 16, "i4": 32, "i8": 64}


class RestInputError(ValueError):
    """A request header or parameter with a value IBM's API would reject (HTTP 400)."""

    def __init__(self, header: str, message: str) -> None:
        self.header = header
        super().__init__(f"{header}: {message}")


def parse_id(value: str, header: str, *, allow_text: bool) -> bytes:
    """A v3 message or correlation id: ``ID:`` + up to 48 hex digits; a correlation id may
    also be an application string (v3), which is stored as its UTF-8 bytes."""
    if value.startswith("ID:"):
        digits = value[3:]
        if not re.fullmatch(r"(?:[0-9a-fA-F]{2}){1,24}", digits):
            raise RestInputError(header, f"{value!r} is not ID: followed by up to 48 hex digits")
        return bytes.fromhex(digits).ljust(24, b"\0")
    if not allow_text:
        raise RestInputError(header, f"{value!r} must start with ID:")
    raw = value.encode("utf-8")
    if not raw or len(raw) > 24:
        raise RestInputError(header, "an application correlation id has 1 to 24 bytes")
    return raw.ljust(24, b"\0")


def format_id(raw: bytes) -> str:
    return "ID:" + raw.hex()


def _split_items(text: str) -> list[str]:
    """Split on commas outside double quotes."""
    items: list[str] = []
    current: list[str] = []
    quoted = False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def parse_usr(values: list[str]) -> list[tuple[str, object, str]]:
    """(name, value, type) of every ``ibm-mq-usr`` item."""
    out: list[tuple[str, object, str]] = []
    for text in values:
        for item in _split_items(text):
            parts = item.split(";")
            if len(parts) == 2:
                parts.append("string")
            if len(parts) < 3:
                raise RestInputError("ibm-mq-usr", f"{item!r} is not name;value;type")
            name, raw, kind = parts[0].strip(), ";".join(parts[1:-1]).strip(), parts[-1].strip()
            if kind not in USR_TYPES:
                raise RestInputError("ibm-mq-usr", f"type {kind!r} of {name!r} is not one of {', '.join(USR_TYPES)}")
            out.append((name, _usr_value(name, raw, kind), kind))
    return out


def _usr_value(name: str, raw: str, kind: str) -> object:
    try:
        if kind == "string":
            return raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == '"' else raw
        if kind == "boolean":
            if raw.lower() not in ("true", "false"):
                raise ValueError(raw)
            return raw.lower() == "true"
        if kind in _INT_RANGES:
            value = int(raw)
            bits = _INT_RANGES[kind]
            if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
                raise ValueError(raw)
            return value
        return float(raw)
    except ValueError:
        raise RestInputError("ibm-mq-usr", f"{raw!r} is not a {kind} value for {name!r}") from None


def format_usr(properties: dict[str, object], types: dict[str, str]) -> str:
    """User properties as one ``ibm-mq-usr`` value."""
    items = []
    for name, value in properties.items():
        kind = types.get(name, "string")
        if kind not in USR_TYPES:
            continue  # bytes and other JMS types have no ibm-mq-usr form
        if kind == "string":
            text = '"' + str(value) + '"'
        elif kind == "boolean":
            text = "true" if value else "false"
        else:
            text = str(value)
        items.append(f"{name};{text};{kind}")
    return ",".join(items)


@dataclass
class PutOptions:
    """What the request headers say about the message to put."""

    priority: int = -1
    persistent: bool = True
    expiry_ms: int | None = None
    correl_id: bytes | None = None
    reply_to: tuple[str, str] | None = None
    usr: list[tuple[str, object, str]] | None = None
    text_correlation: bool = False


def put_options(header: Callable[[str], str | None], usr_values: list[str]) -> PutOptions:
    """Read the ibm-mq-md-* request headers (``header(name)`` gives a value or None) and
    the ibm-mq-usr header lines (``usr_values``)."""
    options = PutOptions()
    priority = header("ibm-mq-md-priority")
    if priority is not None:
        if not priority.strip().isdigit() or not 0 <= int(priority) <= 9:
            raise RestInputError("ibm-mq-md-priority", f"{priority!r} is not 0-9")
        options.priority = int(priority)
    persistence = header("ibm-mq-md-persistence")
    if persistence is not None:
        if persistence not in ("persistent", "nonPersistent"):
            raise RestInputError("ibm-mq-md-persistence", f"{persistence!r} is not persistent or nonPersistent")
        options.persistent = persistence == "persistent"
    expiry = header("ibm-mq-md-expiry")
    if expiry is not None and expiry != "unlimited":
        if not expiry.strip().isdigit() or int(expiry) <= 0:
            raise RestInputError("ibm-mq-md-expiry", f"{expiry!r} is not unlimited or a positive number of ms")
        options.expiry_ms = int(expiry)
    correl = header("ibm-mq-md-correlationId")
    if correl is not None:
        options.correl_id = parse_id(correl, "ibm-mq-md-correlationId", allow_text=True)
        options.text_correlation = not correl.startswith("ID:")
    reply = header("ibm-mq-md-replyTo")
    if reply is not None:
        queue, _, qmgr = reply.partition("@")
        if not queue:
            raise RestInputError("ibm-mq-md-replyTo", f"{reply!r} is not queue[@qmgr]")
        options.reply_to = (queue, qmgr)
    if usr_values:
        options.usr = parse_usr(usr_values)
    return options


def build_message(text: str, options: PutOptions) -> Message:
    """An MQSTR message, or a JMS TextMessage (MQRFH2) when there are user properties or an
    application correlation id (as IBM's v3 does)."""
    if options.usr or options.text_correlation:
        # the JMS mapping is imported by the first message that has one (issue 16, row 9)
        from relaymq.message.jms import JMSMessage

        jms = JMSMessage(message_type="jms_text", body=text,
                         JMSPriority=options.priority if options.priority >= 0 else 4,
                         JMSDeliveryMode=2 if options.persistent else 1)
        for name, value, kind in options.usr or []:
            jms.properties.set(name, value, kind)
        if options.correl_id is not None:
            jms.JMSCorrelationID = options.correl_id.rstrip(b"\0").decode("utf-8") if options.text_correlation \
                else options.correl_id
        message = Message.from_jms(jms)
    else:
        message = Message()
        message.mq.md.Format = TEXT_FORMAT
        message.mq.md.CodedCharSetId = 1208
        message.mq.body = text.encode("utf-8")
    md = message.mq.md
    md.Priority = options.priority
    md.Persistence = _MQPER_PERSISTENT if options.persistent else _MQPER_NOT_PERSISTENT
    if options.expiry_ms is not None:
        md.Expiry = max(1, options.expiry_ms // 100)  # MQMD.Expiry is in tenths of a second
    if options.correl_id is not None:
        md.CorrelId = options.correl_id
    if options.reply_to is not None:
        md.ReplyToQ, md.ReplyToQMgr = options.reply_to
    return message


def response_headers(message: Message) -> list[tuple[str, str]]:
    """The ibm-mq-md-* and ibm-mq-usr headers of a message returned by GET or DELETE."""
    md = message.mq.md
    headers = [("ibm-mq-md-messageId", format_id(md.MsgId)),
               ("ibm-mq-md-priority", str(md.Priority)),
               ("ibm-mq-md-persistence", "persistent" if md.Persistence == _MQPER_PERSISTENT else "nonPersistent"),
               ("ibm-mq-md-expiry", "unlimited" if md.Expiry in (_MQEI_UNLIMITED, 0) else str(md.Expiry * 100))]
    if any(md.CorrelId):
        headers.append(("ibm-mq-md-correlationId", format_id(md.CorrelId)))
    reply_q = md.ReplyToQ.strip() if isinstance(md.ReplyToQ, str) else ""
    if reply_q:
        reply_qm = md.ReplyToQMgr.strip() if isinstance(md.ReplyToQMgr, str) else ""
        headers.append(("ibm-mq-md-replyTo", f"{reply_q}@{reply_qm}" if reply_qm else reply_q))
    if message.mq.rfh2s():
        from relaymq.message.jms import APPLICATION, property_family

        jms = message.jms()
        # Only the application's properties: JMSX* and JMS_IBM_* are the provider's.
        usr = format_usr({k: jms.properties[k] for k in jms.properties if property_family(k) == APPLICATION},
                         jms.properties.types())
        if usr:
            headers.append(("ibm-mq-usr", usr))
    return headers


def message_summary(message: Message) -> dict[str, Any]:
    """One entry of a messagelist answer: the ids and MQMD facts, no body."""
    md = message.mq.md
    summary: dict[str, Any] = {"messageId": format_id(md.MsgId), "priority": md.Priority,
                               "persistence": "persistent" if md.Persistence == _MQPER_PERSISTENT else "nonPersistent",
                               "expiry": "unlimited" if md.Expiry in (_MQEI_UNLIMITED, 0) else md.Expiry * 100,
                               "format": message.mq.body_format.strip(), "putDate": md.PutDate.strip(),
                               "putTime": md.PutTime.strip()}
    if any(md.CorrelId):
        summary["correlationId"] = format_id(md.CorrelId)
    reply_q = md.ReplyToQ.strip() if isinstance(md.ReplyToQ, str) else ""
    if reply_q:
        reply_qm = md.ReplyToQMgr.strip() if isinstance(md.ReplyToQMgr, str) else ""
        summary["replyTo"] = f"{reply_q}@{reply_qm}" if reply_qm else reply_q
    if md.UserIdentifier.strip():
        summary["userIdentifier"] = md.UserIdentifier.strip()
    return summary


def body_of(message: Message) -> tuple[bytes, str]:
    """(body bytes, content type): text for MQSTR and JMS text messages, else the bytes."""
    if message.mq.rfh2s():
        jms = message.jms()
        if jms.message_type == "jms_text" and isinstance(jms.body, str):
            return jms.body.encode("utf-8"), "text/plain;charset=utf-8"
    if message.mq.body_format.strip() == TEXT_FORMAT:
        ccsid = message.mq.body_ccsid
        encoding = "utf-8" if ccsid in (1208, 0) else "latin-1" if ccsid in (819, 1252) else "utf-8"
        try:
            return message.mq.body.decode(encoding).encode("utf-8"), "text/plain;charset=utf-8"
        except UnicodeDecodeError:
            pass
    return message.mq.body, "application/octet-stream"


def error_body(status_message_id: str, message: str, *, reason: int | None = None,
               explanation: str = "", action: str = "") -> bytes:
    """IBM's REST error shape: ``{"error": [{type, msgId, message, explanation, action,
    completionCode, reasonCode}]}``."""
    item: dict[str, Any] = {"type": "rest", "msgId": status_message_id, "message": message,
                            "explanation": explanation or message, "action": action or "See the message."}
    if reason is not None:
        item.update({"completionCode": 2, "reasonCode": reason})
    return json.dumps({"error": [item]}).encode()
