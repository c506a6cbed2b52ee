"""JMSReply: send the message as the reply to a JMS request (seed 000 l.2672: JMSReplyTo set
means a reply is expected): to the request's JMSReplyTo, with JMSCorrelationID the request's
JMSMessageID (the JMS request/reply convention), unless the flow set a correlation id.
Properties: ``jndi``, ``connection_factory`` (relaymq.flows.nodes.jms_output)."""

from __future__ import annotations

from typing import Any

from relaymq.flows.assembly import Assembly
from relaymq.flows.jms_transport import outgoing
from relaymq.flows.node import Emission, Node, Prop
from relaymq.flows.nodes.jms_output import jndi_context, lookup_factory, record_send, reply_address


class JMSReply(Node):
    KIND = "JMSReply"
    PROPERTIES = {
        "jndi": Prop((dict,), {}),
        "connection_factory": Prop((str,)),
    }

    def configure(self) -> None:
        self.factory = lookup_factory(self, jndi_context(self))

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        request = assembly.message.jms()
        reply = outgoing(assembly.message)
        address = reply_address(reply, self.name)
        if reply.JMSCorrelationID is None or reply.JMSCorrelationID == request.JMSCorrelationID:
            reply.JMSCorrelationID = request.JMSMessageID
        reply.JMSDestination, reply.JMSReplyTo = reply.JMSReplyTo, None
        record_send(context, self.factory, address, reply)
        return [("out", assembly)]
