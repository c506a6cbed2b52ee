"""The JMS message model (formats-and-jms.md items 9-12; seed 000 l.2302-2530).

Six message types (``jms_none``, ``jms_text``, ``jms_bytes``, ``jms_map``, ``jms_stream``,
``jms_object``), the ten header fields, and typed properties in three families: application,
standard (``JMSX*``) and provider (``JMS_<vendor>_*``). Every property keeps its JMS type as a
``dt`` name (item 11) so that it crosses MQRFH2, JMSMap and MQeFields without changing type.

Header field names are JMS's own (``JMSPriority``), which is also what a selector writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field

from relaymq.message.errors import DataTypeError
from relaymq.message.typed import canonical_dt, format_value, infer_dt

NONE, TEXT, BYTES, MAP, STREAM, OBJECT = (
    "jms_none", "jms_text", "jms_bytes", "jms_map", "jms_stream", "jms_object",
)
MESSAGE_TYPES = (NONE, TEXT, BYTES, MAP, STREAM, OBJECT)

#: Java class name of each type, as JMS programs know them.
CLASS_NAMES = {
    NONE: "Message", TEXT: "TextMessage", BYTES: "BytesMessage",
    MAP: "MapMessage", STREAM: "StreamMessage", OBJECT: "ObjectMessage",
}

NON_PERSISTENT = 1
PERSISTENT = 2
DEFAULT_PRIORITY = 4

HEADER_FIELDS = (
    "JMSDestination", "JMSDeliveryMode", "JMSExpiration", "JMSPriority", "JMSTimestamp",
    "JMSMessageID", "JMSCorrelationID", "JMSReplyTo", "JMSType", "JMSRedelivered",
)

APPLICATION, STANDARD, PROVIDER = "application", "standard", "provider"


def property_family(name: str) -> str:
    """``JMSX*`` standard, ``JMS_*`` provider, anything else application (seed 000 l.2314)."""
    if name.startswith("JMSX"):
        return STANDARD
    if name.startswith("JMS_"):
        return PROVIDER
    return APPLICATION


def is_identifier(name: str) -> bool:
    """A Java identifier: what JMS allows as a property name and a selector can refer to."""
    return bool(name) and (name[0].isalpha() or name[0] in "_$") and all(c.isalpha() or c.isdecimal() or c in "_$" for c in name)


class TypedProperties(MutableMapping[str, object]):
    """Property name -> value, with the JMS type of each kept beside it.

    ``props['n'] = 5`` infers the type (i4 here); ``props.set('n', 5, 'i2')`` declares it and
    checks the value against it. A ``None`` value is a property explicitly set to null.

    A property is either *set by the application* (``set``, ``props[name] = v``) or *filled on
    receipt* by the provider (``set_received``): the JMS <-> MQ mapping honours some provider
    properties (``JMS_IBM_MQMD_*``...) only when the application set them (seed 002 note 9),
    so a received message sent on does not carry its old MQMD values into the new one.
    Setting a received property again makes it the application's. Equality ignores this mark.
    """

    __slots__ = ("_values", "_types", "_received")

    def __init__(self, values: dict[str, object] | None = None, types: dict[str, str] | None = None):
        self._values: dict[str, object] = {}
        self._types: dict[str, str] = {}
        self._received: set[str] = set()
        for k, v in (values or {}).items():
            self.set(k, v, (types or {}).get(k))

    def set(self, name: str, value: object, dt: str | None = None) -> None:
        """Set ``name`` as the application does (``setObjectProperty``): the name must be a
        Java identifier, as JMS requires."""
        if not is_identifier(name):
            raise DataTypeError(name, None, "property names must be Java identifiers")
        self._store(name, value, dt)
        self._received.discard(name)

    def _store(self, name: str, value: object, dt: str | None) -> None:
        if value is None:
            kind = canonical_dt(dt) if dt else "string"
        else:
            kind = canonical_dt(dt, name) if dt else infer_dt(value)
            format_value(value, kind, name)  # validates value against type
        self._values[name] = value
        self._types[name] = kind

    def set_received(self, name: str, value: object, dt: str | None = None) -> None:
        """Set ``name`` as filled in by the provider when the message was received. The name
        need not be a Java identifier: MQTT user properties (``trace-id``) and ``usr`` folders
        written by non-JMS programs are kept, though no selector identifier can name them."""
        if not isinstance(name, str):
            raise DataTypeError(repr(name), None, "a property name is a string")
        self._store(name, value, dt)
        self._received.add(name)

    def is_explicit(self, name: str) -> bool:
        """``name`` is present and was set by the application, not filled on receipt."""
        return name in self._values and name not in self._received

    def received(self) -> frozenset[str]:
        """Names filled on receipt and not set since (see the class docstring)."""
        return frozenset(self._received)

    def dt(self, name: str) -> str:
        return self._types[name]

    def types(self) -> dict[str, str]:
        return dict(self._types)

    def __getitem__(self, name: str) -> object:
        return self._values[name]

    def __setitem__(self, name: str, value: object) -> None:
        self.set(name, value)

    def __delitem__(self, name: str) -> None:
        del self._values[name]
        del self._types[name]
        self._received.discard(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    __hash__ = None  # type: ignore[assignment]  # mutable, so unhashable, as a dict is

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TypedProperties):
            return self._values == other._values and self._types == other._types
        return NotImplemented

    def __repr__(self) -> str:
        return f"TypedProperties({self._values!r}, types={self._types!r})"


@dataclass
class JMSMessage:
    """A JMS message. ``body`` is ``None`` (jms_none), ``str`` (text), ``bytes`` (bytes and
    object: the serialised object), ``dict`` (map) or ``list`` (stream); map and stream entry
    types go in ``body_types`` (name -> dt, or a list of dt in stream order)."""

    message_type: str = BYTES
    JMSDestination: str | None = None
    JMSDeliveryMode: int = PERSISTENT
    JMSExpiration: int = 0
    JMSPriority: int = DEFAULT_PRIORITY
    JMSTimestamp: int = 0
    JMSMessageID: str | None = None
    JMSCorrelationID: str | bytes | None = None
    JMSReplyTo: str | None = None
    JMSType: str | None = None
    JMSRedelivered: bool = False
    properties: TypedProperties = field(default_factory=TypedProperties)
    body: object = None
    body_types: dict[str, str] | list[str | None] | None = None
    #: Values after the first of a property received several times (MQTT 5 allows repeated
    #: user properties; JMS has one value per name, the first): name -> later values, in order.
    repeated_properties: dict[str, list[object]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.message_type not in MESSAGE_TYPES:
            raise DataTypeError("message_type", None, f"unknown JMS message type {self.message_type!r}")
        if not isinstance(self.properties, TypedProperties):
            self.properties = TypedProperties(dict(self.properties))

    @property
    def is_reply_expected(self) -> bool:
        """JMSReplyTo set: the receiver is asked to reply there (seed 000 l.2672)."""
        return bool(self.JMSReplyTo)

    def selector_value(self, name: str) -> object:
        """What identifier ``name`` means in a selector (the resolver for this message).

        JMSDeliveryMode reads as ``'PERSISTENT'``/``'NON_PERSISTENT'``; JMSDestination and
        JMSReplyTo are not selectable (NULL), as JMS 1.1 says; a JMSTimestamp of 0 is NULL.
        """
        if name.startswith("JMS") and name in _HEADER_GETTERS:
            return _HEADER_GETTERS[name](self)
        value = self.properties.get(name)
        return None if isinstance(value, (bytes, bytearray)) else value


def _correlation(m: JMSMessage) -> object:
    cid = m.JMSCorrelationID
    if isinstance(cid, (bytes, bytearray)):
        return "ID:" + bytes(cid).hex()
    return cid


_HEADER_GETTERS: dict[str, Callable[[JMSMessage], object]] = {
    "JMSDeliveryMode": lambda m: "PERSISTENT" if m.JMSDeliveryMode == PERSISTENT else "NON_PERSISTENT",
    "JMSPriority": lambda m: m.JMSPriority,
    "JMSMessageID": lambda m: m.JMSMessageID,
    "JMSTimestamp": lambda m: m.JMSTimestamp or None,
    "JMSCorrelationID": _correlation,
    "JMSType": lambda m: m.JMSType,
    "JMSExpiration": lambda m: m.JMSExpiration,
    "JMSRedelivered": lambda m: m.JMSRedelivered,
    "JMSDestination": lambda m: None,
    "JMSReplyTo": lambda m: None,
}
