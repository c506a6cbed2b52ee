"""Publication: publish the message to the subscribers of its topic on a subscription
point - MQTT clients and queue subscribers alike (flows-http.md items 2, 10; seed 000 l.443;
seed 003 l.1925-1962 for subscription points).

The topic is the ``topic`` property when set, else ``psc.Topic`` of the first MQRFH2 (what
the seed's telemetry Compute sets). QoS is the property, or -1 (default): 1 for a
persistent message, 0 otherwise. The publication is recorded in the unit of work and
happens when the run commits. The message then goes on to ``out``, or to ``noMatch`` when no
subscription at the subscription point matched the topic (the product's Publication node
terminals; a retained publication is still kept then).
"""

from __future__ import annotations

from typing import Any

from relaymq.flows.assembly import Assembly
from relaymq.flows.errors import FlowException
from relaymq.message.mqtt_mapping import topic_of
from relaymq.flows.node import Emission, Node, Prop
from relaymq.message.constants import MQPER_PERSISTENT


def _qos(value: Any) -> str | None:
    return None if value in (-1, 0, 1, 2) else "-1 (from persistence), 0, 1 or 2"


class Publication(Node):
    KIND = "Publication"
    OUTPUTS = ("noMatch", "out", "failure")
    PROPERTIES = {
        "topic": Prop((str,), ""),
        "subscription_point": Prop((str,), ""),
        "qos": Prop((int,), -1, _qos),
        "retain": Prop((bool,), False),
    }

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        message = assembly.message
        topic = self.props["topic"] or topic_of(message)
        if not topic:
            raise FlowException("no topic: set psc.Topic in the MQRFH2 or the node's topic", node=self.name)
        qos = self.props["qos"]
        if qos < 0:
            qos = 1 if message.mq.md.Persistence == MQPER_PERSISTENT else 0
        point = self.props["subscription_point"]
        context.publish(topic, message, qos=qos, retain=self.props["retain"], subscription_point=point)
        return [("noMatch" if context.ports.subscribed(topic, point) is False else "out", assembly)]
