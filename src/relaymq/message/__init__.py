"""Message formats with no I/O: the language every other part of relaymq speaks.

* MQ headers: :class:`MQMD`, :class:`MQRFH2`, :class:`MQRFH`, :class:`MQDLH`, chained by
  Format into an :class:`MQMessage` (:func:`decode_message` / :func:`encode_message`).
* The canonical :class:`Message` and the message tree (:class:`Element`, path access).
* Message domains (:mod:`relaymq.message.domains`): XMLNSC, XMLNS, XML (entity-safe), JSON,
  BLOB, JMSMap, JMSStream, MIME; MRM/IDOC as BLOB.
* JMS: :class:`JMSMessage` and its mappings to MQ (:func:`jms_to_mq`/:func:`mq_to_jms`), to
  MQeFields (:func:`jms_to_mqe`/:func:`mqe_to_jms`) and to MQTT 5
  (:func:`jms_to_mqtt5`/:func:`mqtt5_to_jms`).
* :class:`MQeFields` with its binary (:func:`dump`/:func:`restore`) and text dumps.

Every decoder raises a :class:`FormatError` subclass that names the field and byte offset.
"""

from typing import TYPE_CHECKING

from relaymq.lazy import exports

if TYPE_CHECKING:
    from relaymq.message.errors import (
        CCSIDError,
        DataTypeError,
        DomainError,
        FolderError,
        FormatError,
        LengthError,
        MappingError,
        MQeFieldsError,
        StrucIdError,
        TruncatedError,
        XMLSecurityError,
    )
    from relaymq.message.headers import MQMessage, RawHeader, decode_message, encode_message
    from relaymq.message.jms import JMSMessage, TypedProperties
    from relaymq.message.jms_mq import jms_to_mq, mq_to_jms
    from relaymq.message.jms_mqe import jms_to_mqe, mqe_to_jms
    from relaymq.message.jms_mqtt import MQTT5Publish, jms_to_mqtt5, mqtt5_to_jms
    from relaymq.message.message import Message
    from relaymq.message.mqdlh import MQDLH
    from relaymq.message.mqe_dump import dump, restore
    from relaymq.message.mqe_fields import MQeFields
    from relaymq.message.mqe_text import dump_to_string, restore_from_string
    from relaymq.message.mqmd import MQMD, decode_mqmd, encode_mqmd
    from relaymq.message.mqrfh import MQRFH
    from relaymq.message.mqrfh2 import MQRFH2
    from relaymq.message.tree import Element

__getattr__ = exports(__name__, {
    "errors": ("CCSIDError", "DataTypeError", "DomainError", "FolderError", "FormatError", "LengthError", "MappingError", "MQeFieldsError", "StrucIdError", "TruncatedError", "XMLSecurityError",),
    "headers": ("MQMessage", "RawHeader", "decode_message", "encode_message",),
    "jms": ("JMSMessage", "TypedProperties",),
    "jms_mq": ("jms_to_mq", "mq_to_jms",),
    "jms_mqe": ("jms_to_mqe", "mqe_to_jms",),
    "jms_mqtt": ("MQTT5Publish", "jms_to_mqtt5", "mqtt5_to_jms",),
    "message": ("Message",),
    "mqdlh": ("MQDLH",),
    "mqe_dump": ("dump", "restore",),
    "mqe_fields": ("MQeFields",),
    "mqe_text": ("dump_to_string", "restore_from_string",),
    "mqmd": ("MQMD", "decode_mqmd", "encode_mqmd",),
    "mqrfh": ("MQRFH",),
    "mqrfh2": ("MQRFH2",),
    "tree": ("Element",),
})

__all__ = [
    "CCSIDError", "DataTypeError", "DomainError", "Element", "FolderError", "FormatError",
    "JMSMessage", "LengthError", "MQDLH", "MQMD", "MQMessage", "MQRFH", "MQRFH2",
    "MQTT5Publish", "MQeFields", "MQeFieldsError", "MappingError", "Message", "RawHeader",
    "StrucIdError", "TruncatedError", "TypedProperties", "XMLSecurityError", "decode_message",
    "decode_mqmd", "dump", "dump_to_string", "encode_message", "encode_mqmd", "jms_to_mq",
    "jms_to_mqe", "jms_to_mqtt5", "mq_to_jms", "mqe_to_jms", "mqtt5_to_jms", "restore",
    "restore_from_string",
]
