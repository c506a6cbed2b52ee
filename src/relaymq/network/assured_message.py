"""A publication as a queue manager message, for the assured path between brokers
(``assured.py``), pure.

The MQ message is persistent; its body is a 4-byte big-endian length, a JSON header of that
many bytes, then the payload as published::

    {"v": 1, "from": "B", "topic": "...", "qos": 2, "retain": false,
     "expiry_at": 1790000000.5 | null, "properties": {...MQTT 5 properties...}}

``from`` is the broker that sent it (the receiver adds it to the path, as a link does);
``properties`` are the MQTT 5 properties that travel with a publication, bytes as
``{"hex": ...}``, user properties as pairs.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any

from relaymq.message.constants import MQPER_PERSISTENT
from relaymq.message.headers import MQMessage
from relaymq.message.message import Message
from relaymq.message.mqmd import MQMD

VERSION = 1
_LENGTH = struct.Struct(">I")


@dataclass
class Carried:
    """A publication on its way from broker ``sender``."""

    sender: str
    topic: str
    payload: bytes
    qos: int
    retain: bool
    properties: dict[str, Any] = field(default_factory=dict)
    expiry_at: float | None = None


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"hex": value.hex()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _value(name: str, value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"hex"}:
        return bytes.fromhex(value["hex"])
    if name == "user_property":
        return [(str(k), str(v)) for k, v in value]
    return value


def encode(carried: Carried) -> Message:
    header = json.dumps({"v": VERSION, "from": carried.sender, "topic": carried.topic, "qos": carried.qos,
                         "retain": carried.retain, "expiry_at": carried.expiry_at,
                         "properties": {k: _plain(v) for k, v in carried.properties.items()}}).encode()
    md = MQMD(Persistence=MQPER_PERSISTENT)
    return Message(MQMessage(md=md, body=_LENGTH.pack(len(header)) + header + carried.payload))


def decode(message: Message) -> Carried:
    """Raises ValueError for a message that is not one."""
    body = message.mq.body
    if len(body) < _LENGTH.size:
        raise ValueError("too short for a carried publication")
    (length,) = _LENGTH.unpack_from(body)
    try:
        header = json.loads(body[_LENGTH.size:_LENGTH.size + length])
        if header.get("v") != VERSION:
            raise ValueError(f"version {header.get('v')!r}, not {VERSION}")
        properties = {str(k): _value(k, v) for k, v in dict(header["properties"]).items()}
        expiry_at = header["expiry_at"]
        return Carried(str(header["from"]), str(header["topic"]), body[_LENGTH.size + length:], int(header["qos"]),
                       bool(header["retain"]), properties, float(expiry_at) if expiry_at is not None else None)
    except (KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"not a carried publication: {err!r}") from None
