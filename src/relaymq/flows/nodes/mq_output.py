"""MQOutput: put the message to a queue, or to every queue of the destination list in
``LocalEnvironment.Destination.MQ.DestinationData[*].queueName`` (distribution lists,
flows-http.md item 5). Recorded in the unit of work; done at commit."""

from __future__ import annotations

from typing import Any

from relaymq.flows.assembly import Assembly, copy_message
from relaymq.flows.errors import FlowException
from relaymq.flows.node import Emission, Node, Prop, choice
from relaymq.message.constants import MQMI_NONE


def outgoing(assembly: Assembly, new_msg_id: bool) -> Any:
    """The message as it leaves: a copy (later nodes may change theirs), MsgId cleared so the
    queue manager gives each put its own unless the flow asked to keep it."""
    message = copy_message(assembly.message)
    if new_msg_id:
        message.mq.md.MsgId = MQMI_NONE
    return message


class MQOutput(Node):
    KIND = "MQOutput"
    PROPERTIES = {
        "queue": Prop((str,), ""),
        "qmgr": Prop((str,), ""),
        "destination_mode": Prop((str,), "queue", choice("queue", "list")),
        "new_msg_id": Prop((bool,), True),
    }

    def configure(self) -> None:
        if self.props["destination_mode"] == "queue" and not self.props["queue"]:
            raise self.error("required when destination_mode is queue", "queue")

    def destinations(self, assembly: Assembly) -> list[tuple[str, str]]:
        if self.props["destination_mode"] == "queue":
            return [(self.props["queue"], self.props["qmgr"])]
        folder = assembly.local_environment.find("Destination.MQ")
        found = []
        for item in folder.children_named("DestinationData") if folder else []:
            queue = item.get("queueName")
            if isinstance(queue, str) and queue:
                found.append((queue, str(item.get("queueManagerName") or "")))
        if not found:
            raise FlowException("the destination list in LocalEnvironment.Destination.MQ is empty", node=self.name)
        return found

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        for queue, qmgr in self.destinations(assembly):
            context.put(queue, outgoing(assembly, self.props["new_msg_id"]), qmgr or None)
        return [("out", assembly)]
