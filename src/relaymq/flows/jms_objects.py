"""JNDI administered objects of the JMS nodes (seed 000 l.2683-2714: connection factories and
destinations, looked up by name), written in the flow definition in the form of a Qpid JMS
``jndi.properties`` file, so the names a JMS application looks up are the names a node uses:

    jndi:
      connectionfactory.jms/RelayCF: "amqp://127.0.0.1:5672?jms.username=app&jms.password=secret"
      queue.jms/Orders: "queue://ORDERS"          # the provider's AMQP address
      topic.jms/Prices: "topic://prices/#"

A connection factory is an AMQP 1.0 URL (``amqp://`` or ``amqps://``; ``jms.username``,
``jms.password`` and ``jms.clientID`` options as Qpid JMS reads them, or user:password@ in the
URL). A destination is the provider's address for the queue or topic (relaymq:
``queue://NAME``, ``topic://NAME``; RabbitMQ's AMQP 1.0 plugin: ``/amq/queue/NAME``,
``/topic/NAME``); its key says whether it is a queue or a topic (the JMSDestination kind). A
name that is not bound is taken as an address itself. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit, urlunsplit

FACTORY, QUEUE, TOPIC = "connectionfactory.", "queue.", "topic."


class JndiError(ValueError):
    """A binding that cannot be used: the message names the key."""


@dataclass(frozen=True)
class ConnectionFactory:
    url: str  # without the jms.* options
    user: str | None = None
    password: str | None = None
    client_id: str | None = None


@dataclass(frozen=True)
class Destination:
    address: str
    kind: str  # "queue" or "topic"

    @property
    def jms_uri(self) -> str:
        """How relaymq's JMS model writes it (JMSDestination / JMSReplyTo)."""
        name = self.address.split("://", 1)[-1]
        return f"topic://{name}" if self.kind == "topic" else f"queue:///{name}"


def connection_factory(url: str, key: str) -> ConnectionFactory:
    parts = urlsplit(url)
    if parts.scheme not in ("amqp", "amqps") or not parts.hostname:
        raise JndiError(f"{key}: {url!r} is not an amqp:// or amqps:// URL")
    options = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    unknown = sorted(k for k in options if k not in ("jms.username", "jms.password", "jms.clientID"))
    if unknown:
        raise JndiError(f"{key}: unsupported option {unknown[0]!r} (jms.username, jms.password, jms.clientID)")
    bare = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    return ConnectionFactory(bare, options.get("jms.username"), options.get("jms.password"), options.get("jms.clientID"))


class JndiContext:
    """The bindings of one node: ``lookup_factory`` and ``lookup_destination`` by name."""

    def __init__(self, bindings: Mapping[str, object]) -> None:
        self.factories: dict[str, ConnectionFactory] = {}
        self.destinations: dict[str, Destination] = {}
        for key, value in bindings.items():
            if not isinstance(value, str) or not value:
                raise JndiError(f"{key}: expected a non-empty string")
            if key.startswith(FACTORY):
                self.factories[key[len(FACTORY):]] = connection_factory(value, key)
            elif key.startswith(QUEUE):
                self.destinations[key[len(QUEUE):]] = Destination(value, "queue")
            elif key.startswith(TOPIC):
                self.destinations[key[len(TOPIC):]] = Destination(value, "topic")
            else:
                raise JndiError(f"{key}: expected connectionfactory.NAME, queue.NAME or topic.NAME")

    def lookup_factory(self, name: str) -> ConnectionFactory:
        if name in self.factories:
            return self.factories[name]
        if "://" in name:
            return connection_factory(name, "connection_factory")
        raise JndiError(f"no connection factory {name!r} in the JNDI bindings")

    def lookup_destination(self, name: str) -> Destination:
        if name in self.destinations:
            return self.destinations[name]
        if not name:
            raise JndiError("no destination")
        return Destination(name, "topic" if name.startswith("topic://") or name.startswith("/topic/") else "queue")
