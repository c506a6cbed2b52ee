"""MQInput: messages got from a queue of the broker's queue manager start the flow
(flows-http.md items 2, 4). A message whose run fails is put back on its queue with
BackoutCount + 1 and got again; past the flow's backout threshold it goes to ``failure``."""

from __future__ import annotations

from relaymq.flows.node import Prop
from relaymq.flows.nodes.input_base import InputNode


class MQInput(InputNode):
    KIND = "MQInput"
    PROPERTIES = {
        "queue": Prop((str,)),
        "domain": Prop((str,), "", doc="parse bodies without an MQRFH2 mcd folder in this domain"),
    }
