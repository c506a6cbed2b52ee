"""What every message domain provides: parse body bytes into the body folder of the message
tree, and serialise that folder back to bytes (formats-and-jms.md items 6-7).

The body folder is an :class:`~relaymq.message.tree.Element` named after the domain, always
the last child of ``Root``. Bytes are given with the CCSID and encoding that describe them
(from the last header of the MQ chain, or from the transport).
"""

from __future__ import annotations

from typing import Protocol

from relaymq.message.ccsid import decode_text, encode_text
from relaymq.message.tree import Element


class Domain(Protocol):
    @property
    def name(self) -> str:
        """The domain's name (``XMLNSC``, ``BLOB``...); read-only, as the domains are frozen."""

    def parse(self, data: bytes, ccsid: int = 1208, encoding: int = 546) -> Element:
        """The body folder for ``data``; raises :class:`DomainError` (or another
        :class:`FormatError`) on bad input."""

    def serialize(self, body: Element, ccsid: int = 1208, encoding: int = 546) -> bytes:
        """The bytes of ``body`` in character set ``ccsid``."""


def text_of(data: bytes, ccsid: int, encoding: int, domain: str) -> str:
    return decode_text(data, ccsid, encoding, f"{domain}.body", 0)


def bytes_of(text: str, ccsid: int, encoding: int, domain: str) -> bytes:
    return encode_text(text, ccsid, encoding, f"{domain}.body")


def as_utf8(data: bytes, ccsid: int, encoding: int, domain: str) -> bytes:
    """UTF-8 bytes of a text body (no copy when it already is UTF-8)."""
    if ccsid == 1208:
        return data
    return text_of(data, ccsid, encoding, domain).encode("utf-8")
