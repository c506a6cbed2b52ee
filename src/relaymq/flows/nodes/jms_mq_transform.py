"""JMSMQTransform: build the MQ-format message (MQMD + MQRFH2 jms/usr/mcd folders) from the
message's ``JMSTransport`` folder, which a JMS input or an MQJMSTransform put there and a
Compute node may have changed (seed 002; formats-and-jms.md items 15-19). Without the folder
the message's own JMS view is used, so the node is also a normaliser to the JMS layout.

Properties the provider filled on receipt (``JMS_IBM_MQMD_*``...) that the flow left as they
were stay "received", so the MQMD is built from the header values (JMSCorrelationID,
JMSPriority...) a Compute may have changed, not from the input's old MQMD.

A property whose name is not a Java identifier (``trace-id``, from an MQTT user property or a
``usr`` folder written by a non-JMS program) cannot be set as a JMS application property, but
the message had it: it is kept as a received property, with the value the flow gave it, and
goes into the ``usr`` folder like the others."""

from __future__ import annotations

import dataclasses
from typing import Any

from relaymq.flows.assembly import Assembly, transport_folder
from relaymq.flows.node import Emission, Node
from relaymq.flows.nodes.mq_jms_transform import HEADER_FIELDS, JMS_FOLDER
from relaymq.message.jms import JMSMessage, TypedProperties, is_identifier
from relaymq.message.message import Message


def jms_from_folder(base: JMSMessage, folder: Any) -> JMSMessage:
    """``base`` (for the body) with header values and properties taken from the folder."""
    headers = folder.find("Transport_Folders.Header_Values")
    changes: dict[str, Any] = {}
    if headers is not None:
        for child in headers.children:
            if child.name in HEADER_FIELDS:
                changes[child.name] = child.value
            elif child.name == "JMSMessageType":
                changes["message_type"] = child.value
    props = TypedProperties()
    app = folder.find("Transport_Folders.Application_Properties")
    received = base.properties.received()
    for child in (app.children if app is not None else []):
        name = child.name
        if name in received and base.properties.get(name) == child.value:
            # As the provider filled it on receipt and nobody changed it: it must not
            # override the MQMD (JMS_IBM_MQMD_*, seed 002 note 9), only a changed one does.
            props.set_received(name, child.value, child.dt)
        elif not is_identifier(name):
            props.set_received(name, child.value, child.dt)  # no JMS name: kept as received
        else:
            props.set(name, child.value, child.dt)
    return dataclasses.replace(base, properties=props, **changes)


class JMSMQTransform(Node):
    KIND = "JMSMQTransform"

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        source = assembly.message
        folder = transport_folder(source, JMS_FOLDER)
        jms = source.jms() if folder is None else jms_from_folder(source.jms(), folder)
        out = Message.from_jms(jms)
        out.mq.md.MsgId = source.mq.md.MsgId
        out.transport = [f.copy() for f in source.transport if f.name != JMS_FOLDER]
        return [("out", assembly.with_message(out))]
