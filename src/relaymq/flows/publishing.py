"""A flow's Publication node as a publication of the pub/sub engine (flows-http.md items 2,
10; seed 003 l.1925-1962: a Publication node names its subscription point).

Pure: builds :class:`relaymq.pubsub.model.Publication` from the flow's message; the broker
side (relaymq.flows.ports) hands it to the engine, which delivers it to MQTT subscribers and
``psc`` queue subscribers at the default subscription point, and to the queue subscribers
registered at a named one.
"""

from __future__ import annotations

from relaymq.message.message import body_bytes
from relaymq.message.mqtt_mapping import usr_properties
from relaymq.message.message import Message
from relaymq.pubsub.model import DEFAULT_SUBPOINT, Publication


def message_domain(message: Message) -> str | None:
    """``mcd.Msd`` of the message's MQRFH2 headers (the last one that says), else None."""
    for rfh2 in reversed(message.mq.rfh2s()):
        domain = rfh2.get("mcd.Msd")
        if isinstance(domain, str) and domain:
            return domain
    return None


def engine_publication(topic: str, message: Message, *, subscription_point: str, qos: int, retain: bool,
                       now: float) -> Publication:
    """The publication the engine routes for a Publication node: the body, the ``usr``
    folder, the body's format and domain, persistence from the QoS the node resolved
    (QoS > 0: persistent), the MQMD's priority and expiry."""
    md = message.mq.md
    return Publication(
        topic,
        body_bytes(message),
        subscription_point or DEFAULT_SUBPOINT,
        usr_properties(message),
        message_domain(message),
        message.mq.body_format.strip(),
        persistent=qos > 0,
        priority=max(md.Priority, 0),
        expiry_at=now + md.Expiry / 10 if md.Expiry > 0 else None,
        retain=retain,
        user_id=md.UserIdentifier.strip() or None,
    )
