"""``-D COMMAND PROPERTY VALUE`` (and ``-D COMMAND user-property NAME VALUE``) of ``relaymq
pub``/``sub``, as mosquitto_pub/mosquitto_sub take them (issue 18, "the first hour"): MQTT 5
properties for the CONNECT, the PUBLISH (pub), the SUBSCRIBE (sub) and the will. Names are the
specification's with ``-`` between words; giving one makes the client an MQTT 5 client."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from relaymq.mqtt.wire import MAX_VARINT

USER_PROPERTY = "user-property"
#: -D command -> paho packet type.
PACKET_TYPES = {"connect": PacketTypes.CONNECT, "publish": PacketTypes.PUBLISH,
                "subscribe": PacketTypes.SUBSCRIBE, "will": PacketTypes.WILLMESSAGE}


class PropertyError(ValueError):
    """A -D that cannot be used: the message is the one line to print."""


def _unsigned(bits: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise PropertyError(f"expected an integer, got {text!r}") from None
        if not 0 <= value < (1 << bits):
            raise PropertyError(f"expected an integer in 0..{(1 << bits) - 1}, got {value}")
        return value

    return parse


def _variable(text: str) -> int:  # a Variable Byte Integer, 1..MAX_VARINT
    value = _unsigned(28)(text)
    if value == 0:
        raise PropertyError(f"expected an integer in 1..{MAX_VARINT}, got 0")
    return value


def _utf8(text: str) -> str:
    return text


def _binary(text: str) -> bytes:
    return text.encode("utf-8")


#: property -> (paho attribute, value parser, the -D commands it belongs to).
PROPERTIES: dict[str, tuple[str, Callable[[str], Any], frozenset[str]]] = {
    "payload-format-indicator": ("PayloadFormatIndicator", _unsigned(8), frozenset({"publish", "will"})),
    "message-expiry-interval": ("MessageExpiryInterval", _unsigned(32), frozenset({"publish", "will"})),
    "content-type": ("ContentType", _utf8, frozenset({"publish", "will"})),
    "response-topic": ("ResponseTopic", _utf8, frozenset({"publish", "will"})),
    "correlation-data": ("CorrelationData", _binary, frozenset({"publish", "will"})),
    "topic-alias": ("TopicAlias", _unsigned(16), frozenset({"publish"})),
    "will-delay-interval": ("WillDelayInterval", _unsigned(32), frozenset({"will"})),
    "session-expiry-interval": ("SessionExpiryInterval", _unsigned(32), frozenset({"connect"})),
    "receive-maximum": ("ReceiveMaximum", _unsigned(16), frozenset({"connect"})),
    "maximum-packet-size": ("MaximumPacketSize", _unsigned(32), frozenset({"connect"})),
    "topic-alias-maximum": ("TopicAliasMaximum", _unsigned(16), frozenset({"connect"})),
    "request-response-information": ("RequestResponseInformation", _unsigned(8), frozenset({"connect"})),
    "request-problem-information": ("RequestProblemInformation", _unsigned(8), frozenset({"connect"})),
    "authentication-method": ("AuthenticationMethod", _utf8, frozenset({"connect"})),
    "authentication-data": ("AuthenticationData", _binary, frozenset({"connect"})),
    "subscription-identifier": ("SubscriptionIdentifier", _variable, frozenset({"subscribe"})),
    USER_PROPERTY: ("UserProperty", _utf8, frozenset({"connect", "publish", "subscribe", "will"})),
}


@dataclass
class PropertySet:
    """The -D properties of one run, by command."""

    values: dict[str, dict[str, Any]]
    user_properties: dict[str, list[tuple[str, str]]]

    def build(self, command: str, extra_user_properties: list[tuple[str, str]] | None = None) -> Properties | None:
        """Paho Properties for ``command`` (None when there are none)."""
        pairs = self.user_properties.get(command, []) + list(extra_user_properties or ())
        values = self.values.get(command, {})
        if not values and not pairs:
            return None
        properties = Properties(PACKET_TYPES[command])
        for attribute, value in values.items():
            setattr(properties, attribute, value)
        if pairs:
            properties.UserProperty = pairs
        return properties


def parse(specs: list[list[str]] | None, commands: tuple[str, ...]) -> PropertySet:
    """The ``-D`` arguments (each a list of its words), for a client that sends ``commands``."""
    result = PropertySet({}, {})
    for words in specs or ():
        if len(words) < 3:
            raise PropertyError(f"-D {' '.join(words)}: expected -D COMMAND PROPERTY VALUE")
        command, name = words[0].lower(), words[1].lower()
        if command not in commands:
            raise PropertyError(f"-D {words[0]}: the command must be one of {', '.join(commands)}")
        known = PROPERTIES.get(name)
        if known is None:
            raise PropertyError(f"-D {words[0]} {words[1]}: no such property")
        attribute, parser, allowed = known
        if command not in allowed:
            raise PropertyError(f"-D {words[0]} {words[1]}: not a property of {command}")
        if name == USER_PROPERTY:
            if len(words) != 4:
                raise PropertyError(f"-D {words[0]} user-property: expected a NAME and a VALUE")
            result.user_properties.setdefault(command, []).append((words[2], words[3]))
            continue
        if len(words) != 3:
            raise PropertyError(f"-D {' '.join(words)}: expected one value")
        try:
            result.values.setdefault(command, {})[attribute] = parser(words[2])
        except PropertyError as error:
            raise PropertyError(f"-D {words[0]} {words[1]}: {error}") from None
    return result
