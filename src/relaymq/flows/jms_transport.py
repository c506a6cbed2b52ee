"""Messages across the JMS transport of the flows (seed 000 l.2116-2300, 2532-2740;
flows-http.md items 2, 6; formats-and-jms.md items 8, 12): what a JMSInput node makes of a
received JMS message, what a JMSOutput or JMSReply node sends. Pure: no I/O.

In: the message carries its JMS view both ways a flow may read it: as MQ format (MQMD +
MQRFH2, for MQ nodes, as JMSMQTransform would make it) and as the ``JMSTransport`` folder
(header values, typed application properties, as MQJMSTransform makes it).
Out: the ``JMSTransport`` folder when the message has one (a Compute may have changed it),
else the message's own JMS view; a message that is not JMS (no MQRFH2 ``mcd`` naming a JMS
class) is sent as a BytesMessage of its body (item 12: no Message_MetaData, a BytesMessage).
"""

from __future__ import annotations

from relaymq.flows.assembly import replace_transport_folder, transport_folder
from relaymq.flows.nodes.jms_mq_transform import jms_from_folder
from relaymq.flows.nodes.mq_jms_transform import JMS_FOLDER, jms_folder
from relaymq.message.jms import BYTES, MESSAGE_TYPES, JMSMessage
from relaymq.message.message import Message, body_bytes


def incoming(jms: JMSMessage, domain: str | None) -> Message:
    message = Message.from_jms(jms)
    message.configured_domain = domain
    replace_transport_folder(message, jms_folder(jms))
    return message


def is_jms(message: Message) -> bool:
    last = message.mq.last_rfh2()
    mcd = last.folder("mcd") if last is not None else None
    return mcd is not None and mcd.get("Msd") in MESSAGE_TYPES


def outgoing(message: Message) -> JMSMessage:
    folder = transport_folder(message, JMS_FOLDER)
    if folder is not None:
        return jms_from_folder(message.jms(), folder)
    if is_jms(message):
        return message.jms()
    jms = message.jms()
    jms.message_type, jms.body = BYTES, body_bytes(message)
    return jms
