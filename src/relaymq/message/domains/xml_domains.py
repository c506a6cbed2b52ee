"""The three XML domains (formats-and-jms.md item 7; seed 003 l.5192-5210).

* XMLNSC - compact: namespace-aware, whitespace-only text between elements dropped,
  comments and processing instructions dropped; attributes are children marked ATTRIBUTE.
* XMLNS  - namespace-aware, keeps all text (mixed content), comments and PIs.
* XML    - not namespace-aware (prefixes stay part of names, ``xmlns`` are plain attributes),
  keeps all text, comments and PIs.

All three read through :mod:`safexml`, so none expands or fetches entities.
"""

from __future__ import annotations

from dataclasses import dataclass

from relaymq.message.ccsid import offset_mapper, utf8_to_char_index
from relaymq.message.domains.base import as_utf8, bytes_of, text_of
from relaymq.message.domains.safexml import parse_xml
from relaymq.message.domains.xmlwrite import write_xml
from relaymq.message.errors import FormatError
from relaymq.message.tree import Element


@dataclass(frozen=True)
class XMLDomain:
    name: str
    namespaces: bool
    keep_whitespace: bool
    keep_comments: bool

    def parse(self, data: bytes, ccsid: int = 1208, encoding: int = 546) -> Element:
        utf8 = as_utf8(data, ccsid, encoding, self.name)
        try:
            nodes = parse_xml(
                utf8,
                self.name,
                namespaces=self.namespaces,
                keep_whitespace=self.keep_whitespace,
                keep_comments=self.keep_comments,
            )
        except FormatError as exc:
            if ccsid == 1208 or exc.offset is None:
                raise
            # expat counted UTF-8 bytes of the converted text: point into the original bytes
            text = text_of(data, ccsid, encoding, self.name)
            where = offset_mapper(text, ccsid, encoding)(utf8_to_char_index(utf8, exc.offset))
            raise type(exc)(exc.field, where, exc.reason) from None
        return Element(self.name, children=nodes)

    def serialize(self, body: Element, ccsid: int = 1208, encoding: int = 546) -> bytes:
        return bytes_of(write_xml(body.children, self.namespaces), ccsid, encoding, self.name)


XMLNSC = XMLDomain("XMLNSC", namespaces=True, keep_whitespace=False, keep_comments=False)
XMLNS = XMLDomain("XMLNS", namespaces=True, keep_whitespace=True, keep_comments=True)
XML = XMLDomain("XML", namespaces=False, keep_whitespace=True, keep_comments=True)
