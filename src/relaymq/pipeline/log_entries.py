"""What the archive tap hands the message log, as the log stores it: a routed MQTT publication
mapped to the stored columns (STORED_COLUMNS), or an entry already in that form (a queue put's).

Why columns, built here: the writer thread turns each commit's entries of a partition into
record batches kept column by column (:mod:`relaymq.store.log_columns`). Building a tuple per
publication and then zipping the tuples into columns cost the writer more than the mapping
itself (issue 14, "Message-log append"), and thirteen of the columns hold the same value for
every publication (the MQMD defaults of a datagram), which the encoder then had to find again
by scanning each. So one mapping (:func:`publication_fields`: a publication's own values) serves
both forms: :func:`stored_columns` appends its values to the columns a publication fills and
gives the others as one :class:`log_columns.Constant` each; :func:`publication_entry` is the
one-entry row of the same mapping. This module is compiled with mypyc (``relaymq.native_build``).

MQTT 5 properties map the way the JMS/MQ mapping maps them: User Properties -> ``usr``,
Correlation Data -> CorrelId, Response Topic -> ReplyToQ, Payload Format Indicator 1 -> Format
MQSTR; QoS > 0 is persistent (mqtt.md: QoS 1/2 are stored by the broker). A publication whose
properties cannot be mapped is kept without them (:func:`bare_fields`).
"""

from __future__ import annotations

import time
from dataclasses import fields
from typing import Any, NamedTuple

from relaymq.pipeline.record import STORED_COLUMNS, LogRecord, domain_for_content_type, log, usr_text
from relaymq.store.log_columns import Column, Constant

#: The stored columns a publication's own values fill, in :func:`publication_fields`' order
#: (the archive timestamp first: the log gives it).
PUBLICATION_FIELDS: tuple[str, ...] = ("timestamp", "topic", "qos", "correl_id", "persistence", "expiry", "format",
                                       "reply_to_q", "usr", "domain", "body")
#: What every publication holds in the other stored columns: no queue, the MQMD of a datagram
#: (LogRecord's defaults) from relaymq's MQTT listener.
PUBLICATION_CONSTANTS: dict[str, Any] = {
    **{f.name: f.default for f in fields(LogRecord) if f.name in STORED_COLUMNS and f.name not in PUBLICATION_FIELDS},
    "put_appl_name": "relaymq mqtt",
}
if sorted((*PUBLICATION_FIELDS, *PUBLICATION_CONSTANTS)) != sorted(STORED_COLUMNS):  # pragma: no cover
    raise AssertionError("every stored column is a publication's field or a constant, once")
#: Each stored column in order: its index in PUBLICATION_FIELDS, or -1 for a constant.
_PLACES: tuple[int, ...] = tuple(PUBLICATION_FIELDS.index(name) if name in PUBLICATION_FIELDS else -1
                                 for name in STORED_COLUMNS)
_CONSTANTS: tuple[Any, ...] = tuple(PUBLICATION_CONSTANTS.get(name) for name in STORED_COLUMNS)
_TS = STORED_COLUMNS.index("timestamp")
_NO_PROPERTIES: dict[str, Any] = {}

#: A publication's values of PUBLICATION_FIELDS.
Fields = tuple[float, Any, Any, bytes, int, int, str, str, dict[str, str], str, bytes]


class Publication(NamedTuple):
    """The fields of a routed MQTT publication the log keeps (the broker's StoredMessage has them too)."""

    topic: str
    payload: bytes
    qos: int
    properties: dict[str, Any] | None
    expiry_at: float | None = None


def publication_fields(entry: Any, at: float, now: float | None) -> Fields:
    """A publication (anything with a :class:`Publication`'s fields) archived at ``at``: its
    values of PUBLICATION_FIELDS, its expiry counted from ``now`` or else from ``at``. Raises
    what a property that cannot be mapped raises (:func:`bare_fields` then), and TypeError
    for properties that are not a dict (compiled, the dict's own lookups are used)."""
    qos = entry.qos
    expiry_at = entry.expiry_at
    expiry = -1 if expiry_at is None else max(0, int((expiry_at - (at if now is None else now)) * 10))
    given = entry.properties
    if given is not None and type(given) is not dict:
        raise TypeError(f"MQTT properties as {type(given).__name__}, not a dict")
    properties: dict[str, Any] | None = given
    usr, domain, correl, form, reply_to = _mapped_properties(properties)
    payload = entry.payload
    return (at, entry.topic, qos, correl, 1 if qos > 0 else 0, expiry, form, reply_to, usr, domain,
            payload if type(payload) is bytes else bytes(payload))


def _mapped_properties(properties: dict[str, Any] | None) -> tuple[dict[str, str], str, bytes, str, str]:
    """What MQTT 5 properties (None: none) give a publication's entry: ``usr``, the domain,
    CorrelId, Format and ReplyToQ (module docstring)."""
    usr: dict[str, str] = {}
    domain = "BLOB"
    correl = b""
    form = ""
    reply_to = ""
    # one pass over the properties (compiled, cheaper than a lookup of each one asked for)
    pairs = content_type = correlation = indicator = response_topic = None
    for name, value in (properties or _NO_PROPERTIES).items():
        if name == "user_property":
            pairs = value
        elif name == "content_type":
            content_type = value
        elif name == "correlation_data":
            correlation = value
        elif name == "payload_format_indicator":
            indicator = value
        elif name == "response_topic":
            response_topic = value
    if pairs:
        usr = _usr(pairs if type(pairs) is list else list(pairs))
    named = usr.pop("mcd.Msd") if "mcd.Msd" in usr else None
    if named:
        domain = named
    elif content_type is not None:
        domain = domain_for_content_type(content_type)
    if correlation:
        correl = bytes(correlation)[:24]
    if indicator == 1:
        form = "MQSTR"
    if response_topic:
        reply_to = str(response_topic)
    return usr, domain, correl, form, reply_to


