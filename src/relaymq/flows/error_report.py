"""What a message that a flow could not process carries to its input's failure path and to the
backout queue: why it failed, in the ``usr`` folder of its MQRFH2 (flows-http.md item 4).

Why usr properties: every queue client reads them - a JMS application as message properties,
the REST interface as ``ibm-mq-usr`` (``relaymq queue get --url`` prints them), a flow's
Filter as ``usr.relaymq_error_text`` - without knowing a broker-specific header. The message
keeps its MQMD (BackoutCount included) and body; a message without an MQRFH2 gets one
(MQMD Format MQHRF2, the RFH2 names the body's format).

=========================  ================================================================
usr property               value
=========================  ================================================================
``relaymq_flow``           the flow's name
``relaymq_node``           the node that raised (``(commit)`` when an output failed)
``relaymq_error_type``     RecoverableException, UserException (Throw), TimeoutException
``relaymq_error_number``   the exception's number (a Throw node's ``number``; 2230 otherwise)
``relaymq_error_text``     the exception's one-line text
=========================  ================================================================
"""

from __future__ import annotations

from relaymq.flows.assembly import copy_message
from relaymq.flows.errors import FlowException
from relaymq.message.message import Message
from relaymq.message.mqrfh2 import MQRFH2
from relaymq.message.tree import Element

PREFIX = "relaymq_"


def with_error(message: Message, error: FlowException, flow: str) -> Message:
    """A copy of ``message`` whose first MQRFH2's usr folder says why it failed."""
    out = copy_message(message)
    rfh2 = out.mq.first_rfh2()
    if rfh2 is None:
        rfh2 = MQRFH2(CodedCharSetId=out.mq.body_ccsid or 1208, Format=out.mq.body_format, NameValueCCSID=1208)
        out.mq.headers.append(rfh2)
    usr = rfh2.folder("usr")
    if usr is None:
        usr = Element("usr")
        rfh2.folders.append(usr)
    values = {"flow": flow, "node": error.node, "error_type": error.kind, "error_number": error.number,
              "error_text": error.text}
    for name, value in values.items():
        usr.set(PREFIX + name, value)
    return out
