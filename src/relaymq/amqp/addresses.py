"""AMQP node addresses -> what they name in relaymq (docs/amqp.md "Addresses").

``queue://NAME`` is queue NAME of the broker's queue manager, ``topic://FILTER`` a topic name
(senders) or topic filter (receivers) of the topic tree; the prefixes are configurable
(``[amqp] queue_prefix``/``topic_prefix``). A bare address with neither prefix is a queue, as
Qpid JMS's ``session.createQueue("NAME")`` sends it. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

QUEUE, TOPIC = "queue", "topic"


class AddressError(ValueError):
    """An address that names nothing relaymq has (the link is refused with amqp:not-found)."""


@dataclass(frozen=True)
class Address:
    kind: str  # QUEUE or TOPIC
    name: str  # queue name, or topic name / filter


@dataclass(frozen=True)
class AddressScheme:
    queue_prefix: str = "queue://"
    topic_prefix: str = "topic://"

    def parse(self, address: str | None) -> Address:
        if not address:
            raise AddressError("no address: relaymq has no anonymous relay; name a queue or a topic")
        if address.startswith(self.topic_prefix):
            name, kind = address[len(self.topic_prefix):], TOPIC
        elif address.startswith(self.queue_prefix):
            name, kind = address[len(self.queue_prefix):], QUEUE
        else:
            name, kind = address, QUEUE
        if not name:
            raise AddressError(f"address {address!r} names no {kind}")
        return Address(kind, name)

    def format(self, address: Address) -> str:
        return (self.topic_prefix if address.kind == TOPIC else self.queue_prefix) + address.name

    def to_jms(self, address: str | None) -> str | None:
        """An AMQP address as relaymq's JMS model writes a destination: ``queue:///NAME``
        (the MQ form, no queue manager) or ``topic://NAME``."""
        if not address:
            return None
        try:
            parsed = self.parse(address)
        except AddressError:
            return None
        return f"topic://{parsed.name}" if parsed.kind == TOPIC else f"queue:///{parsed.name}"

    def from_jms(self, destination: str | None) -> str | None:
        """A JMS-model destination (``queue://QM/Q``, ``queue:///Q``, ``topic://T``) as an
        AMQP address."""
        if not destination:
            return None
        if destination.startswith("topic://"):
            return self.topic_prefix + destination[len("topic://"):]
        if destination.startswith("queue://"):
            return self.queue_prefix + destination[len("queue://"):].partition("/")[2].split("?", 1)[0]
        return self.queue_prefix + destination
