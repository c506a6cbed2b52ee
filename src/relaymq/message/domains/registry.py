"""Domain names -> parsers, and the body helpers the rest of the product calls.

Names are matched case-insensitively because ``mcd.Msd`` writes them in lower case
(``xmlnsc``) and a JMSType URI may use either case (seed 000 l.2589). ``none`` is BLOB.
"""

from __future__ import annotations

from relaymq.message.domains.base import Domain
from relaymq.message.domains.blob import BLOB, IDOC, MRM
from relaymq.message.domains.jms_body import JMSMAP, JMSSTREAM
from relaymq.message.domains.json_domain import JSON
from relaymq.message.domains.mime import MIME
from relaymq.message.domains.xml_domains import XML, XMLNS, XMLNSC
from relaymq.message.errors import DomainError
from relaymq.message.tree import Element

DOMAINS: dict[str, Domain] = {
    d.name: d for d in (XMLNSC, XMLNS, XML, JSON, BLOB, JMSMAP, JMSSTREAM, MIME, MRM, IDOC)
}
_BY_UPPER = {name.upper(): name for name in DOMAINS}
_BY_UPPER["NONE"] = "BLOB"


def canonical_domain(name: str) -> str:
    """``'xmlnsc'`` -> ``'XMLNSC'``; raises :class:`DomainError` for an unknown name."""
    found = _BY_UPPER.get(name.strip().upper())
    if found is None:
        raise DomainError("MessageDomain", None, f"unknown message domain {name!r}")
    return found


def get_domain(name: str) -> Domain:
    return DOMAINS[canonical_domain(name)]


def parse_body(domain: str, data: bytes, ccsid: int = 1208, encoding: int = 546) -> Element:
    """The body folder of ``data`` parsed in ``domain``."""
    return get_domain(domain).parse(data, ccsid, encoding)


def serialize_body(body: Element, ccsid: int = 1208, encoding: int = 546) -> bytes:
    """The bytes of a body folder; the folder's name says which domain writes it."""
    return get_domain(body.name).serialize(body, ccsid, encoding)
