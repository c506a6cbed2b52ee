"""JMSMap and JMSStream bodies (formats-and-jms.md item 11; seed 000 l.2480-2528).

A MapMessage body is ``<map><key dt='i4'>5</key>...</map>``, a StreamMessage body is
``<stream><elt dt='i4'>5</elt>...</stream>`` in order. The typed-element syntax is the same
as an MQRFH2 folder's, so both are read with the folder parser (no DTD, no entities) and
values come out typed. The body folder is ``JMSMap -> map -> entries`` /
``JMSStream -> stream -> elt...``.
"""

from __future__ import annotations

from dataclasses import dataclass

from relaymq.message.ccsid import offset_mapper
from relaymq.message.domains.base import bytes_of, text_of
from relaymq.message.errors import DomainError, FormatError
from relaymq.message.folders import parse_folder, serialize_folder
from relaymq.message.tree import Element
from relaymq.message.typed import infer_dt, STRING


@dataclass(frozen=True)
class TypedXMLBody:
    name: str
    root: str
    entry: str | None  # required element name of entries (``elt``) or None for any key

    def parse(self, data: bytes, ccsid: int = 1208, encoding: int = 546) -> Element:
        text = text_of(data, ccsid, encoding, self.name)
        try:
            root = parse_folder(text, offset_mapper(text, ccsid, encoding), field=self.name)
        except FormatError as exc:
            raise DomainError(exc.field, exc.offset, exc.reason) from None
        if root.name != self.root:
            raise DomainError(self.name, root.offset, f"expected <{self.root}>, found <{root.name}>")
        for child in root.children:
            if child.children:
                raise DomainError(f"{self.name}.{child.name}", child.children[0].offset, "entries hold single values")
            if self.entry is not None and child.name != self.entry:
                raise DomainError(f"{self.name}.{child.name}", child.offset, f"entries must be <{self.entry}>")
        return Element(self.name, children=[root])

    def serialize(self, body: Element, ccsid: int = 1208, encoding: int = 546) -> bytes:
        root = body.child(self.root) or Element(self.root)
        return bytes_of(serialize_folder(root), ccsid, encoding, self.name)


JMSMAP = TypedXMLBody("JMSMap", "map", None)
JMSSTREAM = TypedXMLBody("JMSStream", "stream", "elt")


def map_body(values: dict[str, object], types: dict[str, str] | None = None) -> Element:
    """The JMSMap folder for a Python mapping (types default as :func:`infer_dt`)."""
    root = Element("map")
    for key, value in values.items():
        dt = (types or {}).get(key) or infer_dt(value)
        root.add(key, value, dt=None if dt == STRING else dt)
    return Element("JMSMap", children=[root])


def stream_body(values: list[object], types: list[str | None] | None = None) -> Element:
    """The JMSStream folder for a Python list, in order."""
    root = Element("stream")
    for i, value in enumerate(values):
        dt = (types[i] if types and i < len(types) else None) or infer_dt(value)
        root.add("elt", value, dt=None if dt == STRING else dt)
    return Element("JMSStream", children=[root])
