"""How a flow's message travels as an MQTT publication (flows-http.md Decisions: over MQTT 5
the ``usr`` folder travels as User Properties; over 3.1.1/MQIsdp only the body travels) and
how an MQTT publication becomes a flow's message (a SCADAInput's messages always carry an
MQRFH2: flows-http.md item 2).
"""

from __future__ import annotations

from relaymq.message.constants import MQPER_NOT_PERSISTENT, MQPER_PERSISTENT
from relaymq.message.folders import is_usr_name
from relaymq.message.headers import MQMessage
from relaymq.message.message import Message, body_bytes
from relaymq.message.mqrfh2 import MQRFH2
from relaymq.message.tree import Element
from relaymq.message.typed import format_value

MQFMT_STRING = "MQSTR"


def usr_properties(message: Message) -> list[tuple[str, str]]:
    """The first MQRFH2's ``usr`` folder as (name, text) pairs, in order."""
    first = message.mq.first_rfh2()
    usr = first.folder("usr") if first is not None else None
    if usr is None:
        return []
    out = []
    for child in usr.children:
        if child.value is None:
            continue
        value = child.value
        out.append((child.name, value if isinstance(value, str) else format_value(value, child.dt or "string", child.name)))
    return out


def topic_of(message: Message) -> str | None:
    """The publication topic: ``psc.Topic`` of the first MQRFH2 (seed 003 l.4800)."""
    first = message.mq.first_rfh2()
    topic = first.get("psc.Topic") if first is not None else None
    return topic if isinstance(topic, str) and topic else None


def mqtt_publication(message: Message) -> tuple[bytes, dict[str, object]]:
    """Payload and MQTT 5 properties for a flow message published to MQTT subscribers: the
    body, the ``usr`` folder as user properties, Payload Format Indicator 1 for an MQSTR body."""
    properties: dict[str, object] = {}
    if message.mq.body_format == MQFMT_STRING:
        properties["payload_format_indicator"] = 1  # text: queue subscribers get Format MQSTR
    users = usr_properties(message)
    if users:
        properties["user_property"] = users
    return body_bytes(message), properties


#: Characters of MQMD UserIdentifier (cmqc.h MQ_USER_ID_LENGTH).
USER_ID_LENGTH = 12


def user_identifier(name: str) -> str:
    """``name`` as an MQMD UserIdentifier: its first 12 characters, anything but printable
    ASCII as ``?`` (the field is 12 single-byte characters)."""
    return "".join(c if " " <= c <= "~" else "?" for c in name[:USER_ID_LENGTH])


def from_mqtt(topic: str, payload: bytes, qos: int, user_properties: list[tuple[str, str]] | None = None,
              domain: str = "BLOB", user_id: str = "") -> Message:
    """A flow input message for an MQTT publication: MQMD (persistent for QoS > 0;
    UserIdentifier the first 12 characters of ``user_id``, the publisher's user name or
    client id), an MQRFH2 with ``psc.Topic`` and the user properties in ``usr``, then the
    payload. A user property whose name the ``usr`` folder cannot hold (not an XML name, or
    with a colon) is left out, and so are later values of a repeated name (usr holds each
    name once); ``trace-id`` and the like are kept."""
    rfh2 = MQRFH2(CodedCharSetId=1208, Format=MQFMT_STRING, NameValueCCSID=1208)
    psc = Element("psc")
    psc.add("Topic", topic)
    rfh2.folders.append(psc)
    if user_properties:
        usr = Element("usr")
        for name, value in user_properties:
            if usr.child(name) is None and is_usr_name(name):
                usr.add(name, value)
        rfh2.folders.append(usr)
    mq = MQMessage(headers=[rfh2], body=payload)
    mq.md.Persistence = MQPER_PERSISTENT if qos > 0 else MQPER_NOT_PERSISTENT
    mq.md.CodedCharSetId = 1208
    mq.md.UserIdentifier = user_identifier(user_id)
    return Message(mq, configured_domain=domain)
