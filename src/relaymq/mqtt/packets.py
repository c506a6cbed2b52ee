"""The MQTT control packets as plain data (seed 000 l.764-1958; OASIS MQTT 3.1.1 and 5.0).

One class per packet type. ``properties`` is a dict keyed by the MQTT 5 property name in
snake_case (see ``properties.py``); it is empty for protocol levels 3 and 4. ``user_property``
is a list of (key, value) string pairs; ``subscription_identifier`` in PUBLISH is a list of
ints (one per matching subscription), in SUBSCRIBE a single int.

Plain records (``relaymq.plain``), not dataclasses: the codec is compiled (``relaymq.native_build``),
and a packet's construction is then native too (four packets are read per QoS 2 message: issue 16,
bench/compare row 3). ``properties`` given as None is an empty dict.
"""

from __future__ import annotations

from typing import Any, ClassVar

from relaymq.plain import Plain

# Control packet types (fixed header bits 7-4), seed 000 l.785-806.
CONNECT = 1
CONNACK = 2
PUBLISH = 3
PUBACK = 4
PUBREC = 5
PUBREL = 6
PUBCOMP = 7
SUBSCRIBE = 8
SUBACK = 9
UNSUBSCRIBE = 10
UNSUBACK = 11
PINGREQ = 12
PINGRESP = 13
DISCONNECT = 14
AUTH = 15

# Protocol levels (CONNECT "protocol version" byte).
MQISDP_3 = 3  # protocol name "MQIsdp", the seeds' MQ Telemetry Transport v3 / MQTT 3.1
MQTT_311 = 4  # protocol name "MQTT"
MQTT_5 = 5  # protocol name "MQTT"

Properties = dict[str, Any]


class Will(Plain):
    """The will of a CONNECT: published for the client when it goes without DISCONNECT."""

    FIELDS = ("topic", "payload", "qos", "retain", "properties")
    __slots__ = FIELDS

    def __init__(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False,
                 properties: Properties | None = None) -> None:
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.properties: Properties = {} if properties is None else properties


class Connect(Plain):
    """CONNECT (3.1): the first packet of a connection."""

    FIELDS = ("protocol_name", "protocol_level", "clean_start", "keep_alive", "client_id", "will", "username",
              "password", "properties")
    __slots__ = FIELDS
    packet_type: ClassVar[int] = CONNECT

    def __init__(self, protocol_name: str = "MQTT", protocol_level: int = MQTT_311, clean_start: bool = True,
                 keep_alive: int = 60, client_id: str = "", will: Will | None = None,
                 username: str | None = None, password: bytes | None = None,
                 properties: Properties | None = None) -> None:
        self.protocol_name = protocol_name
        self.protocol_level = protocol_level
        self.clean_start = clean_start
        self.keep_alive = keep_alive
        self.client_id = client_id
        self.will = will
        self.username = username
        self.password = password
        self.properties: Properties = {} if properties is None else properties


class Connack(Plain):
    """CONNACK (3.2): the answer to CONNECT."""

    FIELDS = ("session_present", "reason_code", "properties")
    __slots__ = FIELDS
    packet_type: ClassVar[int] = CONNACK

    def __init__(self, session_present: bool = False, reason_code: int = 0,
                 properties: Properties | None = None) -> None:
        self.session_present = session_present
        self.reason_code = reason_code  # levels 3/4: the return code 0-5; level 5: the reason code
        self.properties: Properties = {} if properties is None else properties


class Publish(Plain):
    """PUBLISH (3.3): an application message, either way."""

    FIELDS = ("topic", "payload", "qos", "retain", "dup", "packet_id", "properties")
    __slots__ = FIELDS
    packet_type: ClassVar[int] = PUBLISH

    def __init__(self, topic: str, payload: bytes = b"", qos: int = 0, retain: bool = False,
                 dup: bool = False, packet_id: int | None = None,
                 properties: Properties | None = None) -> None:
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.dup = dup
        self.packet_id = packet_id  # present only when qos > 0
        self.properties: Properties = {} if properties is None else properties


class PublicationAck(Plain):
    """What PUBACK, PUBREC, PUBREL and PUBCOMP carry: the packet id of the publication's
    exchange, a reason code and properties (level 5)."""

    FIELDS = ("packet_id", "reason_code", "properties")
    __slots__ = FIELDS

    def __init__(self, packet_id: int, reason_code: int = 0, properties: Properties | None = None) -> None:
        self.packet_id = packet_id
        self.reason_code = reason_code
        self.properties: Properties = {} if properties is None else properties


