"""JMSOutput: send the message to a JMS destination of any JMS provider that speaks AMQP 1.0
(seed 000 l.2116-2131, 2632-2681; flows-http.md items 2, 6; formats-and-jms.md item 12).

Properties: ``jndi`` (the administered objects, relaymq.flows.jms_objects),
``connection_factory`` and ``destination`` (JNDI names, or a URL and an address),
``mode``: ``datagram`` (the default: to ``destination``; a message whose JMSReplyTo is set is
a reply and goes there, as the seed says), ``request`` (to ``destination`` with JMSReplyTo set
to ``reply_to``), ``reply`` (to the message's JMSReplyTo only). ``delivery_mode``
(persistent/non_persistent) overrides the message's JMSDeliveryMode.

The send is part of the run's unit of work: recorded here, performed at the commit, and the
commit waits until the provider accepted the message (AMQP at-least-once); a refusal fails the
run (it is backed out). AMQP transactions are not used: see docs/amqp.md.
"""

from __future__ import annotations

from typing import Any

from relaymq.flows.assembly import Assembly
from relaymq.flows.context import Action
from relaymq.flows.errors import FlowException
from relaymq.flows.jms_connections import CONNECTIONS
from relaymq.flows.jms_objects import ConnectionFactory, Destination, JndiContext, JndiError
from relaymq.flows.jms_transport import outgoing
from relaymq.flows.node import Emission, Node, Prop, choice
from relaymq.message.jms import NON_PERSISTENT, PERSISTENT, JMSMessage


def jndi_context(node: Node) -> JndiContext:
    try:
        return JndiContext(node.props["jndi"])
    except JndiError as err:
        raise node.error(str(err), "jndi") from None


def lookup_factory(node: Node, jndi: JndiContext) -> ConnectionFactory:
    try:
        return jndi.lookup_factory(node.props["connection_factory"])
    except JndiError as err:
        raise node.error(str(err), "connection_factory") from None


def reply_address(jms: JMSMessage, node: str) -> str:
    """The provider address of the message's JMSReplyTo (relaymq.amqp.addresses)."""
    from relaymq.amqp.addresses import AddressScheme

    address = AddressScheme().from_jms(jms.JMSReplyTo)
    if not address:
        raise FlowException("the message has no JMSReplyTo", node=node)
    return address


def record_send(context: Any, factory: ConnectionFactory, address: str, jms: JMSMessage) -> None:
    """Put the send in the run's unit of work."""
    from relaymq.amqp.addresses import AddressScheme
    from relaymq.amqp.jms_mapping import jms_to_amqp

    amqp = jms_to_amqp(jms, AddressScheme(), address)

    def run(_ports: Any) -> Any:
        return CONNECTIONS.send(factory, address, amqp)

    context.pending.append(Action("jms", address, None, run))  # type: ignore[arg-type]


class JMSOutput(Node):
    KIND = "JMSOutput"
    PROPERTIES = {
        "jndi": Prop((dict,), {}),
        "connection_factory": Prop((str,)),
        "destination": Prop((str,), ""),
        "mode": Prop((str,), "datagram", choice("datagram", "request", "reply")),
        "reply_to": Prop((str,), ""),
        "delivery_mode": Prop((str,), "", choice("", "persistent", "non_persistent")),
    }

    def configure(self) -> None:
        jndi = jndi_context(self)
        self.factory = lookup_factory(self, jndi)
        self.destination: Destination | None = None
        self.reply_to: Destination | None = None
        if self.props["mode"] != "reply":
            if not self.props["destination"]:
                raise self.error(f"required in {self.props['mode']} mode", "destination")
            self.destination = jndi.lookup_destination(self.props["destination"])
        if self.props["mode"] == "request":
            if not self.props["reply_to"]:
                raise self.error("required in request mode", "reply_to")
            self.reply_to = jndi.lookup_destination(self.props["reply_to"])

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        jms = outgoing(assembly.message)
        mode = self.props["mode"]
        if mode == "reply" or (mode == "datagram" and jms.JMSReplyTo):
            address = reply_address(jms, self.name)
        else:
            assert self.destination is not None
            address = self.destination.address
            jms.JMSDestination = self.destination.jms_uri
        if self.reply_to is not None:
            jms.JMSReplyTo = self.reply_to.jms_uri
        if self.props["delivery_mode"]:
            jms.JMSDeliveryMode = PERSISTENT if self.props["delivery_mode"] == "persistent" else NON_PERSISTENT
        record_send(context, self.factory, address, jms)
        return [("out", assembly)]
