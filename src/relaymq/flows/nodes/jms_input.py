"""JMSInput: messages from a JMS queue or topic of any JMS provider that speaks AMQP 1.0
start the flow (seed 000 l.2116-2131, 2532-2630, 2744-2779; flows-http.md items 2, 6).

Properties: ``jndi``, ``connection_factory`` (relaymq.flows.nodes.jms_output), ``source``
(the JNDI name or address of the queue or topic), ``selector`` (a JMS message selector, sent
to the provider as the ``apache.org:selector-filter:string`` filter),
``durable_subscription_id`` (a topic: a durable subscription of that name, the connection
factory's ``jms.clientID`` its client id), ``domain`` (parse the body in this domain, else by
the JMS class, item 8).

The binding (relaymq.flows.jms_binding) receives with a credit of one and accepts a message
only when its run has finished (outputs committed, or the failure path or the backout queue
took it): a broker that stops mid-run leaves it with the provider, which delivers it again.
"""

from __future__ import annotations

from relaymq.flows.jms_objects import Destination
from relaymq.flows.node import Prop
from relaymq.flows.nodes.input_base import InputNode
from relaymq.flows.nodes.jms_output import jndi_context, lookup_factory
from relaymq.selector import SelectorError, compile_selector


class JMSInput(InputNode):
    KIND = "JMSInput"
    PROPERTIES = {
        "jndi": Prop((dict,), {}),
        "connection_factory": Prop((str,)),
        "source": Prop((str,)),
        "selector": Prop((str,), ""),
        "durable_subscription_id": Prop((str,), ""),
        "domain": Prop((str,), "", doc="parse bodies in this domain (else by JMS class)"),
    }

    def configure(self) -> None:
        super().configure()
        jndi = jndi_context(self)
        self.factory = lookup_factory(self, jndi)
        self.jms_source: Destination = jndi.lookup_destination(self.props["source"])
        if self.props["selector"]:
            try:
                compile_selector(self.props["selector"])
            except SelectorError as err:
                raise self.error(str(err), "selector") from None
        if self.props["durable_subscription_id"] and self.jms_source.kind != "topic":
            raise self.error("a durable subscription needs a topic source", "durable_subscription_id")

    @property
    def binding_key(self) -> str:
        return f"jms:{self.factory.url}|{self.jms_source.address}|{self.props['durable_subscription_id']}"