def bare_fields(message: Any, at: float, error: Exception) -> Fields:
    """The values of a publication whose properties :func:`publication_fields` could not map
    (a publisher inside the broker may hand it any value): its topic, QoS and payload archived
    at ``at`` without them, and a log line saying so. The entry's place in its partition was
    given when it was submitted, so it is kept rather than dropped."""
    log.error("archive: the properties of a publication on %r could not be archived, its payload is: %s",
              message.topic, error)
    payload = message.payload
    if isinstance(payload, (bytes, bytearray, memoryview)):
        body = bytes(payload)
    else:
        body = str(payload).encode("utf-8", "replace")
    return publication_fields(Publication(str(message.topic), body, int(message.qos), None), at, at)


def _usr(pairs: list[Any]) -> dict[str, str]:
    """MQTT 5 User Properties (name, value pairs) as ``usr`` (a name given twice keeps its
    last value). Indexed rather than unpacked: compiled, unpacking makes an iterator a pair."""
    usr: dict[str, str] = {}
    for pair in pairs:
        if len(pair) != 2:
            raise ValueError(f"a user property of {len(pair)} values, not a name and a value")
        k = pair[0]
        v = pair[1]
        usr[k if type(k) is str else str(k)] = v if type(v) is str else usr_text(v)
    return usr


def stored_columns(entries: list[Any], stamps: list[int], now: float | None = None) -> list[Column]:
    """The stored columns (STORED_COLUMNS order) of ``entries`` archived at ``stamps`` (µs
    since the epoch, one each): what the writer thread encodes as one record batch
    (``MessageLog._pack``). Publications fill the columns of PUBLICATION_FIELDS, and the
    others are one Constant each; among entries already in the stored form (a tuple,
    restamped here) every column is a list."""
    times = [us / 1_000_000 for us in stamps]
    for entry in entries:
        if entry.__class__ is tuple:
            return _columns_of_rows(entries, times, now)
    topics: list[Any] = []
    qoses: list[Any] = []
    correls: list[bytes] = []
    persistences: list[int] = []
    expiries: list[int] = []
    forms: list[str] = []
    replies: list[str] = []
    usrs: list[dict[str, str]] = []
    domains: list[str] = []
    bodies: list[bytes] = []
    for index, entry in enumerate(entries):
        values = _kept_fields(entry, times[index], now)
        topics.append(values[1])
        qoses.append(values[2])
        correls.append(values[3])
        persistences.append(values[4])
        expiries.append(values[5])
        forms.append(values[6])
        replies.append(values[7])
        usrs.append(values[8])
        domains.append(values[9])
        bodies.append(values[10])
    fields: list[Column] = [times, topics, qoses, correls, persistences, expiries, forms, replies, usrs, domains,
                            bodies]
    return [fields[place] if place >= 0 else Constant(constant) for place, constant in zip(_PLACES, _CONSTANTS,
                                                                                          strict=True)]


def _columns_of_rows(entries: list[Any], times: list[float], now: float | None) -> list[Column]:
    """:func:`stored_columns` of entries some of which are in the stored form already."""
    rows = [(*entry[:_TS], at, *entry[_TS + 1:]) if entry.__class__ is tuple else _row(entry, at, now)
            for entry, at in zip(entries, times, strict=True)]
    return [list(column) for column in zip(*rows, strict=True)]


def _kept_fields(entry: Any, at: float, now: float | None) -> Fields:
    """:func:`publication_fields`, or :func:`bare_fields` where they cannot be mapped."""
    try:
        return publication_fields(entry, at, now)
    except Exception as error:  # noqa: BLE001 - the writer thread must go on: keep what can be kept
        return bare_fields(entry, at, error)


def _row(entry: Any, at: float, now: float | None) -> tuple[Any, ...]:
    """A publication's stored form: its fields and the constants in STORED_COLUMNS order."""
    values = _kept_fields(entry, at, now)
    return tuple(values[place] if place >= 0 else constant for place, constant in zip(_PLACES, _CONSTANTS,
                                                                                      strict=True))


def publication_entry(topic: str, payload: bytes, qos: int, properties: dict[str, Any] | None,
                      expiry_at: float | None = None, now: float | None = None) -> tuple[Any, ...]:
    """A routed MQTT publication as the log stores it (a tuple in STORED_COLUMNS order) with
    the archive timestamp 0.0 ("when appended", which the log gives it as it joins a batch),
    its expiry counted from ``now`` (default: the time of the call)."""
    return _row(Publication(topic, payload, qos, properties, expiry_at), 0.0, time.time() if now is None else now)


def from_publication(topic: str, payload: bytes, qos: int, properties: dict[str, Any] | None,
                     expiry_at: float | None = None, now: float | None = None) -> LogRecord:
    """A routed MQTT publication (a StoredMessage's fields) as a log record (the fields of
    :func:`publication_entry`)."""
    entry = publication_entry(topic, payload, qos, properties, expiry_at, now)
    return LogRecord(entry[0], entry[1], "", -1, *entry[2:])
