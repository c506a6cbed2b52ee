"""The canonical message: one object every transport converts to, seen in MQ's own format
(MQMD + headers + body bytes), as a message tree, and as JMS (formats-and-jms.md item 6).

The body is parsed lazily, on the first look inside it, in the domain chosen by the rules of
items 1 and 8: ``mcd.Msd`` of the last MQRFH2, else the domain the input was configured with,
else BLOB; a JMS message (a ``jms_*`` class in Msd) is parsed as a JMSInput would: configured
domain checked against its class, else a JMSType ``mcd://`` URI, else by class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relaymq.message.errors import DomainError
from relaymq.message.headers import MQMessage, decode_message, encode_message
from relaymq.message.mqrfh2 import MQRFH2
from relaymq.message.tree import Element, split_path

if TYPE_CHECKING:
    from relaymq.message.jms import JMSMessage
    from relaymq.message.mqmd import PutFields

#: Names under which each header appears in the tree (``Root.MQMD``, ``Root.MQRFH2``...).
TREE_NAMES = {"MQRFH2": "MQRFH2", "MQRFH": "MQRFH", "MQDLH": "MQDLH"}


class Message:
    """An MQ-format message with its tree and JMS views.

    ``transport`` holds extra header folders a transport adds to the tree (``HTTPInputHeader``,
    ``JMSTransport``...), placed after the MQ headers and before the body.
    """

    def __init__(
        self,
        mq: MQMessage | None = None,
        *,
        configured_domain: str | None = None,
        transport: list[Element] | None = None,
    ):
        self.mq = mq if mq is not None else MQMessage()
        self.configured_domain = configured_domain
        self.transport: list[Element] = transport or []
        self._body: Element | None = None
        self._jms: JMSMessage | None = None

    # -- construction --------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes, configured_domain: str | None = None) -> Message:
        return cls(decode_message(data), configured_domain=configured_domain)

    @classmethod
    def from_stored(cls, data: bytes, fields: PutFields | None = None) -> Message:
        """The message of bytes this product encoded itself (``to_bytes``: a message on a
        queue), decoded on the first look at it; until then ``to_bytes`` is ``data`` as it is.
        ``fields``: the MQMD fields a put reads, as the maker of ``data`` wrote them there
        (``stored_fields``). Untrusted input takes :meth:`from_bytes`, which reports a
        malformed message at once."""
        return StoredMessage(data, fields)

    @classmethod
    def from_jms(cls, jms: JMSMessage, *, with_rfh2: bool = True) -> Message:
        from relaymq.message.jms_mq import jms_to_mq

        msg = cls(jms_to_mq(jms, with_rfh2=with_rfh2))
        msg._jms = jms
        return msg

    def stored_bytes(self) -> bytes | None:
        """The bytes this message was made from (:meth:`from_stored`) while nothing of it has
        been looked at, so nothing can have changed: ``to_bytes`` without encoding; else None."""
        return None

    def stored_fields(self) -> PutFields | None:
        """With :meth:`stored_bytes`, the MQMD fields a put reads of them (``put_fields``) when
        the maker gave them (a publication's copy for a queue subscriber, issue 14); else None."""
        return None

    def to_bytes(self) -> bytes:
        """The MQ-format bytes; a body tree that was parsed (and maybe changed) is written back."""
        if self._body is not None:
            from relaymq.message.domains.registry import serialize_body

            self.mq.body = serialize_body(self._body, self.mq.body_ccsid, self.mq.body_encoding)
        return encode_message(self.mq)

    # -- views ---------------------------------------------------------------------------
    @property
    def domain(self) -> str:
        """The body's domain (items 1, 8). A JMS message (``mcd.Msd`` a JMS class) follows the
        JMSInput rules: the configured domain, checked against the validity matrix, else a
        JMSType (``mcd.Type``) ``mcd://DOMAIN/...`` URI, else the class; a class the chosen
        domain cannot read raises :class:`DomainMismatch` (the input backs the message out).
        Any other message: ``mcd.Msd``, else the configured domain, else BLOB."""
        from relaymq.message.domains.choice import BY_CLASS, domain_for_jms, domain_for_mq
        from relaymq.message.domains.registry import canonical_domain

        configured = canonical_domain(self.configured_domain) if self.configured_domain else None
        last = self.mq.last_rfh2()
        mcd = last.folder("mcd") if last is not None else None
        msd = mcd.get("Msd") if mcd is not None else None
        try:
            if isinstance(msd, str) and msd in BY_CLASS:
                jms_type = mcd.get("Type") if mcd is not None else None
                return domain_for_jms(msd, configured, jms_type if isinstance(jms_type, str) else None)
            if isinstance(msd, str) and msd.startswith("jms_"):  # a class this product does not know
                return configured or "BLOB"
            return domain_for_mq(msd if isinstance(msd, str) else None, configured)
        except DomainError as exc:
            # the mcd element that decided (Msd, or Type for a JMSType URI), where it was read
            element = mcd.find("Type" if exc.field == "JMSType" else "Msd") if mcd is not None else None
            if exc.offset is None and element is not None and element.offset is not None:
                raise type(exc)(exc.field, element.offset, exc.reason) from None
            raise

    def body(self) -> Element:
        """The body folder (parsed on first use). Raises a FormatError if the body does not
        parse in its domain."""
        if self._body is None:
            from relaymq.message.domains.registry import parse_body

            self._body = parse_body(self.domain, self.mq.body, self.mq.body_ccsid, self.mq.body_encoding)
        return self._body

    def set_body(self, body: Element) -> None:
        self._body = body
        self._jms = None

    def jms(self) -> JMSMessage:
        """The JMS view (computed once)."""
        if self._jms is None:
            from relaymq.message.jms_mq import mq_to_jms

            self._jms = mq_to_jms(self.mq)
        return self._jms

    def properties(self) -> Element:
        """The ``Properties`` folder: domain, set, type, format, encoding, CCSID, topic."""
        from relaymq.message.domains.choice import BY_CLASS, parse_mcd_uri

        props = Element("Properties")
        last, first = self.mq.last_rfh2(), self.mq.first_rfh2()
        try:
            props.add("MessageDomain", self.domain)
        except DomainError:
            pass  # no domain can read this body (DomainMismatch): Body.* says why
        mtype = last.get("mcd.Type", "") if last else ""
        uri = parse_mcd_uri(mtype) if isinstance(mtype, str) and last and last.get("mcd.Msd") in BY_CLASS else None
        if uri is not None:  # a JMS message whose JMSType names the set, type and format
            props.add("MessageSet", uri.set)
            props.add("MessageType", uri.type)
            props.add("MessageFormat", uri.format)
        else:
            props.add("MessageSet", (last.get("mcd.Set", "") if last else ""))
            props.add("MessageType", mtype)
            props.add("MessageFormat", (last.get("mcd.Fmt", "") if last else ""))
        props.add("Encoding", self.mq.body_encoding)
        props.add("CodedCharSetId", self.mq.body_ccsid)
        props.add("Persistence", self.mq.md.Persistence)
        props.add("Priority", self.mq.md.Priority)
        topic = first.get("psc.Topic") if first else None
        if topic is not None:
            props.add("Topic", topic)
        return props

    def headers_tree(self) -> list[Element]:
        """``MQMD`` then each header as a folder, in message order."""
        out = [_fields_folder("MQMD", self.mq.md.to_dict())]
        for h in self.mq.headers:
            if isinstance(h, MQRFH2):
                folder = _fields_folder("MQRFH2", {k: v for k, v in h.to_dict().items() if not isinstance(v, dict)})
                folder.children.extend(f.copy() for f in h.folders)
                out.append(folder)
            else:
                name = type(h).__name__ if type(h).__name__ in TREE_NAMES else h.FORMAT_NAME
                out.append(_fields_folder(name, h.to_dict()))
        return out

    def tree(self) -> Element:
        """``Root -> Properties, MQMD, MQRFH2..., transport folders, body``."""
        root = Element("Root")
        root.children.append(self.properties())
        root.children.extend(self.headers_tree())
        root.children.extend(self.transport)
        root.children.append(self.body())
        return root

    def find(self, path: str) -> Element | None:
        """The tree node at ``path`` (``Root.`` optional; ``Body.`` is the body folder), or
        ``None``. Only a path into the body parses the body: ``MQMD.*``, ``MQRFH2.*``,
        ``Properties.*`` and transport folders are read from the headers, so they stay readable
        when the body is malformed. Raises a FormatError only for a body path on a body that
        does not parse, ``ValueError`` for a malformed path."""
        if path == "Root":
            return self.tree()
        if path.startswith("Root."):
            path = path[len("Root."):]
        head, _, rest = path.partition(".")
        name = split_path(head)[0][0]
        if name == "Body":
            return self.body().find(rest) if rest else self.body()
        if name == "*":
            return self.tree().find(path)
        if name == "Properties":
            folders = [self.properties()]
        else:
            folders = [f for f in self.headers_tree() if f.name == name]
            folders += [f for f in self.transport if f.name == name]
        if folders:
            return Element("Root", children=folders).find(path)
        try:
            body_name = self.domain
        except DomainError:
            body_name = None  # Body.* reports the mismatch; no other name is the body
        if name == body_name:
            return Element("Root", children=[self.body()]).find(path)
        return None

    def get(self, path: str, default: object = None) -> object:
        """A value by path: ``Root.MQMD.Priority``, ``MQRFH2.usr.colour``, ``Body.a.b``,
        ``Properties.MessageDomain`` (see :meth:`find`; ``default`` when missing or a folder)."""
        node = self.find(path)
        if node is None or node.value is None:
            return default
        return node.value


class StoredMessage(Message):
    """:meth:`Message.from_stored`: ``mq`` is decoded from the stored bytes when first read
    (a getter that passes the message on, or only counts it, never pays for the decoding)."""

    def __init__(self, data: bytes, fields: PutFields | None = None) -> None:  # noqa: D107 - Message's attributes, mq left undecoded
        self._data: bytes | None = data
        self._fields = fields
        self._mq: MQMessage | None = None
        self.configured_domain = None
        self.transport = []
        self._body = None
        self._jms = None

    @property
    def mq(self) -> MQMessage:
        mq = self._mq
        if mq is None:
            assert self._data is not None
            mq = self._mq = decode_message(self._data)
        return mq

    @mq.setter
    def mq(self, value: MQMessage) -> None:
        self._mq = value

    def stored_bytes(self) -> bytes | None:
        return self._data if self._mq is None and self._body is None else None

    def stored_fields(self) -> PutFields | None:
        return self._fields if self._mq is None and self._body is None else None

    def to_bytes(self) -> bytes:
        if self._mq is None and self._data is not None:  # never looked at: the bytes it came from
            return self._data
        return super().to_bytes()


def body_bytes(message: Message) -> bytes:
    """The body as bytes, with a parsed (maybe changed) body tree written back first."""
    if message._body is not None:
        message.to_bytes()
    return message.mq.body


def _fields_folder(name: str, values: dict[str, object]) -> Element:
    folder = Element(name)
    for key, value in values.items():
        if isinstance(value, list):
            for item in value:
                folder.add(key, item if not isinstance(item, list) else " ".join(map(str, item)))
        else:
            folder.add(key, value)
    return folder
