"""MQInput: messages got from a queue of the broker's queue manager start the flow
(flows-http.md items 2, 4). A message stays on its queue (get-unconfirmed) until its run has
finished. A run that fails raises its BackoutCount, which is written to disk, and runs it
again where it is; past the flow's backout threshold it goes to ``failure``, else to the
backout queue (relaymq.flows.qmgr_port, relaymq.flows.runtime)."""

from __future__ import annotations

from relaymq.flows.node import Prop
from relaymq.flows.nodes.input_base import InputNode


class MQInput(InputNode):
    KIND = "MQInput"
    PROPERTIES = {
        "queue": Prop((str,)),
        "domain": Prop((str,), "", doc="parse bodies without an MQRFH2 mcd folder in this domain"),
    }
