"""Message domains: parsers and serialisers for message bodies, and the rules that choose one.
"""

from typing import TYPE_CHECKING

from relaymq.lazy import exports

if TYPE_CHECKING:
    from relaymq.message.domains.choice import (
        DomainMismatch,
        MessageContentDescriptor,
        domain_for_jms,
        domain_for_mq,
        parse_mcd_uri,
    )
    from relaymq.message.domains.jms_body import map_body, stream_body
    from relaymq.message.domains.registry import DOMAINS, canonical_domain, get_domain, parse_body, serialize_body

__getattr__ = exports(__name__, {
    "choice": ("DomainMismatch", "MessageContentDescriptor", "domain_for_jms", "domain_for_mq", "parse_mcd_uri",),
    "jms_body": ("map_body", "stream_body",),
    "registry": ("DOMAINS", "canonical_domain", "get_domain", "parse_body", "serialize_body",),
})

__all__ = [
    "DOMAINS",
    "DomainMismatch",
    "MessageContentDescriptor",
    "canonical_domain",
    "domain_for_jms",
    "domain_for_mq",
    "get_domain",
    "map_body",
    "parse_body",
    "parse_mcd_uri",
    "serialize_body",
    "stream_body",
]