class Puback(PublicationAck):
    """PUBACK (3.4): QoS 1 acknowledgement."""

    __slots__ = ()
    packet_type: ClassVar[int] = PUBACK


class Pubrec(PublicationAck):
    """PUBREC (3.5): QoS 2, part 1 of the handshake."""

    __slots__ = ()
    packet_type: ClassVar[int] = PUBREC


class Pubrel(PublicationAck):
    """PUBREL (3.6): QoS 2, part 2 of the handshake."""

    __slots__ = ()
    packet_type: ClassVar[int] = PUBREL


class Pubcomp(PublicationAck):
    """PUBCOMP (3.7): QoS 2, part 3 of the handshake."""

    __slots__ = ()
    packet_type: ClassVar[int] = PUBCOMP


class Subscription(Plain):
    """One topic filter of a SUBSCRIBE with its options (MQTT 5 subscription options byte)."""

    FIELDS = ("topic_filter", "qos", "no_local", "retain_as_published", "retain_handling")
    __slots__ = FIELDS

    def __init__(self, topic_filter: str, qos: int = 0, no_local: bool = False,
                 retain_as_published: bool = False, retain_handling: int = 0) -> None:
        self.topic_filter = topic_filter
        self.qos = qos
        self.no_local = no_local
        self.retain_as_published = retain_as_published
        self.retain_handling = retain_handling


class Subscribe(Plain):
    """SUBSCRIBE (3.8)."""

    FIELDS = ("packet_id", "subscriptions", "properties")
    __slots__ = FIELDS
    packet_type: ClassVar[int] = SUBSCRIBE

    def __init__(self, packet_id: int, subscriptions: list[Subscription],
                 properties: Properties | None = None) -> None:
        self.packet_id = packet_id
        self.subscriptions = subscriptions
        self.properties: Properties = {} if properties is None else properties


class Suback(Plain):
    """SUBACK (3.9): one reason code per topic filter subscribed."""

    FIELDS = ("packet_id", "reason_codes", "properties")
    __slots__ = FIELDS
    packet_type: ClassVar[int] = SUBACK

    def __init__(self, packet_id: int, reason_codes: list[int], properties: Properties | None = None) -> None:
        self.packet_id = packet_id
        self.reason_codes = reason_codes  # granted QoS 0/1/2 or a failure code (0x80, ...)
        self.properties: Properties = {} if properties is None else properties


class Unsubscribe(Plain):
    """UNSUBSCRIBE (3.10)."""

    FIELDS = ("packet_id", "topic_filters", "properties")
    __slots__ = FIELDS
    packet_type: ClassVar[int] = UNSUBSCRIBE

    def __init__(self, packet_id: int, topic_filters: list[str],
                 properties: Properties | None = None) -> None:
        self.packet_id = packet_id
        self.topic_filters = topic_filters
        self.properties: Properties = {} if properties is None else properties


class Unsuback(Plain):
    """UNSUBACK (3.11)."""

    FIELDS = ("packet_id", "reason_codes", "properties")
    __slots__ = FIELDS
    packet_type: ClassVar[int] = UNSUBACK

    def __init__(self, packet_id: int, reason_codes: list[int] | None = None,
                 properties: Properties | None = None) -> None:
        self.packet_id = packet_id
        self.reason_codes: list[int] = [] if reason_codes is None else reason_codes  # level 5 only
        self.properties: Properties = {} if properties is None else properties


class Pingreq(Plain):
    """PINGREQ (3.12)."""

    __slots__ = ()
    packet_type: ClassVar[int] = PINGREQ


class Pingresp(Plain):
    """PINGRESP (3.13)."""

    __slots__ = ()
    packet_type: ClassVar[int] = PINGRESP


class ReasonPacket(Plain):
    """What DISCONNECT and AUTH carry: a reason code and properties (both level 5 only)."""

    FIELDS = ("reason_code", "properties")
    __slots__ = FIELDS

    def __init__(self, reason_code: int = 0, properties: Properties | None = None) -> None:
        self.reason_code = reason_code
        self.properties: Properties = {} if properties is None else properties


class Disconnect(ReasonPacket):
    """DISCONNECT (3.14)."""

    __slots__ = ()
    packet_type: ClassVar[int] = DISCONNECT


class Auth(ReasonPacket):
    """AUTH (3.15, MQTT 5 only): enhanced authentication."""

    __slots__ = ()
    packet_type: ClassVar[int] = AUTH


Packet = (
    Connect | Connack | Publish | Puback | Pubrec | Pubrel | Pubcomp | Subscribe | Suback
    | Unsubscribe | Unsuback | Pingreq | Pingresp | Disconnect | Auth
)
