"""One entry of the message log, and how a queue message becomes one (a publication:
:mod:`relaymq.pipeline.log_entries`).

Why one flat record: Spark, Arrow and SQLite all want columns, and an analyst wants to filter
on ``Priority`` or ``usr['i_state']`` without decoding MQ headers. So the MQMD fields that say
something about a message (formats-and-jms.md: identity, correlation, type, priority,
persistence, expiry, format, reply-to, origin context) become columns, the RFH2 ``usr`` folder
(or the MQTT 5 User Properties, which carry it over MQTT: flows-http.md decisions) becomes a
string map, and the body stays bytes with its message domain beside it.
"""

from __future__ import annotations

import logging
import operator
from dataclasses import dataclass, field, fields
from typing import Any

log = logging.getLogger("relaymq.archive")

#: MQMD field name -> column name, for the fields the log keeps.
MQMD_COLUMNS: dict[str, str] = {
    "MsgId": "msg_id",
    "CorrelId": "correl_id",
    "MsgType": "msg_type",
    "Priority": "priority",
    "Persistence": "persistence",
    "Expiry": "expiry",
    "Format": "format",
    "CodedCharSetId": "ccsid",
    "Encoding": "encoding",
    "ReplyToQ": "reply_to_q",
    "ReplyToQMgr": "reply_to_qmgr",
    "UserIdentifier": "user_identifier",
    "PutApplName": "put_appl_name",
    "PutDate": "put_date",
    "PutTime": "put_time",
    "GroupId": "group_id",
    "MsgSeqNumber": "msg_seq_number",
}

#: Domains guessed from an MQTT 5 Content Type when no ``mcd.Msd`` user property names one.
_CONTENT_TYPE_DOMAINS = (("json", "JSON"), ("xml", "XMLNSC"), ("text/", "BLOB"))


@dataclass(slots=True)
class LogRecord:
    """A message as the log keeps it; ``partition``/``seq``/``timestamp`` are set on append."""

    topic: str | None = None
    queue: str | None = None
    partition: str = ""
    seq: int = -1
    timestamp: float = 0.0  # seconds since the epoch, when the message was archived
    qos: int = 0
    msg_id: bytes = b""
    correl_id: bytes = b""
    msg_type: int = 8  # MQMT_DATAGRAM
    priority: int = 0
    persistence: int = 0
    expiry: int = -1  # tenths of a second, -1 unlimited (MQMD Expiry)
    format: str = ""
    ccsid: int = 1208
    encoding: int = 546
    reply_to_q: str = ""
    reply_to_qmgr: str = ""
    user_identifier: str = ""
    put_appl_name: str = ""
    put_date: str = ""
    put_time: str = ""
    group_id: bytes = b""
    msg_seq_number: int = 1
    usr: dict[str, str] = field(default_factory=dict)
    domain: str = "BLOB"
    body: bytes = b""

    @property
    def source(self) -> str:
        """What the rules match on: the topic of a publication or the queue of a put."""
        return self.topic if self.topic is not None else f"queue:{self.queue}"


#: Column names in record order (the Spark schema, the Arrow schema and SQLite follow it).
COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(LogRecord))
#: What the log stores of an entry (relaymq.store.log_batch): every column but partition and
#: seq, which the batch's key gives; ``usr`` as a dict.
STORED_COLUMNS: tuple[str, ...] = tuple(c for c in COLUMNS if c not in ("partition", "seq"))
#: A record as the log stores it: its values in STORED_COLUMNS order (the form
#: ``log_entries.publication_entry`` builds directly).
stored_entry = operator.attrgetter(*STORED_COLUMNS)


def usr_text(value: Any) -> str:
    """A ``usr`` value (an RFH2 folder's, an MQTT 5 User Property's) as the log's string map keeps it."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def domain_for_content_type(content_type: Any) -> str:
    """The message domain an MQTT 5 Content Type suggests (BLOB when none)."""
    if isinstance(content_type, str):
        lowered = content_type.lower()
        for marker, domain in _CONTENT_TYPE_DOMAINS:
            if marker in lowered:
                return domain
    return "BLOB"


def from_message(queue: str, message: Any) -> LogRecord:
    """A relaymq.message.Message put to ``queue`` as a log record: its MQMD fields, its first
    RFH2's ``usr`` folder, its domain, and the body bytes after the headers."""
    mq = message.mq
    md = mq.md
    values = {column: getattr(md, name) for name, column in MQMD_COLUMNS.items()}
    for name in ("format", "reply_to_q", "reply_to_qmgr", "user_identifier", "put_appl_name", "put_date", "put_time"):
        values[name] = str(values[name]).rstrip()
    values["format"] = mq.body_format.strip()
    values["ccsid"] = mq.body_ccsid
    values["encoding"] = mq.body_encoding
    rfh2 = mq.first_rfh2()
    usr: dict[str, str] = {}
    if rfh2 is not None:
        folder = rfh2.folder("usr")
        if folder is not None:
            for child in folder.children:
                usr[child.name] = usr_text(child.value)
    return LogRecord(queue=queue, qos=1 if md.Persistence == 1 else 0, usr=usr,
                     domain=message.domain, body=bytes(mq.body), **values)


def to_row(record: LogRecord) -> tuple[Any, ...]:
    """The record as a tuple in COLUMNS order."""
    return tuple(getattr(record, name) for name in COLUMNS)


def from_row(row: tuple[Any, ...] | list[Any]) -> LogRecord:
    """The inverse of to_row."""
    return LogRecord(**dict(zip(COLUMNS, row, strict=False)))
