"""The MQTT control packets as plain data (seed 000 l.764-1958; OASIS MQTT 3.1.1 and 5.0).

One class per packet type. ``properties`` is a dict keyed by the MQTT 5 property name in
snake_case (see ``properties.py``); it is empty for protocol levels 3 and 4. ``user_property``
is a list of (key, value) string pairs; ``subscription_identifier`` in PUBLISH is a list of
ints (one per matching subscription), in SUBSCRIBE a single int.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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


@dataclass(slots=True)
class Will:
    """The will of a CONNECT: published for the client when it goes without DISCONNECT."""

    topic: str
    payload: bytes
    qos: int = 0
    retain: bool = False
    properties: Properties = field(default_factory=dict)


@dataclass(slots=True)
class Connect:
    """CONNECT (3.1): the first packet of a connection."""

    protocol_name: str = "MQTT"
    protocol_level: int = MQTT_311
    clean_start: bool = True
    keep_alive: int = 60
    client_id: str = ""
    will: Will | None = None
    username: str | None = None
    password: bytes | None = None
    properties: Properties = field(default_factory=dict)
    packet_type = CONNECT


@dataclass(slots=True)
class Connack:
    """CONNACK (3.2): the answer to CONNECT."""

    session_present: bool = False
    reason_code: int = 0  # levels 3/4: the return code 0-5; level 5: the reason code
    properties: Properties = field(default_factory=dict)
    packet_type = CONNACK


@dataclass(slots=True)
class Publish:
    """PUBLISH (3.3): an application message, either way."""

    topic: str
    payload: bytes = b""
    qos: int = 0
    retain: bool = False
    dup: bool = False
    packet_id: int | None = None  # present only when qos > 0
    properties: Properties = field(default_factory=dict)
    packet_type = PUBLISH


@dataclass(slots=True)
class Puback:
    """PUBACK (3.4): QoS 1 acknowledgement."""

    packet_id: int
    reason_code: int = 0
    properties: Properties = field(default_factory=dict)
    packet_type = PUBACK


@dataclass(slots=True)
class Pubrec:
    """PUBREC (3.5): QoS 2, part 1 of the handshake."""

    packet_id: int
    reason_code: int = 0
    properties: Properties = field(default_factory=dict)
    packet_type = PUBREC


@dataclass(slots=True)
class Pubrel:
    """PUBREL (3.6): QoS 2, part 2 of the handshake."""

    packet_id: int
    reason_code: int = 0
    properties: Properties = field(default_factory=dict)
    packet_type = PUBREL


@dataclass(slots=True)
class Pubcomp:
    """PUBCOMP (3.7): QoS 2, part 3 of the handshake."""

    packet_id: int
    reason_code: int = 0
    properties: Properties = field(default_factory=dict)
    packet_type = PUBCOMP


@dataclass(slots=True)
class Subscription:
    """One topic filter of a SUBSCRIBE with its options (MQTT 5 subscription options byte)."""

    topic_filter: str
    qos: int = 0
    no_local: bool = False
    retain_as_published: bool = False
    retain_handling: int = 0


@dataclass(slots=True)
class Subscribe:
    """SUBSCRIBE (3.8)."""

    packet_id: int
    subscriptions: list[Subscription]
    properties: Properties = field(default_factory=dict)
    packet_type = SUBSCRIBE


@dataclass(slots=True)
class Suback:
    """SUBACK (3.9): one reason code per topic filter subscribed."""

    packet_id: int
    reason_codes: list[int]  # granted QoS 0/1/2 or a failure code (0x80, ...)
    properties: Properties = field(default_factory=dict)
    packet_type = SUBACK


@dataclass(slots=True)
class Unsubscribe:
    """UNSUBSCRIBE (3.10)."""

    packet_id: int
    topic_filters: list[str]
    properties: Properties = field(default_factory=dict)
    packet_type = UNSUBSCRIBE


@dataclass(slots=True)
class Unsuback:
    """UNSUBACK (3.11)."""

    packet_id: int
    reason_codes: list[int] = field(default_factory=list)  # level 5 only
    properties: Properties = field(default_factory=dict)
    packet_type = UNSUBACK


@dataclass(slots=True)
class Pingreq:
    """PINGREQ (3.12)."""

    packet_type = PINGREQ


@dataclass(slots=True)
class Pingresp:
    """PINGRESP (3.13)."""

    packet_type = PINGRESP


@dataclass(slots=True)
class Disconnect:
    """DISCONNECT (3.14)."""

    reason_code: int = 0  # level 5 only
    properties: Properties = field(default_factory=dict)
    packet_type = DISCONNECT


@dataclass(slots=True)
class Auth:
    """AUTH (3.15, MQTT 5 only): enhanced authentication."""

    reason_code: int = 0
    properties: Properties = field(default_factory=dict)
    packet_type = AUTH


Packet = (
    Connect | Connack | Publish | Puback | Pubrec | Pubrel | Pubcomp | Subscribe | Suback
    | Unsubscribe | Unsuback | Pingreq | Pingresp | Disconnect | Auth
)
