"""MQJMSTransform: give an MQ-format message the JMS tree a JMS output expects - a
``JMSTransport`` folder with ``Transport_Folders.Header_Values`` (JMSDestination, ...) and
``Transport_Folders.Application_Properties`` - mapped by the JMS <-> MQ rules of seed 002
(formats-and-jms.md items 15-19; flows-http.md item 2)."""

from __future__ import annotations

from typing import Any

from relaymq.flows.assembly import Assembly, copy_message, replace_transport_folder
from relaymq.flows.node import Emission, Node
from relaymq.message.jms import JMSMessage
from relaymq.message.tree import Element

JMS_FOLDER = "JMSTransport"
HEADER_FIELDS = ("JMSDestination", "JMSDeliveryMode", "JMSExpiration", "JMSPriority", "JMSTimestamp",
                 "JMSMessageID", "JMSCorrelationID", "JMSReplyTo", "JMSType", "JMSRedelivered")


def jms_folder(jms: JMSMessage) -> Element:
    """The JMSTransport folder for a JMS message (header values, typed properties)."""
    folder = Element(JMS_FOLDER)
    tf = folder.add("Transport_Folders")
    headers = tf.add("Header_Values")
    for name in HEADER_FIELDS:
        value = getattr(jms, name)
        if value is not None:
            headers.add(name, value)
    headers.add("JMSMessageType", jms.message_type)
    props = tf.add("Application_Properties")
    for name, value in jms.properties.items():
        props.add(name, value, dt=jms.properties.dt(name))
    return folder


class MQJMSTransform(Node):
    KIND = "MQJMSTransform"

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        message = copy_message(assembly.message)
        replace_transport_folder(message, jms_folder(message.jms()))
        return [("out", assembly.with_message(message))]
