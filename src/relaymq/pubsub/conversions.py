"""A publication in the forms the engine hands it on or reads it in (pubsub.md items 17,
28, 35): the psc/mcd/usr folders of a copy for a queue subscriber, the view a content filter
reads, an MQTT publication as a ``Publication`` and a psc publication as an MQTT one.

Why a module of its own: delivery to queue subscribers, retained publications, the service's
tap of MQTT publications and MQTT content filters all convert between the same forms.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from relaymq.message.folders import is_usr_name
from relaymq.message.headers import MQMessage
from relaymq.message.message import Message
from relaymq.message.mqmd import MQMD
from relaymq.message.mqrfh2 import MQRFH2
from relaymq.message.tree import Element
from relaymq.pubsub import psc as wire
from relaymq.pubsub.model import DEFAULT_SUBPOINT, MqttPublish, Publication

if TYPE_CHECKING:
    from relaymq.selector.compiled import Selector


def guess_domain(content_type: str | None, payload: bytes) -> str | None:
    """The body's message domain when the publisher did not name one: from an MQTT 5 Content
    Type, else from the first byte (``{``/``[`` JSON, ``<`` XML), so that a content filter
    ``Body.x`` works on MQTT payloads (docs/pubsub.md)."""
    if content_type:
        lowered = content_type.lower()
        if "json" in lowered:
            return "JSON"
        if "xml" in lowered:
            return "XMLNSC"
    head = payload[:64].lstrip()[:1]
    if head in (b"{", b"["):
        return "JSON"
    if head == b"<":
        return "XMLNSC"
    return None


def publication_folders(pub: Publication, *, retained_inform: bool = False) -> list[Element]:
    """psc (+ mcd + usr) folders of a delivered publication (items 28 and 35): the broker adds
    SubPoint (seed 5902-5914) and IsRetainedPub when the subscriber asked (InformIfRet)."""
    psc = Element("psc")
    psc.add("Command", wire.PUBLISH)
    psc.add("Topic", pub.topic)
    if pub.sub_point:
        psc.add("SubPoint", pub.sub_point)
    if retained_inform:
        psc.add("PubOpt", "IsRetainedPub")
    if pub.pub_time is not None:
        psc.add("PubTime", pub.pub_time)
    if pub.seq_num is not None:
        psc.add("SeqNum", pub.seq_num)
    folders = [psc]
    if pub.domain:
        mcd = Element("mcd")
        mcd.add("Msd", pub.domain.lower())
        folders.append(mcd)
    usr = usr_folder(pub)
    if usr is not None:
        folders.append(usr)
    return folders


def usr_folder(pub: Publication) -> Element | None:
    """The usr folder of a publication's copies and of its filter view; None when it holds nothing.

    MQTT 5 user properties may repeat a name or use one no XML element can have; the usr
    folder holds each name once (seed 003 l.5266-5281) as an XML name: the first value of a
    name is kept, names it cannot hold are left out (else the subscriber's copy would be an
    RFH2 nobody can read)."""
    if not pub.usr:
        return None
    usr = Element("usr")
    for name, value in pub.usr:
        if is_usr_name(name) and usr.child(name) is None:
            usr.add(name, value)
    return usr if usr.children else None


def filter_view(pub: Publication) -> Message:
    """The message a content filter sees (built once per publication, only when a matching
    subscription has a filter): usr folder, body in its (guessed) domain."""
    if pub._view is None:
        view_pub = pub
        if pub.domain is None:
            domain = guess_domain(None, pub.body)
            if domain is not None:
                view_pub = Publication(pub.topic, pub.body, pub.sub_point, pub.usr, domain)
        md = MQMD(Format="MQHRF2", Persistence=1 if pub.persistent else 0, Priority=pub.priority)
        pub._view = Message(MQMessage(md=md, headers=[MQRFH2(Format=pub.body_format, folders=publication_folders(view_pub))],
                                      body=pub.body))
    return pub._view


def view_resolver(pub: Publication) -> Callable[[str], object]:
    """What a content filter reads of a publication (item 17), every name read in
    ``filter_view``, where the ``usr`` values of a publication whose usr folder has no types
    (MQTT user properties, MQRFH v1 name/values) are untyped text, so ``usr.level > 5``
    compares a "7" as a number and ``usr.level = '7'`` as a string (selector ``UntypedText``;
    docs/pubsub.md). :class:`FilterSource` reads the same values, most without the view."""
    from relaymq.selector.resolvers import message_resolver
    from relaymq.selector.values import UntypedText

    resolve = message_resolver(filter_view(pub))
    if not pub.untyped_usr:
        return resolve

    def untyped(name: str) -> object:
        value = resolve(name)
        if type(value) is str and name.startswith("usr."):
            return UntypedText(value)
        return value

    return untyped

#: ``FilterSource._msd`` not found yet (None is a finding: no domain).
_UNKNOWN = object()


class FilterSource:
    """What the content filters of one publication read (item 17), as ``view_resolver`` reads
    it, each part made the first time a filter reads it: ``usr.*`` from the publication's usr
    folder (``usr_folder``) and ``Body.*`` from its body, parsed once in the domain the view
    gives it, without the rest of the view (its MQMD, MQRFH2 and message: most of a filter's
    cost, issue 14); any other name, and the body of a JMS class, from ``filter_view``."""

    __slots__ = ("pub", "_values", "_body", "_view", "_msd")

    def __init__(self, pub: Publication) -> None:
        self.pub = pub
        self._values: dict[str, object] = {}
        self._body: Element | BaseException | None = None  # parsed, or why it does not parse
        self._view: Callable[[str], object] | None = None
        self._msd: str | None | object = _UNKNOWN  # the view's mcd.Msd (``_domain``), once found

    def __call__(self, name: str) -> object:
        values = self._values
        if name in values:
            return values[name]
        head, dot, rest = name.partition(".")
        value: object
        if dot and head == "usr":
            value = self._usr(rest)
        elif dot and head == "Body" and not self._jms_class():
            value = self._body_value(rest)
        else:
            view = self._view
            if view is None:
                view = self._view = view_resolver(self.pub)
            value = view(name)
        values[name] = value
        return value

    def _usr(self, path: str) -> object:
        read = _readers()
        try:
            value = read.folder_value(usr_folder(self.pub), path)
        except ValueError:  # a bad path step: NULL, as message_resolver reads it
            return None
        return read.untyped(value) if self.pub.untyped_usr and type(value) is str else value

    def _domain(self) -> str | None:
        """The view's mcd.Msd: the publication's domain, else the one its body looks like (found once)."""
        msd = self._msd
        if msd is _UNKNOWN:
            pub = self.pub
            domain = pub.domain if pub.domain is not None else guess_domain(None, pub.body)
            msd = self._msd = domain.lower() if domain else None
        return msd  # type: ignore[return-value]

    def _jms_class(self) -> bool:
        """A JMS class as the domain (``jms_text``...): the view's JMS rules choose the body's domain."""
        msd = self._domain()
        return msd is not None and msd.startswith("jms_")

    def _body_value(self, path: str) -> object:
        read = _readers()
        body = self._body
        if body is None:
            try:
                body = read.parse_body(read.domain_for_mq(self._domain()), self.pub.body, *_view_body_coding())
            except (read.format_error, ValueError) as exc:  # NULL, as message_resolver reads it
                body = exc
            self._body = body
        if isinstance(body, BaseException):
            return None
        try:
            return read.body_value(body, path)
        except ValueError:  # a bad path step
            return None


class _Readers(NamedTuple):
    """What :class:`FilterSource` reads with, imported on the first filter (not at start-up,
    which has none) and then kept: an import statement per value read cost more than the
    reading (issue 14)."""

    folder_value: Callable[[Element | None, str], object]
    body_value: Callable[[Element, str], object]
    untyped: type[str]
    parse_body: Callable[..., Element]
    domain_for_mq: Callable[[str | None], str]
    format_error: type[Exception]


@cache
def _readers() -> _Readers:
    from relaymq.message.domains.choice import domain_for_mq
    from relaymq.message.domains.registry import parse_body
    from relaymq.message.errors import FormatError
    from relaymq.selector.resolvers import body_value, folder_value
    from relaymq.selector.values import UntypedText

    return _Readers(folder_value, body_value, UntypedText, parse_body, domain_for_mq, FormatError)


@cache
def _view_body_coding() -> tuple[int, int]:
    """The CCSID and encoding of a filter view's body (``filter_view``: an MQRFH2 that
    inherits the MQMD's), read of such a view once."""
    mq = MQMessage(md=MQMD(Format="MQHRF2"), headers=[MQRFH2()], body=b"")
    return mq.body_ccsid, mq.body_encoding


def filter_resolver(pub: Publication) -> Callable[[str], object]:
    """The publication's :class:`FilterSource`, made once (every filter reads the same one)."""
    source = pub._source
    if source is None:
        source = pub._source = FilterSource(pub)
    return source


def filter_selects(pub: Publication, selector: Selector) -> bool:
    """Whether a content filter selects ``pub`` (item 17), evaluated once per publication and
    filter text: the subscriptions sharing a filter share its verdict (the filter reads only
    the publication, ``filter_resolver``)."""
    results = pub._selected
    if results is None:
        results = pub._selected = {}
    known = results.get(selector.text)
    if known is None:
        known = results[selector.text] = selector.selects(filter_resolver(pub))
    return known


def mqtt_publication(pub: Publication, now: float) -> MqttPublish:
    """psc publication -> MQTT: usr as MQTT 5 user properties, persistence as QoS 1."""
    properties: dict[str, Any] = {}
    if pub.usr:
        properties["user_property"] = list(pub.usr)
    if pub.domain:
        properties["content_type"] = {"JSON": "application/json"}.get(pub.domain.upper(), f"application/x-{pub.domain.lower()}")
    if pub.body_format == "MQSTR":
        properties["payload_format_indicator"] = 1
    expiry = None if pub.expiry_at is None else max(1, int(-(-(pub.expiry_at - now) // 1)))
    return MqttPublish(pub.topic, pub.body, 1 if pub.persistent else 0, pub.retain, properties, expiry, pub)


def unique_ids() -> Callable[[], bytes]:
    """24-byte ids, unique across processes and restarts: 16 random bytes drawn once, then a
    counter (an MsgId per copy for a queue subscriber; a system call for each cost more than
    the rest of making the copy's header)."""
    prefix = os.urandom(16)
    counter = itertools.count(1)
    return lambda: prefix + next(counter).to_bytes(8, "big")


def publication_from_mqtt(topic: str, payload: bytes, qos: int, properties: dict[str, Any],
                          expiry_at: float | None, sub_point: str = DEFAULT_SUBPOINT) -> Publication:
    """An MQTT publication as the engine sees it: user properties are its usr folder, QoS > 0
    is persistent, a UTF-8 payload (format indicator 1) is MQSTR (issue 4)."""
    usr = [(str(k), str(v)) for k, v in properties.get("user_property", ())]
    content_type = properties.get("content_type")
    return Publication(topic, payload, sub_point, usr,
                       guess_domain(content_type, b"") if content_type else None,
                       "MQSTR" if properties.get("payload_format_indicator") == 1 else "",
                       persistent=qos > 0, expiry_at=expiry_at, from_mqtt=True, untyped_usr=True)


def publication_from_stored(message: Any, sub_point: str = DEFAULT_SUBPOINT) -> Publication:
    """A broker ``StoredMessage`` (a retained MQTT publication) as a Publication."""
    pub = publication_from_mqtt(message.topic, message.payload, message.qos, message.properties,
                                message.expiry_at, sub_point)
    pub.retain = True
    return pub
