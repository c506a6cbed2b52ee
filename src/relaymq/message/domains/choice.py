"""Which parser reads a body (formats-and-jms.md items 1, 7, 8; seed 000 l.2532-2630,
l.301; seed 003 l.4795).

For a JMS message: an explicitly configured domain first, checked against the validity matrix
(a mismatch raises :class:`DomainMismatch`, on which the input node backs the message out with
a warning); otherwise a JMSType ``mcd://DOMAIN/[set]/[type]/[?format=fmt]`` (domain in any
case); otherwise the JMS class decides.

For an MQ message: ``mcd.Msd`` of the *last* MQRFH2, else the input's configured domain, else
BLOB.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, unquote

from relaymq.message.domains.registry import canonical_domain
from relaymq.message.errors import DomainError

TEXT, BYTES, MAP, STREAM, OBJECT, NONE = (
    "jms_text", "jms_bytes", "jms_map", "jms_stream", "jms_object", "jms_none",
)

#: Domain -> JMS message classes it can read (seed 000 l.2574-2587).
VALID_CLASSES: dict[str, frozenset[str]] = {
    "BLOB": frozenset({BYTES, TEXT, OBJECT}),
    "XML": frozenset({TEXT}),
    "XMLNS": frozenset({TEXT}),
    "XMLNSC": frozenset({TEXT}),
    "MRM": frozenset({BYTES, TEXT}),
    "JMSMap": frozenset({MAP}),
    "JMSStream": frozenset({STREAM}),
    "MIME": frozenset({BYTES, TEXT}),
    "IDOC": frozenset({BYTES, TEXT}),
    "JSON": frozenset({BYTES, TEXT}),  # the product's own domain: text or bytes
}

#: JMS class -> domain when nothing else says (seed 000 l.2619-2627).
BY_CLASS = {TEXT: "XML", BYTES: "BLOB", MAP: "JMSMap", STREAM: "JMSStream", OBJECT: "BLOB", NONE: "BLOB"}


class DomainMismatch(DomainError):
    """The message's JMS class cannot be read by the domain that was chosen for it."""


@dataclass(frozen=True)
class MessageContentDescriptor:
    """Domain, set, type and format of a body (``mcd`` folder / JMSType URI)."""

    domain: str
    set: str = ""
    type: str = ""
    format: str = ""


def parse_mcd_uri(jms_type: str | None) -> MessageContentDescriptor | None:
    """``mcd://MRM/set/type/?format=fmt`` -> descriptor, or ``None`` if not such a URI.

    An ``mcd://`` URI naming an unknown domain is ``None`` too: the message is then handled by
    class (and an MRM URI that does not fit falls to BLOB, seed 000 l.2613).
    """
    if not jms_type or not jms_type.lower().startswith("mcd://"):
        return None
    rest = jms_type[6:]
    path, _, query = rest.partition("?")
    segments = path.split("/")
    try:
        domain = canonical_domain(segments[0])
    except DomainError:
        return None
    fmt = parse_qs(query).get("format", [""])[0]
    mset = unquote(segments[1]) if len(segments) > 1 else ""
    # the type may hold a namespace in braces with slashes: ``{http://SWIFT/2005}:Document``
    mtype = unquote("/".join(segments[2:]).rstrip("/")) if len(segments) > 2 else ""
    return MessageContentDescriptor(domain, mset, mtype, fmt)


def domain_for_jms(jms_class: str, configured: str | None = None, jms_type: str | None = None) -> str:
    """The domain a JMSInput node uses (item 8). Raises :class:`DomainMismatch`.

    DECISION: a ``jms_none`` message (no payload) is accepted by every domain: there is no
    body for the domain to misread, and the seed's matrix does not list the class."""
    if configured:
        domain = canonical_domain(configured)
        if jms_class != NONE and jms_class not in VALID_CLASSES[domain]:
            raise DomainMismatch("MessageDomain", None, f"a {jms_class} message cannot be parsed as {domain}")
        return domain
    mcd = parse_mcd_uri(jms_type)
    if mcd is not None:
        if jms_class != NONE and jms_class not in VALID_CLASSES[mcd.domain]:
            raise DomainMismatch("JMSType", None, f"a {jms_class} message cannot be parsed as {mcd.domain}")
        return mcd.domain
    return BY_CLASS[jms_class]


def domain_for_mq(msd: str | None, configured: str | None = None) -> str:
    """The domain of an MQ message body: last MQRFH2's ``mcd.Msd``, else configured, else BLOB."""
    if msd:
        return canonical_domain(msd)
    if configured:
        return canonical_domain(configured)
    return "BLOB"
