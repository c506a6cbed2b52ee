"""Resolvers: how selector identifiers find values in a message (README decision 3).

* a bare name (``colour``, ``JMSPriority``) is a JMS header field or property;
* ``Body.a.b`` is a path in the parsed body; XML and MIME text is :class:`UntypedText`, so it
  compares numerically with numbers (a content filter ``Body.Price > 100``);
* ``Root.MQMD.Priority``, ``MQMD.Priority``, ``Properties.MessageDomain`` are tree paths;
* ``usr.colour``, ``jms.Dst``, ``psc.Topic`` (any first segment that is a folder of the first
  MQRFH2) read that folder.

A value that is not a selector type (bytes, a folder) is NULL, and so is a body that does
not parse: a filter on a malformed publication is UNKNOWN, never an exception in the broker.
Header and ``Properties`` references never parse the body, so they keep their values when the
body is malformed.
"""

from __future__ import annotations

from collections.abc import Callable

from relaymq.message.errors import FormatError
from relaymq.message.jms import JMSMessage
from relaymq.message.message import Message
from relaymq.message.tree import Element
from relaymq.selector.values import UntypedText

_UNTYPED_DOMAINS = frozenset({"XML", "XMLNS", "XMLNSC", "MIME"})
_SCALARS = (str, int, float, bool)


def _scalar(value: object, untyped: bool = False) -> object:
    if isinstance(value, bool) or not isinstance(value, _SCALARS):
        return value if isinstance(value, bool) else None
    if untyped and type(value) is str:
        return UntypedText(value)
    return value


def jms_resolver(message: JMSMessage) -> Callable[[str], object]:
    """Resolver over a JMS message: header fields and properties."""
    return message.selector_value


def element_value(node: Element | None, untyped: bool = False) -> object:
    """What an identifier reads at a node of the message tree: its value as a selector value
    (``untyped``: text is :class:`UntypedText`); NULL for no node, a folder or a non-selector type."""
    if node is None or node.children and node.value is None:
        return None
    return _scalar(node.value, untyped)


def body_value(body: Element, path: str) -> object:
    """``Body.<path>`` of a parsed body folder (text of an XML or MIME body is untyped)."""
    return element_value(body.find(path), body.name in _UNTYPED_DOMAINS)


def folder_value(folder: Element | None, path: str) -> object:
    """``<folder>.<path>`` of an MQRFH2 folder (``usr.colour``), NULL when there is no such folder."""
    return element_value(folder.find(path) if folder is not None else None)


def message_resolver(message: Message) -> Callable[[str], object]:
    """Resolver over the canonical message (JMS view, tree paths, RFH2 folders, body)."""
    cache: dict[str, object] = {}

    def resolve(name: str) -> object:
        if name in cache:
            return cache[name]
        value: object
        try:
            if "." not in name:
                value = message.jms().selector_value(name)
            else:
                head, _, rest = name.partition(".")
                if head == "Body":
                    value = body_value(message.body(), rest)
                elif head in ("Root", "Properties", "MQMD", "MQRFH2", "MQRFH", "MQDLH"):
                    # headers are read without parsing the body (Message.find)
                    value = element_value(message.find(name))
                else:
                    first = message.mq.first_rfh2()
                    value = folder_value(first.folder(head) if first is not None else None, rest)
        except (FormatError, ValueError):
            value = None
        cache[name] = value
        return value

    return resolve
