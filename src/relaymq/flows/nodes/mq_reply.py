"""MQReply: put the message to the request's ReplyToQ/ReplyToQMgr as a reply (MsgType
REPLY; CorrelId = the request's MsgId unless the request asked MQRO_PASS_CORREL_ID), the
request/reply model of flows-http.md item 5."""

from __future__ import annotations

from typing import Any

from relaymq.flows.assembly import Assembly
from relaymq.flows.errors import FlowException
from relaymq.flows.node import Emission, Node
from relaymq.flows.nodes.mq_output import outgoing
from relaymq.message.constants import MQMT_REPLY, MQRO_PASS_CORREL_ID


class MQReply(Node):
    KIND = "MQReply"

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        md = assembly.message.mq.md
        queue = md.ReplyToQ.strip()
        if not queue:
            raise FlowException("the message has no ReplyToQ", node=self.name)
        reply = outgoing(assembly, True)
        reply.mq.md.MsgType = MQMT_REPLY
        if not md.Report & MQRO_PASS_CORREL_ID:
            reply.mq.md.CorrelId = md.MsgId
        context.put(queue, reply, md.ReplyToQMgr.strip() or None)
        return [("out", assembly)]
