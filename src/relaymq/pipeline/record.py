"""One entry of the message log, and how a publication or a queue message becomes one.

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
import time
from dataclasses import dataclass, field, fields
from collections.abc import Sequence
from typing import Any, NamedTuple

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
#: :func:`publication_entry` builds directly).
stored_entry = operator.attrgetter(*STORED_COLUMNS)


def _usr_text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def from_publication(topic: str, payload: bytes, qos: int, properties: dict[str, Any] | None,
                     expiry_at: float | None = None, now: float | None = None) -> LogRecord:
    """A routed MQTT publication (a StoredMessage's fields) as a log record (the fields of
    :func:`publication_entry`)."""
    entry = publication_entry(topic, payload, qos, properties, expiry_at, now)
    return LogRecord(entry[0], entry[1], "", -1, *entry[2:])


class Publication(NamedTuple):
    """The fields of a routed MQTT publication the log keeps (the broker's StoredMessage has them too)."""

    topic: str
    payload: bytes
    qos: int
    properties: dict[str, Any] | None
    expiry_at: float | None = None


def publication_entry(topic: str, payload: bytes, qos: int, properties: dict[str, Any] | None,
                      expiry_at: float | None = None, now: float | None = None,
                      timestamp: float = 0.0) -> tuple[Any, ...]:
    """A routed MQTT publication as the log stores it (:func:`stored_entries`), archived at
    ``timestamp`` (0.0: "when appended", which the log gives it as it joins a batch), its
    expiry counted from ``now`` (default: the time of the call)."""
    return stored_entries([Publication(topic, payload, qos, properties, expiry_at)], [round(timestamp * 1_000_000)],
                          time.time() if now is None else now)[0]


def stored_entries(entries: Sequence[Any], stamps: Sequence[int], now: float | None = None) -> list[tuple[Any, ...]]:
    """Entries as the log stores them, each a tuple in STORED_COLUMNS order archived at its
    stamp (µs since the epoch): an entry already in that form is restamped; a publication
    (anything with a :class:`Publication`'s fields: the broker's StoredMessage, which the
    archive tap hands the log as it is) is mapped here, its expiry counted from ``now`` or
    else from its archive time. What the writer thread does with a commit's entries of a
    partition (``MessageLog._pack``), all in one call: a call per entry would cost this
    interpreter a fifth of what mapping one costs.

    MQTT 5 properties map the way the JMS/MQ mapping maps them: User Properties -> ``usr``,
    Correlation Data -> CorrelId, Response Topic -> ReplyToQ, Payload Format Indicator 1 ->
    Format MQSTR; QoS > 0 is persistent (mqtt.md: QoS 1/2 are stored by the broker). A
    publication whose properties cannot be mapped is kept without them (:func:`bare_entry`).
    """
    rows: list[tuple[Any, ...]] = []
    append = rows.append
    for entry, us in zip(entries, stamps, strict=True):
        at = us / 1_000_000
        if entry.__class__ is tuple:
            append((entry[0], entry[1], at, *entry[3:]))
            continue
        try:
            qos = entry.qos
            expiry_at = entry.expiry_at
            expiry = -1 if expiry_at is None else max(0, int((expiry_at - (at if now is None else now)) * 10))
            properties = entry.properties
            if properties:
                pairs = properties.get("user_property")
                usr = {}  # a loop, not a comprehension: that is a function call of its own
                if pairs:
                    for k, v in pairs:
                        usr[k if type(k) is str else str(k)] = v if type(v) is str else _usr_text(v)
                domain = usr.pop("mcd.Msd", None) if usr else None
                if not domain:
                    content_type = properties.get("content_type")
                    domain = "BLOB" if content_type is None else _domain_for_content_type(content_type)
                correl = properties.get("correlation_data")
                correl = bytes(correl)[:24] if correl else b""
                form = "MQSTR" if properties.get("payload_format_indicator") == 1 else ""
                reply_to = properties.get("response_topic")
                reply_to = str(reply_to) if reply_to else ""
            else:
                usr, domain, correl, form, reply_to = {}, "BLOB", b"", "", ""
            payload = entry.payload
            append((entry.topic, None, at, qos, b"", correl, 8, 0, 1 if qos > 0 else 0, expiry, form, 1208, 546,
                    reply_to, "", "", "relaymq mqtt", "", "", b"", 1, usr, domain,
                    payload if type(payload) is bytes else bytes(payload)))
        except Exception as error:  # noqa: BLE001 - the writer thread must go on: keep what can be kept
            append(bare_entry(entry, at, error))
    return rows


def bare_entry(message: Any, timestamp: float, error: Exception) -> tuple[Any, ...]:
    """The stored form of a publication whose properties :func:`stored_entries` could not
    map (a publisher inside the broker may hand it any value): its topic, QoS and payload
    archived at ``timestamp`` without them, and a log line saying so. The entry's place in
    its partition was given when it was submitted, so it is kept rather than dropped."""
    log.error("archive: the properties of a publication on %r could not be archived, its payload is: %s",
              message.topic, error)
    payload = message.payload
    if isinstance(payload, (bytes, bytearray, memoryview)):
        body = bytes(payload)
    else:
        body = str(payload).encode("utf-8", "replace")
    return publication_entry(str(message.topic), body, int(message.qos), None, None, timestamp, timestamp)


def _domain_for_content_type(content_type: Any) -> str:
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
                usr[child.name] = _usr_text(child.value)
    return LogRecord(queue=queue, qos=1 if md.Persistence == 1 else 0, usr=usr,
                     domain=message.domain, body=bytes(mq.body), **values)


def to_row(record: LogRecord) -> tuple[Any, ...]:
    """The record as a tuple in COLUMNS order."""
    return tuple(getattr(record, name) for name in COLUMNS)


def from_row(row: tuple[Any, ...] | list[Any]) -> LogRecord:
    """The inverse of to_row."""
    return LogRecord(**dict(zip(COLUMNS, row, strict=False)))
